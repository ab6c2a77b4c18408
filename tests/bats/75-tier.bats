#!/usr/bin/env bats
# A shared cache tier (issue 15): nginx started from `tilefs tier-config`
# between three "hosts" (mounts with their own cache dirs) and the store
# (nginx with injected latency, Azurite, s3rver, and a store that checks
# Signature V4 with botocore), all on 127.0.0.1. Asserts on the store's and
# the tier's access logs: bytes identical on every host, each range fetched
# once from the store, none by the second and third host, signed requests
# accepted by the store through the tier, the fallback when the tier stops,
# the secret header.

bats_require_minimum_version 1.5.0
load ../lib/tilefs
load ../lib/tier

setup() {
	tilefs_setup
	STORE_PID=
}

teardown() {
	tilefs_teardown
	tier_stop
	tier_store_stop
	[ -n "$STORE_PID" ] && kill "$STORE_PID" 2>/dev/null
	if declare -f azurite_stop >/dev/null; then azurite_stop; fi
	if declare -f s3rver_stop >/dev/null; then s3rver_stop; fi
	return 0
}

# read_chips HOST SOURCE [MOUNT OPTIONS]: mount SOURCE through the tier
# with the cache dir of HOST, read the same chips as every host, unmount.
read_chips() {
	local host=$1 src=$2
	shift 2
	tilefs_mount "$src" "$T/mnt$host" --cache-dir "$T/cache$host" --tier "$TIER_URL" "$@"
	run "$PY" "$TESTS_LIB/chips.py" --chips 30 "$T/mnt$host" "$SAMPLES"
	echo "host $host: $output"
	assert_eq "$status" 0 "chips through host $host"
	tilefs_umount "$T/mnt$host"
}

@test "tier: three hosts read the same chips; the store serves each range once, hosts 2 and 3 none" {
	origin_start "$SAMPLES"
	origin_fault 'delay?ms=20&count=-1'
	tier_start "$ORIGIN_URL"
	# hosts 1 and 2 cold at the same time: the tier's cache lock makes one
	# store request of a range they both miss (mounted one after the other:
	# the mount helpers keep per-mount state that is not for two at once)
	local h
	for h in 1 2; do
		tilefs_mount "$ORIGIN_URL" "$T/mnt$h" --cache-dir "$T/cache$h" --tier "$TIER_URL"
	done
	"$PY" "$TESTS_LIB/chips.py" --chips 30 "$T/mnt1" "$SAMPLES" >"$T/chips1.out" 2>&1 3>&- &
	local h1=$!
	run "$PY" "$TESTS_LIB/chips.py" --chips 30 "$T/mnt2" "$SAMPLES"
	assert_eq "$status" 0 "chips through host 2: $output"
	wait "$h1" || fail "chips through host 1:" "$(cat "$T/chips1.out")"
	for h in 1 2; do
		tilefs_umount "$T/mnt$h"
	done
	local after12
	after12=$(wc -l <"$ORIGIN_LOG")
	[ "$after12" -gt 0 ]
	assert_eq "$(origin_dup_ranges)" "" "ranges the store served twice"
	read_chips 3 "$ORIGIN_URL"
	assert_eq "$(wc -l <"$ORIGIN_LOG")" "$after12" "store requests of host 3"
	# the store saw the tier's requests only, each range once
	assert_eq "$(origin_dup_ranges)" "" "ranges the store served twice"
	[ "$(tier_count HIT)" -gt "$(tier_count MISS)" ]
	# host 3 alone: every one of its requests was a hit
	tier_log_reset
	read_chips 4 "$ORIGIN_URL"
	assert_eq "$(tier_count MISS)" 0 "tier misses of a fresh host"
	assert_eq "$(wc -l <"$ORIGIN_LOG")" "$after12" "store requests of a fresh host"
}

@test "tier: four readers per host: hosts 2 and 3 send the store nothing, each range once" {
	# Four readers reach the same tiles in a different order on each host:
	# the ranges a host asks for must not depend on what it had cached or
	# in flight when, or the tier misses (plan_tier_run()).
	origin_start "$SAMPLES"
	origin_fault 'delay?ms=20&count=-1'
	tier_start "$ORIGIN_URL"
	local h after1=
	for h in 1 2 3; do
		tilefs_mount "$ORIGIN_URL" "$T/mnt$h" --cache-dir "$T/cache$h" --tier "$TIER_URL"
		run "$PY" "$TESTS_LIB/chips.py" --chips 40 --procs 4 "$T/mnt$h" "$SAMPLES"
		assert_eq "$status" 0 "chips through host $h: $output"
		tilefs_umount "$T/mnt$h"
		[ -n "$after1" ] || after1=$(wc -l <"$ORIGIN_LOG")
	done
	[ "$after1" -gt 0 ]
	tail -n +$((after1 + 1)) "$ORIGIN_LOG"
	assert_eq "$(wc -l <"$ORIGIN_LOG")" "$after1" "store requests of hosts 2 and 3"
	assert_eq "$(origin_dup_ranges)" "" "ranges the store served twice"
}

