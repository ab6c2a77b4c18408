#!/usr/bin/env bats
# S3 (s3rver on 127.0.0.1) and GCS's XML API (the same server, anonymous):
# listings, pagination, bytes, the persistent cache, credentials and their
# messages, secrets kept out of logs, and signing checked against botocore.

bats_require_minimum_version 1.5.0
load ../lib/tilefs
load ../lib/s3rver

setup() {
	tilefs_setup
	S3_BUCKET=eo
	s3rver_start "$S3_BUCKET"
	s3_upload "$SAMPLES" data
	MNT=$T/mnt
	mkdir -p "$MNT"
	export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_EC2_METADATA_DISABLED=true
	export HOME=$T/home
}

teardown() {
	tilefs_teardown
	s3rver_stop
	sigv4_store_stop
	[ -z "${IDENTITY_PID:-}" ] || kill "$IDENTITY_PID" 2>/dev/null || true
	[ -z "${STORE_PID:-}" ] || kill "$STORE_PID" 2>/dev/null || true
}

# identity_start: the AWS identity emulator (tests/lib/aws_identity.py) in
# $T/id, and the Signature V4 store in front of $SAMPLES that accepts only
# the keys it issued (while they are valid); sets ID_URL, STORE_URL and
# $T/list (every sample, for --list). No other credential is left set.
identity_start() {
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN
	ID=$T/id
	mkdir -p "$ID"
	[ -z "${1:-}" ] || echo "$1" >"$ID/lifetime"
	"$PY" "$TESTS_LIB/aws_identity.py" "$ID" 2>"$T/identity.err" 3>&- &
	IDENTITY_PID=$!
	SIGV4_KEYS=$ID/keys.json "$PY" "$TESTS_LIB/sigv4_store.py" "$SAMPLES" "$T/store.log" \
		>"$T/store.port" 2>"$T/store.err" 3>&- &
	STORE_PID=$!
	wait_until "the identity emulator's start" test -s "$ID/port"
	wait_until "the store's start" test -s "$T/store.port"
	ID_URL=http://127.0.0.1:$(cat "$ID/port")
	STORE_URL=http://127.0.0.1:$(cat "$T/store.port")
	(cd "$SAMPLES" && find . -type f | sed 's|^\./||' | sort) >"$T/list"
}

# no_issued_secret FILE...: no secret key or session token the emulator
# issued appears in FILE
no_issued_secret() {
	"$PY" - "$ID/keys.json" "$@" <<'PY'
import json, sys
keys = json.load(open(sys.argv[1]))["keys"]
for path in sys.argv[2:]:
    text = open(path, errors="replace").read()
    for k in keys:
        for secret in (k["SecretAccessKey"], k["Token"], k["Token"][:40]):
            if secret in text:
                sys.exit(f"{path} holds an issued secret")
PY
}

# issued: credentials the emulator has issued so far
issued() {
	grep -c ' issued ' "$ID/log" 2>/dev/null || true
}

# read_all: every sample through the mount, byte for byte
read_all() {
	local f
	while read -r f; do
		cmp "$SAMPLES/$f" "$MNT/$f" || return 1
	done <"$T/list"
}

@test "s3: listing shows exactly the objects and prefixes; every file reads identical" {
	tilefs_mount "s3://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT"
	assert_eq "$(cd "$MNT" && find . | sort)" "$(cd "$SAMPLES" && find . | sort)" "tree"
	cmp_tree "$SAMPLES" "$MNT"
	for f in $(cd "$SAMPLES" && find . -type f); do
		assert_eq "$(stat -c %s "$MNT/$f")" "$(stat -c %s "$SAMPLES/$f")" "size of $f"
	done
}

@test "s3: a file's mtime is its Last-Modified before it is ever opened (from the listing)" {
	sleep 2		# the mount's start time is not the upload's
	tilefs_mount "s3://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT"
	local listed lm
	listed=$(stat -c %Y "$MNT/t256.tif")
	lm=$(/usr/bin/python3 - "$S3_ENDPOINT" "$S3_BUCKET" data/t256.tif <<'PY'
import sys, boto3
s3 = boto3.client("s3", endpoint_url=sys.argv[1], aws_access_key_id="S3RVER",
                  aws_secret_access_key="S3RVER", region_name="us-east-1")
print(int(s3.head_object(Bucket=sys.argv[2], Key=sys.argv[3])["LastModified"].timestamp()))
PY
)
	assert_eq "$listed" "$lm" "mtime of t256.tif, not yet opened"
}

@test "s3: rasterio reads the same window through the mount" {
	tilefs_mount "s3://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT"
	local tif
	tif=$(cd "$SAMPLES" && find . -name '*.tif' | head -1)
	/usr/bin/python3 - "$SAMPLES/$tif" "$MNT/$tif" <<'PY'
import sys, rasterio, numpy
a, b = (rasterio.open(p) for p in sys.argv[1:3])
w = ((0, min(256, a.height)), (0, min(256, a.width)))
assert numpy.array_equal(a.read(window=w), b.read(window=w)), "windows differ"
PY
}

@test "s3: a remount on the same cache dir reads everything without a data GET or a HEAD" {
	tilefs_mount "s3://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT"
	cmp_tree "$SAMPLES" "$MNT"
	tilefs_umount "$MNT"
	local before heads
	before=$(s3_data_gets)
	heads=$(s3_object_200s)
	[ "$before" -gt 0 ]
	tilefs_mount "s3://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT"
	cmp_tree "$SAMPLES" "$MNT"
	assert_eq "$(s3_data_gets)" "$before" "ranged GETs after the remount"
	# the listing's ETags say the cached versions are current
	assert_eq "$(s3_object_200s)" "$heads" "HEADs after the remount"
}

@test "s3: an object rewritten at the same size while unmounted: the remount reads the new bytes" {
	tilefs_mount "s3://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT"
	cmp_tree "$SAMPLES" "$MNT"
	tilefs_umount "$MNT"
	mkdir -p "$T/new"
	same_size_rewrite "$SAMPLES/t512.tif" "$T/new/t512.tif"
	s3_upload "$T/new" data
	local heads
	heads=$(s3_object_200s)
	tilefs_mount "s3://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT"
	cmp "$T/new/t512.tif" "$MNT/t512.tif" || fail "the remount served the old version"
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	# the changed ETag costs t512.tif a HEAD (which also shows the log counts them)
	assert_eq "$(s3_object_200s)" "$((heads + 1))" "HEADs after the remount"
}

# store_lines WHAT: the lines of the Signature V4 store's log for the object
# at PATH (not listings)
store_lines() {
	grep -a "^[A-Z]* /eo/$1 " "$SIGV4_LOG" || true
}

