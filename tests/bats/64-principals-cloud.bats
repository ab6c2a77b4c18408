#!/usr/bin/env bats
# A mount's identity, for the proofs that let it serve cached bytes, is
# the principal its Azure or GCS credential names, not where the
# credential comes from. Each test: two principals through the same
# source shape (the same variables, file path or endpoint), READER may
# read a.bin, LISTER may only list it. Mount A (READER) reads a.bin whole
# and unmounts; mount B (LISTER), on the same cache dir, must send its own
# request for a.bin, which the store refuses (403), and its reader gets
# "Permission denied". Then a remount by READER sends no request for
# a.bin, neither at once nor after a token renewal.
#
# The stores: Azurite over https with --oauth basic behind azure_authz.py
# (it refuses GET and HEAD of a blob to a list-only oid), and the GCS data
# plane of cloud_identity.py (--list-only). Their logs, one line a
# request: METHOD PATH STATUS PRINCIPAL (an oid, an email).

bats_require_minimum_version 1.5.0
load ../lib/tilefs
load ../lib/azurite
load ../lib/cloud_identity

# Tokens live 8 s: renewed after 4 s, the same principal each time.
LIFE=8

setup() {
	tilefs_setup
	MNT=$T/mnt
	CACHE=$T/cache
	unset AZURE_STORAGE_ACCOUNT AZURE_STORAGE_KEY AZURE_STORAGE_SAS_TOKEN \
		AZURE_POD_IDENTITY_AUTHORITY_HOST AZURE_CLIENT_ID IDENTITY_ENDPOINT IDENTITY_HEADER \
		AZURE_TENANT_ID AZURE_CLIENT_SECRET AZURE_FEDERATED_TOKEN_FILE AZURE_AUTHORITY_HOST \
		IMDS_ENDPOINT
	unset GOOGLE_OAUTH_ACCESS_TOKEN GS_ACCESS_KEY_ID GS_SECRET_ACCESS_KEY \
		GOOGLE_APPLICATION_CREDENTIALS GCE_METADATA_HOST
	export CLOUDSDK_CONFIG=$T/gcloud	# no well-known file
	head -c 300000 /dev/urandom >"$T/a.bin"
	head -c 1000 /dev/urandom >"$T/b.bin"
}

teardown() {
	tilefs_teardown
	azure_authz_stop
	identity_stop
	gcs_plane_stop
	azurite_stop
}

# ---- the stores ------------------------------------------------------------

# azure_store [--list-only OID]...: Azurite (--oauth) holding data/a.bin
# and data/b.bin, behind azure_authz.py; STORE_LOG, the proxy's log.
azure_store() {
	azurite_start --oauth
	azurite_container data
	azurite_put data a.bin "$T/a.bin"
	azurite_put data b.bin "$T/b.bin"
	azure_authz_start "$@"
	SOURCE=az://$AZURITE_ACCOUNT/data
	STORE_LOG=$AUTHZ_LOG
	MOUNT_OPTS=(--endpoint "$AUTHZ_ENDPOINT" --ca-file "$AZURITE_CA")
	A_PATH=/$AZURITE_ACCOUNT/data/a.bin
}

# gcs_store [--list-only EMAIL]...: the GCS data plane, over https, holding
# eo/data/a.bin and eo/data/b.bin, taking the tokens of instances started
# with --secret "$SECRET"; STORE_LOG, its log.
gcs_store() {
	SECRET=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
	mkdir -p "$T/gcs/eo/data"
	cp "$T/a.bin" "$T/b.bin" "$T/gcs/eo/data/"
	_origin_make_tls "$T/tls"
	gcs_plane_start --secret "$SECRET" --gcs-root "$T/gcs" \
		--tls-cert "$T/tls/server.pem" --tls-key "$T/tls/server.key" "$@"
	SOURCE=gs://eo/data
	STORE_LOG=$GCS_PLANE_LOG
	MOUNT_OPTS=(--endpoint "https://127.0.0.1:$GCS_PLANE_PORT" --ca-file "$T/tls/ca.pem")
	A_PATH=/eo/data/a.bin
}

store_log_reset() {
	: >"$STORE_LOG"
}

