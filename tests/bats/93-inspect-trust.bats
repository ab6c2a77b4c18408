#!/usr/bin/env bats
# What `tilefs inspect` believes of a file in a mount: the cache dir its
# user.tilefs.object xattr names is looked up only when the file is on a
# tilefs mount of the caller's or root's, and inspect only reads there:
# it never creates, sets aside or chmods anything in that dir (a FUSE file
# system may call itself tilefs and name any dir). The FUSE file system
# passing itself off as tilefs is tests/lib/fake_tilefs.c, built by make.

bats_require_minimum_version 1.5.0
load ../lib/tilefs

setup() {
	tilefs_setup
	FAKE=$(dirname "$TILEFS")/fake_tilefs
	[ -x "$FAKE" ] || fail "$FAKE not found (run make first)"
	MNT=$T/mnt
	CACHE=$T/cache
	FAKE_MNT=$T/fake
}

teardown() {
	if [ -n "${FAKE_PID:-}" ]; then
		kill -TERM "$FAKE_PID" 2>/dev/null
		wait "$FAKE_PID" 2>/dev/null || true
	fi
	tilefs_teardown
}

# fake_mount [--owner UID] XATTR: serve $SAMPLES/t256.tif as
# $FAKE_MNT/f.tif, its user.tilefs.object xattr XATTR, on a mount of type
# fuse.tilefs (of UID); waits up to 60 s for it.
fake_mount() {
	local i
	mkdir -p "$FAKE_MNT"
	TILEFS_EXTRA_MOUNTS+=("$FAKE_MNT")
	"$FAKE" "${@:1:$#-1}" "$FAKE_MNT" "$SAMPLES/t256.tif" "${!#}" 2>"$T/fake.err" 3>&- &
	FAKE_PID=$!
	for ((i = 0; i < 600; i++)); do
		[ -f "$FAKE_MNT/f.tif" ] && return 0
		kill -0 "$FAKE_PID" 2>/dev/null || break
		sleep 0.1
	done
	fail "fake_tilefs did not mount on $FAKE_MNT: $(cat "$T/fake.err")"
}

# fake_umount: stop it and wait for the mount to go (up to 60 s).
fake_umount() {
	local i
	kill -TERM "$FAKE_PID"
	wait "$FAKE_PID" 2>/dev/null || true
	FAKE_PID=""
	for ((i = 0; i < 600; i++)); do
		is_mounted "$FAKE_MNT" || return 0
		sleep 0.1
	done
	fail "$FAKE_MNT still mounted 60 s after fake_tilefs was stopped"
}

@test "inspect: a fake tilefs mount naming a root-owned 0755 dir gets nothing created or chmod'ed there" {
	mkdir -m 0755 "$T/victim"
	echo kept >"$T/victim/kept"
	fake_mount "$(printf '1\t%s' "$T/victim")"
	grep -q " $FAKE_MNT .* - fuse.tilefs .*user_id=0," /proc/self/mountinfo ||
		fail "not a tilefs mount of root: $(grep " $FAKE_MNT " /proc/self/mountinfo)"
	tilefs_run inspect "$FAKE_MNT/f.tif"
	assert_eq "$(stat -c '%a %U' "$T/victim")" "755 root" "mode and owner of the dir named"
	assert_eq "$(ls -A "$T/victim" | tr '\n' ' ')" "kept " "what the dir named holds"
	assert_eq "$(cat "$T/victim/kept")" kept "the file in it"
	assert_eq "$status" 1 "exit of inspect"
	assert_eq "$err" "tilefs: $FAKE_MNT/f.tif: no tilefs cache index in $T/victim" "message"
}

@test "inspect of a URL in an empty cache dir creates nothing there and leaves its mode" {
	mkdir -m 0755 "$CACHE"
	tilefs_run inspect --cache-dir "$CACHE" "http://127.0.0.1:1/t256.tif"
	assert_eq "$(stat -c %a "$CACHE")" 755 "mode of the cache dir"
	assert_eq "$(ls -A "$CACHE" | tr '\n' ' ')" "" "files made in the cache dir"
	assert_eq "$status" 1 "exit of inspect"
	assert_eq "$err" "tilefs: http://127.0.0.1:1/t256.tif: no tilefs cache index in $CACHE" "message"
}

@test "inspect: the cache dir named by another user's tilefs mount is not believed; root's is" {
	origin_start "$SAMPLES"
	mkdir -m 0700 "$CACHE"
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-dir "$CACHE"
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	local xattr
	xattr=$("$PY" -c 'import os, sys; print(os.getxattr(sys.argv[1], "user.tilefs.object").decode())' \
		"$MNT/t256.tif")
	[[ $xattr == *$'\t'"$CACHE" ]] || fail "the mount's xattr: '$xattr'"
	tilefs_umount "$MNT"
	# (SQLite may add index.db-wal and -shm to read it, as for any reader)
	(cd "$CACHE" && stat -c '%n %a %U %s %Y' . index.db index.lock) >"$T/cache.before"

	# the same xattr from a mount of nobody's: the file is parsed, not looked up
	fake_mount --owner 65534 "$xattr"
	grep -q " $FAKE_MNT .* - fuse.tilefs .*user_id=65534," /proc/self/mountinfo ||
		fail "not a tilefs mount of nobody: $(grep " $FAKE_MNT " /proc/self/mountinfo)"
	tilefs_run inspect "$FAKE_MNT/f.tif"
	[[ $out != *"cached:"* ]] || fail "the cache dir of another user's mount was believed: $out"
	[[ $out == "$FAKE_MNT/f.tif: $(stat -c %s "$SAMPLES/t256.tif") bytes, TIFF,"* ]] ||
		fail "the file itself not parsed: $out"
	assert_eq "$status" 0 "exit of inspect"
	assert_eq "$err" "tilefs: $FAKE_MNT/f.tif is on a tilefs mount of uid 65534: only a mount of yours or root's names its cache; reading the file itself" \
		"message"
	fake_umount

	# from a mount of root's, the same xattr is believed (the index is read)
	fake_mount "$xattr"
	tilefs_run inspect "$FAKE_MNT/f.tif"
	assert_eq "$status" 0 "exit of inspect"
	[[ $out == *$'\n'"cached: "* ]] || fail "not reported from the index: $out"
	(cd "$CACHE" && stat -c '%n %a %U %s %Y' . index.db index.lock) >"$T/cache.after"
	diff "$T/cache.before" "$T/cache.after" || fail "inspect changed the cache dir"
}