@test "s3: a mount whose key may only LIST serves no byte of an object another key read; it asks with its own key, refused" {
	sigv4_store_start "$SAMPLES"
	# mount A: its key may GET; it reads t512.tif whole
	tilefs_mount s3://eo "$MNT" --endpoint "$SIGV4_ENDPOINT"
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif" || fail "mount A read other bytes"
	tilefs_umount "$MNT"
	[ -n "$(store_lines t512.tif | awk '$7 == "S3RVER" && $4 ~ /^20/')" ] ||
		fail "mount A fetched nothing of t512.tif"
	# mount B on the same cache dir: its key may only LIST
	local before
	before=$(store_lines t512.tif | wc -l)
	AWS_ACCESS_KEY_ID=LISTONLY AWS_SECRET_ACCESS_KEY=LISTONLY \
		tilefs_mount s3://eo "$MNT" --endpoint "$SIGV4_ENDPOINT"
	ls "$MNT" | grep -qx t512.tif || fail "mount B does not list t512.tif"
	run -1 cat "$MNT/t512.tif"
	[[ "$output" == *"Permission denied"* ]] || fail "cat says: $output"
	/usr/bin/python3 - "$MNT/t512.tif" <<'PY' || fail "mount B served bytes of t512.tif"
import sys
try:
    with open(sys.argv[1], "rb") as f:
        data = f.read()
except OSError as e:
    print("refused:", e)
    sys.exit(0)
print(len(data), "bytes served")
sys.exit(1)
PY
	store_lines t512.tif
	[ -n "$(store_lines t512.tif | tail -n +"$((before + 1))" | awk '$7 == "LISTONLY" && $4 == 403')" ] ||
		fail "the store saw no request of mount B's for t512.tif"
	assert_eq "$(store_lines t512.tif | tail -n +"$((before + 1))" | awk '$4 !~ /^403/' | wc -l)" 0 \
		"requests for t512.tif the store answered to mount B"
	tilefs_umount "$MNT"
}

@test "s3: a remount by the key that read an object sends no request for it, a listing's ETag vouching, however long after" {
	sigv4_store_start "$SAMPLES"
	# --ttl 1 and a pause of 2 s: the remount comes after the ttl, as a
	# remount with the default 60 s usually does; the proof stands as long
	# as the version
	tilefs_mount s3://eo "$MNT" --endpoint "$SIGV4_ENDPOINT" --ttl 1
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"
	tilefs_umount "$MNT"
	local before
	before=$(store_lines t512.tif | wc -l)
	[ "$before" -gt 0 ] || fail "the first mount fetched nothing"
	sleep 2
	tilefs_mount s3://eo "$MNT" --endpoint "$SIGV4_ENDPOINT" --ttl 1
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif" || fail "the remount read other bytes"
	tilefs_umount "$MNT"
	store_lines t512.tif
	assert_eq "$(store_lines t512.tif | wc -l)" "$before" "requests for t512.tif after the remount"
}

@test "s3: a warm with a key that may GET proves only itself: a LIST-only mount after it is refused, the warm's key's mount asks nothing" {
	sigv4_store_start "$SAMPLES"
	tilefs_run warm --cache-dir "$T/cache" --endpoint "$SIGV4_ENDPOINT" s3://eo t512.tif
	assert_eq "$status" 0 "exit status of the warm"
	local before
	before=$(store_lines t512.tif | wc -l)
	[ "$before" -gt 0 ] || fail "the warm fetched nothing of t512.tif"
	AWS_ACCESS_KEY_ID=LISTONLY AWS_SECRET_ACCESS_KEY=LISTONLY \
		tilefs_mount s3://eo "$MNT" --endpoint "$SIGV4_ENDPOINT"
	run -1 cat "$MNT/t512.tif"
	[[ "$output" == *"Permission denied"* ]] || fail "cat says: $output"
	tilefs_umount "$MNT"
	store_lines t512.tif
	assert_eq "$(store_lines t512.tif | tail -n +"$((before + 1))" | awk '$7 != "LISTONLY" || $4 != 403' | wc -l)" 0 \
		"requests for t512.tif after the warm other than the LIST-only key's refused ones"
	[ "$(store_lines t512.tif | wc -l)" -gt "$before" ] || fail "the LIST-only mount asked nothing"
	before=$(store_lines t512.tif | wc -l)
	tilefs_mount s3://eo "$MNT" --endpoint "$SIGV4_ENDPOINT"
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif" || fail "the warm key's mount read other bytes"
	tilefs_umount "$MNT"
	assert_eq "$(store_lines t512.tif | wc -l)" "$before" "requests for t512.tif by the warm key's mount"
}

@test "s3: role keys from the metadata service that rotate are one identity: a remount with the next hour's keys asks nothing" {
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_EC2_METADATA_DISABLED
	sigv4_store_start "$SAMPLES"
	local port key imds before
	port=$(_free_port)	# one address, as the instance's metadata service has
	for key in ROLEKEY1 ROLEKEY2; do
		# (a log of its own: the last one's "ready" must not be read
		# before this one truncates it)
		/usr/bin/python3 "$BATS_TEST_DIRNAME/../lib/imds_fake.py" "$port" "$key" \
			>"$T/imds-$key.log" 2>&1 3>&- &
		imds=$!
		TILEFS_EXTRA_PIDS+=("$imds")	# killed by the teardown if the test fails
		wait_until "the fake metadata service's start" grep -q ready "$T/imds-$key.log"
		AWS_EC2_METADATA_SERVICE_ENDPOINT=http://127.0.0.1:$port \
			tilefs_mount s3://eo "$MNT" --endpoint "$SIGV4_ENDPOINT"
		kill "$imds"
		wait "$imds" 2>/dev/null || true	# its port free for the next one
		[ "$key" = ROLEKEY2 ] && before=$(store_lines t512.tif | wc -l)
		cmp "$SAMPLES/t512.tif" "$MNT/t512.tif" || fail "the mount with $key read other bytes"
		tilefs_umount "$MNT"
	done
	awk '$7 == "ROLEKEY2"' "$SIGV4_LOG" | grep -q . || fail "the remount did not use the new keys"
	store_lines t512.tif
	assert_eq "$(store_lines t512.tif | wc -l)" "$before" "requests for t512.tif with the next hour's keys"
}

