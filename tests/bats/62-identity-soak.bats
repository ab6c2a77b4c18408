#!/usr/bin/env bats
# The long test of short-lived credentials, one mount per cloud, all three
# at once: S3 through web identity (STS, aws_identity.py) in front of the
# Signature V4 store, Azure Blob through workload identity (Entra,
# cloud_identity.py) against Azurite over HTTPS with --oauth basic, GCS
# through the metadata server (cloud_identity.py) against the bearer-
# checking data plane. Every credential lives 60 s. Readers compare every
# file with the origin for SOAK_S seconds (3 min) through mounts whose
# --cache-size (1 MiB, a quarter of the data) keeps reads reaching the
# store; each identity endpoint is stopped for 20 s while a renewal falls
# due, and the token files of web and workload identity are rotated twice.
# No read may fail, no request be refused, no secret be logged.

bats_require_minimum_version 1.5.0
load ../lib/tilefs
load ../lib/azurite
load ../lib/cloud_identity

SOAK_S=${SOAK_S:-180}
# The test reads for SOAK_S by design: give it that on top of the usual
# allowance of a test (tests/run sets 300 s).
if [ -n "${BATS_TEST_TIMEOUT:-}" ] && [ "$BATS_TEST_TIMEOUT" -lt $((SOAK_S + 300)) ]; then
	BATS_TEST_TIMEOUT=$((SOAK_S + 300))
fi

ROLE=arn:aws:iam::123456789012:role/reader
PROVIDERS=(s3 az gcs)

setup() {
	tilefs_setup
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_PROFILE \
		AZURE_STORAGE_ACCOUNT AZURE_STORAGE_KEY AZURE_STORAGE_SAS_TOKEN \
		AZURE_POD_IDENTITY_AUTHORITY_HOST AZURE_CLIENT_ID IDENTITY_ENDPOINT IDENTITY_HEADER \
		AZURE_TENANT_ID AZURE_CLIENT_SECRET AZURE_FEDERATED_TOKEN_FILE AZURE_AUTHORITY_HOST \
		GOOGLE_OAUTH_ACCESS_TOKEN GS_ACCESS_KEY_ID GS_SECRET_ACCESS_KEY \
		GOOGLE_APPLICATION_CREDENTIALS GCE_METADATA_HOST
	export AWS_EC2_METADATA_DISABLED=true HOME=$T/home CLOUDSDK_CONFIG=$T/gcloud
	(cd "$SAMPLES" && find . -type f | sed 's|^\./||' | sort) >"$T/list"
	READERS=()
	CONTROLS=()
}

teardown() {
	local pid
	for pid in "${READERS[@]}" "${CONTROLS[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	tilefs_teardown
	endpoint_stop s3
	[ -z "${STORE_PID:-}" ] || kill "$STORE_PID" 2>/dev/null || true
	_cloud_stop "$T/azid"
	_cloud_stop "$T/gceid"
	gcs_plane_stop
	azurite_stop
}

# ---- the three clouds ----

# s3_up: the AWS identity emulator in $T/awsid (its web-token a link to the
# file the mount reads, so the two never disagree), the store in front of
# $SAMPLES taking only the keys it issued.
s3_up() {
	mkdir -p "$T/awsid"
	echo 60 >"$T/awsid/lifetime"
	ln -s "$T/web-token" "$T/awsid/web-token"
	rotate s3 1
	endpoint_start s3 || return 1
	AWS_ID_URL=http://127.0.0.1:$(cat "$T/awsid/port")
	SIGV4_KEYS=$T/awsid/keys.json "$PY" "$TESTS_LIB/sigv4_store.py" "$SAMPLES" "$T/store.log" \
		>"$T/store.port" 2>"$T/store.err" 3>&- &
	STORE_PID=$!
	wait_until "the store's start" test -s "$T/store.port"
	AWS_WEB_IDENTITY_TOKEN_FILE=$T/web-token AWS_ROLE_ARN=$ROLE AWS_ENDPOINT_URL_STS=$AWS_ID_URL \
		tilefs_mount s3://eo "$T/mnt-s3" --endpoint "http://127.0.0.1:$(cat "$T/store.port")" \
		--cache-dir "$T/cache-s3" --cache-size 1M --metrics-file "$T/s3.prom" --log-level debug
	LOG_s3=$TILEFS_LOG
}