# store_count STATUSES PATH [WHO]: GETs and HEADs of PATH in the store's
# log answered one of STATUSES (an awk regex: 403, 200|206, ...), by WHO
# when given.
store_count() {
	awk -v st="^($1)\$" -v path="$2" -v who="${3:-}" \
		'($1 == "GET" || $1 == "HEAD") && $2 == path && $3 ~ st && (who == "" || $4 == who) { n++ }
		END { print n + 0 }' "$STORE_LOG"
}

# store_listings: requests of the store that were not for an object (the
# listings), answered 200.
store_listings() {
	awk -v a="$A_PATH" '$1 == "GET" && $3 == 200 && $2 != a && $2 !~ /\/b\.bin$/ { n++ }
		END { print n + 0 }' "$STORE_LOG"
}

# ---- the steps -------------------------------------------------------------

# mount_as ARGS...: mount SOURCE on the shared cache dir, with the
# credentials the caller's environment names.
mount_as() {
	tilefs_mount "$SOURCE" "$MNT" "${MOUNT_OPTS[@]}" --cache-dir "$CACHE" "$@"
}

read_to_null() {
	cat -- "$1" >/dev/null
}

# reader_reads: mount A, READER, reads a.bin whole and unmounts.
reader_reads() {
	mount_as
	cmp "$T/a.bin" "$MNT/a.bin" || fail "mount A (READER) read other bytes"
	[ "$(store_count '200|206' "$A_PATH")" -ge 1 ] ||
		fail "the store served a.bin to no one: mount A's read was not counted"
	tilefs_umount "$MNT"
}

# lister_refused WHO: mount B, LISTER (WHO in the store's log), lists
# a.bin; its read of it is refused by the store, and no byte is served.
lister_refused() {
	store_log_reset
	mount_as
	ls "$MNT" | grep -qx a.bin || fail "mount B (LISTER) does not list a.bin"
	[ "$(store_listings)" -ge 1 ] || fail "the store logged no listing of mount B: $(cat "$STORE_LOG")"
	run read_to_null "$MNT/a.bin"
	if [ "$status" -eq 0 ]; then
		fail "mount B (LISTER) read a.bin; the store logged for it:" \
			"[$(grep -F " $A_PATH " "$STORE_LOG")] (a proof of READER's served LISTER)"
		return 1
	fi
	[[ $output == *"Permission denied"* ]] || fail "reading a.bin in mount B says: $output"
	[ "$(store_count 403 "$A_PATH" "$1")" -ge 1 ] ||
		fail "the store refused no request of $1 for a.bin: $(cat "$STORE_LOG")"
	assert_eq "$(store_count '200|206' "$A_PATH")" 0 "requests for a.bin the store answered to mount B"
	tilefs_umount "$MNT"
}

# listing_until_renewed N: list the mount (--ttl 1: each listing after a
# second asks the store, with the current token) until the token
# endpoint has handed out more than N tokens.
listing_until_renewed() {
	ls "$MNT/" >/dev/null || return 1
	cmp -s "$T/b.bin" "$MNT/b.bin" || return 1
	[ "$(identity_tokens)" -gt "$1" ] && return 0
	sleep 1
	return 1
}

# reader_again: mount C, READER again: a.bin at once, and once more after
# a token renewal (--ttl 1: listed again, its version still the cached
# one), with no request for a.bin; then unmount.
reader_again() {
	store_log_reset
	mount_as --ttl 1
	cmp "$T/a.bin" "$MNT/a.bin" || fail "mount C (READER) read other bytes"
	assert_eq "$(store_count '[0-9]+' "$A_PATH")" 0 \
		"requests for a.bin from mount C, READER again ($(grep -F " $A_PATH " "$STORE_LOG"))"
	local before
	before=$(identity_tokens)
	wait_until "a token renewal in mount C" listing_until_renewed "$before"
	cmp "$T/a.bin" "$MNT/a.bin" || fail "mount C (READER) read other bytes after the renewal"
	assert_eq "$(store_count '[0-9]+' "$A_PATH")" 0 \
		"requests for a.bin from mount C after a token renewal ($(grep -F " $A_PATH " "$STORE_LOG"))"
	[ "$(store_listings)" -ge 2 ] || fail "the store logged fewer than 2 listings of mount C"
	tilefs_umount "$MNT"
}

# ---- Azure -----------------------------------------------------------------