@test "s3: warm twice: the second run asks for nothing but listings (their ETags vouch)" {
	local c=$T/cache heads gets
	tilefs_run warm --cache-dir "$c" --endpoint "$S3_ENDPOINT" "s3://$S3_BUCKET/data"
	assert_eq "$status" 0 "exit status of the first warm"
	gets=$(s3_data_gets)
	heads=$(s3_object_200s)
	[ "$gets" -gt 0 ] || fail "the first warm fetched nothing"
	tilefs_run warm --cache-dir "$c" --endpoint "$S3_ENDPOINT" "s3://$S3_BUCKET/data"
	assert_eq "$status" 0 "exit status of the second warm"
	[[ $out == *"0 failed"* ]] || fail "the second warm says: $out"
	assert_eq "$(s3_data_gets)" "$gets" "ranged GETs of the second warm"
	assert_eq "$(s3_object_200s)" "$heads" "HEADs of the second warm"
	tilefs_mount "s3://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT" --cache-dir "$c"
	cmp_tree "$SAMPLES" "$MNT"
	assert_eq "$(s3_data_gets)" "$gets" "ranged GETs through the mount"
	assert_eq "$(s3_object_200s)" "$heads" "HEADs through the mount"
}

@test "s3: --page-size 2 lists a directory of more objects than a page holds" {
	mkdir -p "$T/many"
	for i in $(seq 1 7); do echo "object $i" > "$T/many/o$i.txt"; done
	s3_upload "$T/many" many
	tilefs_mount "s3://$S3_BUCKET/many" "$MNT" --endpoint "$S3_ENDPOINT" --page-size 2
	assert_eq "$(ls "$MNT" | tr '\n' ' ')" "o1.txt o2.txt o3.txt o4.txt o5.txt o6.txt o7.txt " "listing"
	grep -aq 'max-keys' "$S3_LOG" || grep -aq 'maxKeys":2' "$S3_LOG"
	cmp "$T/many/o7.txt" "$MNT/o7.txt"
}

@test "s3: credentials from a profile in AWS_SHARED_CREDENTIALS_FILE" {
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
	printf '[tiles]\naws_access_key_id = S3RVER\naws_secret_access_key = S3RVER\n' > "$T/creds"
	AWS_SHARED_CREDENTIALS_FILE=$T/creds AWS_PROFILE=tiles \
		tilefs_mount "s3://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT" --log-level info
	cmp_tree "$SAMPLES" "$MNT"
	grep -q "credentials from profile tiles" "$TILEFS_LOG"
}

@test "s3: role credentials from an IMDSv2 metadata service" {
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_EC2_METADATA_DISABLED
	local port
	port=$(_free_port)
	/usr/bin/python3 "$BATS_TEST_DIRNAME/../lib/imds_fake.py" "$port" > "$T/imds.log" 2>&1 3>&- &
	local imds=$!
	TILEFS_EXTRA_PIDS+=("$imds")	# killed by the teardown if the test fails
	wait_until "the fake metadata service's start" grep -q ready "$T/imds.log"
	AWS_EC2_METADATA_SERVICE_ENDPOINT=http://127.0.0.1:$port \
		tilefs_mount "s3://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT" --log-level info
	kill $imds
	cmp_tree "$SAMPLES" "$MNT"
	grep -q "instance metadata service (role tilefs-test)" "$TILEFS_LOG"
	grep -q "PUT /latest/api/token" "$T/imds.log"
}

@test "s3: an unknown access key fails the mount, naming what to fix" {
	AWS_ACCESS_KEY_ID=NOTAKEY tilefs_run mount "s3://$S3_BUCKET/data" "$MNT" \
		--endpoint "$S3_ENDPOINT" --cache-dir "$T/cache" --log-file "$T/log"
	assert_eq "$status" 1 "exit status"
	[[ "$err1" == *"access denied"*"AWS_ACCESS_KEY_ID"* ]] || fail "message: $err1"
	grep -q "InvalidAccessKeyId" "$T/log"
	! is_mounted "$MNT"
}

@test "s3: no credentials at all fails the mount, naming the variables" {
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
	tilefs_run mount "s3://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT" --cache-dir "$T/cache"
	assert_eq "$status" 1 "exit status"
	[[ "$err1" == *"AWS_ACCESS_KEY_ID"*"--no-sign-request"* ]] || fail "message: $err1"
}

@test "s3: no secret, signature or token in the log, even at debug level" {
	export AWS_SECRET_ACCESS_KEY=S3RVER AWS_SESSION_TOKEN=SessionTokenSecretValue123
	tilefs_mount "s3://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT" --log-level debug
	cmp_tree "$SAMPLES" "$MNT"
	tilefs_umount "$MNT"
	! grep -q "SessionTokenSecretValue123" "$TILEFS_LOG"
	! grep -qi "Signature=" "$TILEFS_LOG"
	! grep -q "X-Amz-Credential\|Authorization" "$TILEFS_LOG"
}

@test "s3: Signature V4 matches botocore on odd keys, ranges and session tokens" {
	run /usr/bin/python3 "$BATS_TEST_DIRNAME/../lib/sigv4_botocore_check.py" \
		"$BATS_TEST_DIRNAME/../../build/test_provider_s3" 150
	echo "$output"
	assert_eq "$status" 0 "exit status"
	[[ "$output" == *"300 requests signed, 0 differ from botocore"* ]]
}

@test "gs: the XML API, anonymous, with marker pagination" {
	tilefs_mount "gs://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT" --no-sign-request \
		--page-size 1
	assert_eq "$(cd "$MNT" && find . | sort)" "$(cd "$SAMPLES" && find . | sort)" "tree"
	cmp_tree "$SAMPLES" "$MNT"
}

@test "gs: no credentials fails the mount, naming the variables" {
	tilefs_run mount "gs://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT" --cache-dir "$T/cache"
	assert_eq "$status" 1 "exit status"
	[[ "$err1" == *"GOOGLE_OAUTH_ACCESS_TOKEN"*"GS_ACCESS_KEY_ID"* ]] || fail "message: $err1"
}

@test "s3: metadata service credentials are read as JSON: escapes undone, the store accepts them" {
	identity_start
	unset AWS_EC2_METADATA_DISABLED
	AWS_EC2_METADATA_SERVICE_ENDPOINT=$ID_URL \
		tilefs_mount "s3://eo" "$MNT" --endpoint "$STORE_URL" --list "$T/list" --log-level info
	read_all || fail "a file differs"
	grep -q "instance metadata service (role tilefs-test)" "$TILEFS_LOG"
	[ "$(awk '$4 == 206' "$T/store.log" | wc -l)" -gt 0 ] || fail "no ranged GET reached the store"
	assert_eq "$(awk '$4 != 206 && $4 != 200' "$T/store.log" | wc -l)" 0 "store refusals"
}

