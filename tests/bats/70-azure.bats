#!/usr/bin/env bats
# Azure Blob against Azurite on 127.0.0.1: Shared Key and SAS, listings
# (nested prefixes, pages), bytes and rasterio windows, the cache across a
# remount, credential errors, and no secret in the log.

bats_require_minimum_version 1.5.0
load ../lib/tilefs
load ../lib/azurite
load ../lib/cloud_identity

# A key Azurite does not know (valid base64, 64 bytes).
WRONG_KEY='AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+Pw=='

setup() {
	tilefs_setup
	azurite_start
	MNT=$T/mnt
	CACHE=$T/cache
	# cogs: the samples under eo/2024/, a stray blob beside them, one at the top
	azurite_container cogs
	azurite_put_tree cogs eo/2024 "$SAMPLES"
	azurite_put cogs eo/readme.txt "$SAMPLES/notes.txt"
	azurite_put cogs top.bin "$SAMPLES/random.bin"
	SOURCE=az://$AZURITE_ACCOUNT/cogs/eo/2024
	unset AZURE_STORAGE_ACCOUNT AZURE_STORAGE_KEY AZURE_STORAGE_SAS_TOKEN \
		AZURE_POD_IDENTITY_AUTHORITY_HOST AZURE_CLIENT_ID IDENTITY_ENDPOINT IDENTITY_HEADER \
		AZURE_TENANT_ID AZURE_CLIENT_SECRET AZURE_FEDERATED_TOKEN_FILE AZURE_AUTHORITY_HOST \
		IMDS_ENDPOINT
	ARC_MADE=()
}

teardown() {
	tilefs_teardown
	identity_stop
	azurite_stop
	local p
	for p in "${ARC_MADE[@]}"; do
		rm -rf "$p"
	done
}

# arc_key_file: a key file path in Azure Arc's token directory (the one
# place tilefs reads a challenge's key from), made for this test and
# removed by teardown with any directory it had to create.
arc_key_file() {
	local dir=/var/opt/azcmagent/tokens top=/var/opt/azcmagent
	[ -d "$top" ] || ARC_MADE+=("$top")
	mkdir -p "$dir" || return 1
	ARC_KEY=$dir/tilefs-test-$$-$BATS_TEST_NUMBER.key
	ARC_MADE+=("$ARC_KEY")
}

use_shared_key() {
	export AZURE_STORAGE_ACCOUNT=$AZURITE_ACCOUNT AZURE_STORAGE_KEY=$AZURITE_KEY
}

# same_listing LOCALDIR MNTDIR: every directory lists the same names, and
# every file shows the same size.
same_listing() {
	local d a b
	while IFS= read -r d; do
		a=$(cd "$1/$d" && ls -A | LC_ALL=C sort)
		b=$(cd "$2/$d" && ls -A | LC_ALL=C sort) || return 1
		[ "$a" = "$b" ] || {
			fail "ls $d: expected [$a], got [$b]"
			return 1
		}
	done < <(cd "$1" && find . -type d)
	a=$(cd "$1" && find . -type f -printf '%P %s\n' | LC_ALL=C sort)
	b=$(cd "$2" && find . -type f -printf '%P %s\n' | LC_ALL=C sort)
	[ "$a" = "$b" ] || fail "sizes differ: expected [$a], got [$b]"
}

# no_secret_in FILE SECRET...: none of the secrets occurs in FILE.
no_secret_in() {
	local f=$1 s
	shift
	[ -s "$f" ] || fail "$f is empty: nothing was checked"
	for s in "$@"; do
		[ -n "$s" ] || continue
		if grep -qF -- "$s" "$f"; then
			fail "$f contains a secret: $s"
			return 1
		fi
	done
}

