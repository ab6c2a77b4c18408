#!/usr/bin/env bats
# AWS profiles as the AWS CLI writes them: SSO sign-ins (sso_session, and
# legacy profiles) from the CLI's token cache through a loopback SSO
# portal, and role_arn with credential_source or a source_profile that
# signs in with SSO, through a loopback STS (tests/lib/aws_identity.py),
# in front of a Signature V4 store that accepts only the keys it issued.

bats_require_minimum_version 1.5.0
load ../lib/tilefs

ACCOUNT=123456789012

setup() {
	tilefs_setup
	MNT=$T/mnt
	mkdir -p "$MNT"
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_PROFILE
	export AWS_EC2_METADATA_DISABLED=true HOME=$T/home AWS_CONFIG_FILE=$T/config
	export AWS_SHARED_CREDENTIALS_FILE=$T/credentials
	mkdir -p "$HOME"
	ID=$T/id
	mkdir -p "$ID"
	[ -z "${LIFETIME:-}" ] || echo "$LIFETIME" >"$ID/lifetime"
	"$PY" "$TESTS_LIB/aws_identity.py" "$ID" 2>"$T/identity.err" 3>&- &
	IDENTITY_PID=$!
	start_store
	wait_until "the identity emulator's start" test -s "$ID/port"
	ID_URL=http://127.0.0.1:$(cat "$ID/port")
	(cd "$SAMPLES" && find . -type f | sed 's|^\./||' | sort) >"$T/list"
}

# start_store [SECONDS]: the store, its clock SECONDS (0) ahead of ours;
# one started before is stopped first
start_store() {
	[ -z "${STORE_PID:-}" ] || { kill "$STORE_PID"; wait "$STORE_PID" || true; }
	rm -f "$T/store.port"
	SIGV4_KEYS=$ID/keys.json SIGV4_CLOCK_AHEAD_S=${1:-0} \
		"$PY" "$TESTS_LIB/sigv4_store.py" "$SAMPLES" "$T/store.log" \
		>"$T/store.port" 2>"$T/store.err" 3>&- &
	STORE_PID=$!
	wait_until "the store's start" test -s "$T/store.port"
	STORE_URL=http://127.0.0.1:$(cat "$T/store.port")
}

teardown() {
	tilefs_teardown
	[ -z "${IDENTITY_PID:-}" ] || kill "$IDENTITY_PID" 2>/dev/null || true
	[ -z "${STORE_PID:-}" ] || kill "$STORE_PID" 2>/dev/null || true
}

# sso_login NAME TOKEN [EXPIRES]: what `aws sso login` leaves in the CLI's
# cache for the sso_session (or legacy start URL) NAME, and the portal's
# token; EXPIRES defaults to an hour from now
sso_login() {
	local file expires=${3:-$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)}
	mkdir -p "$HOME/.aws/sso/cache"
	file=$HOME/.aws/sso/cache/$(printf %s "$1" | sha1sum | cut -c1-40).json
	printf '{"startUrl": "https://corp.awsapps.com/start", "region": "eu-west-1", "accessToken": "%s", "expiresAt": "%s", "clientId": "cid", "clientSecret": "csecret", "refreshToken": "rtoken"}\n' \
		"$2" "$expires" >"$file"
	echo "$2" >"$ID/sso-token"
}

# sso_config: the profile "dev" signing in with the sso_session "corp"
sso_config() {
	printf '[profile dev]\nsso_session = corp\nsso_account_id = %s\nsso_role_name = reader\nregion = us-east-1\n\n[sso-session corp]\nsso_start_url = https://corp.awsapps.com/start\nsso_region = eu-west-1\nsso_registration_scopes = sso:account:access\n' \
		"$ACCOUNT" >"$AWS_CONFIG_FILE"
}

# no_issued_secret FILE...: no secret the emulator issued, nor an SSO
# access token of the test's, appears in FILE
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
    if "sso-access-" in text:
        sys.exit(f"{path} holds an SSO access token")
PY
}