@test "s3: container credentials (FULL_URI, token from a file) sign what the store accepts" {
	identity_start
	echo "container-token-1" >"$ID/auth-token"
	echo "container-token-1" >"$T/token"
	AWS_CONTAINER_CREDENTIALS_FULL_URI=$ID_URL/v2/credentials/task-1 \
	AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE=$T/token \
		tilefs_mount "s3://eo" "$MNT" --endpoint "$STORE_URL" --list "$T/list" --log-level info
	read_all || fail "a file differs"
	grep -q "credentials from the container credentials endpoint $ID_URL/v2/credentials/task-1" \
		"$TILEFS_LOG" || grep -q "container credentials endpoint" "$TILEFS_LOG"
	assert_eq "$(grep -c 'container GET /v2/credentials/task-1 200' "$ID/log")" 1 "container answers"
	assert_eq "$(awk '$4 != 206 && $4 != 200' "$T/store.log" | wc -l)" 0 "store refusals"
	! grep -q "container-token-1" "$TILEFS_LOG" "$T/tilefs-state.1/stderr"
}

# netns_other PID: PID is in another network namespace than this shell
netns_other() {
	[ "$(readlink "/proc/$1/ns/net")" != "$(readlink /proc/self/ns/net)" ]
}

# netns_start: a network namespace of the test's own, held by a sleeping
# process: its lo up, 169.254.170.2/32 on that lo (the host's interfaces
# are never touched); NETNS: the command prefix that runs in it
netns_start() {
	unshare -n sleep 3600 3>&- &
	NETNS_PID=$!
	TILEFS_EXTRA_PIDS+=("$NETNS_PID")
	wait_until "the network namespace" netns_other "$NETNS_PID"
	NETNS=(nsenter "--net=/proc/$NETNS_PID/ns/net")
	"${NETNS[@]}" ip link set lo up
	"${NETNS[@]}" ip addr add 169.254.170.2/32 dev lo
}

@test "s3: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI reaches 169.254.170.2, in a network namespace of the test's own" {
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
	netns_start
	! ip -o addr show | grep -q '169\.254\.170\.2/' || fail "the host has 169.254.170.2"
	ID=$T/id
	mkdir -p "$ID"
	# the container endpoint where the SDKs fix it, and the store, both in the namespace
	"${NETNS[@]}" "$PY" "$TESTS_LIB/aws_identity.py" "$ID" --host 169.254.170.2 --port 80 \
		2>"$T/identity.err" 3>&- &
	IDENTITY_PID=$!
	SIGV4_KEYS=$ID/keys.json "${NETNS[@]}" "$PY" "$TESTS_LIB/sigv4_store.py" "$SAMPLES" \
		"$T/store.log" >"$T/store.port" 2>"$T/store.err" 3>&- &
	STORE_PID=$!
	wait_until "the container endpoint's start" test -s "$ID/port"
	wait_until "the store's start" test -s "$T/store.port"
	(cd "$SAMPLES" && find . -type f | sed 's|^\./||' | sort) >"$T/list"
	# the daemon runs in the namespace; the mount is seen from here
	printf '#!/bin/sh\nexec nsenter --net=/proc/%s/ns/net %s "$@"\n' "$NETNS_PID" "$TILEFS" \
		>"$T/tilefs-in-netns"
	chmod +x "$T/tilefs-in-netns"
	TILEFS=$T/tilefs-in-netns AWS_CONTAINER_CREDENTIALS_RELATIVE_URI=/v2/credentials/task-ns \
		tilefs_mount "s3://eo" "$MNT" --endpoint "http://127.0.0.1:$(cat "$T/store.port")" \
		--list "$T/list" --log-level info
	read_all || fail "a file differs"
	grep -q "container credentials endpoint" "$TILEFS_LOG" || fail "not named in the log"
	assert_eq "$(grep -c '^container GET /v2/credentials/task-ns 200 issued' "$ID/log")" 1 \
		"answers of the container endpoint at 169.254.170.2"
	[ "$(awk '$4 == 206 && $7 ~ /^ASIA/' "$T/store.log" | wc -l)" -gt 0 ] ||
		fail "no ranged GET signed with the container's keys"
	assert_eq "$(awk '$4 != 206 && $4 != 200' "$T/store.log" | wc -l)" 0 "store refusals"
	tilefs_umount "$MNT"
	no_issued_secret "$TILEFS_LOG"
}

@test "s3: container credentials with AWS_CONTAINER_AUTHORIZATION_TOKEN; a wrong token fails the mount" {
	identity_start
	echo "container-token-2" >"$ID/auth-token"
	AWS_CONTAINER_CREDENTIALS_FULL_URI=$ID_URL/v2/credentials/task-2 \
	AWS_CONTAINER_AUTHORIZATION_TOKEN=wrong-token \
		tilefs_run mount "s3://eo" "$MNT" --endpoint "$STORE_URL" --list "$T/list" \
		--cache-dir "$T/cache" --log-file "$T/log"
	assert_eq "$status" 1 "exit status with a wrong token"
	[[ "$err1" == *"container credentials endpoint"* ]] || fail "message: $err1"
	[[ "$err1$(cat "$T/log")" != *"wrong-token"* ]] || fail "the token was shown"
	AWS_CONTAINER_CREDENTIALS_FULL_URI=$ID_URL/v2/credentials/task-2 \
	AWS_CONTAINER_AUTHORIZATION_TOKEN=container-token-2 \
		tilefs_mount "s3://eo" "$MNT" --endpoint "$STORE_URL" --list "$T/list"
	read_all || fail "a file differs"
}

@test "s3: container FULL_URI over http to a host that is not loopback is refused" {
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
	AWS_CONTAINER_CREDENTIALS_FULL_URI=http://192.0.2.1/creds \
		tilefs_run mount "s3://eo" "$MNT" --endpoint "$S3_ENDPOINT" --cache-dir "$T/cache"
	assert_eq "$status" 1 "exit status"
	[[ "$err1" == *"AWS_CONTAINER_CREDENTIALS_FULL_URI must be https"* ]] || fail "message: $err1"
}

@test "s3: web identity (AWS_WEB_IDENTITY_TOKEN_FILE) through STS at AWS_ENDPOINT_URL_STS" {
	identity_start
	echo "oidc-token-1" >"$ID/web-token"
	echo "oidc-token-1" >"$T/web-token"
	AWS_WEB_IDENTITY_TOKEN_FILE=$T/web-token AWS_ROLE_ARN=arn:aws:iam::123456789012:role/reader \
	AWS_ROLE_SESSION_NAME=tilefs-bats AWS_ENDPOINT_URL_STS=$ID_URL \
	AWS_ENDPOINT_URL=http://127.0.0.1:9/not-sts \
		tilefs_mount "s3://eo" "$MNT" --endpoint "$STORE_URL" --list "$T/list" --log-level debug
	read_all || fail "a file differs"
	grep -q "sts session=tilefs-bats" "$ID/log" || fail "no session named tilefs-bats: $(cat "$ID/log")"
	assert_eq "$(grep -c '^sts POST / 200 issued' "$ID/log")" 1 "STS answers (a POST: the token in its body)"
	grep -q "web identity (AWS_WEB_IDENTITY_TOKEN_FILE, role arn:aws:iam::123456789012:role/reader)" \
		"$TILEFS_LOG" || fail "the log does not say where the credentials came from"
	assert_eq "$(awk '$4 != 206 && $4 != 200' "$T/store.log" | wc -l)" 0 "store refusals"
	! grep -q "oidc-token-1" "$TILEFS_LOG" "$T/tilefs-state.1/stderr"
	no_issued_secret "$TILEFS_LOG" "$T/tilefs-state.1/stderr"
	tilefs_umount "$MNT"
	no_issued_secret "$TILEFS_LOG" $(find "$T/cache" -type f)
}

