#!/usr/bin/env bats
# Google Cloud Storage with Application Default Credentials from the
# metadata server (cloud_identity.py on 127.0.0.1: a metadata server over
# http, and a GCS XML-API data plane over https that takes only the
# current tokens of that metadata server): 60-second tokens renewed before
# they expire, a refused token renewed once and the read retried, no
# token in the log, and what a mount without credentials says.

bats_require_minimum_version 1.5.0
load ../lib/tilefs
load ../lib/cloud_identity

setup() {
	tilefs_setup
	MNT=$T/mnt
	CACHE=$T/cache
	unset GOOGLE_OAUTH_ACCESS_TOKEN GS_ACCESS_KEY_ID GS_SECRET_ACCESS_KEY \
		GOOGLE_APPLICATION_CREDENTIALS GCE_METADATA_HOST
	export CLOUDSDK_CONFIG=$T/gcloud	# no well-known file unless a test writes one
	mkdir -p "$T/gcs/eo/data"
	cp -r "$SAMPLES/." "$T/gcs/eo/data/"
	_origin_make_tls "$T/tls"
	SECRET=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
}

teardown() {
	tilefs_teardown
	identity_stop
	gcs_plane_stop
}

# gcs_start ARGS...: the metadata server (ARGS: its token lifetimes) and
# the data plane; GCE_METADATA_HOST points at the first.
gcs_start() {
	identity_start --secret "$SECRET" "$@"
	gcs_plane_start --secret "$SECRET" --gcs-root "$T/gcs" \
		--tls-cert "$T/tls/server.pem" --tls-key "$T/tls/server.key"
	export GCE_METADATA_HOST=$IDENTITY_HOST
	GCS_ENDPOINT=https://127.0.0.1:$GCS_PLANE_PORT
}

# plane_count STATUS: data plane requests answered STATUS.
plane_count() {
	awk -v st="$1" '$3 == st { n++ } END { print n + 0 }' "$GCS_PLANE_LOG"
}

# read_until_tokens N FILE: read FILE through the mount (--ttl 0: each
# open asks the data plane) once a second until the metadata server has
# handed out N tokens.
read_until_tokens() {
	cmp -s "$SAMPLES/$2" "$MNT/$2" || return 1
	[ "$(identity_tokens)" -ge "$1" ] && return 0
	sleep 1
	return 1
}

# no_secret_in FILE SECRET...: none of the secrets occurs in FILE.
no_secret_in() {
	local f=$1 s
	shift
	[ -s "$f" ] || fail "$f is empty: nothing was checked"
	for s in "$@"; do
		[ -n "$s" ] || continue
		if grep -qF -- "$s" "$f"; then
			fail "$f contains a secret"
			return 1
		fi
	done
}

# seconds_since_t0 N: N seconds or more have passed since T0 (SECONDS).
seconds_since_t0() {
	[ $((SECONDS - T0)) -ge "$1" ]
}

@test "metadata server: 60-second tokens renewed before they expire; bytes identical; no token in the log" {
	gcs_start --lifetime 60
	tilefs_mount "gs://eo/data" "$MNT" --endpoint "$GCS_ENDPOINT" --ca-file "$T/tls/ca.pem" \
		--ttl 0 --log-level debug
	cmp "$SAMPLES/notes.txt" "$MNT/notes.txt"
	assert_eq "$(identity_tokens)" 1 "tokens fetched at mount"
	wait_until "a token renewal" read_until_tokens 2 notes.txt
	cmp_tree "$SAMPLES" "$MNT"
	assert_eq "$(identity_tokens)" 2 "tokens after one renewal"
	assert_eq "$(plane_count 401)" 0 "requests the data plane refused (renewed in time)"
	[ "$(plane_count 206)$(plane_count 200)" != 00 ] || fail "the data plane logged no reads"
	local log=$TILEFS_LOG
	tilefs_umount "$MNT"
	! grep -q "ya29\." "$log" || fail "a token is in the log"
}

@test "metadata server: a token GCS refuses (401) is renewed once and the read retried" {
	# tokens announced for 60 s that the data plane holds expired after 3 s
	gcs_start --lifetime 60 --valid 3
	tilefs_mount "gs://eo/data" "$MNT" --endpoint "$GCS_ENDPOINT" --ca-file "$T/tls/ca.pem" \
		--ttl 0
	cmp "$SAMPLES/notes.txt" "$MNT/notes.txt"
	T0=$SECONDS
	wait_until "the first token to lapse" seconds_since_t0 5
	cmp "$SAMPLES/random.bin" "$MNT/random.bin"
	[ "$(plane_count 401)" -ge 1 ] || fail "nothing was refused: the test tested nothing"
	assert_eq "$(identity_tokens)" 2 "tokens: the first, and one renewal after the refusal"
	grep -q "refused the bearer token" "$TILEFS_LOG" ||
		fail "no log line about the refused token"
}