issued() {
	grep -c ' issued ' "$ID/log" 2>/dev/null || true
}

read_all() {
	local f
	while read -r f; do
		cmp "$SAMPLES/$f" "$MNT/$f" || return 1
	done <"$T/list"
}

# reads_until_issued N: read a file each second until the emulator has
# issued N credentials; every read must succeed (150 s at most)
reads_until_issued() {
	local n=$1 deadline=$((SECONDS + 150)) f
	f=$(head -1 "$T/list")
	while [ "$(issued)" -lt "$n" ]; do
		[ "$SECONDS" -lt "$deadline" ] || { fail "only $(issued) credentials issued"; return 1; }
		cmp "$SAMPLES/$f" "$MNT/$f" || return 1
		sleep 1
	done
}

# reads_fail_eacces: read the first file each second until a read fails
# (180 s at most): it must fail with EACCES
reads_fail_eacces() {
	local f deadline=$((SECONDS + 180)) out
	f=$(head -1 "$T/list")
	while out=$(cat "$MNT/$f" 2>&1 >/dev/null); do
		[ "$SECONDS" -lt "$deadline" ] || { fail "reads never failed once the token expired"; return 1; }
		sleep 1
	done
	[[ $out == *"Permission denied"* ]] || fail "a read failed with: $out"
}

# login_again_recovers: a new SSO login; the first file reads again
# (180 s at most), then every file, each right
login_again_recovers() {
	local f deadline=$((SECONDS + 180))
	f=$(head -1 "$T/list")
	sso_login corp "sso-access-again"
	until cmp -s "$SAMPLES/$f" "$MNT/$f"; do
		[ "$SECONDS" -lt "$deadline" ] || { fail "the mount did not recover after a new login"; return 1; }
		sleep 1
	done
	read_all || fail "a file differs after the new login"
}

# sha16 TEXT: the first 16 hex digits of TEXT's SHA-256, as the emulator logs it
sha16() {
	printf %s "$1" | sha256sum | cut -c1-16
}

mount_dev() {
	AWS_ENDPOINT_URL_SSO=$ID_URL \
		tilefs_mount "s3://eo" "$MNT" --endpoint "$STORE_URL" --list "$T/list" --ttl 0 \
		--profile "${PROFILE:-dev}" --log-level debug "$@"
}

@test "aws profiles: an sso_session profile reads through the SSO portal with the CLI's cached token" {
	sso_config
	sso_login corp "sso-access-one"
	mount_dev
	read_all || fail "a file differs"
	grep -q "^sso presented sha256:$(sha16 sso-access-one) role=reader account=$ACCOUNT$" "$ID/log" ||
		fail "the portal's log: $(cat "$ID/log")"
	assert_eq "$(grep -c '^sso GET /federation/credentials 200 issued' "$ID/log")" 1 "portal answers"
	assert_eq "$(awk '$4 != 206 && $4 != 200' "$T/store.log" | wc -l)" 0 "store refusals"
	grep -q "profile dev (SSO, account $ACCOUNT, role reader) through the SSO portal at $ID_URL" \
		"$TILEFS_LOG" || fail "the log does not name the source: $(grep -i sso "$TILEFS_LOG")"
	no_issued_secret "$TILEFS_LOG"
	! ps -eo args | grep -q "[s]so-access-one" || fail "the token is in an argv"
}

@test "aws profiles: a legacy SSO profile (sso_start_url in the profile) finds its token by the start URL" {
	printf '[profile dev]\nsso_start_url = https://legacy.awsapps.com/start\nsso_region = us-west-2\nsso_account_id = %s\nsso_role_name = analyst\n' \
		"$ACCOUNT" >"$AWS_CONFIG_FILE"
	sso_login "https://legacy.awsapps.com/start" "sso-access-legacy"
	mount_dev
	read_all || fail "a file differs"
	grep -q "^sso presented sha256:$(sha16 sso-access-legacy) role=analyst account=$ACCOUNT$" \
		"$ID/log" || fail "the portal's log: $(cat "$ID/log")"
	no_issued_secret "$TILEFS_LOG"
}

