#!/usr/bin/env bats
# HTTPS origins: a private test CA is accepted with --ca-file; without it
# (or with the wrong CA) the mount fails at start with a message naming
# --ca-file.

bats_require_minimum_version 1.5.0
load ../lib/tilefs

setup() {
	tilefs_setup
	origin_start "$SAMPLES" --tls
	MNT=$T/mnt
	mkdir -p "$MNT" "$T/cache"
}

teardown() {
	tilefs_teardown
}

@test "https origin with --ca-file: files read identical, rasterio works, cache hits" {
	[[ $ORIGIN_URL == https://* ]]
	tilefs_mount "$ORIGIN_URL" "$MNT" --ca-file "$ORIGIN_CA"
	cmp_tree "$SAMPLES" "$MNT"
	run_to 60 "$PY" "$TESTS_LIB/rio_compare.py" "$MNT/t256.tif" "$SAMPLES/t256.tif"
	origin_log_reset
	cmp_tree "$SAMPLES" "$MNT"
	assert_eq "$(origin_gets)" 0 "ranged GETs on the second read"
	tilefs_umount "$MNT"
}

@test "https origin without --ca-file: exit 1, message names --ca-file" {
	tilefs_run mount --cache-dir "$T/cache" --retries 1 "$ORIGIN_URL" "$MNT"
	assert_eq "$status" 1 "exit status"
	[[ $err1 == "tilefs: "* ]] || fail "stderr does not start with 'tilefs: '"
	grep -q -- "--ca-file" <<<"$err" || fail "message does not mention --ca-file"
	! is_mounted "$MNT" || fail "mounted anyway"
}

@test "https origin with the wrong CA: exit 1, message names --ca-file" {
	_origin_make_tls "$T/otherca"
	tilefs_run mount --cache-dir "$T/cache" --retries 1 --ca-file "$T/otherca/ca.pem" "$ORIGIN_URL" "$MNT"
	assert_eq "$status" 1 "exit status"
	[[ $err1 == "tilefs: "* ]] || fail "stderr does not start with 'tilefs: '"
	grep -q -- "--ca-file" <<<"$err" || fail "message does not mention --ca-file"
	! is_mounted "$MNT" || fail "mounted anyway"
}

@test "--ca-file that does not exist: refused with a tilefs: message" {
	tilefs_run mount --cache-dir "$T/cache" --ca-file "$T/no-such-ca.pem" "$ORIGIN_URL" "$MNT"
	[ "$status" = 1 ] || [ "$status" = 2 ] || fail "exit status $status, want 1 or 2"
	[[ $err1 == "tilefs: "* ]] || fail "stderr does not start with 'tilefs: '"
	grep -q "no-such-ca.pem" <<<"$err" || fail "message does not name the file"
	! is_mounted "$MNT" || fail "mounted anyway"
}