@test "Azure IMDS, AZURE_CLIENT_ID naming two user-assigned identities: the list-only one is refused a.bin the other read" {
	identity_start --lifetime "$LIFE" --client-id uami-reader --client-id uami-lister
	local lister
	lister=$(identity_oid uami-lister)
	azure_store --list-only "$lister"
	export AZURE_POD_IDENTITY_AUTHORITY_HOST=$IDENTITY_URL

	AZURE_CLIENT_ID=uami-reader reader_reads
	AZURE_CLIENT_ID=uami-lister lister_refused "$lister"
	assert_eq "$(identity_count GET 400 /metadata/identity/oauth2/token)" 0 "token requests IMDS refused"
	AZURE_CLIENT_ID=uami-reader reader_again
}

@test "Entra ID client secret, one tenant, two client ids: the list-only one is refused a.bin the other read" {
	identity_start --lifetime "$LIFE" --client-id app-reader --client-secret 'reader-s3cret' \
		--client-id app-lister --client-secret 'lister-s3cret'
	local lister
	lister=$(identity_oid app-lister)
	azure_store --list-only "$lister"
	export AZURE_AUTHORITY_HOST=$IDENTITY_URL AZURE_TENANT_ID=tenant-1

	AZURE_CLIENT_ID=app-reader AZURE_CLIENT_SECRET=reader-s3cret reader_reads
	AZURE_CLIENT_ID=app-lister AZURE_CLIENT_SECRET=lister-s3cret lister_refused "$lister"
	assert_eq "$(identity_count POST 200 /tenant-1/oauth2/v2.0/token)" "$(identity_tokens)" \
		"Entra token requests answered (every token from tenant-1)"
	AZURE_CLIENT_ID=app-reader AZURE_CLIENT_SECRET=reader-s3cret reader_again
}

# ---- GCS -------------------------------------------------------------------

# sa_json EMAIL KEY OUT: a service account key file of EMAIL, its private
# key KEY, its token_uri the token endpoint.
sa_json() {
	"$PY" -c 'import json, sys
json.dump({"type": "service_account", "project_id": "proj", "private_key_id": "k-" + sys.argv[1],
           "private_key": open(sys.argv[2]).read(), "client_email": sys.argv[1],
           "client_id": "1", "token_uri": sys.argv[3]}, open(sys.argv[4], "w"))' \
		"$1" "$2" "$IDENTITY_URL/token" "$3"
}

@test "GCS ADC file at one path, re-pointed from one service account to another: the list-only one is refused a.bin" {
	local reader=reader@proj.iam.gserviceaccount.com lister=lister@proj.iam.gserviceaccount.com who
	for who in reader lister; do
		openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$T/$who.key" 2>/dev/null
		openssl pkey -in "$T/$who.key" -pubout -out "$T/$who.pub"
	done
	gcs_store --list-only "$lister"
	identity_start --secret "$SECRET" --lifetime "$LIFE" \
		--sa-email "$reader" --sa-public-key "$T/reader.pub" \
		--sa-email "$lister" --sa-public-key "$T/lister.pub"
	export GCE_METADATA_HOST=127.0.0.1:9	# not asked: the file comes first
	export GOOGLE_APPLICATION_CREDENTIALS=$T/adc.json

	sa_json "$reader" "$T/reader.key" "$T/adc.json"
	reader_reads
	sa_json "$lister" "$T/lister.key" "$T/adc.json"
	lister_refused "$lister"
	assert_eq "$(identity_count POST 200 /token)" "$(identity_tokens)" "signed assertions taken"
	sa_json "$reader" "$T/reader.key" "$T/adc.json"
	reader_again
}

@test "GCS metadata server, one address, its default account another service account after a restart: the list-only one is refused a.bin" {
	local reader=reader@proj.iam.gserviceaccount.com lister=lister@proj.iam.gserviceaccount.com port
	gcs_store --list-only "$lister"
	identity_start --secret "$SECRET" --lifetime "$LIFE" --sa-email "$reader"
	port=${IDENTITY_HOST#*:}
	export GCE_METADATA_HOST=$IDENTITY_HOST

	reader_reads
	identity_stop
	identity_start --secret "$SECRET" --lifetime "$LIFE" --sa-email "$lister" --port "$port"
	lister_refused "$lister"
	identity_stop
	identity_start --secret "$SECRET" --lifetime "$LIFE" --sa-email "$reader" --port "$port"
	reader_again
}