@test "tier: with default options a host asks the store only for what its readers read" {
	# The data fits the cache, so without a tier --prefetch auto streams
	# each file whole. Through a tier that would make what a host asks for
	# depend on how far its streams got before it stopped, and every later
	# host would ask the store for the rest: under --tier, auto fetches
	# what is read and nothing else.
	mkdir -p "$T/big"
	"$PY" - "$T/big/big.tif" <<'PY'
import sys, numpy as np, rasterio
from rasterio.transform import from_origin
rng = np.random.default_rng(27)
arr = rng.integers(0, 65535, (1, 4096, 4096), dtype=np.uint16)
prof = dict(driver="GTiff", width=4096, height=4096, count=1, dtype="uint16", tiled=True,
            blockxsize=256, blockysize=256, crs="EPSG:32633",
            transform=from_origin(500000, 5000000, 10, 10))
with rasterio.open(sys.argv[1], "w", **prof) as ds:
    ds.write(arr)
PY
	origin_start "$T/big"
	origin_fault 'rate?bps=20000000'
	tier_start "$ORIGIN_URL"
	local h
	for h in 1 2; do
		tilefs_mount "$ORIGIN_URL" "$T/mnt$h" --cache-dir "$T/cache$h" --tier "$TIER_URL"
		run "$PY" -c 'import sys, rasterio
from rasterio.windows import Window
with rasterio.open(sys.argv[1]) as ds:
    print(ds.read(1, window=Window(1024, 1024, 256, 256)).sum())' "$T/mnt$h/big.tif"
		assert_eq "$status" 0 "a chip through host $h: $output"
		tilefs_umount "$T/mnt$h"
		[ "$h" = 1 ] && local after1=$(wc -l <"$ORIGIN_LOG")
	done
	cat "$ORIGIN_LOG"
	# a header and one 128 KiB tile, with the slivers around it; not the
	# 32 MiB file
	local asked
	asked=$(awk '$1 == "GET" && match($3, /bytes=[0-9]+-[0-9]+/) {
		split(substr($3, RSTART + 6, RLENGTH - 6), b, "-"); n += b[2] - b[1] + 1 }
		END { print n + 0 }' "$ORIGIN_LOG")
	[ "$asked" -lt 1048576 ] || fail "the store was asked for $asked bytes"
	assert_eq "$(wc -l <"$ORIGIN_LOG")" "$after1" "store requests of host 2"
}

@test "tier: with the tier stopped the mount reads from the store, says so once, counts it" {
	origin_start "$SAMPLES"
	tier_start "$ORIGIN_URL"
	tier_stop
	tilefs_mount "$ORIGIN_URL" "$T/mnt" --tier "$TIER_URL" \
		--metrics-file "$T/m.prom"
	run "$PY" "$TESTS_LIB/chips.py" --chips 20 "$T/mnt" "$SAMPLES"
	assert_eq "$status" 0 "chips with the tier down: $output"
	local log=$TILEFS_LOG
	tilefs_umount "$T/mnt"
	assert_eq "$(grep -c "tier $TIER_URL unreachable; reading from the store directly" "$log")" 1 \
		"log lines about the tier"
	[ "$(origin_gets)" -gt 0 ]
	local fallbacks
	fallbacks=$(awk '$1 == "tilefs_tier_fallbacks_total" { print $2 }' "$T/m.prom")
	[ "$fallbacks" -gt 0 ] || fail "tilefs_tier_fallbacks_total: '$fallbacks'"
	# and once the tier is back, after its retry time, the next mount uses it
	TIER_WANT_PORT=$TIER_PORT tier_start "$ORIGIN_URL"
	read_chips 2 "$ORIGIN_URL"
	[ "$(tier_count MISS)" -gt 0 ]
}