@test "Shared Key: listings show exactly the blobs and prefixes; bytes and rasterio windows identical" {
	use_shared_key
	tilefs_mount "$SOURCE" "$MNT" --endpoint "$AZURITE_ENDPOINT"
	same_listing "$SAMPLES" "$MNT"
	assert_eq "$(file_list "$MNT")" "$(file_list "$SAMPLES")" "files under the mount"
	cmp_tree "$SAMPLES" "$MNT"
	run_to 60 "$PY" "$TESTS_LIB/rio_compare.py" "$MNT/t256.tif" "$SAMPLES/t256.tif"
	run_to 60 "$PY" "$TESTS_LIB/rio_compare.py" "$MNT/nested/f32.tif" "$SAMPLES/nested/f32.tif"
	assert_enoent "$MNT/readme.txt"
	assert_eq "$(azurite_count GET 403)" 0 "requests Azurite refused"
	tilefs_umount "$MNT"

	# the whole container: prefixes are directories, the stray blobs show
	tilefs_mount "az://$AZURITE_ACCOUNT/cogs" "$MNT" --endpoint "$AZURITE_ENDPOINT/"
	assert_eq "$(ls -A "$MNT" | tr '\n' ' ')" "eo top.bin " "ls of the container"
	assert_eq "$(ls -A "$MNT/eo" | tr '\n' ' ')" "2024 readme.txt " "ls of eo/"
	cmp "$SAMPLES/random.bin" "$MNT/top.bin"
	cmp "$SAMPLES/nested/deeper/small.tif" "$MNT/eo/2024/nested/deeper/small.tif"
	tilefs_umount "$MNT"
}

@test "remount on the same cache dir: no blob is fetched again, nor asked for by HEAD" {
	use_shared_key
	tilefs_mount "$SOURCE" "$MNT" --endpoint "$AZURITE_ENDPOINT" --cache-dir "$CACHE"
	azurite_log_reset
	cmp_tree "$SAMPLES" "$MNT"
	run_to 60 "$PY" "$TESTS_LIB/rio_compare.py" "$MNT/t512.tif" "$SAMPLES/t512.tif"
	local first
	first=$(azurite_count GET 206)
	[ "$first" -gt 0 ] || fail "Azurite's log shows no ranged GET for the first read"
	tilefs_umount "$MNT"

	azurite_log_reset
	tilefs_mount "$SOURCE" "$MNT" --endpoint "$AZURITE_ENDPOINT" --cache-dir "$CACHE"
	cmp_tree "$SAMPLES" "$MNT"
	run_to 60 "$PY" "$TESTS_LIB/rio_compare.py" "$MNT/t512.tif" "$SAMPLES/t512.tif"
	assert_eq "$(azurite_data_gets)" 0 "GETs of blobs after the remount (first read: $first)"
	[ "$(azurite_count GET 200 'comp=list')" -gt 0 ] ||
		fail "no listing in Azurite's log after the remount: the log is not counting"
	# the listing's Etags say the cached versions are current
	assert_eq "$(azurite_count HEAD)" 0 "HEADs after the remount"
	tilefs_umount "$MNT"
}

@test "a blob rewritten at the same size: a remount, and a mount after --ttl, read the new bytes" {
	use_shared_key
	same_size_rewrite "$SAMPLES/t512.tif" "$T/t512.new"
	tilefs_mount "$SOURCE" "$MNT" --endpoint "$AZURITE_ENDPOINT" --cache-dir "$CACHE"
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"
	tilefs_umount "$MNT"
	azurite_put cogs eo/2024/t512.tif "$T/t512.new"
	azurite_log_reset
	tilefs_mount "$SOURCE" "$MNT" --endpoint "$AZURITE_ENDPOINT" --cache-dir "$CACHE" --ttl 1
	cmp "$T/t512.new" "$MNT/t512.tif" || fail "the remount served the old version"
	[ "$(azurite_count HEAD)" -ge 1 ] || fail "no HEAD: the changed Etag was not noticed"

	# while mounted: the next listing after the ttl gives another Etag
	azurite_put cogs eo/2024/t512.tif "$SAMPLES/t512.tif"
	sleep 2
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif" || fail "the mount served the old version after --ttl"
	tilefs_umount "$MNT"
}