@test "aws profiles: an expired or missing SSO token fails the mount, saying to run aws sso login" {
	sso_config
	AWS_ENDPOINT_URL_SSO=$ID_URL tilefs_run mount "s3://eo" "$MNT" --endpoint "$STORE_URL" \
		--profile dev --cache-dir "$T/cache" --log-file "$T/log"
	assert_eq "$status" 1 "exit status without a token"
	[[ "$err" == *"run \`aws sso login --profile dev\` (or \`aws sso login --sso-session corp\`)"* ]] ||
		fail "message: $err"
	sso_login corp "sso-access-old" 2020-01-01T00:00:00UTC
	AWS_ENDPOINT_URL_SSO=$ID_URL tilefs_run mount "s3://eo" "$MNT" --endpoint "$STORE_URL" \
		--profile dev --cache-dir "$T/cache" --log-file "$T/log"
	assert_eq "$status" 1 "exit status with an expired token"
	[[ "$err" == *"SSO token of profile dev expired at 2020-01-01T00:00:00UTC"* ]] ||
		fail "message: $err"
	[[ "$err" == *"aws sso login --profile dev"* ]] || fail "message: $err"
	[[ "$err" == *"no AWS credentials from the SSO portal"* ]] || fail "message: $err"
	! grep -q "^sso " "$ID/log" 2>/dev/null || fail "the portal was asked: $(cat "$ID/log")"
	# a token the portal no longer takes (signed out elsewhere): 401
	sso_login corp "sso-access-revoked"
	echo "sso-access-other" >"$ID/sso-token"
	AWS_ENDPOINT_URL_SSO=$ID_URL tilefs_run mount "s3://eo" "$MNT" --endpoint "$STORE_URL" \
		--profile dev --cache-dir "$T/cache" --log-file "$T/log"
	assert_eq "$status" 1 "exit status with a revoked token"
	[[ "$err" == *"refused the token of profile dev as expired or revoked"*"aws sso login --profile dev"* ]] ||
		fail "message: $err"
	grep -q "^sso GET /federation/credentials 401" "$ID/log"
	[[ "$err" != *"sso-access-"* ]] || fail "a token in the message: $err"
}

@test "aws profiles: an SSO profile's portal must be https or loopback; a bad profile names what is missing" {
	sso_config
	sso_login corp "sso-access-one"
	AWS_ENDPOINT_URL_SSO=http://192.0.2.1:9 tilefs_run mount "s3://eo" "$MNT" \
		--endpoint "$STORE_URL" --profile dev --cache-dir "$T/cache" --log-file "$T/log"
	assert_eq "$status" 1 "exit status"
	[[ "$err" == *"is not https (or http to a loopback address): the SSO token is not sent"* ]] ||
		fail "message: $err"
	printf '[profile dev]\nsso_session = corp\nsso_account_id = 1\n\n[sso-session corp]\nsso_start_url = u\nsso_region = r\n' \
		>"$AWS_CONFIG_FILE"
	tilefs_run mount "s3://eo" "$MNT" --endpoint "$STORE_URL" --profile dev \
		--cache-dir "$T/cache" --log-file "$T/log"
	assert_eq "$status" 1 "exit status"
	[[ "$err" == *"profile 'dev' signs in with SSO but has no sso_role_name"* ]] || fail "message: $err"
	printf '[profile dev]\nsso_session = nowhere\nsso_account_id = 1\nsso_role_name = r\n' \
		>"$AWS_CONFIG_FILE"
	tilefs_run mount "s3://eo" "$MNT" --endpoint "$STORE_URL" --profile dev \
		--cache-dir "$T/cache" --log-file "$T/log"
	assert_eq "$status" 1 "exit status"
	[[ "$err" == *"no [sso-session nowhere] in ~/.aws/config gives its sso_start_url"* ]] ||
		fail "message: $err"
}