@test "tier: Azure Shared Key and SAS requests are accepted by Azurite through the tier" {
	load ../lib/azurite
	azurite_start
	azurite_container cogs
	azurite_put_tree cogs eo "$SAMPLES"
	local src=az://$AZURITE_ACCOUNT/cogs/eo
	tier_start "$src" --endpoint "$AZURITE_ENDPOINT"
	azurite_log_reset
	AZURE_STORAGE_KEY=$AZURITE_KEY read_chips 1 "$src" --endpoint "$AZURITE_ENDPOINT"
	[ "$(azurite_count GET 206)" -gt 0 ] || fail "no ranged GET reached Azurite"
	assert_eq "$(azurite_count GET 403)" 0 "requests Azurite refused"
	[ "$(tier_count MISS)" -gt 0 ] || fail "nothing went through the tier"
	assert_eq "$(azurite_count HEAD 403)" 0 "HEADs Azurite refused"
	local gets
	gets=$(azurite_data_gets)
	# a SAS reader: its ranges come from the tier (keyed without the query)
	AZURE_STORAGE_SAS_TOKEN=$(azurite_sas cogs) read_chips 2 "$src" --endpoint "$AZURITE_ENDPOINT"
	assert_eq "$(azurite_count GET 403)" 0 "SAS requests Azurite refused"
	assert_eq "$(azurite_data_gets)" "$gets" "data GETs of host 2 at Azurite"
}

@test "tier: Signature V4 verifies at the store through the tier (botocore), and s3rver serves it" {
	(cd "$SAMPLES" && find . -name '*.tif' | sed 's|^\./||') >"$T/list"
	"$PY" "$TESTS_LIB/sigv4_store.py" "$SAMPLES" "$T/store.log" >"$T/store.port" 3>&- &
	STORE_PID=$!
	local i
	for ((i = 0; i < 100; i++)); do
		[ -s "$T/store.port" ] && break
		sleep 0.1
	done
	local endpoint=http://127.0.0.1:$(cat "$T/store.port")
	export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_EC2_METADATA_DISABLED=true
	export HOME=$T/home
	tier_start s3://eo --endpoint "$endpoint"
	# the store does check: a wrong signature through the tier is refused
	assert_eq "$(curl -s -o /dev/null -w '%{http_code}' -H "Host: ${endpoint#http://}" \
		-H 'Authorization: AWS4-HMAC-SHA256 Credential=S3RVER/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00' \
		"$TIER_URL/eo/t512.tif")" 403 "a bad signature"
	read_chips 1 s3://eo --endpoint "$endpoint" --list "$T/list"
	awk '{ print $4 }' "$T/store.log" | sort | uniq -c
	[ "$(awk '$4 == 206' "$T/store.log" | wc -l)" -gt 0 ]
	assert_eq "$(awk '$4 != 206' "$T/store.log" | wc -l)" 1 "store answers other than 206 (the bad one)"
	local before
	before=$(wc -l <"$T/store.log")
	read_chips 2 s3://eo --endpoint "$endpoint" --list "$T/list"
	assert_eq "$(wc -l <"$T/store.log")" "$before" "store requests of host 2"
	tier_stop
	kill "$STORE_PID"
	STORE_PID=

	load ../lib/s3rver
	S3_BUCKET=eo
	s3rver_start eo
	s3_upload "$SAMPLES" data
	tier_start s3://eo --endpoint "$S3_ENDPOINT"
	read_chips 3 s3://eo/data --endpoint "$S3_ENDPOINT"
	[ "$(s3_data_gets)" -gt 0 ]
	[ "$(tier_count MISS)" -gt 0 ]
}

@test "tier: --secret: the tier refuses requests without it; tilefs sends it, never to the store" {
	origin_start "$SAMPLES"
	tier_start "$ORIGIN_URL" --secret s3cr3t-tier
	assert_eq "$(curl -s -o /dev/null -w '%{http_code}' -H "Host: 127.0.0.1:$ORIGIN_PORT" \
		"$TIER_URL/t512.tif")" 403 "no secret"
	tier_log_reset
	read_chips 1 "$ORIGIN_URL" --tier-secret s3cr3t-tier --log-level debug
	[ "$(tier_count MISS)" -gt 0 ]
	assert_eq "$(awk '$5 == 403' "$TIER_LOG" | wc -l)" 0 "refused requests"
	! grep -rq s3cr3t-tier "$T"/tilefs-state.*/tilefs.log "$ORIGIN_LOG_FULL"
	# from the environment too
	TILEFS_TIER_SECRET=s3cr3t-tier read_chips 2 "$ORIGIN_URL"
	assert_eq "$(awk '$5 == 403' "$TIER_LOG" | wc -l)" 0 "refused requests"
	[ "$(tier_count HIT)" -gt 0 ]
}

