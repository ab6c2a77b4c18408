#!/usr/bin/env bats
# A mount proves itself with the principal its credentials name, not with
# where they came from (README, Security): for each shape of renewable AWS
# credentials, two principals through the same shape of source, the one
# that may only LIST after the one that may GET, on one cache dir. The
# store (tests/lib/sigv4_store.py) checks every signature and holds the
# roles apart (tests/lib/aws_identity.py issues the keys); the second
# mount must ask for the object itself and be refused. And the endpoints
# that may see a secret are read as URLs, not as strings.

bats_require_minimum_version 1.5.0
load ../lib/tilefs

OBJ=a.bin
ACCOUNT=arn:aws:iam::123456789012:role

setup() {
	tilefs_setup
	MNT=$T/mnt
	mkdir -p "$MNT" "$T/data"
	head -c 300000 /dev/urandom >"$T/data/$OBJ"
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_PROFILE \
		AWS_CONFIG_FILE AWS_SHARED_CREDENTIALS_FILE AWS_WEB_IDENTITY_TOKEN_FILE AWS_ROLE_ARN \
		AWS_CONTAINER_CREDENTIALS_FULL_URI AWS_CONTAINER_CREDENTIALS_RELATIVE_URI \
		AWS_CONTAINER_AUTHORIZATION_TOKEN AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE \
		AZURE_AUTHORITY_HOST AZURE_TENANT_ID AZURE_CLIENT_ID AZURE_CLIENT_SECRET \
		GOOGLE_APPLICATION_CREDENTIALS http_proxy HTTP_PROXY https_proxy no_proxy NO_PROXY
	export AWS_EC2_METADATA_DISABLED=true HOME=$T/home
	ID=$T/id
	mkdir -p "$ID" "$HOME"
	"$PY" "$TESTS_LIB/aws_identity.py" "$ID" 2>"$T/identity.err" 3>&- &
	IDENTITY_PID=$!
	SIGV4_KEYS=$ID/keys.json "$PY" "$TESTS_LIB/sigv4_store.py" "$T/data" "$T/store.log" \
		>"$T/store.port" 2>"$T/store.err" 3>&- &
	STORE_PID=$!
	wait_until "the identity emulator's start" test -s "$ID/port"
	wait_until "the store's start" test -s "$T/store.port"
	ID_URL=http://127.0.0.1:$(cat "$ID/port")
	STORE_URL=http://127.0.0.1:$(cat "$T/store.port")
}

teardown() {
	tilefs_teardown
	[ -z "${IDENTITY_PID:-}" ] || kill "$IDENTITY_PID" 2>/dev/null || true
	[ -z "${STORE_PID:-}" ] || kill "$STORE_PID" 2>/dev/null || true
	[ -z "${RECORDER_PID:-}" ] || kill "$RECORDER_PID" 2>/dev/null || true
}

# requests ROLE: the store's requests for the object signed by keys
# issued to ROLE, one line each: METHOD STATUS
requests() {
	"$PY" - "$ID/keys.json" "$T/store.log" "/eo/$OBJ" "$1" <<'PY'
import json, sys
keys = {k["AccessKeyId"]: k["Role"] for k in json.load(open(sys.argv[1]))["keys"]}
for line in open(sys.argv[2], errors="replace"):
    f = line.split()
    if len(f) >= 7 and f[1] == sys.argv[3] and keys.get(f[-1]) == sys.argv[4]:
        print(f[0], f[3])
PY
}