@test "s3: web identity from a profile (role_arn, web_identity_token_file), STS at AWS_ENDPOINT_URL" {
	identity_start
	echo "oidc-token-p" >"$ID/web-token"
	echo "oidc-token-p" >"$T/web-token"
	printf '[profile reader]\nrole_arn = arn:aws:iam::123456789012:role/reader\nweb_identity_token_file = %s\n' \
		"$T/web-token" >"$T/config"
	AWS_CONFIG_FILE=$T/config AWS_PROFILE=reader AWS_ENDPOINT_URL=$ID_URL \
		tilefs_mount "s3://eo" "$MNT" --endpoint "$STORE_URL" --list "$T/list"
	read_all || fail "a file differs"
	assert_eq "$(grep -c '^sts POST / 200 issued' "$ID/log")" 1 "STS answers (a POST: the token in its body)"
}

@test "s3: a wrong web identity token fails the mount, naming STS" {
	identity_start
	echo "oidc-token-right" >"$ID/web-token"
	echo "oidc-token-wrong" >"$T/web-token"
	AWS_WEB_IDENTITY_TOKEN_FILE=$T/web-token AWS_ROLE_ARN=arn:aws:iam::123456789012:role/reader \
	AWS_ENDPOINT_URL_STS=$ID_URL \
		tilefs_run mount "s3://eo" "$MNT" --endpoint "$STORE_URL" --list "$T/list" \
		--cache-dir "$T/cache" --log-file "$T/log"
	assert_eq "$status" 1 "exit status"
	[[ "$err1" == *"STS for AWS_WEB_IDENTITY_TOKEN_FILE"* ]] || fail "message: $err1"
	! grep -q "oidc-token-wrong" "$T/log"
}

@test "s3: a web identity token file that cannot be read, STS down: one message, naming what failed and where, no log line before it" {
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
	AWS_WEB_IDENTITY_TOKEN_FILE=$T/no-such-token AWS_ROLE_ARN=arn:aws:iam::123456789012:role/reader \
	AWS_ENDPOINT_URL_STS=http://127.0.0.1:9 \
		tilefs_run mount "s3://eo" "$MNT" --endpoint "$S3_ENDPOINT" --cache-dir "$T/cache"
	assert_eq "$status" 1 "exit status"
	assert_eq "$(printf '%s\n' "$err" | wc -l)" 1 "lines on stderr"
	[[ "$err1" == "tilefs: "*"AWS_WEB_IDENTITY_TOKEN_FILE"*"$T/no-such-token"*"No such file"* ]] ||
		fail "message: $err1"
	# a credential_process that fails: its exit status is the cause told
	printf '[profile bad]\ncredential_process = /bin/false\n' >"$T/config"
	AWS_CONFIG_FILE=$T/config AWS_PROFILE=bad \
		tilefs_run mount "s3://eo" "$MNT" --endpoint "$S3_ENDPOINT" --cache-dir "$T/cache"
	assert_eq "$status" 1 "exit status"
	assert_eq "$(printf '%s\n' "$err" | wc -l)" 1 "lines on stderr"
	[[ "$err1" == "tilefs: "*"credential_process"*"profile bad exited with status 1"* ]] ||
		fail "message: $err1"
	# STS does not answer: the message names it, where, and why
	echo "oidc-token" >"$T/web-token"
	AWS_WEB_IDENTITY_TOKEN_FILE=$T/web-token AWS_ROLE_ARN=arn:aws:iam::123456789012:role/reader \
	AWS_ENDPOINT_URL_STS=http://127.0.0.1:9 \
		tilefs_run mount "s3://eo" "$MNT" --endpoint "$S3_ENDPOINT" --cache-dir "$T/cache"
	assert_eq "$status" 1 "exit status"
	assert_eq "$(printf '%s\n' "$err" | wc -l)" 1 "lines on stderr"
	[[ "$err1" == "tilefs: "*"AWS_WEB_IDENTITY_TOKEN_FILE"*"STS (AssumeRoleWithWebIdentity) at http://127.0.0.1:9/: "*"connect"* ]] ||
		fail "message: $err1"
	[[ "$err1" != *"oidc-token"* ]] || fail "the token is shown: $err1"
}

# reads: read one sample through the mount (--ttl 0: each open asks the
# store, signed) until the emulator has issued N credentials; fail at the
# first read that differs or errs.
reads_until_issued() {
	local n=$1 deadline=$((SECONDS + 150)) f
	f=$(head -1 "$T/list")
	while [ "$(issued)" -lt "$n" ]; do
		[ "$SECONDS" -lt "$deadline" ] || { fail "only $(issued) credentials issued"; return 1; }
		cmp "$SAMPLES/$f" "$MNT/$f" || return 1
		sleep 1
	done
}

@test "s3: 20-second credentials are renewed before they expire; reads never fail (token file rotated)" {
	identity_start 20
	echo "container-token-a" >"$ID/auth-token"
	echo "container-token-a" >"$T/token"
	AWS_CONTAINER_CREDENTIALS_FULL_URI=$ID_URL/v2/credentials/task-r \
	AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE=$T/token \
		tilefs_mount "s3://eo" "$MNT" --endpoint "$STORE_URL" --list "$T/list" --ttl 0 \
		--log-level debug
	reads_until_issued 3
	# the token rotates: the next renewal must read the new one
	echo "container-token-b" >"$T/token"
	echo "container-token-b" >"$ID/auth-token"
	reads_until_issued 5
	assert_eq "$(grep -c ' 401' "$ID/log")" 0 "renewals refused (old token sent)"
	assert_eq "$(awk '$4 != 206 && $4 != 200' "$T/store.log" | wc -l)" 0 "store refusals"
	[ "$(awk '$4 == 200' "$T/store.log" | wc -l)" -gt 10 ] || fail "few signed requests reached the store"
	! grep -q "have expired" "$TILEFS_LOG"
	! grep -q "container-token-" "$TILEFS_LOG"
	no_issued_secret "$TILEFS_LOG"
}