# az_up: Azurite over HTTPS (--oauth basic) holding the samples under
# cogs/eo/2024, and the Entra token endpoint taking the assertion in
# $T/az-token.
az_up() {
	azurite_start --oauth || return 1
	azurite_container cogs
	azurite_put_tree cogs eo/2024 "$SAMPLES"
	azurite_log_reset
	rotate az 1
	mkdir -p "$T/azid"
	endpoint_start az || return 1
	AZURE_AUTHORITY_HOST=http://127.0.0.1:$(cat "$T/azid/port") AZURE_TENANT_ID=tenant-1 \
	AZURE_CLIENT_ID=app-1 AZURE_FEDERATED_TOKEN_FILE=$T/az-token \
		tilefs_mount "az://$AZURITE_ACCOUNT/cogs/eo/2024" "$T/mnt-az" \
		--endpoint "$AZURITE_ENDPOINT" --ca-file "$AZURITE_CA" \
		--cache-dir "$T/cache-az" --cache-size 1M --metrics-file "$T/az.prom" --log-level debug
	LOG_az=$TILEFS_LOG
}

# gcs_up: the metadata server (its tokens are HMACs under $SECRET, so a
# restarted one and the data plane agree) and the data plane over https.
gcs_up() {
	SECRET=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
	mkdir -p "$T/gcs/eo" "$T/gceid"
	cp -r "$SAMPLES/." "$T/gcs/eo/"
	_origin_make_tls "$T/tls" || return 1
	endpoint_start gcs || return 1
	gcs_plane_start --secret "$SECRET" --gcs-root "$T/gcs" \
		--tls-cert "$T/tls/server.pem" --tls-key "$T/tls/server.key" || return 1
	GCE_METADATA_HOST=127.0.0.1:$(cat "$T/gceid/port") \
		tilefs_mount gs://eo "$T/mnt-gcs" --endpoint "https://127.0.0.1:$GCS_PLANE_PORT" \
		--ca-file "$T/tls/ca.pem" \
		--cache-dir "$T/cache-gcs" --cache-size 1M --metrics-file "$T/gcs.prom" --log-level debug
	LOG_gcs=$TILEFS_LOG
}

# endpoint_start P: start P's identity endpoint; on the port it had, if it
# ran before (a restart after an outage: the mount holds that address).
endpoint_start() {
	local d port=()
	case $1 in
	s3)
		d=$T/awsid
		[ -s "$d/port" ] && port=(--port "$(cat "$d/port")")
		rm -f "$d/port"
		"$PY" "$TESTS_LIB/aws_identity.py" "$d" "${port[@]}" 2>>"$T/awsid.err" 3>&- &
		echo $! >"$d/pid"
		wait_until "the AWS identity emulator's start" test -s "$d/port"
		;;
	az)
		d=$T/azid
		[ -s "$d/port" ] && port=(--port "$(cat "$d/port")")
		rm -f "$d/port"
		_cloud_spawn "$d" "${port[@]}" --lifetime 60 --client-id app-1 \
			--assertion-file "$T/az-token"
		;;
	gcs)
		d=$T/gceid
		[ -s "$d/port" ] && port=(--port "$(cat "$d/port")")
		rm -f "$d/port"
		_cloud_spawn "$d" "${port[@]}" --lifetime 60 --secret "$SECRET"
		;;
	esac
}

# endpoint_stop P: stop P's identity endpoint (its port file stays)
endpoint_stop() {
	case $1 in
	s3)
		[ -f "$T/awsid/pid" ] || return 0
		kill "$(cat "$T/awsid/pid")" 2>/dev/null
		wait "$(cat "$T/awsid/pid")" 2>/dev/null
		rm -f "$T/awsid/pid"
		;;
	az) _cloud_stop "$T/azid" ;;
	gcs) _cloud_stop "$T/gceid" ;;
	esac
	return 0
}