@test "tier-config: an https store is verified by name; bad options are refused" {
	# (a name that resolves here: nginx -t looks the upstream up)
	tilefs_run tier-config https://localhost/eo/ --listen 10.0.0.5:8080 \
		--cache-dir "$T/tier" --cache-size 1G --inactive 2d
	assert_eq "$status" 0 "exit status"
	[[ $out == *"proxy_ssl_verify on;"* ]]
	[[ $out == *"proxy_ssl_name localhost;"* ]]
	[[ $out == *"proxy_ssl_server_name on;"* ]]
	[[ $out == *"server localhost:443;"* ]]
	[[ $out == *"proxy_cache_lock on;"* ]]
	[[ $out == *"listen 10.0.0.5:8080;"* ]]
	[[ $out == *"max_size=1024m inactive=2d"* ]]
	printf '%s\n' "$out" | sed "s|^user .*|user root;|; s|/var/log/nginx|$T|; s|/run/|$T/|;
		s|listen 10.0.0.5:8080;|listen 127.0.0.1:$(_origin_free_port);|" >"$T/tier.conf"
	run "$ORIGIN_NGINX" -t -p "$T" -c "$T/tier.conf" -e "$T/error.log"
	assert_eq "$status" 0 "nginx -t: $output"
	tilefs_run tier-config --listen '1;2' https://data.example.org/
	assert_eq "$status" 2 "a listen address with ';'"
	tilefs_run tier-config
	assert_eq "$status" 2 "no store"
	mkdir -p "$T/mnt"
	tilefs_run mount http://127.0.0.1:9/ "$T/mnt" --tier ftp://tier/ --cache-dir "$T/cache"
	assert_eq "$status" 2 "ftp tier"
	[[ $err1 == *"--tier: 'ftp://tier/' is not an http:// or https:// URL"* ]] || fail "$err1"
}

@test "tier: --slice tier filled by warm --shard 1/2 and 2/2; a third host reads with no store request" {
	origin_start "$SAMPLES"
	tier_start "$ORIGIN_URL" --slice 1M
	run "$TILEFS" warm "$ORIGIN_URL" --tier "$TIER_URL" --shard 1/2 --cache-dir "$T/warm1"
	assert_eq "$status" 0 "warm 1/2: $output"
	run "$TILEFS" warm "$ORIGIN_URL" --tier "$TIER_URL" --shard 2/2 --cache-dir "$T/warm2"
	assert_eq "$status" 0 "warm 2/2: $output"
	local after
	after=$(wc -l <"$ORIGIN_LOG")
	[ "$after" -gt 0 ]
	# the warms asked for big runs, the mount for tiles: slices serve both
	read_chips 3 "$ORIGIN_URL" --prefetch auto
	tilefs_mount "$ORIGIN_URL" "$T/mnt4" --cache-dir "$T/cache4" --tier "$TIER_URL"
	cmp_tree "$SAMPLES" "$T/mnt4"
	tilefs_umount "$T/mnt4"
	tail -n +$((after + 1)) "$ORIGIN_LOG"
	assert_eq "$(wc -l <"$ORIGIN_LOG")" "$after" "store requests of the third and fourth host"
}

# gcs_setup: the sample data as bucket "eo" of a GCS-like https store
# (tier_store_start --tls), a --from-file list of its files in $T/list.
gcs_setup() {
	mkdir -p "$T/store"
	ln -s "$SAMPLES" "$T/store/eo"
	(cd "$SAMPLES" && find . -name '*.tif' | sed 's|^\./||') >"$T/list"
	tier_store_start "$T/store" --tls
	GCS_ENDPOINT=https://localhost:$STORE_PORT
}