@test "s3: STS down past the credentials' life: EACCES, a log line naming it and a metric, then recovery" {
	identity_start 20
	echo "oidc-token-d" >"$ID/web-token"
	echo "oidc-token-d" >"$T/web-token"
	AWS_WEB_IDENTITY_TOKEN_FILE=$T/web-token AWS_ROLE_ARN=arn:aws:iam::123456789012:role/reader \
	AWS_ENDPOINT_URL_STS=$ID_URL \
		tilefs_mount "s3://eo" "$MNT" --endpoint "$STORE_URL" --list "$T/list" --ttl 0 \
		--log-level info --metrics-file "$T/m.prom"
	local f
	f=$(head -1 "$T/list")
	cmp "$SAMPLES/$f" "$MNT/$f"
	metric_is "$T/m.prom" tilefs_credentials_expired 0 || fail "expired at the start: $(grep credential "$T/m.prom")"
	touch "$ID/down"
	# reads go on while the keys hold; then fail with EACCES
	local deadline=$((SECONDS + 120)) out
	while out=$(cat "$MNT/$f" 2>&1 >/dev/null); do
		[ "$SECONDS" -lt "$deadline" ] || fail "reads never failed during the outage"
		sleep 1
	done
	[[ $out == *"Permission denied"* ]] || fail "a read failed with: $out"
	grep -q "credentials from web identity.*STS at $ID_URL.* have expired and cannot be renewed" \
		"$TILEFS_LOG" || fail "no log line naming the endpoint: $(grep -i expired "$TILEFS_LOG")"
	grep -q "sts POST / 503" "$ID/log" || fail "no renewal tried during the outage"
	# the metrics file (rewritten every 5 s) says so too
	wait_until "tilefs_credentials_expired 1 during the outage" \
		metric_is "$T/m.prom" tilefs_credentials_expired 1 || fail "$(grep credential "$T/m.prom")"
	metric_ge "$T/m.prom" tilefs_credential_renewal_failures_total 1 || fail "$(grep credential "$T/m.prom")"
	rm "$ID/down"
	deadline=$((SECONDS + 120))
	until cmp -s "$SAMPLES/$f" "$MNT/$f"; do
		[ "$SECONDS" -lt "$deadline" ] || fail "the mount did not recover"
		sleep 1
	done
	read_all || fail "a file differs after the recovery"
	grep -q "renewed; reads go on" "$TILEFS_LOG"
	wait_until "tilefs_credentials_expired 0 after the recovery" \
		metric_is "$T/m.prom" tilefs_credentials_expired 0 || fail "$(grep credential "$T/m.prom")"
	metric_ge "$T/m.prom" tilefs_credential_renewals_total 1 || fail "$(grep credential "$T/m.prom")"
}

@test "s3: a profile's credential_process (no shell, quoted words), run again before its Expiration" {
	identity_start 20
	mkdir -p "$T/dir with space"
	cp "$TESTS_LIB/aws_identity.py" "$T/dir with space/id.py"
	printf '[profile proc]\ncredential_process = %s "%s" '"'"'%s'"'"' --process\n' \
		"$PY" "$T/dir with space/id.py" "$ID" >"$T/config"
	AWS_CONFIG_FILE=$T/config AWS_PROFILE=proc \
		tilefs_mount "s3://eo" "$MNT" --endpoint "$STORE_URL" --list "$T/list" --ttl 0 \
		--log-level info
	read_all || fail "a file differs"
	grep -q "credentials from the credential_process of profile proc" "$TILEFS_LOG" ||
		grep -q "credential_process of profile proc" "$TILEFS_LOG" || fail "not named in the log"
	reads_until_issued 3
	assert_eq "$(awk '$4 != 206 && $4 != 200' "$T/store.log" | wc -l)" 0 "store refusals"
}

@test "s3: a credential_process that fails or prints no Version 1 document fails the mount" {
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
	printf '[profile bad]\ncredential_process = /bin/echo {"Version": 2, "AccessKeyId": "A", "SecretAccessKey": "B"}\n' >"$T/config"
	AWS_CONFIG_FILE=$T/config AWS_PROFILE=bad \
		tilefs_run mount "s3://eo" "$MNT" --endpoint "$S3_ENDPOINT" --cache-dir "$T/cache" \
		--log-file "$T/log"
	assert_eq "$status" 1 "exit status"
	[[ "$err" == *"tilefs: no AWS credentials from the profile's credential_process"* ]] ||
		fail "message: $err"
	[[ "$err" == *"did not print a Version 1"* ]] || fail "the reason is not told: $err"
}

@test "s3: a profile's role_arn with source_profile: AssumeRole signed by the source's keys" {
	identity_start
	echo "AKIDSOURCE src/Secret+Key" >"$ID/source-keys"
	printf '[base]\naws_access_key_id = AKIDSOURCE\naws_secret_access_key = src/Secret+Key\n' >"$T/creds"
	printf '[profile reader]\nrole_arn = arn:aws:iam::123456789012:role/reader\nsource_profile = base\nrole_session_name = bats-assume\n' >"$T/config"
	AWS_SHARED_CREDENTIALS_FILE=$T/creds AWS_CONFIG_FILE=$T/config AWS_PROFILE=reader \
	AWS_ENDPOINT_URL_STS=$ID_URL \
		tilefs_mount "s3://eo" "$MNT" --endpoint "$STORE_URL" --list "$T/list" --log-level info
	read_all || fail "a file differs"
	grep -q "sts assume-role session=bats-assume" "$ID/log" || fail "emulator log: $(cat "$ID/log")"
	assert_eq "$(grep -c '^sts GET / 200 issued' "$ID/log")" 1 "AssumeRole answers"
	assert_eq "$(awk '$4 != 206 && $4 != 200' "$T/store.log" | wc -l)" 0 "store refusals"
	grep -q "profile reader (role arn:aws:iam::123456789012:role/reader, source_profile base)" \
		"$TILEFS_LOG" || fail "the log does not name the role"
	# a source profile whose secret STS does not know: the signature is refused
	tilefs_umount "$MNT"
	echo "AKIDSOURCE another-secret" >"$ID/source-keys"
	AWS_SHARED_CREDENTIALS_FILE=$T/creds AWS_CONFIG_FILE=$T/config AWS_PROFILE=reader \
	AWS_ENDPOINT_URL_STS=$ID_URL \
		tilefs_run mount "s3://eo" "$MNT" --endpoint "$STORE_URL" --list "$T/list" \
		--cache-dir "$T/cache2"
	assert_eq "$status" 1 "exit status with a bad signature"
	[[ "$err" == *"STS AssumeRole for the profile's role_arn"* ]] || fail "message: $err"
	grep -q "sts GET / 403" "$ID/log"
}