# tokens P: credentials P's identity endpoint has issued so far
tokens() {
	case $1 in
	s3) grep -c ' issued ' "$T/awsid/log" 2>/dev/null ;;
	az) grep -c '^TOKEN ' "$T/azid/requests.log" 2>/dev/null ;;
	gcs) grep -c '^TOKEN ' "$T/gceid/requests.log" 2>/dev/null ;;
	esac
}

# token_file P: the token file P's mount reads at each renewal (none for
# the metadata server)
token_file() {
	case $1 in
	s3) echo "$T/web-token" ;;
	az) echo "$T/az-token" ;;
	esac
}

# rotate P N: write token N into P's token file, atomically, as the
# kubelet does (a rename); its SHA-256 prefix, as the endpoints log it,
# goes to $T/P.token.N
rotate() {
	local f
	f=$(token_file "$1") || return 0
	[ -n "$f" ] || return 0
	printf 'soak-%s-token-%s-%s\n' "$1" "$2" "$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')" \
		>"$f.new"
	sha256sum <(tr -d '\n' <"$f.new") | cut -c1-16 >"$T/$1.token.$2"
	mv -f "$f.new" "$f"
	echo "$(date +%s) rotated to token $2" >>"$T/$1.events"
}

# presented P: the digests of the token files P's endpoint received, in order
presented() {
	case $1 in
	s3) awk '$1 == "sts" && $2 == "presented" { sub(/^sha256:/, "", $3); print $3 }' "$T/awsid/log" ;;
	az) awk '$1 == "PRESENTED" { sub(/^sha256:/, "", $3); print $3 }' "$T/azid/requests.log" ;;
	esac
}

# data_gets P: ranged GETs of objects P's data plane answered
data_gets() {
	case $1 in
	s3) awk '$1 == "GET" && $4 == 206 { n++ } END { print n + 0 }' "$T/store.log" 2>/dev/null ;;
	az) azurite_count GET 206 ;;
	gcs) awk '$1 == "GET" && $3 == 206 { n++ } END { print n + 0 }' "$GCS_PLANE_LOG" ;;
	esac
}

# refusals P: requests P's data plane refused (any credential it did not take)
refusals() {
	case $1 in
	s3) awk '$4 !~ /^20/ { n++ } END { print n + 0 }' "$T/store.log" ;;
	az) echo $(($(azurite_count GET 403) + $(azurite_count HEAD 403) + $(azurite_count GET 401) +
		$(azurite_count HEAD 401))) ;;
	gcs) awk '$3 == 401 || $3 == 403 { n++ } END { print n + 0 }' "$GCS_PLANE_LOG" ;;
	esac
}

# ---- what runs during the soak ----

# reader P: until SOAK_S seconds have passed, read every sample through
# P's mount and compare it with the origin; one line per pass in
# $T/P.passes: "PASS START END GETS_BEFORE GETS_AFTER", and each failed
# comparison in $T/P.errors.
reader() {
	local p=$1 end=$((SECONDS + SOAK_S)) pass=0 start before f
	while [ "$SECONDS" -lt "$end" ]; do
		pass=$((pass + 1))
		start=$(date +%s)
		before=$(data_gets "$p")
		while IFS= read -r f; do
			if ! run_to 120 cmp -- "$SAMPLES/$f" "$T/mnt-$p/$f" >>"$T/$p.errors" 2>&1; then
				echo "pass $pass at $(date +%s): $f differs or failed" >>"$T/$p.errors"
			fi
		done <"$T/list"
		echo "$pass $start $(date +%s) $before $(data_gets "$p")" >>"$T/$p.passes"
		sleep 1
	done
}

# tokens_reach P N: P's endpoint has issued N credentials
tokens_reach() {
	[ "$(tokens "$1")" -ge "$2" ]
}