@test "tier: an http:// tier for an https store is refused with a bearer token or a SAS, unless --tier-allow-http" {
	gcs_setup
	tier_start "$STORE_URL" --ca-file "$STORE_CA"
	tier_log_reset
	local token=ya29.tilefs-test-token
	export GOOGLE_OAUTH_ACCESS_TOKEN=$token
	mkdir -p "$T/mnt"
	tilefs_run warm gs://eo/ --endpoint "$GCS_ENDPOINT" --ca-file "$STORE_CA" \
		--from-file "$T/list" --tier "$TIER_URL" --cache-dir "$T/cache"
	assert_eq "$status" 2 "warm of a bearer-token source through an http tier"
	[[ $err == *"--tier $TIER_URL is plain HTTP, and every request for gs://eo/ carries the bearer token of GOOGLE_OAUTH_ACCESS_TOKEN"* ]] || fail "$err"
	[[ $err == *"--tier-allow-http"* && $err == *"--tier-ca-file"* && $err == *"--help"* ]] || fail "$err"
	tilefs_run mount gs://eo/ "$T/mnt" --endpoint "$GCS_ENDPOINT" --ca-file "$STORE_CA" \
		--tier "$TIER_URL" --cache-dir "$T/cache"
	assert_eq "$status" 2 "mount of a bearer-token source through an http tier"
	[[ $err == *"is plain HTTP"*"--tier-allow-http"* ]] || fail "$err"
	unset GOOGLE_OAUTH_ACCESS_TOKEN
	# a SAS, in SOURCE or in the environment
	tilefs_run mount "az://acct/cogs/eo?sv=2021-08-06&sig=SASSIG" "$T/mnt" \
		--endpoint "$GCS_ENDPOINT" --tier "$TIER_URL" --cache-dir "$T/cache"
	assert_eq "$status" 2 "mount of a SAS source through an http tier"
	[[ $err == *"carries the SAS in SOURCE"*"--tier-allow-http"* ]] || fail "$err"
	[[ $err != *SASSIG* ]] || fail "the SAS on stderr: $err"
	AZURE_STORAGE_SAS_TOKEN='sv=2021-08-06&sig=SASSIG' tilefs_run warm az://acct/cogs/eo \
		--endpoint "$GCS_ENDPOINT" --tier "$TIER_URL" --cache-dir "$T/cache"
	assert_eq "$status" 2 "warm of a SAS source through an http tier"
	[[ $err == *"carries the SAS of AZURE_STORAGE_SAS_TOKEN"* ]] || fail "$err"
	# a token in the query of an https source
	tilefs_run mount "${STORE_URL}eo/?token=qtok" "$T/mnt" --ca-file "$STORE_CA" \
		--tier "$TIER_URL" --cache-dir "$T/cache"
	assert_eq "$status" 2 "mount of a source with a query through an http tier"
	[[ $err == *"carries the query string of SOURCE"* ]] || fail "$err"
	assert_eq "$(wc -l <"$TIER_LOG")" 0 "requests the tier saw from refused commands"
	assert_eq "$(wc -l <"$STORE_LOG")" 0 "requests the store saw from refused commands"

	# the opt-in: the token goes through the tier, as asked
	GOOGLE_OAUTH_ACCESS_TOKEN=$token tilefs_run warm gs://eo/ --endpoint "$GCS_ENDPOINT" \
		--ca-file "$STORE_CA" --from-file "$T/list" --tier "$TIER_URL" --tier-allow-http \
		--cache-dir "$T/cache"
	assert_eq "$status" 0 "warm with --tier-allow-http"
	[ "$(tier_count MISS)" -gt 0 ] || fail "nothing went through the tier"
	grep -q "\"Bearer $token\"" "$STORE_LOG" || fail "the store never saw the token"
	tilefs_mount "${STORE_URL}eo/?token=qtok" "$T/mnt" --ca-file "$STORE_CA" \
		--tier "$TIER_URL" --tier-allow-http --cache-dir "$T/cache2"
	cmp_tree "$SAMPLES" "$T/mnt"
	tilefs_umount "$T/mnt"
	# and an anonymous source or a signature binding one request is not refused
	tilefs_run warm gs://eo/ --endpoint "$GCS_ENDPOINT" --ca-file "$STORE_CA" \
		--from-file "$T/list" --tier "$TIER_URL" --no-sign-request --cache-dir "$T/cache3"
	assert_eq "$status" 0 "anonymous warm through an http tier"
	GS_ACCESS_KEY_ID=GOOG1TEST GS_SECRET_ACCESS_KEY=hmacsecret tilefs_run warm gs://eo/ \
		--endpoint "$GCS_ENDPOINT" --ca-file "$STORE_CA" --from-file "$T/list" \
		--tier "$TIER_URL" --cache-dir "$T/cache4"
	assert_eq "$status" 0 "HMAC-signed warm through an http tier"
}