@test "aws profiles: 20-second SSO role keys are renewed through the portal; a new login is taken up" {
	echo 20 >"$ID/lifetime"
	sso_config
	sso_login corp "sso-access-one"
	mount_dev --log-level info
	reads_until_issued 3
	# `aws sso login` again: the next renewal presents the new token
	sso_login corp "sso-access-two"
	reads_until_issued 5
	grep -q "^sso presented sha256:$(sha16 sso-access-two) " "$ID/log" ||
		fail "the new token was never sent: $(cat "$ID/log")"
	assert_eq "$(grep -c '^sso GET /federation/credentials 401' "$ID/log")" 0 "portal refusals"
	assert_eq "$(awk '$4 != 206 && $4 != 200' "$T/store.log" | wc -l)" 0 "store refusals"
	no_issued_secret "$TILEFS_LOG"
}

@test "aws profiles: an SSO token that expires during a mount: the log says to run aws sso login, reads fail with EACCES, a new login recovers" {
	echo 20 >"$ID/lifetime"
	sso_config
	sso_login corp "sso-access-short" "$(date -u -d '+40 seconds' +%Y-%m-%dT%H:%M:%SZ)"
	mount_dev --log-level info --metrics-file "$T/m.prom"
	read_all || fail "a file differs"
	reads_fail_eacces
	grep -q "the SSO token of profile dev expired at .*: run \`aws sso login --profile dev\`" \
		"$TILEFS_LOG" || fail "no line saying what to run: $(grep -i sso "$TILEFS_LOG")"
	wait_until "tilefs_credentials_expired 1" metric_is "$T/m.prom" tilefs_credentials_expired 1
	login_again_recovers
	grep -q "^sso presented sha256:$(sha16 sso-access-again) " "$ID/log" ||
		fail "the new token was never sent"
	no_issued_secret "$TILEFS_LOG"
}

@test "aws profiles: a store whose clock is 8 s ahead refuses SSO role keys before they expire: a HEAD's bare 400 renews them; once the token has expired, EACCES" {
	echo 20 >"$ID/lifetime"
	start_store 8
	sso_config
	sso_login corp "sso-access-short" "$(date -u -d '+40 seconds' +%Y-%m-%dT%H:%M:%SZ)"
	mount_dev --log-level info
	read_all || fail "a file differs"
	reads_fail_eacces
	# the store said no more than 400 to a HEAD (no body) while our
	# clock still held the keys good
	[ "$(awk '$1 == "HEAD" && $4 == 400' "$T/store.log" | wc -l)" -gt 0 ] ||
		fail "no HEAD refused: $(awk '$4 != 200 && $4 != 206' "$T/store.log")"
	grep -q "the store refused the credentials from .* as expired or revoked; renewing them" \
		"$TILEFS_LOG" || fail "no renewal on the refusal: $(grep -i s3: "$TILEFS_LOG")"
	login_again_recovers
	no_issued_secret "$TILEFS_LOG"
}

@test "aws profiles: role_arn with credential_source Ec2InstanceMetadata: AssumeRole signed by the instance's keys, both renewed" {
	echo 20 >"$ID/lifetime"
	printf '[profile ops]\nrole_arn = arn:aws:iam::%s:role/ops\ncredential_source = Ec2InstanceMetadata\nrole_session_name = bats-imds\nexternal_id = ext-42\n' \
		"$ACCOUNT" >"$AWS_CONFIG_FILE"
	AWS_EC2_METADATA_DISABLED=false AWS_EC2_METADATA_SERVICE_ENDPOINT=$ID_URL \
	AWS_ENDPOINT_URL_STS=$ID_URL PROFILE=ops mount_dev --log-level info
	read_all || fail "a file differs"
	grep -q "^sts assume-role session=bats-imds signed-by tilefs-test external-id=ext-42$" "$ID/log" ||
		fail "emulator log: $(cat "$ID/log")"
	grep -q "profile ops (role arn:aws:iam::$ACCOUNT:role/ops, credential_source Ec2InstanceMetadata) through STS" \
		"$TILEFS_LOG" || fail "the log does not name the role: $(grep -i role "$TILEFS_LOG")"
	# each renewal asks the metadata service for fresh keys, then STS
	local before
	before=$(grep -c '^sts GET / 200 issued' "$ID/log")
	reads_until_issued 6
	[ "$(grep -c '^sts GET / 200 issued' "$ID/log")" -gt "$before" ] || fail "no AssumeRole renewal"
	[ "$(grep -c '^imds GET /latest/meta-data/iam/security-credentials/tilefs-test 200' "$ID/log")" -gt 1 ] ||
		fail "the instance's keys were not fetched again"
	assert_eq "$(grep -c '^sts GET / 403' "$ID/log")" 0 "AssumeRole refusals"
	assert_eq "$(awk '$4 != 206 && $4 != 200' "$T/store.log" | wc -l)" 0 "store refusals"
	no_issued_secret "$TILEFS_LOG"
}