@test "a folder too wide for one listing (--page-size 2): listed deep, then the folders beside a reader's in runs of names; every name and byte right" {
	local flat=$T/gcs/eo/flat
	patch_folders "$flat" 60
	gcs_start --lifetime 3600
	tilefs_mount "gs://eo/flat" "$MNT" --endpoint "$GCS_ENDPOINT" --ca-file "$T/tls/ca.pem" \
		--page-size 2 --log-level debug
	# the root's 32 deep pages of 2 keys: p000-p020 whole, p021 in part; a
	# reader in p040 has p030-p039 listed ahead in a listing of p03* (cut
	# at 8 pages: p030-p034 whole, the rest in runs of their own)
	ls "$MNT/p040" >/dev/null
	grep -q "listed / deep: 64 names (the first ones)" "$TILEFS_LOG" ||
		fail "the root was not listed deep: $(grep 'listed /' "$TILEFS_LOG")"
	wait_until "the run p03* listed ahead" grep -q "listed /p03\* deep: 16 names (the first ones)$" "$TILEFS_LOG"
	diff <(cd "$flat" && find . | sort) <(cd "$MNT" && find . | sort) >&2 ||
		fail "the mount's names differ from the origin's"
	cmp_tree "$flat" "$MNT"
	! grep -q "listed /p031 deep" "$TILEFS_LOG" || fail "p031, in the run p03*, was listed on its own"
}

@test "no credentials and no metadata server: exit 1 naming what was tried, in order" {
	gcs_start --lifetime 60
	identity_stop	# the metadata server is gone; its address stays
	mkdir -p "$MNT"
	tilefs_run mount --endpoint "$GCS_ENDPOINT" --ca-file "$T/tls/ca.pem" --cache-dir "$CACHE" \
		"gs://eo/data" "$MNT"
	assert_eq "$status" 1 "exit status"
	[[ $err == *"GOOGLE_OAUTH_ACCESS_TOKEN"*"GS_ACCESS_KEY_ID"*"metadata server"*"--no-sign-request"* ]] ||
		fail "message does not name what was tried: $err"
	! is_mounted "$MNT" || fail "mounted anyway"
}

@test "a GOOGLE_APPLICATION_CREDENTIALS file that is no credentials document: one message, naming what was tried and why, no log line before it" {
	echo '{"type": "external_account"' >"$T/bad.json"
	mkdir -p "$MNT"
	GOOGLE_APPLICATION_CREDENTIALS=$T/bad.json GCE_METADATA_HOST=127.0.0.1:9 \
		tilefs_run mount --endpoint https://127.0.0.1:9 --cache-dir "$CACHE" "gs://eo/data" "$MNT"
	assert_eq "$status" 1 "exit status"
	assert_eq "$(printf '%s\n' "$err" | wc -l)" 1 "lines on stderr"
	[[ $err1 == "tilefs: "*"GOOGLE_APPLICATION_CREDENTIALS"*"metadata server"*"--no-sign-request"* ]] ||
		fail "message does not name what was tried: $err1"
	[[ $err1 == *"$T/bad.json is not a credentials JSON document"* ]] ||
		fail "message does not say what failed: $err1"
	! is_mounted "$MNT" || fail "mounted anyway"
}