@test "a SAS that may only list serves no byte of a blob the account key read; the SAS's own request is refused" {
	use_shared_key
	tilefs_mount "$SOURCE" "$MNT" --endpoint "$AZURITE_ENDPOINT" --cache-dir "$CACHE"
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif" || fail "the Shared Key mount read other bytes"
	tilefs_umount "$MNT"
	unset AZURE_STORAGE_ACCOUNT AZURE_STORAGE_KEY
	azurite_log_reset
	AZURE_STORAGE_SAS_TOKEN=$(azurite_sas cogs l) \
		tilefs_mount "$SOURCE" "$MNT" --endpoint "$AZURITE_ENDPOINT" --cache-dir "$CACHE"
	ls "$MNT" | grep -qx t512.tif || fail "the SAS mount does not list t512.tif"
	run -1 cat "$MNT/t512.tif"
	[[ "$output" == *"Permission denied"* ]] || fail "cat says: $output"
	cat "$AZURITE_LOG"
	[ "$(azurite_count HEAD 403 't512\\.tif')" -ge 1 ] ||
		fail "Azurite saw no refused HEAD of t512.tif from the SAS mount"
	assert_eq "$(awk '/t512\.tif/ && / (200|206) /' "$AZURITE_LOG" | wc -l)" 0 \
		"requests for t512.tif Azurite answered to the SAS mount"
	tilefs_umount "$MNT"
}