# control P: what happens to P's identity during the soak. After the
# first renewal, the token file rotates (token 2); 22 s after the second
# renewal (8 s before the third falls due) the endpoint stops for 20 s;
# after the renewal that follows, the file rotates again (token 3).
# Events in $T/P.events; a failure in $T/P.control-failed.
control() {
	local p=$1 n
	{
		wait_until "$p: the first renewal" tokens_reach "$p" 2 &&
			rotate "$p" 2 &&
			wait_until "$p: the second renewal" tokens_reach "$p" 3 &&
			sleep 22 &&
			n=$(tokens "$p") &&
			endpoint_stop "$p" &&
			echo "$(date +%s) endpoint stopped" >>"$T/$p.events" &&
			sleep 20 &&
			endpoint_start "$p" &&
			echo "$(date +%s) endpoint started" >>"$T/$p.events" &&
			wait_until "$p: a renewal after the outage" tokens_reach "$p" $((n + 1)) &&
			rotate "$p" 3
	} 2>>"$T/$p.control-failed" || echo "control of $p failed" >>"$T/$p.control-failed"
}

# ---- the checks ----

# check_reads P: no read failed; every pass reached the data plane, one
# during the outage too; the passes cover the whole soak
check_reads() {
	local p=$1 stopped started first last
	[ ! -s "$T/$p.errors" ] || fail "$p: reads failed: $(head -20 "$T/$p.errors")" || return 1
	[ ! -s "$T/$p.control-failed" ] || fail "$(cat "$T/$p.control-failed")" || return 1
	[ "$(wc -l <"$T/$p.passes")" -ge 10 ] || fail "$p: only $(wc -l <"$T/$p.passes") passes" ||
		return 1
	awk '$5 <= $4 { bad++ } END { exit bad > 0 }' "$T/$p.passes" ||
		fail "$p: passes that sent no ranged GET to the data plane: $(awk '$5 <= $4' "$T/$p.passes")" ||
		return 1
	first=$(head -1 "$T/$p.passes" | cut -d' ' -f2)
	last=$(tail -1 "$T/$p.passes" | cut -d' ' -f3)
	[ $((last - first)) -ge $((SOAK_S - 5)) ] || fail "$p: reads spanned $((last - first)) s" ||
		return 1
	stopped=$(awk '/endpoint stopped/ { print $1 }' "$T/$p.events")
	started=$(awk '/endpoint started/ { print $1 }' "$T/$p.events")
	[ -n "$stopped" ] && [ -n "$started" ] || fail "$p: no outage: $(cat "$T/$p.events")" || return 1
	awk -v a="$stopped" -v b="$started" '$2 >= a && $3 <= b && $5 > $4 { ok = 1 } END { exit !ok }' \
		"$T/$p.passes" || fail "$p: no whole pass read from the data plane during the outage" ||
		return 1
	assert_eq "$(refusals "$p")" 0 "$p: requests the data plane refused"
}

# check_renewals P: several renewals, one of them failed (the outage hit
# one), none left the credentials expired, nothing failed
check_renewals() {
	local p=$1 m=$T/$1.prom
	wait_until "$p: the metrics after the soak" metric_ge "$m" tilefs_credential_renewals_total 4 ||
		fail "$p: $(grep credential "$m")" || return 1
	metric_ge "$m" tilefs_credential_renewal_failures_total 1 ||
		fail "$p: the outage failed no renewal: $(grep credential "$m")" || return 1
	metric_is "$m" tilefs_credentials_expired 0 || fail "$p: $(grep credential "$m")" || return 1
	metric_is "$m" tilefs_errors_total 0 || fail "$p: $(grep errors_total "$m")" || return 1
	[ "$(tokens "$p")" -ge 5 ] || fail "$p: the endpoint issued $(tokens "$p") credentials" ||
		return 1
	local log=LOG_$p
	grep -q "renewing the credentials from .* failed" "${!log}" ||
		fail "$p: no failed renewal logged" || return 1
	! grep -q "have expired\|giving up" "${!log}" ||
		fail "$p: $(grep "have expired\|giving up" "${!log}")"
}