@test "credential files: gcloud's authorized_user, then GOOGLE_APPLICATION_CREDENTIALS' service_account (RS256); renewed; no secret in the log" {
	openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$T/sa.key" 2>/dev/null
	openssl pkey -in "$T/sa.key" -pubout -out "$T/sa.pub"
	gcs_start --lifetime 60 --client-id cid-1 --client-secret 'c1ient-s3cret' \
		--refresh-token 'r3fresh-token' --sa-email reader@proj.iam.gserviceaccount.com \
		--sa-public-key "$T/sa.pub"
	export GCE_METADATA_HOST=127.0.0.1:9	# not asked: a file comes first
	mkdir -p "$CLOUDSDK_CONFIG"
	"$PY" -c 'import json, sys
json.dump({"type": "authorized_user", "client_id": "cid-1", "client_secret": "c1ient-s3cret",
           "refresh_token": "r3fresh-token", "token_uri": sys.argv[1]}, open(sys.argv[2], "w"))' \
		"$IDENTITY_URL/token" "$CLOUDSDK_CONFIG/application_default_credentials.json"
	tilefs_mount "gs://eo/data" "$MNT" --endpoint "$GCS_ENDPOINT" --ca-file "$T/tls/ca.pem" \
		--log-level debug
	cmp "$SAMPLES/notes.txt" "$MNT/notes.txt"
	assert_eq "$(grep -c '^TOKEN google-refresh' "$IDENTITY_LOG")" 1 "refresh-token grants"
	local log=$TILEFS_LOG
	tilefs_umount "$MNT"
	no_secret_in "$log" "c1ient-s3cret" "r3fresh-token" "ya29."

	"$PY" -c 'import json, sys
json.dump({"type": "service_account", "project_id": "proj", "private_key_id": "k1",
           "private_key": open(sys.argv[1]).read(), "client_email": "reader@proj.iam.gserviceaccount.com",
           "client_id": "1", "token_uri": sys.argv[2]}, open(sys.argv[3], "w"))' \
		"$T/sa.key" "$IDENTITY_URL/token" "$T/sa.json"
	export GOOGLE_APPLICATION_CREDENTIALS=$T/sa.json
	tilefs_mount "gs://eo/data" "$MNT" --endpoint "$GCS_ENDPOINT" --ca-file "$T/tls/ca.pem" \
		--cache-dir "$T/cache2" --ttl 0 --log-level debug
	cmp "$SAMPLES/notes.txt" "$MNT/notes.txt"
	assert_eq "$(grep -c '^TOKEN google-jwt' "$IDENTITY_LOG")" 1 "signed assertions taken"
	wait_until "a token renewal" read_until_tokens 3 notes.txt
	assert_eq "$(grep -c '^TOKEN google-jwt' "$IDENTITY_LOG")" 2 "assertions after one renewal"
	assert_eq "$(identity_count POST 400)" 0 "token requests refused"
	assert_eq "$(plane_count 401)" 0 "requests the data plane refused"
	cmp_tree "$SAMPLES" "$MNT"
	log=$TILEFS_LOG
	tilefs_umount "$MNT"
	no_secret_in "$log" "PRIVATE KEY" "$(sed -n 2p "$T/sa.key")" "ya29." "eyJ"
}

@test "metadata server down past the token's life: EACCES, one log line naming it and a metric; the mount recovers by itself" {
	# 6-second tokens: renewed after 3 s, expired after 6
	gcs_start --lifetime 6
	tilefs_mount "gs://eo/data" "$MNT" --endpoint "$GCS_ENDPOINT" --ca-file "$T/tls/ca.pem" \
		--ttl 0 --log-level info --metrics-file "$T/m.prom"
	cmp "$SAMPLES/notes.txt" "$MNT/notes.txt"
	metric_is "$T/m.prom" tilefs_credentials_expired 0 || fail "expired at the start: $(grep credential "$T/m.prom")"
	local port=${IDENTITY_HOST#*:}
	identity_stop
	T0=$SECONDS
	wait_until "the token to expire" seconds_since_t0 8
	run cat "$MNT/random.bin"
	[ "$status" -ne 0 ] || fail "a read succeeded with an expired token"
	[[ $output == *"Permission denied"* ]] || fail "not EACCES: $output"
	run cat "$MNT/notes.txt"
	[[ $output == *"Permission denied"* ]] || fail "not EACCES: $output"
	assert_eq "$(grep -c 'have expired and cannot be renewed' "$TILEFS_LOG")" 1 \
		"log lines about the expiry (one per outage)"
	grep 'have expired and cannot be renewed' "$TILEFS_LOG" | grep -q "metadata server" ||
		fail "the log line does not name the endpoint"
	# the metrics file (rewritten every 5 s) says so too
	wait_until "tilefs_credentials_expired 1 during the outage" \
		metric_is "$T/m.prom" tilefs_credentials_expired 1 || fail "$(grep credential "$T/m.prom")"
	# it comes back on the same address: reads go on without a remount
	identity_start --secret "$SECRET" --lifetime 60 --port "$port"
	wait_until "reads to recover" cmp -s "$SAMPLES/random.bin" "$MNT/random.bin"
	grep -q "renewed; reads go on" "$TILEFS_LOG" || fail "no log line about the recovery"
	wait_until "tilefs_credentials_expired 0 after the recovery" \
		metric_is "$T/m.prom" tilefs_credentials_expired 0 || fail "$(grep credential "$T/m.prom")"
}