# two_principals READER LISTER MOUNT_READER MOUNT_LISTER [KEYED]:
# MOUNT_READER (a function mounting with READER's credentials) reads the
# object whole; MOUNT_LISTER, on the same cache dir, is refused it, having
# asked the store itself; a remount by READER asks nothing, or, KEYED (a
# source that names no principal, whose keys name it: each mount's are
# new), proves its new key with one HEAD and fetches no byte again.
two_principals() {
	local reader=$1 lister=$2 mount_reader=$3 mount_lister=$4 keyed=${5:-}
	echo "$lister" >"$ID/listonly-roles"
	"$mount_reader"
	cmp "$T/data/$OBJ" "$MNT/$OBJ" || fail "the reader's mount read other bytes"
	tilefs_umount "$MNT"
	[ -n "$(requests "$reader" | awk '$2 ~ /^20/')" ] || fail "the reader fetched nothing"

	"$mount_lister"
	run -1 cat "$MNT/$OBJ"
	[[ "$output" == *"Permission denied"* ]] || fail "cat through the lister's mount says: $output"
	/usr/bin/python3 - "$MNT/$OBJ" <<'PY' || fail "the lister's mount served bytes of $OBJ"
import sys
try:
    data = open(sys.argv[1], "rb").read()
except OSError:
    sys.exit(0)
print(len(data), "bytes served")
sys.exit(1)
PY
	tilefs_umount "$MNT"
	echo "the lister's requests:"
	requests "$lister"
	[ -n "$(requests "$lister" | awk '$2 == 403')" ] ||
		fail "the store saw no request of the lister's for $OBJ"
	assert_eq "$(requests "$lister" | awk '$2 != 403' | wc -l)" 0 \
		"requests of the lister's the store did not refuse"

	local before
	before=$(wc -l <"$T/store.log")
	"$mount_reader"
	cmp "$T/data/$OBJ" "$MNT/$OBJ" || fail "the reader's remount read other bytes"
	tilefs_umount "$MNT"
	tail -n +"$((before + 1))" "$T/store.log" | grep " /eo/$OBJ " || true
	if [ -n "$keyed" ]; then
		assert_eq "$(tail -n +"$((before + 1))" "$T/store.log" | grep " /eo/$OBJ " |
			awk '{ print $1, $4 }')" "HEAD 200" "requests for $OBJ by the reader's remount"
	else
		assert_eq "$(tail -n +"$((before + 1))" "$T/store.log" | grep -c " /eo/$OBJ ")" 0 \
			"requests for $OBJ by the reader's remount"
	fi
}

s3_mount() {
	tilefs_mount s3://eo "$MNT" --endpoint "$STORE_URL" "$@"
}

# ---- credential_process: two config files, both [default] ----

process_config() {
	printf '[default]\ncredential_process = %s %s %s --process %s\n' \
		"$PY" "$TESTS_LIB/aws_identity.py" "$ID" "$1" >"$T/config-$1"
}
mount_process_reader() { AWS_CONFIG_FILE=$T/config-reader s3_mount; }
mount_process_lister() { AWS_CONFIG_FILE=$T/config-lister s3_mount; }

@test "principals: two credential_process profiles, both [default]: the second principal is refused" {
	process_config reader
	process_config lister
	two_principals reader lister mount_process_reader mount_process_lister keyed
}

# claiming: a credential_process of the lister's whose document also says
# "RoleArn": the reader's role, which its container endpoint names (a
# command of the user's own vouches for no one, whatever it prints)
mount_process_claiming() { AWS_CONFIG_FILE=$T/config-claiming s3_mount; }

@test "principals: a credential_process that names another principal's role is not that principal" {
	printf 'token-reader %s/reader\n' "$ACCOUNT" >"$ID/container-roles"
	printf '#!/bin/sh\n"%s" "%s" "%s" --process lister | "%s" -c %s\n' "$PY" \
		"$TESTS_LIB/aws_identity.py" "$ID" "$PY" \
		"'import json, sys; d = json.load(sys.stdin); d[\"RoleArn\"] = \"$ACCOUNT/reader\"; print(json.dumps(d))'" \
		>"$T/claiming"
	chmod +x "$T/claiming"
	printf '[default]\ncredential_process = %s\n' "$T/claiming" >"$T/config-claiming"
	two_principals "$ACCOUNT/reader" lister mount_container_reader mount_process_claiming
}

# ---- container credentials: one URL, two authorization tokens ----