# check_rotation P: each rotated token was presented, and once it was, no
# older one ever again
check_rotation() {
	local p=$1 seq n
	seq=$(presented "$p" | awk -v t1="$(cat "$T/$p.token.1")" -v t2="$(cat "$T/$p.token.2")" \
		-v t3="$(cat "$T/$p.token.3")" '{ print ($1 == t1 ? 1 : $1 == t2 ? 2 : $1 == t3 ? 3 : "?") }' |
		uniq | tr -d '\n')
	assert_eq "$seq" 123 "$p: tokens presented in turn (1, 2, 3: each rotation picked up, never undone)"
	case $p in
	s3) n=$(awk '$1 == "sts" && $4 == 400 { n++ } END { print n + 0 }' "$T/awsid/log") ;;
	az) n=$(identity_count_in "$T/azid/requests.log" POST 401) ;;
	esac
	assert_eq "$n" 0 "$p: token exchanges the endpoint refused"
}

# identity_count_in LOG METHOD STATUS: requests of LOG with that method, status
identity_count_in() {
	awk -v m="$2" -v st="$3" '$1 == m && $3 == st { n++ } END { print n + 0 }' "$1"
}

# check_no_secret P: no credential of P's is in its mount's log
check_no_secret() {
	local p=$1 log=LOG_$1 s
	local -a secrets=()
	case $p in
	s3)
		"$PY" - "$T/awsid/keys.json" "${!log}" <<'PY' || return 1
import json, sys
keys = json.load(open(sys.argv[1]))["keys"]
text = open(sys.argv[2], errors="replace").read()
for k in keys:
    for secret in (k["SecretAccessKey"], k["Token"], k["Token"][:40]):
        if secret in text:
            sys.exit("the S3 mount's log holds an issued secret")
PY
		;;
	az) mapfile -t secrets < <(grep -o 'Bearer [A-Za-z0-9._-]*' "$AZURITE_DIR/debug.log" |
		sed 's/Bearer //' | sort -u)
		[ "${#secrets[@]}" -ge 5 ] || fail "az: only ${#secrets[@]} tokens in Azurite's debug log" ||
			return 1
		secrets+=(eyJ) ;;
	gcs) secrets=(ya29.) ;;
	esac
	case $p in
	s3 | az) secrets+=("soak-$p-token-") ;;
	esac
	[ -s "${!log}" ] || fail "$p: the log is empty: nothing was checked" || return 1
	for s in "${secrets[@]}"; do
		! grep -qF -- "$s" "${!log}" || fail "$p: the mount's log holds a credential" || return 1
	done
}

@test "soak: 60-second credentials of S3, Azure and GCS for 3 minutes at once; endpoints down 20 s, token files rotated: no read fails" {
	s3_up
	az_up
	gcs_up
	local p
	for p in "${PROVIDERS[@]}"; do
		assert_eq "$(tokens "$p")" 1 "$p: credentials fetched at mount"
	done
	for p in "${PROVIDERS[@]}"; do
		reader "$p" &
		READERS+=($!)
		control "$p" &
		CONTROLS+=($!)
	done
	wait "${READERS[@]}" "${CONTROLS[@]}"
	READERS=()
	CONTROLS=()
	for p in "${PROVIDERS[@]}"; do
		echo "--- $p: $(wc -l <"$T/$p.passes") passes, $(data_gets "$p") ranged GETs," \
			"$(tokens "$p") credentials issued; events:"
		cat "$T/$p.events"
	done
	for p in "${PROVIDERS[@]}"; do
		check_reads "$p"
		check_renewals "$p"
	done
	check_rotation s3
	check_rotation az
	for p in "${PROVIDERS[@]}"; do
		tilefs_umount "$T/mnt-$p"
		check_no_secret "$p"
	done
}