@test "tier: an https tier (tier-config --tls-cert) carries a bearer token, verified with --tier-ca-file" {
	gcs_setup
	TIER_TLS=1 tier_start "$STORE_URL" --ca-file "$STORE_CA"
	[[ $TIER_URL == https://* ]]
	export GOOGLE_OAUTH_ACCESS_TOKEN=ya29.tilefs-test-token
	run "$TILEFS" warm gs://eo/ --endpoint "$GCS_ENDPOINT" --ca-file "$STORE_CA" \
		--from-file "$T/list" --tier "$TIER_URL" --tier-ca-file "$TIER_CA" --cache-dir "$T/cache1"
	assert_eq "$status" 0 "warm through the https tier: $output"
	[ "$(tier_count MISS)" -gt 0 ] || fail "nothing went through the tier"
	# a second host reads through it: every range a hit, none from the store
	local before
	before=$(awk '$4 == 206' "$STORE_LOG" | wc -l)
	run "$TILEFS" warm gs://eo/ --endpoint "$GCS_ENDPOINT" --ca-file "$STORE_CA" \
		--from-file "$T/list" --tier "$TIER_URL" --tier-ca-file "$TIER_CA" --cache-dir "$T/cache2"
	assert_eq "$status" 0 "second warm: $output"
	assert_eq "$(awk '$4 == 206' "$STORE_LOG" | wc -l)" "$before" "ranges of host 2 from the store"
	# the tier's certificate is checked: without its CA the mount fails, naming the option
	mkdir -p "$T/mnt"
	tilefs_run mount "${STORE_URL}eo/" "$T/mnt" --ca-file "$STORE_CA" --tier "$TIER_URL" \
		--cache-dir "$T/cache3"
	assert_eq "$status" 1 "mount through an https tier not trusted"
	[[ $err == *"--tier-ca-file"* ]] || fail "$err"
	tilefs_mount "${STORE_URL}eo/?token=qtok" "$T/mnt" --ca-file "$STORE_CA" \
		--tier "$TIER_URL" --tier-ca-file "$TIER_CA" --cache-dir "$T/cache4"
	cmp_tree "$SAMPLES" "$T/mnt"
	tilefs_umount "$T/mnt"
	# --tier-ca-file is for an https tier
	tilefs_run mount "${STORE_URL}eo/" "$T/mnt" --tier "http://127.0.0.1:$TIER_PORT" \
		--tier-ca-file "$TIER_CA"
	assert_eq "$status" 2 "--tier-ca-file with an http tier"
	[[ $err == *"--tier-ca-file is for an https:// tier"* ]] || fail "$err"
}

@test "tier: a redirect through the tier never carries the tier's secret or Host to another server" {
	tier_store_start "$SAMPLES"
	tier_start "$STORE_REDIRECT_URL" --secret s3cr3t-tier
	tilefs_mount "$STORE_REDIRECT_URL" "$T/mnt" --tier "$TIER_URL" --tier-secret s3cr3t-tier
	cmp_tree "$SAMPLES" "$T/mnt"
	tilefs_umount "$T/mnt"
	cat "$STORE_LOG"
	[ "$(awk '$1 == "GET"' "$STORE_LOG" | wc -l)" -gt 0 ] || fail "nothing reached the redirect's target"
	assert_eq "$(grep -c s3cr3t-tier "$STORE_LOG")" 0 "requests at the target with the tier's secret"
	assert_eq "$(grep -vc "\"127.0.0.1:$STORE_PORT\" \"-\"" "$STORE_LOG")" 0 \
		"requests at the target with another Host or the secret"
}

@test "tier-config: 127.0.0.1 unless told, a warning without a secret, a pid file, cache and logs per listener" {
	tier_store_start "$SAMPLES"
	tilefs_run tier-config "$STORE_URL"
	assert_eq "$status" 0 "exit status"
	[[ $out == *"listen 127.0.0.1:8080;"* ]] || fail "$out"
	[[ $out == *"pid /run/tilefs-tier-127.0.0.1-8080.pid;"* ]] || fail "$out"
	[[ $err == *"warning: no --secret (nor TILEFS_TIER_SECRET): the tier answers whoever reaches 127.0.0.1:8080"* ]] || fail "$err"
	tilefs_run tier-config "$STORE_URL" --listen 10.0.0.5:8081 --secret s3cr3t-tier
	[[ $out == *"pid /run/tilefs-tier-10.0.0.5-8081.pid;"* ]] || fail "$out"
	[[ $out == *"proxy_cache_path /var/cache/tilefs-tier-10.0.0.5-8081 "* ]] || fail "$out"
	[[ $out == *"access_log /var/log/nginx/tilefs-tier-10.0.0.5-8081.access.log "* ]] || fail "$out"
	[[ $out == *"error_log /var/log/nginx/tilefs-tier-10.0.0.5-8081.error.log "* ]] || fail "$out"
	assert_eq "$err" "" "stderr with a secret"
	tilefs_run tier-config "$STORE_URL" --tls-cert "$T/c.pem"
	assert_eq "$status" 2 "--tls-cert without --tls-key"
}

@test "tier: GET and HEAD only reach the store through the tier, even with the secret" {
	tier_store_start "$SAMPLES"
	tier_start "$STORE_URL" --secret s3cr3t-tier
	local m code
	for m in PUT DELETE POST PATCH; do
		code=$(curl -s -o /dev/null -w '%{http_code}' -X "$m" -H "Host: 127.0.0.1:$STORE_PORT" \
			-H 'X-Tilefs-Tier-Secret: s3cr3t-tier' --data-binary x "$TIER_URL/t512.tif")
		assert_eq "$code" 405 "$m through the tier"
	done
	assert_eq "$(curl -s -o /dev/null -w '%{http_code}' -I -H "Host: 127.0.0.1:$STORE_PORT" \
		-H 'X-Tilefs-Tier-Secret: s3cr3t-tier' "$TIER_URL/t512.tif")" 200 "HEAD through the tier"
	cat "$STORE_LOG"
	assert_eq "$(awk '$1 != "GET" && $1 != "HEAD"' "$STORE_LOG" | wc -l)" 0 \
		"requests at the store other than GET and HEAD"
	[ "$(awk '$1 == "HEAD"' "$STORE_LOG" | wc -l)" -gt 0 ] || fail "the HEAD did not reach the store"
}

@test "tier: a client's extra header (x-ms-range) never reaches the store, nor poisons the tier's cache" {
	tier_store_start "$SAMPLES"
	tier_start "$STORE_URL"
	# as tilefs opens random.bin: its first --header-size bytes (64K) without If-Match;
	# the store honours x-ms-range over Range (Azure does)
	curl -s -o "$T/poison" -H "Host: 127.0.0.1:$STORE_PORT" -H 'Range: bytes=0-65535' \
		-H 'x-ms-range: bytes=65536-131071' "$TIER_URL/random.bin"
	tilefs_mount "$STORE_URL" "$T/mnt" --tier "$TIER_URL" --retries 1
	run_to 120 cmp "$SAMPLES/random.bin" "$T/mnt/random.bin"
	cmp_tree "$SAMPLES" "$T/mnt"
	tilefs_umount "$T/mnt"
	assert_eq "$(grep -c 'bytes=65536-131071' "$STORE_LOG")" 0 "x-ms-range at the store"
}

@test "tier: web identity (STS) keys sign what the store checks through a tier-config tier; STS is asked directly" {
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN
	export AWS_EC2_METADATA_DISABLED=true HOME=$T/home
	(cd "$SAMPLES" && find . -type f | sed 's|^\./||' | sort) >"$T/list"
	mkdir -p "$T/id"
	"$PY" "$TESTS_LIB/aws_identity.py" "$T/id" 2>"$T/identity.err" 3>&- &
	local idpid=$!
	TILEFS_EXTRA_PIDS+=("$idpid")
	SIGV4_KEYS=$T/id/keys.json "$PY" "$TESTS_LIB/sigv4_store.py" "$SAMPLES" "$T/store.log" \
		>"$T/store.port" 3>&- &
	STORE_PID=$!
	wait_until "the identity emulator's start" test -s "$T/id/port"
	wait_until "the store's start" test -s "$T/store.port"
	local endpoint=http://127.0.0.1:$(cat "$T/store.port") sts=http://127.0.0.1:$(cat "$T/id/port")
	echo "oidc-token-tier" >"$T/web-token"
	ln -s "$T/web-token" "$T/id/web-token"
	export AWS_WEB_IDENTITY_TOKEN_FILE=$T/web-token AWS_ROLE_ARN=arn:aws:iam::123456789012:role/reader
	export AWS_ENDPOINT_URL_STS=$sts
	tier_start s3://eo --endpoint "$endpoint"
	tier_log_reset
	read_chips 1 s3://eo --endpoint "$endpoint" --list "$T/list"
	kill "$idpid"
	awk '{ print $4, $7 }' "$T/store.log" | sort | uniq -c
	[ "$(awk '$4 == 206 && $7 ~ /^ASIA/' "$T/store.log" | wc -l)" -gt 0 ] ||
		fail "no ranged GET signed with the issued keys reached the store"
	assert_eq "$(awk '$4 != 206 && $4 != 200' "$T/store.log" | wc -l)" 0 "store refusals"
	[ "$(tier_count MISS)" -gt 0 ] || fail "nothing went through the tier"
	assert_eq "$(grep -c '^sts POST / 200 issued' "$T/id/log")" 1 "STS answers"
	! grep -q " GET / " "$TIER_LOG" || fail "STS was asked through the tier"
	# a second host, its own web identity keys: the tier answers, the store sees nothing
	local before
	before=$(wc -l <"$T/store.log")
	"$PY" "$TESTS_LIB/aws_identity.py" "$T/id" --port "$(cat "$T/id/port")" 2>>"$T/identity.err" 3>&- &
	idpid=$!
	TILEFS_EXTRA_PIDS+=("$idpid")
	wait_until "the identity emulator's restart" grep -q . "$T/id/port"
	wait_until "STS answering" curl -s -o /dev/null "$sts/latest/"
	read_chips 2 s3://eo --endpoint "$endpoint" --list "$T/list"
	kill "$idpid"
	assert_eq "$(grep -c '^sts POST / 200 issued' "$T/id/log")" 2 "STS answers (one per host)"
	assert_eq "$(wc -l <"$T/store.log")" "$before" "store requests of host 2"
}

@test "tier: a GCS bearer token from the metadata server: refused through an http tier, served through an https one (--tier-ca-file)" {
	. "$TESTS_LIB/cloud_identity.bash"
	unset GOOGLE_OAUTH_ACCESS_TOKEN GS_ACCESS_KEY_ID GS_SECRET_ACCESS_KEY GOOGLE_APPLICATION_CREDENTIALS
	export CLOUDSDK_CONFIG=$T/gcloud
	local secret
	secret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
	mkdir -p "$T/gcs/eo"
	cp -r "$SAMPLES/." "$T/gcs/eo/"
	(cd "$SAMPLES" && find . -type f | sed 's|^\./||' | sort) >"$T/list"
	# a name nginx can verify as a tier's upstream (it checks DNS names)
	_tier_make_tls "$T/plane-tls" "DNS:localhost,IP:127.0.0.1"
	identity_start --secret "$secret" --lifetime 60
	gcs_plane_start --secret "$secret" --gcs-root "$T/gcs" \
		--tls-cert "$T/plane-tls/server.pem" --tls-key "$T/plane-tls/server.key"
	TILEFS_EXTRA_PIDS+=("$(cat "$IDENTITY_DIR/pid")" "$(cat "$GCS_PLANE_DIR/pid")")
	export GCE_METADATA_HOST=$IDENTITY_HOST
	local endpoint=https://localhost:$GCS_PLANE_PORT ca=$T/plane-tls/ca.pem
	# plain http: the token would cross it in clear; refused before any request
	tier_start gs://eo --endpoint "$endpoint" --ca-file "$ca"
	tier_log_reset
	mkdir -p "$T/mnt"
	tilefs_run mount gs://eo "$T/mnt" --endpoint "$endpoint" --ca-file "$ca" \
		--tier "$TIER_URL" --cache-dir "$T/cache0"
	assert_eq "$status" 2 "mount of a metadata-server source through an http tier"
	[[ $err == *"is plain HTTP"*"bearer token"*"--tier-allow-http"* && $err == *"--tier-ca-file"* ]] ||
		fail "$err"
	assert_eq "$(wc -l <"$TIER_LOG")" 0 "requests the http tier saw"
	tier_stop
	local tokens
	tokens=$(identity_tokens)
	TIER_TLS=1 tier_start gs://eo --endpoint "$endpoint" --ca-file "$ca"
	read_chips 1 gs://eo --endpoint "$endpoint" --ca-file "$ca" --tier-ca-file "$TIER_CA"
	awk '{ print $1, $3 }' "$GCS_PLANE_LOG" | sort | uniq -c
	[ "$(awk '$1 == "GET" && $3 == 206' "$GCS_PLANE_LOG" | wc -l)" -gt 0 ] ||
		fail "no ranged GET reached the data plane"
	assert_eq "$(awk '$3 == 401' "$GCS_PLANE_LOG" | wc -l)" 0 "requests the data plane refused"
	[ "$(tier_count MISS)" -gt 0 ] || fail "nothing went through the tier"
	! grep -q computeMetadata "$TIER_LOG" || fail "the metadata server was asked through the tier"
	assert_eq "$(identity_tokens)" $((tokens + 1)) "tokens from the metadata server"
	# a second host: its own token, every range from the tier
	local before
	before=$(awk '$1 == "GET" && $3 == 206' "$GCS_PLANE_LOG" | wc -l)
	read_chips 2 gs://eo --endpoint "$endpoint" --ca-file "$ca" --tier-ca-file "$TIER_CA"
	assert_eq "$(identity_tokens)" $((tokens + 2)) "tokens (one per host)"
	assert_eq "$(awk '$1 == "GET" && $3 == 206' "$GCS_PLANE_LOG" | wc -l)" "$before" \
		"ranges of host 2 from the data plane"
	identity_stop
	gcs_plane_stop
}