mount_container_reader() {
	AWS_CONTAINER_CREDENTIALS_FULL_URI=$ID_URL/v2/credentials/pod \
		AWS_CONTAINER_AUTHORIZATION_TOKEN=token-reader s3_mount
}
mount_container_lister() {
	AWS_CONTAINER_CREDENTIALS_FULL_URI=$ID_URL/v2/credentials/pod \
		AWS_CONTAINER_AUTHORIZATION_TOKEN=token-lister s3_mount
}

@test "principals: one container credentials URL, two tokens (EKS Pod Identity: no RoleArn): the second is refused" {
	printf 'token-reader %s/reader\ntoken-lister %s/lister\n' "$ACCOUNT" "$ACCOUNT" \
		>"$ID/container-roles"
	touch "$ID/container-eks"
	two_principals "$ACCOUNT/reader" "$ACCOUNT/lister" mount_container_reader \
		mount_container_lister keyed
}

@test "principals: one container credentials URL, two tokens (ECS: RoleArn): the second is refused; the role's next keys ask nothing" {
	printf 'token-reader %s/reader\ntoken-lister %s/lister\n' "$ACCOUNT" "$ACCOUNT" \
		>"$ID/container-roles"
	two_principals "$ACCOUNT/reader" "$ACCOUNT/lister" mount_container_reader \
		mount_container_lister
	# each mount had keys of its own: the role, not the key, was proved
	[ "$(grep -c ' issued ' "$ID/log")" -ge 3 ] || fail "fewer keys issued than mounts"
}

# ---- the instance's role: names equal in their first 60 characters ----

IMDS_RW=ml-training-sentinel2-cloudfree-mosaics-2024-shared-cache-eu-rw
IMDS_RO=ml-training-sentinel2-cloudfree-mosaics-2024-shared-cache-eu-ro
mount_imds_reader() {
	echo "$IMDS_RW" >"$ID/imds-role"
	AWS_EC2_METADATA_DISABLED=false AWS_EC2_METADATA_SERVICE_ENDPOINT=$ID_URL s3_mount
}
mount_imds_lister() {
	echo "$IMDS_RO" >"$ID/imds-role"
	AWS_EC2_METADATA_DISABLED=false AWS_EC2_METADATA_SERVICE_ENDPOINT=$ID_URL s3_mount
}

@test "principals: instance roles of 63 characters, equal in their first 60: the second is refused" {
	assert_eq "${#IMDS_RW}" 63 "the role name's length"
	two_principals "$IMDS_RW" "$IMDS_RO" mount_imds_reader mount_imds_lister
}

# ---- web identity: role ARNs equal in their first 80 characters ----

WEB_RW=$ACCOUNT/service-role/ml-training/sentinel2-cloudfree-mosaics-shared-cache-eu-read-write
WEB_RO=$ACCOUNT/service-role/ml-training/sentinel2-cloudfree-mosaics-shared-cache-eu-list-only
mount_web_reader() {
	AWS_WEB_IDENTITY_TOKEN_FILE=$ID/web-token AWS_ROLE_ARN=$WEB_RW \
		AWS_ENDPOINT_URL_STS=$ID_URL s3_mount
}
mount_web_lister() {
	AWS_WEB_IDENTITY_TOKEN_FILE=$ID/web-token AWS_ROLE_ARN=$WEB_RO \
		AWS_ENDPOINT_URL_STS=$ID_URL s3_mount
}

@test "principals: web identity roles whose ARNs are equal in their first 80 characters: the second is refused" {
	[ "${WEB_RW:0:80}" = "${WEB_RO:0:80}" ] || fail "the ARNs differ in their first 80"
	echo "oidc-token" >"$ID/web-token"
	two_principals "$WEB_RW" "$WEB_RO" mount_web_reader mount_web_lister
	# the token went in a POST's body, as the SDKs send it, never in a URL
	grep -q "^sts POST / 200 issued" "$ID/log" || fail "no POST to STS"
	assert_eq "$(grep -c "^sts GET" "$ID/log")" 0 "GETs to STS"
}

# ---- SSO profiles: one sign-in, two roles of one account ----