@test "SAS in SOURCE and in AZURE_STORAGE_SAS_TOKEN; the SAS never reaches the log" {
	local sas sig
	sas=$(azurite_sas cogs)
	sig=${sas##*sig=}
	tilefs_mount "https://$AZURITE_ACCOUNT.blob.core.windows.net/cogs/eo/2024?$sas" "$MNT" \
		--endpoint "$AZURITE_ENDPOINT" --log-level debug
	same_listing "$SAMPLES" "$MNT"
	cmp_tree "$SAMPLES" "$MNT"
	run_to 60 "$PY" "$TESTS_LIB/rio_compare.py" "$MNT/t256.tif" "$SAMPLES/t256.tif"
	assert_eq "$(azurite_count GET 403)" 0 "requests Azurite refused"
	local log=$TILEFS_LOG
	tilefs_umount "$MNT"
	no_secret_in "$log" "$sig" "$(printf '%b' "${sig//%/\\x}")" "sig=" "$sas"

	export AZURE_STORAGE_SAS_TOKEN="?$sas"
	export AZURE_STORAGE_KEY=$WRONG_KEY	# a SAS goes first
	tilefs_mount "$SOURCE" "$MNT" --endpoint "$AZURITE_ENDPOINT" --log-level debug
	cmp_tree "$SAMPLES" "$MNT"
	log=$TILEFS_LOG
	tilefs_umount "$MNT"
	no_secret_in "$log" "$sig" "sig=" "$WRONG_KEY"
	unset AZURE_STORAGE_SAS_TOKEN AZURE_STORAGE_KEY

	# a SOURCE with a SAS that fails (no such container): not on stderr either
	mkdir -p "$T/mnt-fail"
	tilefs_run mount --cache-dir "$T/cache-fail" --log-file "$T/fail.log" --log-level debug \
		--endpoint "$AZURITE_ENDPOINT" --retries 0 \
		"https://$AZURITE_ACCOUNT.blob.core.windows.net/nosuch/eo?$sas" "$T/mnt-fail"
	assert_eq "$status" 1 "exit of a failing mount"
	printf '%s\n' "$err" >"$T/fail.err"
	no_secret_in "$T/fail.err" "$sig" "$(printf '%b' "${sig//%/\\x}")" "sig=" "$sas"
	no_secret_in "$T/fail.log" "$sig" "$(printf '%b' "${sig//%/\\x}")" "sig=" "$sas"
}

@test "--page-size 2: a directory of more than 2 blobs lists them all" {
	use_shared_key
	tilefs_mount "$SOURCE" "$MNT" --endpoint "$AZURITE_ENDPOINT" --page-size 2
	[ "$(ls -A "$SAMPLES" | wc -l)" -gt 2 ] || fail "the sample set is too small for this test"
	same_listing "$SAMPLES" "$MNT"
	[ "$(azurite_count GET 200 'marker=')" -ge 2 ] ||
		fail "Azurite saw fewer than 2 continued listings: $(grep -c marker= "$AZURITE_LOG")"
	grep -q 'maxresults=2' "$AZURITE_LOG" || fail "no maxresults=2 in Azurite's log"
	tilefs_umount "$MNT"
}

@test "a folder too wide for one listing (--page-size 2): the folders beside a reader's are listed ahead in runs of names; every name and byte right" {
	use_shared_key
	local flat=$T/flat
	patch_folders "$flat" 60
	azurite_put_tree cogs flat "$flat"
	tilefs_mount "az://$AZURITE_ACCOUNT/cogs/flat" "$MNT" --endpoint "$AZURITE_ENDPOINT" \
		--page-size 2 --log-level debug
	# the root's 32 pages of 2 blobs: p000-p020 whole, p021 in part; a
	# reader in p040 has p030-p039 listed ahead in a listing of p03* (cut
	# at 8 pages: p030-p034 whole, the rest in runs of their own)
	ls "$MNT/p040" >/dev/null
	wait_until "the run p03* listed ahead" grep -q "listed /p03\* deep: " "$TILEFS_LOG"
	grep -q "prefix=flat/p03&" "$AZURITE_LOG" ||
		fail "Azurite saw no listing of the names p03*: $(grep -o 'prefix=[^&]*' "$AZURITE_LOG" | sort -u)"
	same_listing "$flat" "$MNT"
	cmp_tree "$flat" "$MNT"
	! grep -q "prefix=flat/p031/" "$AZURITE_LOG" || fail "p031, in the run p03*, was listed on its own"
}

@test "workload identity whose token file cannot be read: one message, naming what was tried and the file, no log line before it" {
	mkdir -p "$MNT"
	AZURE_AUTHORITY_HOST=http://127.0.0.1:9 AZURE_TENANT_ID=tenant-1 AZURE_CLIENT_ID=app-1 \
	AZURE_FEDERATED_TOKEN_FILE=$T/no-such-token \
		tilefs_run mount --endpoint "https://127.0.0.1:9/$AZURITE_ACCOUNT" --cache-dir "$CACHE" \
		"$SOURCE" "$MNT"
	assert_eq "$status" 1 "exit status"
	assert_eq "$(printf '%s\n' "$err" | wc -l)" 1 "lines on stderr"
	[[ $err1 == "tilefs: "* ]] || fail "message does not start with 'tilefs: ': $err1"
	for v in "Entra ID (workload identity)" AZURE_FEDERATED_TOKEN_FILE AZURE_STORAGE_KEY \
		--no-sign-request "cannot read $T/no-such-token"; do
		[[ $err1 == *"$v"* ]] || fail "$v not named in: $err1"
	done
	! is_mounted "$MNT" || fail "mounted anyway"
}

@test "wrong key: mount fails with exit 1, access denied, naming AZURE_STORAGE_KEY" {
	export AZURE_STORAGE_ACCOUNT=$AZURITE_ACCOUNT AZURE_STORAGE_KEY=$WRONG_KEY
	mkdir -p "$MNT"
	tilefs_run mount --endpoint "$AZURITE_ENDPOINT" --cache-dir "$CACHE" \
		--log-file "$T/wrong.log" --log-level debug "$SOURCE" "$MNT"
	assert_eq "$status" 1 "exit status"
	[[ $err == *"access denied"* ]] || fail "no 'access denied' in: $err"
	[[ $err == *AZURE_STORAGE_KEY* ]] || fail "AZURE_STORAGE_KEY not named in: $err"
	! is_mounted "$MNT" || fail "mounted anyway"
	[ "$(azurite_count GET 403)" -gt 0 ] || fail "Azurite refused nothing: the key was not used"
	no_secret_in "$T/wrong.log" "$WRONG_KEY" "SharedKey"

	export AZURE_STORAGE_KEY='not a key!'
	tilefs_run mount --endpoint "$AZURITE_ENDPOINT" --cache-dir "$CACHE" "$SOURCE" "$MNT"
	assert_eq "$status" 1 "exit status for a key that is not base64"
	[[ $err == *AZURE_STORAGE_KEY* ]] || fail "AZURE_STORAGE_KEY not named in: $err"
	[[ $err != *"not a key!"* ]] || fail "the key is shown: $err"
}

@test "no credentials: exit 1 naming the variables; --no-sign-request reads a public container" {
	mkdir -p "$MNT"
	# the chain's last step, the instance metadata service, at a stopped
	# fake: never 169.254.169.254
	identity_start
	identity_stop
	export AZURE_POD_IDENTITY_AUTHORITY_HOST=$IDENTITY_URL
	tilefs_run mount --endpoint "$AZURITE_ENDPOINT" --cache-dir "$CACHE" "$SOURCE" "$MNT"
	assert_eq "$status" 1 "exit status"
	[[ $err1 == "tilefs: "* ]] || fail "message does not start with 'tilefs: ': $err1"
	for v in AZURE_STORAGE_KEY AZURE_STORAGE_SAS_TOKEN --no-sign-request; do
		[[ $err == *"$v"* ]] || fail "$v not named in: $err"
	done
	! is_mounted "$MNT" || fail "mounted anyway"

	# anonymous on a private container: refused at mount time
	tilefs_run mount --endpoint "$AZURITE_ENDPOINT" --cache-dir "$CACHE" --no-sign-request \
		"$SOURCE" "$MNT"
	assert_eq "$status" 1 "exit status, anonymous on a private container"
	[[ $err == *"access denied"* ]] || fail "no 'access denied' in: $err"

	azurite_container public --public
	azurite_put_tree public "" "$SAMPLES/nested"
	tilefs_mount "az://$AZURITE_ACCOUNT/public" "$MNT" --endpoint "$AZURITE_ENDPOINT" \
		--no-sign-request
	same_listing "$SAMPLES/nested" "$MNT"
	cmp_tree "$SAMPLES/nested" "$MNT"
	tilefs_umount "$MNT"
}

@test "Shared Key: the log holds neither the key nor any signature sent" {
	use_shared_key
	tilefs_mount "$SOURCE" "$MNT" --endpoint "$AZURITE_ENDPOINT" --log-level debug --ttl 0
	cmp_tree "$SAMPLES" "$MNT"
	ls -R "$MNT" >/dev/null
	local log=$TILEFS_LOG
	tilefs_umount "$MNT"
	# Azurite's debug log records each request's headers: the signatures sent
	local sigs
	mapfile -t sigs < <(grep -o 'SharedKey devstoreaccount1:[A-Za-z0-9+/=]*' \
		"$AZURITE_DIR/debug.log" | sed 's/.*://' | sort -u)
	[ "${#sigs[@]}" -gt 5 ] || fail "found only ${#sigs[@]} signatures in Azurite's debug log"
	no_secret_in "$log" "$AZURITE_KEY" "SharedKey" "${sigs[@]}"
}

# Azurite again, over HTTPS with --oauth basic (bearer tokens), holding the
# same blobs as setup's.
oauth_azurite() {
	azurite_stop
	azurite_start --oauth
	azurite_container cogs
	azurite_put_tree cogs eo/2024 "$SAMPLES"
}

# read_until_tokens N FILE: read FILE through the mount (--ttl 0: each
# open asks Azurite) once a second until the identity endpoint has handed
# out N tokens.
read_until_tokens() {
	cmp -s "$SAMPLES/$2" "$MNT/$2" || return 1
	[ "$(identity_tokens)" -ge "$1" ] && return 0
	sleep 1
	return 1
}

# seconds_since_t0 N: N seconds or more have passed since T0 (SECONDS).
seconds_since_t0() {
	[ $((SECONDS - T0)) -ge "$1" ]
}

@test "managed identity (IMDS): bearer tokens of 60 s, renewed before they expire; no token in the log" {
	oauth_azurite
	identity_start --lifetime 60 --client-id tilefs-uami
	export AZURE_POD_IDENTITY_AUTHORITY_HOST=$IDENTITY_URL AZURE_CLIENT_ID=tilefs-uami
	tilefs_mount "$SOURCE" "$MNT" --endpoint "$AZURITE_ENDPOINT" --ca-file "$AZURITE_CA" \
		--ttl 0 --log-level debug
	cmp "$SAMPLES/notes.txt" "$MNT/notes.txt"
	assert_eq "$(identity_tokens)" 1 "tokens fetched at mount"
	assert_eq "$(identity_count GET 200 /metadata/identity/oauth2/token)" 1 "IMDS requests"
	# reads go on past half the token's life: one renewal, then the same bytes
	wait_until "a token renewal" read_until_tokens 2 notes.txt
	cmp_tree "$SAMPLES" "$MNT"
	assert_eq "$(identity_tokens)" 2 "tokens after one renewal"
	assert_eq "$(azurite_count GET 403)" 0 "requests Azurite refused (renewed in time)"
	[ "$(azurite_count GET 206)$(azurite_count GET 200)" != 00 ] || fail "Azurite logged no reads"
	local log=$TILEFS_LOG
	tilefs_umount "$MNT"
	# Azurite's debug log holds the tokens sent: none is in tilefs's log
	local tokens
	mapfile -t tokens < <(grep -o 'Bearer [A-Za-z0-9._-]*' "$AZURITE_DIR/debug.log" |
		sed 's/Bearer //' | sort -u)
	[ "${#tokens[@]}" -ge 2 ] || fail "found ${#tokens[@]} tokens in Azurite's debug log"
	no_secret_in "$log" "${tokens[@]}" "eyJ"
}

@test "managed identity: a token Azurite refuses (403 AuthenticationFailed) is renewed once and the read retried" {
	oauth_azurite
	# tokens announced for 60 s that Azurite holds expired after 3 s
	identity_start --lifetime 60 --valid 3
	export AZURE_POD_IDENTITY_AUTHORITY_HOST=$IDENTITY_URL
	tilefs_mount "$SOURCE" "$MNT" --endpoint "$AZURITE_ENDPOINT" --ca-file "$AZURITE_CA" \
		--ttl 0
	cmp "$SAMPLES/notes.txt" "$MNT/notes.txt"
	T0=$SECONDS
	wait_until "the first token to lapse" seconds_since_t0 5
	azurite_log_reset
	cmp "$SAMPLES/random.bin" "$MNT/random.bin"
	[ "$(azurite_count GET 403)" -ge 1 ] || fail "Azurite refused nothing: the test tested nothing"
	assert_eq "$(identity_tokens)" 2 "tokens: the first, and one renewal after the refusal"
	grep -q "refused the bearer token" "$TILEFS_LOG" ||
		fail "no log line about the refused token"
}

@test "managed identity: App Service endpoint with IDENTITY_HEADER; an endpoint down names what was tried" {
	oauth_azurite
	identity_start --lifetime 60 --identity-header 'h-5ecret-header'
	export IDENTITY_ENDPOINT=$IDENTITY_URL/msi/token IDENTITY_HEADER='h-5ecret-header'
	tilefs_mount "$SOURCE" "$MNT" --endpoint "$AZURITE_ENDPOINT" --ca-file "$AZURITE_CA" \
		--log-level debug
	cmp "$SAMPLES/notes.txt" "$MNT/notes.txt"
	assert_eq "$(identity_count GET 200 /msi/token)" 1 "App Service token requests"
	local log=$TILEFS_LOG
	tilefs_umount "$MNT"
	no_secret_in "$log" "h-5ecret-header" "eyJ"

	unset IDENTITY_ENDPOINT IDENTITY_HEADER
	identity_stop
	export AZURE_POD_IDENTITY_AUTHORITY_HOST=$IDENTITY_URL	# nothing listens now
	tilefs_run mount --endpoint "$AZURITE_ENDPOINT" --ca-file "$AZURITE_CA" --cache-dir "$CACHE" \
		"$SOURCE" "$MNT"
	assert_eq "$status" 1 "exit status"
	for v in "instance metadata service" AZURE_STORAGE_KEY AZURE_STORAGE_SAS_TOKEN --no-sign-request; do
		[[ $err == *"$v"* ]] || fail "$v not named in: $err"
	done
}

@test "managed identity: Azure Arc's challenge is answered from its key file, and only from there" {
	oauth_azurite
	arc_key_file || skip "cannot make $ARC_KEY's directory"
	identity_start --lifetime 60 --arc-key-file "$ARC_KEY"
	export IDENTITY_ENDPOINT=$IDENTITY_URL/arc/token IMDS_ENDPOINT=$IDENTITY_URL
	tilefs_mount "$SOURCE" "$MNT" --endpoint "$AZURITE_ENDPOINT" --ca-file "$AZURITE_CA" \
		--ttl 0 --log-level debug
	cmp_tree "$SAMPLES" "$MNT"
	assert_eq "$(identity_count GET 401 /arc/token)" 1 "challenges"
	assert_eq "$(identity_count GET 200 /arc/token)" 1 "Arc token requests"
	# past half the token's life: a renewal answers a new challenge
	wait_until "a token renewal" read_until_tokens 2 notes.txt
	assert_eq "$(identity_count GET 401 /arc/token)" 2 "challenges after one renewal"
	assert_eq "$(azurite_count GET 403)" 0 "requests Azurite refused"
	local log=$TILEFS_LOG key
	key=$(cat "$ARC_KEY")
	tilefs_umount "$MNT"
	no_secret_in "$log" "$key" "eyJ"

	# a challenge naming a file outside the agent's directory is refused
	identity_stop
	echo 'not-a-key' >"$T/stolen.key"
	identity_start --lifetime 60 --arc-key-file "$T/stolen.key"
	export IDENTITY_ENDPOINT=$IDENTITY_URL/arc/token IMDS_ENDPOINT=$IDENTITY_URL
	tilefs_run mount --endpoint "$AZURITE_ENDPOINT" --ca-file "$AZURITE_CA" --cache-dir "$CACHE" \
		"$SOURCE" "$MNT"
	assert_eq "$status" 1 "exit status"
	[[ $err == *"Azure Arc"* ]] || fail "Azure Arc not named in: $err"
	assert_eq "$(identity_count GET 200 /arc/token)" 0 "tokens handed out for a foreign key file"
	# Arc's identity is system-assigned only: a client id is an error
	export AZURE_CLIENT_ID=some-uami
	tilefs_run mount --endpoint "$AZURITE_ENDPOINT" --ca-file "$AZURITE_CA" --cache-dir "$CACHE" \
		"$SOURCE" "$MNT"
	assert_eq "$status" 1 "exit status with AZURE_CLIENT_ID"
	[[ $err == *"unset AZURE_CLIENT_ID"* ]] || fail "no word of AZURE_CLIENT_ID in: $err"
}

@test "Entra ID: a service principal's secret; workload identity re-reading its token file at each renewal" {
	oauth_azurite
	identity_start --lifetime 60 --client-id app-1 --client-secret 's3cret-value' \
		--assertion-file "$T/federated-token"
	export AZURE_AUTHORITY_HOST=$IDENTITY_URL AZURE_TENANT_ID=tenant-1 AZURE_CLIENT_ID=app-1
	export AZURE_CLIENT_SECRET='s3cret-value'
	tilefs_mount "$SOURCE" "$MNT" --endpoint "$AZURITE_ENDPOINT" --ca-file "$AZURITE_CA" \
		--log-level debug
	cmp "$SAMPLES/notes.txt" "$MNT/notes.txt"
	assert_eq "$(identity_count POST 200 /tenant-1/oauth2/v2.0/token)" 1 "secret token requests"
	local log=$TILEFS_LOG
	tilefs_umount "$MNT"
	no_secret_in "$log" "s3cret-value" "eyJ"

	# workload identity: the file rotates; the renewal must send the new one
	unset AZURE_CLIENT_SECRET
	echo "federated-assertion-1" >"$T/federated-token"
	export AZURE_FEDERATED_TOKEN_FILE=$T/federated-token
	tilefs_mount "$SOURCE" "$MNT" --endpoint "$AZURITE_ENDPOINT" --ca-file "$AZURITE_CA" \
		--cache-dir "$T/cache2" --ttl 0 --log-level debug
	cmp "$SAMPLES/notes.txt" "$MNT/notes.txt"
	assert_eq "$(identity_tokens)" 2 "tokens: the secret's, then the workload identity's"
	echo "federated-assertion-2" >"$T/federated-token"
	wait_until "a renewal with the rotated assertion" read_until_tokens 3 notes.txt
	assert_eq "$(identity_count POST 401)" 0 "token requests refused (an old assertion sent)"
	cmp_tree "$SAMPLES" "$MNT"
	log=$TILEFS_LOG
	tilefs_umount "$MNT"
	no_secret_in "$log" "federated-assertion-1" "federated-assertion-2" "eyJ"
}

@test "Entra ID: an authority that answers 307 to another port gets no second request; the secret goes nowhere else; the mount fails" {
	oauth_azurite
	# listener 0: the authority, answering 307 to listener 1
	local ports=$T/hostile.ports log=$T/hostile.log
	"$PY" "$TESTS_LIB/hostile_origin.py" --log "$log" --ports "$ports" redirect307=1 files \
		</dev/null >"$T/hostile.out" 2>&1 3>&- &
	TILEFS_EXTRA_PIDS+=("$!")
	disown "$!"
	wait_until "hostile_origin.py's start" test -s "$ports"
	local authority_port other_port
	authority_port=$(sed -n 1p "$ports")
	other_port=$(sed -n 2p "$ports")
	export AZURE_AUTHORITY_HOST=http://127.0.0.1:$authority_port AZURE_TENANT_ID=tenant-1
	export AZURE_CLIENT_ID=app-1 AZURE_CLIENT_SECRET='s3cret-value'
	tilefs_run mount --endpoint "$AZURITE_ENDPOINT" --ca-file "$AZURITE_CA" --cache-dir "$CACHE" \
		--log-file "$T/log" "$SOURCE" "$MNT"
	assert_eq "$status" 1 "exit status"
	[[ $err1 == "tilefs: "*"Entra"*"127.0.0.1:$authority_port"*"HTTP 307"* ]] ||
		fail "message: $err1"
	assert_eq "$(grep -c '"listener": 0, "method": "POST"' "$log")" 1 "token requests at the authority"
	assert_eq "$(grep -c '"listener": 1' "$log")" 0 "connections and requests at port $other_port"
	! grep -qF "s3cret-value" "$T/log" || fail "the secret is in the log"
	[[ $err != *"s3cret-value"* ]] || fail "the secret is shown"
}