# keys_older_than S: the last key the emulator issued is over S seconds old
keys_older_than() {
	[ $(($(date +%s) - $(stat -c %Y "$ID/keys.json"))) -gt "$1" ]
}

@test "s3: keys the store refuses as expired (400 ExpiredToken) are renewed once and the read retried" {
	identity_start
	echo "container-token-x" >"$ID/auth-token"
	local first second
	first=$(sed -n 1p "$T/list")
	second=$(sed -n 2p "$T/list")
	AWS_CONTAINER_CREDENTIALS_FULL_URI=$ID_URL/v2/credentials/task-x \
	AWS_CONTAINER_AUTHORIZATION_TOKEN=container-token-x \
		tilefs_mount "s3://eo" "$MNT" --endpoint "$STORE_URL" --list "$T/list" --log-level info
	cmp "$SAMPLES/$first" "$MNT/$first"
	assert_eq "$(issued)" 1 "credentials issued before the revocation"
	# the store now takes every key issued so far for expired, long before
	# the Expiration the endpoint gave (a revoked session, a skewed clock)
	wait_until "keys old enough to be renewed on a refusal" keys_older_than 6
	"$PY" - "$ID/keys.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for k in d["keys"]:
    k["ExpiresEpoch"] = 0
json.dump(d, open(sys.argv[1], "w"))
PY
	cmp "$SAMPLES/$second" "$MNT/$second" || fail "the read after the revocation failed"
	assert_eq "$(issued)" 2 "credentials issued (one renewal)"
	grep -q "ExpiredToken" "$T/store.log" || awk '$4 == 400' "$T/store.log" | grep -q . ||
		fail "the store never refused a key"
	grep -q "refused the credentials from the container credentials endpoint .* as expired or revoked" \
		"$TILEFS_LOG" || fail "no log line"
	read_all || fail "a file differs"
}

@test "s3: session keys from the environment the store refuses as expired (400 ExpiredToken): EACCES, not EIO" {
	identity_start
	local doc f
	doc=$("$PY" "$TESTS_LIB/aws_identity.py" "$ID" --process)
	f=$(head -1 "$T/list")
	AWS_ACCESS_KEY_ID=$("$PY" -c 'import json, sys; print(json.load(sys.stdin)["AccessKeyId"])' <<<"$doc") \
	AWS_SECRET_ACCESS_KEY=$("$PY" -c 'import json, sys; print(json.load(sys.stdin)["SecretAccessKey"])' <<<"$doc") \
	AWS_SESSION_TOKEN=$("$PY" -c 'import json, sys; print(json.load(sys.stdin)["SessionToken"])' <<<"$doc") \
		tilefs_mount "s3://eo" "$MNT" --endpoint "$STORE_URL" --list "$T/list" --ttl 0 \
		--prefetch none
	cmp "$SAMPLES/$f" "$MNT/$f" || fail "the first read failed"
	# the store takes the keys for expired; the environment's cannot be
	# renewed
	"$PY" - "$ID/keys.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for k in d["keys"]:
    k["ExpiresEpoch"] = 0
json.dump(d, open(sys.argv[1], "w"))
PY
	echo 3 >/proc/sys/vm/drop_caches
	local out
	out=$(cat "$MNT/$(sed -n 2p "$T/list")" 2>&1 >/dev/null) && fail "a read succeeded with expired keys"
	[[ $out == *"Permission denied"* ]] || fail "a read failed with: $out"
	grep -q "ExpiredToken" "$T/store.log" || awk '$4 == 400' "$T/store.log" | grep -q . ||
		fail "the store never refused a key"
}

@test "s3: warm with web identity credentials fills the cache; a mount on it reads without a data GET" {
	identity_start
	echo "oidc-token-w" >"$ID/web-token"
	echo "oidc-token-w" >"$T/web-token"
	export AWS_WEB_IDENTITY_TOKEN_FILE=$T/web-token AWS_ROLE_ARN=arn:aws:iam::123456789012:role/reader
	export AWS_ENDPOINT_URL_STS=$ID_URL
	tilefs_run warm --cache-dir "$T/wcache" --endpoint "$STORE_URL" --from-file "$T/list" "s3://eo"
	assert_eq "$status" 0 "exit status of warm: $err"
	[[ $out == *"0 failed"* ]] || fail "warm says: $out"
	assert_eq "$(awk '$4 != 206 && $4 != 200' "$T/store.log" | wc -l)" 0 "store refusals"
	local gets
	gets=$(awk '$4 == 206' "$T/store.log" | wc -l)
	[ "$gets" -gt 0 ] || fail "warm fetched nothing"
	tilefs_mount "s3://eo" "$MNT" --endpoint "$STORE_URL" --list "$T/list" --cache-dir "$T/wcache"
	read_all || fail "a file differs"
	assert_eq "$(awk '$4 == 206' "$T/store.log" | wc -l)" "$gets" "ranged GETs through the mount"
}

# stale_process [good]: a credential_process in $T/stale-process that logs
# each run in $T/process.runs and prints a Version 1 document of keys that
# expired in 2020; with "good" its first run prints the emulator's fresh
# keys instead (identity_start first). Writes $T/config, profile stale.
stale_process() {
	local first=false
	[ "${1:-}" != good ] || first=true
	cat >"$T/stale-process" <<SH
#!/bin/sh
echo run >>"$T/process.runs"
if $first && mkdir "$T/process.answered" 2>/dev/null; then
	exec "$PY" "$TESTS_LIB/aws_identity.py" "$T/id" --process
fi
printf '{"Version": 1, "AccessKeyId": "ASIASTALE", "SecretAccessKey": "stale/secret", "SessionToken": "stale-token", "Expiration": "2020-01-01T00:00:00Z"}\n'
SH
	chmod +x "$T/stale-process"
	printf '[profile stale]\ncredential_process = %s\n' "$T/stale-process" >"$T/config"
}

# runs: how many times the credential_process ran
runs() {
	wc -l <"$T/process.runs"
}