sso_config() {
	printf '[profile sso-reader]\nsso_session = corp\nsso_account_id = 123456789012\nsso_role_name = reader\n\n[profile sso-lister]\nsso_session = corp\nsso_account_id = 123456789012\nsso_role_name = lister\n\n[sso-session corp]\nsso_start_url = https://corp.awsapps.com/start\nsso_region = eu-west-1\n' \
		>"$T/config"
	mkdir -p "$HOME/.aws/sso/cache"
	printf '{"accessToken": "sso-access-p", "expiresAt": "%s"}\n' \
		"$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)" \
		>"$HOME/.aws/sso/cache/$(printf corp | sha1sum | cut -c1-40).json"
	echo "sso-access-p" >"$ID/sso-token"
}
mount_sso_reader() { AWS_CONFIG_FILE=$T/config AWS_ENDPOINT_URL_SSO=$ID_URL s3_mount --profile sso-reader; }
mount_sso_lister() { AWS_CONFIG_FILE=$T/config AWS_ENDPOINT_URL_SSO=$ID_URL s3_mount --profile sso-lister; }

@test "principals: two SSO roles of one account, one sign-in: the second is refused; the first's remount asks nothing" {
	sso_config
	two_principals sso:123456789012:reader sso:123456789012:lister mount_sso_reader \
		mount_sso_lister
	assert_eq "$(grep -c '^sso GET /federation/credentials 200 issued' "$ID/log")" 3 \
		"portal answers (one a mount)"
}

# ---- secrets go only to https or loopback, as the URL's host says ----

# recorder_start: an HTTP proxy on 127.0.0.1 that records every request
# line and body it gets (and answers 502): where a secret would go
recorder_start() {
	"$PY" - "$T/recorder" <<'PY' 3>&- &
import http.server, sys
out = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def do_any(self):
        n = int(self.headers.get("Content-Length", "0") or 0)
        body = self.rfile.read(n) if n else b""
        with open(out + ".log", "ab") as f:
            f.write(self.requestline.encode() + b" " + body + b"\n")
        self.send_response(502)
        self.send_header("Content-Length", "0")
        self.end_headers()
    do_GET = do_POST = do_PUT = do_any
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(out + ".port", "w").write(str(s.server_address[1]))
s.serve_forever()
PY
	RECORDER_PID=$!
	wait_until "the recorder's start" test -s "$T/recorder.port"
	touch "$T/recorder.log"
	export http_proxy=http://127.0.0.1:$(cat "$T/recorder.port") no_proxy=
}

@test "secrets: an Entra authority or a token_uri that only looks like loopback gets nothing; the mount says what to fix" {
	recorder_start
	local host
	for host in localhost.attacker.example 127.0.0.1.attacker.example 127.0.0.1@attacker.example; do
		AZURE_AUTHORITY_HOST=http://$host AZURE_TENANT_ID=t AZURE_CLIENT_ID=c \
			AZURE_CLIENT_SECRET=entra-secret-value \
			tilefs_run mount az://acct/cogs "$MNT" --cache-dir "$T/cache" \
			--endpoint https://127.0.0.1:9/acct
		assert_eq "$status" 1 "exit status with AZURE_AUTHORITY_HOST=http://$host"
		[[ "$err" == *"AZURE_AUTHORITY_HOST must be an https URL"* ]] ||
			fail "message with http://$host: $err"
		printf '{"type": "authorized_user", "client_id": "cid", "client_secret": "%s",
		  "refresh_token": "%s", "token_uri": "http://%s/token"}\n' \
			gcs-secret-value gcs-refresh-value "$host" >"$T/adc.json"
		GOOGLE_APPLICATION_CREDENTIALS=$T/adc.json \
			tilefs_run mount gs://bucket "$MNT" --cache-dir "$T/cache" \
			--endpoint https://127.0.0.1:9
		assert_eq "$status" 1 "exit status with a token_uri on http://$host"
	done
	cat "$T/recorder.log"
	assert_eq "$(wc -l <"$T/recorder.log")" 0 "requests the recorder got"
	! grep -rqs -e entra-secret-value -e gcs-secret-value -e gcs-refresh-value \
		"$T/recorder.log" || fail "a secret reached the recorder"
}