@test "aws profiles: role_arn with credential_source Environment, and with a source_profile that signs in with SSO" {
	echo "AKIDENV env/Secret+Key" >"$ID/source-keys"
	printf '[profile envrole]\nrole_arn = arn:aws:iam::%s:role/envrole\ncredential_source = Environment\nrole_session_name = bats-env\n' \
		"$ACCOUNT" >"$AWS_CONFIG_FILE"
	AWS_ACCESS_KEY_ID=AKIDENV AWS_SECRET_ACCESS_KEY=env/Secret+Key AWS_ENDPOINT_URL_STS=$ID_URL \
		PROFILE=envrole mount_dev --log-level info
	read_all || fail "a file differs"
	grep -q "^sts assume-role session=bats-env signed-by source-keys$" "$ID/log" ||
		fail "emulator log: $(cat "$ID/log")"
	tilefs_umount "$MNT"

	sso_config
	printf '\n[profile cross]\nrole_arn = arn:aws:iam::210987654321:role/cross\nsource_profile = dev\nrole_session_name = bats-cross\n' \
		>>"$AWS_CONFIG_FILE"
	sso_login corp "sso-access-one"
	AWS_ENDPOINT_URL_STS=$ID_URL PROFILE=cross mount_dev --log-level info --cache-dir "$T/cache2"
	read_all || fail "a file differs"
	grep -q "^sso presented sha256:$(sha16 sso-access-one) role=reader account=$ACCOUNT$" "$ID/log" ||
		fail "the portal was not asked: $(cat "$ID/log")"
	grep -q "^sts assume-role session=bats-cross signed-by sso:$ACCOUNT:reader$" "$ID/log" ||
		fail "AssumeRole not signed by the SSO keys: $(cat "$ID/log")"
	grep -q "profile cross (role arn:aws:iam::210987654321:role/cross, source_profile dev) through STS" \
		"$TILEFS_LOG" || fail "the log does not name the role"
	no_issued_secret "$TILEFS_LOG"
}

@test "aws profiles: a role_arn with a bad credential_source, both sources, or none fails the mount naming it" {
	local why
	for why in "credential_source = Bogus|must be Environment, Ec2InstanceMetadata or EcsContainer" \
		"credential_source = EcsContainer|neither AWS_CONTAINER_CREDENTIALS_RELATIVE_URI nor _FULL_URI is set" \
		"credential_source = Environment|AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not both set" \
		"source_profile = x\ncredential_source = Environment|both source_profile and credential_source" \
		"role_session_name = s|neither source_profile nor credential_source" \
		"source_profile = nothing|source_profile 'nothing', which has no SSO sign-in"; do
		printf "[profile r]\nrole_arn = arn:aws:iam::1:role/r\n${why%%|*}\n" >"$AWS_CONFIG_FILE"
		tilefs_run mount "s3://eo" "$MNT" --endpoint "$STORE_URL" --profile r \
			--cache-dir "$T/cache" --log-file "$T/log"
		assert_eq "$status" 1 "exit status for ${why%%|*}"
		[[ "$err" == *"${why#*|}"* ]] || fail "message for ${why%%|*}: $err"
	done
}