@test "s3: a credential_process answering keys that expired in 2020: the keys in hand sign until they expire, a few runs, one line" {
	identity_start 40
	stale_process good
	AWS_CONFIG_FILE=$T/config AWS_PROFILE=stale \
		tilefs_mount "s3://eo" "$MNT" --endpoint "$STORE_URL" --list "$T/list" --ttl 0 \
		--log-level info
	local f deadline out i
	f=$(head -1 "$T/list")
	cmp "$SAMPLES/$f" "$MNT/$f" || fail "the first read failed"
	# the renewal at 20 s gets the 2020 keys: the 40-second ones go on signing
	deadline=$((SECONDS + 120))
	while [ "$(runs)" -lt 2 ]; do
		[ "$SECONDS" -lt "$deadline" ] || fail "no renewal was tried"
		cat "$MNT/$f" >/dev/null 2>&1 || true
		sleep 0.2
	done
	cmp "$SAMPLES/$f" "$MNT/$f" || fail "a read failed while the first keys held"
	# until they expire: then EACCES
	deadline=$((SECONDS + 120))
	while out=$(cat "$MNT/$f" 2>&1 >/dev/null); do
		[ "$SECONDS" -lt "$deadline" ] || fail "reads never failed once the keys expired"
		sleep 0.2
	done
	[[ $out == *"Permission denied"* ]] || fail "a read failed with: $out"
	for ((i = 0; i < 50; i++)); do
		cat "$MNT/$f" >/dev/null 2>&1 && fail "a read succeeded with expired keys"
	done
	# the backoff's runs (1, 2, 4, 8 s... after the first stale answer),
	# not one a signature
	[ "$(runs)" -le 10 ] || fail "$(runs) runs of the credential_process"
	assert_eq "$(grep -c 'have expired and cannot be renewed' "$TILEFS_LOG")" 1 \
		"'cannot be renewed' lines"
	assert_eq "$(grep -c 'expire at 2020-01-01T00:00:00Z, already expired' "$TILEFS_LOG")" 1 \
		"lines about the stale answers"
	! grep -q "ASIASTALE" "$T/store.log" || fail "the 2020 keys signed a request"
	grep 'have expired and cannot be renewed' "$TILEFS_LOG" | grep -q "profile stale" ||
		fail "the line does not name the profile"
}

@test "s3: a credential_process whose first answer expired in 2020 fails the mount, saying when it expired" {
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
	stale_process
	AWS_CONFIG_FILE=$T/config AWS_PROFILE=stale \
		tilefs_run mount "s3://eo" "$MNT" --endpoint "$S3_ENDPOINT" --cache-dir "$T/cache"
	assert_eq "$status" 1 "exit status"
	assert_eq "$(printf '%s\n' "$err" | wc -l)" 1 "lines on stderr"
	[[ "$err1" == "tilefs: "*"credential_process"*"expired at 2020-01-01T00:00:00Z"* ]] ||
		fail "message: $err1"
	assert_eq "$(runs)" 1 "runs of the credential_process"
}

# process_gone PID: PID has exited (a zombie left to its reaper counts)
process_gone() {
	[ ! -e "/proc/$1" ] || grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

@test "s3: a credential_process that prints its keys, closes stdout and sleeps is killed at its 30 s deadline, and the mount fails" {
	identity_start
	# its keys are good; its run is not over: a sleep of its own (exec'd)
	# and one in the background, in its process group
	cat >"$T/slow-process" <<SH
#!/bin/sh
echo \$\$ >"$T/process.pid"
"$PY" "$TESTS_LIB/aws_identity.py" "$ID" --process
exec >&-
sleep 45 &
echo \$! >"$T/background.pid"
exec sleep 45
SH
	chmod +x "$T/slow-process"
	printf '[profile slow]\ncredential_process = %s\n' "$T/slow-process" >"$T/config"
	AWS_CONFIG_FILE=$T/config AWS_PROFILE=slow \
		tilefs_run mount "s3://eo" "$MNT" --endpoint "$STORE_URL" --list "$T/list" \
		--cache-dir "$T/cache"
	assert_eq "$status" 1 "exit status"
	assert_eq "$(printf '%s\n' "$err" | wc -l)" 1 "lines on stderr"
	[[ "$err1" == "tilefs: "*"credential_process"*"profile slow"*"$T/slow-process"*"30 s"* ]] ||
		fail "message: $err1"
	! is_mounted "$MNT" || fail "mounted"
	wait_until "the credential_process's end" process_gone "$(cat "$T/process.pid")"
	wait_until "the end of its background sleep" process_gone "$(cat "$T/background.pid")"
	assert_eq "$(grep -c '^process issued' "$ID/log")" 1 "answers printed"
}

@test "s3: a credential_process gets the environment without tilefs's other secrets; AWS_* and the rest stay" {
	identity_start
	cat >"$T/env-process" <<SH
#!/bin/sh
env >"$T/process.env"
exec "$PY" "$TESTS_LIB/aws_identity.py" "$ID" --process
SH
	chmod +x "$T/env-process"
	printf '[profile envcheck]\ncredential_process = %s\n' "$T/env-process" >"$T/config"
	AWS_CONFIG_FILE=$T/config AWS_PROFILE=envcheck AWS_MAX_ATTEMPTS=7 \
	TILEFS_TIER_SECRET=tier-s3cret AZURE_CLIENT_SECRET=az-s3cret AZURE_STORAGE_KEY=az-key \
	AZURE_STORAGE_SAS_TOKEN=sv=sas IDENTITY_HEADER=id-header GOOGLE_OAUTH_ACCESS_TOKEN=ya29.x \
	GS_SECRET_ACCESS_KEY=gs-s3cret TILEFS_TEST_KEPT=kept \
		tilefs_mount "s3://eo" "$MNT" --endpoint "$STORE_URL" --list "$T/list"
	read_all || fail "a file differs"
	local v
	for v in TILEFS_TIER_SECRET AZURE_CLIENT_SECRET AZURE_STORAGE_KEY AZURE_STORAGE_SAS_TOKEN \
		IDENTITY_HEADER GOOGLE_OAUTH_ACCESS_TOKEN GS_SECRET_ACCESS_KEY; do
		! grep -q "^$v=" "$T/process.env" || fail "the credential_process got $v"
	done
	for v in AWS_CONFIG_FILE=$T/config AWS_PROFILE=envcheck AWS_MAX_ATTEMPTS=7 \
		TILEFS_TEST_KEPT=kept HOME=$HOME PATH=$PATH; do
		grep -qxF "$v" "$T/process.env" || fail "the credential_process lacks $v"
	done
}

@test "s3: a store at --endpoint whose bucket is in another region: signed again for the region its 400 names, said once" {
	SIGV4_REGION=eu-west-1 sigv4_store_start "$SAMPLES"
	unset AWS_REGION AWS_DEFAULT_REGION
	tilefs_mount s3://eo "$MNT" --endpoint "$SIGV4_ENDPOINT" --log-level info
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"
	cmp "$SAMPLES/notes.txt" "$MNT/notes.txt"
	assert_eq "$(grep -c 'expects region eu-west-1' "$TILEFS_LOG")" 1 "lines saying the region"
	[ "$(awk '$4 == 400' "$SIGV4_LOG" | wc -l)" -ge 1 ] || fail "the store answered no 400"
	assert_eq "$(tail -n 5 "$SIGV4_LOG" | awk '$4 == 400' | wc -l)" 0 "400s after the region was followed"
	tilefs_umount "$MNT"
}
