#!/usr/bin/env bats
# FUSE passthrough: a file cached whole is sealed (every unit checked, the
# file synced and stamped), then the kernel reads it straight from the
# cache, with no read request to the daemon and no request to the origin,
# after a remount too; eviction leaves a file read that way alone; a file
# written since its seal is checked again before the kernel reads it;
# --no-passthrough.
# Needs root and Linux 6.9 or later (the tests say so when skipped).

bats_require_minimum_version 1.5.0
load ../lib/tilefs

setup() {
	tilefs_setup
	origin_start "$SAMPLES"
	MNT=$T/mnt
	CACHE=$T/cache
	local v=$(uname -r) major minor
	major=${v%%.*}
	minor=${v#*.}
	minor=${minor%%.*}
	[ "$(id -u)" = 0 ] || skip "FUSE passthrough needs root"
	[ "$major" -gt 6 ] || { [ "$major" = 6 ] && [ "$minor" -ge 9 ]; } ||
		skip "FUSE passthrough needs Linux 6.9 or later (this is $v)"
}

teardown() {
	tilefs_teardown
}

# mount_counted [ARGS...]: mount ORIGIN_URL on MNT, its counters on PORT
mount_counted() {
	PORT=$(_origin_free_port) || return 1
	tilefs_mount "$ORIGIN_URL" "$MNT" --metrics-port "$PORT" "$@"
}

# metric NAME: the value of the sample NAME the mount serves on PORT
metric() {
	curl -fsS "http://127.0.0.1:$PORT/metrics" | awk -v n="$1" '$1 == n { print $2 }'
}

# sealed NAME: 1 if the cached object whose URL ends in /NAME is sealed
sealed() {
	sqlite3 "$CACHE/index.db" "SELECT count(*) FROM seals JOIN objects ON id = object_id
		WHERE url LIKE '%/$1' AND ino != 0"
}

is_sealed() {
	[ "$(sealed "$1")" = 1 ]
}

# wait_sealed NAME: the seal thread seals it in its own time
wait_sealed() {
	wait_until "the seal of $1" is_sealed "$1" || fail "(log: $(tail -3 "$TILEFS_LOG"))"
}

# cached_whole NAME: every byte of the object whose URL ends in /NAME is
# in the index (the persist thread stores units in its own time)
cached_whole() {
	[ "$(sqlite3 "$CACHE/index.db" "SELECT coalesce(sum(len), 0) = size FROM objects
		LEFT JOIN units ON object_id = objects.id WHERE url LIKE '%/$1' GROUP BY objects.id")" = 1 ]
}

# unpinned FILE: no open file pins FILE (store_pin() holds a shared flock
# while the kernel reads it by passthrough; the kernel lets go of it after
# the last close, asynchronously)
unpinned() {
	flock -n -x "$1" true
}

# data_file NAME: the data file of the cached object whose URL ends in /NAME
data_file() {
	local id
	id=$(sqlite3 "$CACHE/index.db" "SELECT id FROM objects WHERE url LIKE '%/$1'")
	printf '%s\n' "$CACHE"/data-*/"$(printf %02x $((id & 255)))/$id"
}

# cache_whole FILE: read FILE through the mount twice (the second open of
# an object cached whole has it sealed), and wait for its seal
cache_whole() {
	cmp "$SAMPLES/$1" "$MNT/$1"
	cmp "$SAMPLES/$1" "$MNT/$1"
	wait_sealed "$1"
}

# fd4_reads FILE [or-error]: does fd 4 read FILE's bytes (or fail, if
# or-error)? Never other bytes.
fd4_reads() {
	"$PY" - "$@" <<'PY'
import os, sys
want = open(sys.argv[1], "rb").read()
try:
    got = os.pread(4, len(want) + 1, 0)
except OSError:
    sys.exit(0 if sys.argv[2:] == ["or-error"] else 1)
sys.exit(0 if got == want else 1)
PY
}

# evicted_some: the mount on PORT counted bytes evicted
evicted_some() {
	[ "$(metric tilefs_evicted_bytes_total)" -gt 0 ]
}

# opened_passed NAME: read NAME through the mount (same bytes): did that
# open pass through?
opened_passed() {
	local before
	before=$(metric tilefs_passthrough_opens_total)
	cmp "$SAMPLES/$1" "$MNT/$1" || fail "$1 differs"
	[ "$(metric tilefs_passthrough_opens_total)" -gt "$before" ]
}

# unit_count FILE: the units a TIFF in SAMPLES is cut into: its header and
# each block (tile or strip) that is not empty
unit_count() {
	"$TILEFS" inspect "$SAMPLES/$1" |
		sed -nE '1s/.* ([0-9]+) blocks \(([0-9]+) empty\).*/\1 \2/p' |
		{ read -r blocks empty && echo $((blocks - empty + 1)); }
}

# claimed_or_cached NAME N: N units of the object whose URL ends in /NAME
# are cached or claimed (being fetched)
claimed_or_cached() {
	[ "$(sqlite3 "$CACHE/index.db" "SELECT (SELECT count(*) FROM units WHERE object_id = id) +
		(SELECT count(*) FROM claims WHERE object_id = id) FROM objects
		WHERE url LIKE '%/$1'")" = "$2" ]
}

# open_passed NAME: cache NAME whole, then open it on fd 4, by passthrough
open_passed() {
	cache_whole "$1"
	exec 4<"$MNT/$1"
	assert_eq "$(metric tilefs_passthrough_opens_total)" 1 "passthrough opens"
}

@test "passthrough: a file cached whole is read by the kernel from the cache: same bytes, no read reaches the daemon" {
	local served
	mount_counted
	cache_whole t512.tif
	run -0 "$TILEFS" inspect "$MNT/t512.tif"
	[[ $output == *$'\nsealed: checked whole'* ]] || fail "tilefs inspect says: $output"
	assert_eq "$(metric tilefs_passthrough_opens_total)" 0 "passthrough opens before the seal"
	served=$(metric tilefs_served_bytes_total)
	origin_log_reset
	sync
	echo 3 >/proc/sys/vm/drop_caches
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"
	run_to 60 "$PY" "$TESTS_LIB/rio_compare.py" "$MNT/t512.tif" "$SAMPLES/t512.tif"
	[ "$(metric tilefs_passthrough_opens_total)" -ge 2 ] ||
		fail "passthrough opens: $(metric tilefs_passthrough_opens_total)"
	assert_eq "$(metric tilefs_served_bytes_total)" "$served" \
		"bytes the daemon served while the kernel read the sealed file"
	assert_eq "$(origin_file_requests)" 0 "requests for files"
	local first
	first=$(metric tilefs_passthrough_opens_total)

	# the seal outlives the mount: nothing wrote the data file since, so
	# the first open after a remount passes through
	tilefs_umount "$MNT"
	origin_log_reset
	mount_counted
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"
	assert_eq "$(metric tilefs_passthrough_opens_total)" 1 "passthrough opens after the remount"
	assert_eq "$(metric tilefs_served_bytes_total)" 0 "bytes served by the daemon after the remount"
	assert_eq "$(origin_gets)" 0 "ranged GETs after the remount"
	tilefs_umount "$MNT"
	run -0 "$TILEFS" cache stat --cache-dir "$CACHE"
	[[ $output == *$'\npassthrough opens: '$((first + 1))$'\n'* ]] ||
		fail "cache stat says ($first + 1 wanted): $output"
}

@test "passthrough: eviction keeps the units of a file open by passthrough, which reads right throughout" {
	mount_counted
	open_passed t256.tif
	tilefs_run cache clear --cache-dir "$CACHE"
	assert_eq "$status" 0 "cache clear exit status ($err)"
	[[ $out == *"kept "*" units of files open through a mount"* ]] || fail "cache clear said: $out"
	[ "$(data_bytes "$CACHE")" -ge "$(stat -c %s "$SAMPLES/t256.tif")" ] ||
		fail "the pinned file lost bytes: $(data_bytes "$CACHE") left"
	sync
	echo 3 >/proc/sys/vm/drop_caches
	fd4_reads "$SAMPLES/t256.tif" || fail "the open file read other bytes after the eviction"
	exec 4<&-
	wait_until "the release of t256.tif's data file" unpinned "$(data_file t256.tif)"
	tilefs_run cache clear --cache-dir "$CACHE"
	[[ $out == "dropped "*" bytes"* && $out != *kept* ]] || fail "second cache clear said: $out"
	assert_eq "$(sealed t256.tif)" 0 "the seal after the eviction"
	origin_log_reset
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	[ "$(origin_gets)" -gt 0 ] || fail "the evicted file was read without a request"
	tilefs_umount "$MNT"
}

@test "passthrough: a file mapped by passthrough keeps its bytes after its close, when the cache is cleared" {
	mount_counted
	cache_whole t256.tif
	# map it, close it (its pin goes with the release), clear the cache,
	# drop the page cache, read the map
	DATA_FILE=$(data_file t256.tif) WAIT_S=$TILEFS_WAIT_S \
		"$PY" - "$MNT/t256.tif" "$SAMPLES/t256.tif" "$TILEFS" cache clear --cache-dir "$CACHE" \
		>"$T/mapped.out" 2>&1 <<'PY' || fail "$(cat "$T/mapped.out")"
import ctypes, fcntl, os, subprocess, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
fd = os.open(sys.argv[1], os.O_RDONLY)
size = os.fstat(fd).st_size
p = libc.mmap(None, size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED (Python's mmap keeps a dup)
if p in (None, ctypes.c_void_p(-1).value):
    sys.exit("mmap: " + os.strerror(ctypes.get_errno()))
ctypes.string_at(p, 4096)
os.close(fd)
# the kernel lets go of the data file (its pin) asynchronously
deadline = time.monotonic() + int(os.environ["WAIT_S"])
with open(os.environ["DATA_FILE"], "rb") as data:
    while True:
        try:
            fcntl.flock(data, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(data, fcntl.LOCK_UN)
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                sys.exit("the data file is still pinned after the close")
            time.sleep(0.1)
out = subprocess.run(sys.argv[3:], capture_output=True, text=True).stdout
if not out.startswith("dropped ") or "kept" in out:
    sys.exit("cache clear said: " + out)
os.system("sync; echo 3 >/proc/sys/vm/drop_caches")
want = open(sys.argv[2], "rb").read()
got = ctypes.string_at(p, size)
if got != want:
    sys.exit("the map reads other bytes: %d of %d differ" %
             (sum(a != b for a, b in zip(got, want)), len(want)))
PY
	assert_eq "$(metric tilefs_passthrough_opens_total)" 1 "passthrough opens"
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	tilefs_umount "$MNT"
}

@test "passthrough: eviction passes over a pinned file at the head of its order and keeps the cache within --cache-size" {
	mount_counted --cache-size 2M --block-size 8K
	open_passed random.bin	# 128 units of 8 KiB, pinned while fd 4 is open
	sleep 1	# the open's touch of its units is written (persist thread)
	# the least valuable units of the cache, by far
	sqlite3 "$CACHE/index.db" "UPDATE units SET last_access = 1, hits = 1 WHERE object_id =
		(SELECT id FROM objects WHERE url LIKE '%/random.bin')"
	local f used max=0 limit=$((2097152 + 1048576))
	while IFS= read -r f; do
		cmp "$SAMPLES/$f" "$MNT/$f" || fail "$f differs"
		used=$(data_bytes "$CACHE")
		[ "$used" -gt "$max" ] && max=$used
	done < <(file_list "$SAMPLES")
	[ "$max" -le "$limit" ] ||
		fail "data-* reached $max bytes > $limit (2M and 1M of slack)"
	fd4_reads "$SAMPLES/random.bin" || fail "the pinned file read other bytes"
	wait_until "an eviction" evicted_some	# by the persist thread, in its own time
	exec 4<&-
	tilefs_umount "$MNT"
}

@test "passthrough: a sealed file written while unmounted is checked again first: the kernel never reads a damaged byte" {
	tilefs_mount "$ORIGIN_URL" "$MNT"
	cache_whole t512.tif
	tilefs_umount "$MNT"
	local f
	f=$(data_file t512.tif)
	[ -f "$f" ] || fail "no data file for t512.tif ($f)"
	printf '\x5a\x5a\x5a\x5a' | dd of="$f" bs=1 seek=200000 conv=notrunc status=none
	mount_counted
	origin_log_reset
	: <"$MNT/t512.tif"	# an open, no read: the check it queues finds the damage
	wait_until "a damaged unit logged" grep -q "damaged (checksum)" "$TILEFS_LOG" ||
		fail "log: $(tail -5 "$TILEFS_LOG")"
	assert_eq "$(sealed t512.tif)" 0 "the seal of the damaged file"
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"
	[ "$(origin_gets)" -gt 0 ] || fail "the damaged unit was not fetched again"
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"
	wait_sealed t512.tif
	sync
	echo 3 >/proc/sys/vm/drop_caches
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"
	[ "$(metric tilefs_passthrough_opens_total)" -ge 1 ] ||
		fail "the file sealed again was not passed through"
	tilefs_umount "$MNT"
}

@test "passthrough: an open while the last units of a file are on their way to the cache has it sealed once they are stored" {
	local units
	units=$(unit_count t512.tif)
	mount_counted
	exec 4<"$MNT/t512.tif"	# the first open caches the header
	origin_fault 'delay?ms=5000&count=10'
	run_to 120 cmp "$SAMPLES/t512.tif" - <&4 &	# its GETs are held 5 s
	local reader=$!
	exec 4<&-
	wait_until "every unit of t512.tif cached or being fetched" claimed_or_cached t512.tif "$units"
	# fetched or being fetched, not all cached: this open asks for the
	# seal, and the persist thread queues it once the last unit is stored
	: <"$MNT/t512.tif"
	wait "$reader" || fail "the first open read other bytes"
	origin_fault clear
	wait_sealed t512.tif	# with no other open
	origin_log_reset
	sync
	echo 3 >/proc/sys/vm/drop_caches
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"
	assert_eq "$(metric tilefs_passthrough_opens_total)" 1 "passthrough opens"
	assert_eq "$(origin_file_requests)" 0 "requests for files"
	tilefs_umount "$MNT"
}

@test "passthrough: a data file replaced behind the daemon is checked through its pin: never sealed with bytes unchecked" {
	mount_counted --log-level debug
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"	# the daemon keeps its data file open
	wait_until "t512.tif cached whole" cached_whole t512.tif
	local f
	f=$(data_file t512.tif)
	# another file takes its name (as a process other than tilefs may do):
	# a pin opens that one, the daemon's open descriptor reads the first
	cp -p "$f" "$f.new"
	printf '\x5a\x5a\x5a\x5a' | dd of="$f.new" bs=1 seek=200000 conv=notrunc status=none
	mv "$f.new" "$f"
	: <"$MNT/t512.tif"	# cached whole: this open asks for the seal
	wait_until "the seal of t512.tif tried" \
		grep -qE "sealed t512.tif|t512.tif not sealed" "$TILEFS_LOG"
	sync
	echo 3 >/proc/sys/vm/drop_caches
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif" || fail "the mount read other bytes"
	assert_eq "$(metric tilefs_passthrough_opens_total)" 0 "passthrough opens"
	assert_eq "$(sealed t512.tif)" 0 "the seal of a data file with damaged bytes"
	grep -q "warn: t512.tif: its data file differs at .* (replaced?); not sealed" "$TILEFS_LOG" ||
		fail "log: $(tail -5 "$TILEFS_LOG")"
	tilefs_umount "$MNT"
}

@test "passthrough: after tilefs warm the first open passes through, with no GET" {
	tilefs_run warm --cache-dir "$CACHE" "$ORIGIN_URL"
	assert_eq "$status" 0 "warm exit status ($err)"
	origin_log_reset
	mount_counted
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	cmp "$SAMPLES/nested/f32.tif" "$MNT/nested/f32.tif"
	assert_eq "$(metric tilefs_passthrough_opens_total)" 2 "passthrough opens"
	assert_eq "$(metric tilefs_served_bytes_total)" 0 "bytes served by the daemon"
	assert_eq "$(origin_gets)" 0 "ranged GETs (a revalidation HEAD per file is all)"
	tilefs_umount "$MNT"
}

@test "passthrough: kill -9 with a file open by passthrough: it never reads other bytes; its units stay until it is closed" {
	mount_counted
	open_passed t256.tif
	tilefs_kill9 "$MNT"
	tilefs_run cache clear --cache-dir "$CACHE"
	[[ $out == *"kept "*" units of files open through a mount"* ]] || fail "cache clear said: $out"
	sync
	echo 3 >/proc/sys/vm/drop_caches
	fd4_reads "$SAMPLES/t256.tif" or-error || fail "the open file read other bytes after the daemon died"
	exec 4<&-
	wait_until "the release of t256.tif's data file" unpinned "$(data_file t256.tif)"
	tilefs_run cache clear --cache-dir "$CACHE"
	[[ $out == "dropped "*" bytes"* && $out != *kept* ]] || fail "cache clear after the close said: $out"
	tilefs_mount "$ORIGIN_URL" "$MNT"
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	tilefs_umount "$MNT"
}

@test "passthrough: while a file is open through the page cache, its next open does not pass through; once that is closed, one does" {
	mount_counted
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"	# cached whole, not sealed yet
	wait_until "t512.tif cached whole" cached_whole t512.tif
	exec 4<"$MNT/t512.tif"			# the page cache; queues its seal
	wait_sealed t512.tif
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"	# sealed, but fd 4 uses the page cache
	fd4_reads "$SAMPLES/t512.tif" || fail "the page-cache open read other bytes"
	assert_eq "$(metric tilefs_passthrough_opens_total)" 0 "passthrough opens beside a page-cache open"
	exec 4<&-
	# the kernel sends the release asynchronously: until the daemon has
	# it, an open still goes through the page cache
	wait_until "an open passed through after the close" opened_passed t512.tif
	assert_eq "$(metric tilefs_passthrough_opens_total)" 1 "passthrough opens after it closed"
	tilefs_umount "$MNT"
}

@test "passthrough: a new version opened while the old one is read by passthrough: each open reads its own version" {
	# the kernel wants every open of an inode read by passthrough to name
	# its backing file (any other open fails with EIO), and maps that file
	# for it; the new version's open must still succeed and read (and map)
	# the new bytes, the old file the old
	mount_counted --ttl 1
	cp "$SAMPLES/random.bin" "$T/old.bin"
	"$PY" -c 'import sys; open(sys.argv[1], "wb").write(bytes(255 - b for b in open(sys.argv[2], "rb").read()))' \
		"$T/new.bin" "$T/old.bin"
	touch -d '2025-03-04 05:06:07 UTC' "$T/new.bin"
	cache_whole random.bin
	sleep 1.2	# past --ttl: the next open revalidates
	run_to 60 "$PY" - "$MNT/random.bin" "$SAMPLES/random.bin" "$T/old.bin" "$T/new.bin" <<'PYEOF'
import mmap, os, shutil, sys, time
mnt, origin, old, new = sys.argv[1:]
old_b, new_b = open(old, "rb").read(), open(new, "rb").read()
fd1 = os.open(mnt, os.O_RDONLY)                 # the old version, by passthrough
assert os.pread(fd1, 4096, 0) == old_b[:4096], "old open, first read"
shutil.copy2(new, origin + ".tmp")
os.rename(origin + ".tmp", origin)
time.sleep(1.2)
fd2 = os.open(mnt, os.O_RDONLY)                 # past --ttl: the new version
assert os.pread(fd2, 131072, 131072) == new_b[131072:262144], "the new open reads new bytes"
assert os.pread(fd1, 131072, 131072) == old_b[131072:262144], "the old open reads old bytes"
m2 = mmap.mmap(fd2, 0, mmap.MAP_PRIVATE, mmap.PROT_READ)
assert m2[:] == new_b, "a map of the new open reads new bytes"
m1 = mmap.mmap(fd1, 0, mmap.MAP_SHARED, mmap.PROT_READ)
assert m1[:] == old_b, "a map of the old open reads old bytes"
m1.close()
m2.close()
fd3 = os.open(mnt, os.O_RDONLY)                 # a second open of the new version
assert os.pread(fd3, len(new_b) + 1, 0) == new_b, "the second new open reads new bytes"
os.close(fd1)
os.close(fd2)
os.close(fd3)
time.sleep(0.5)                                 # the kernel releases asynchronously
fd4 = os.open(mnt, os.O_RDONLY)
assert os.pread(fd4, len(new_b) + 1, 0) == new_b, "an open after the old one closed"
os.close(fd4)
PYEOF
	[ "$(metric tilefs_passthrough_opens_total)" -ge 1 ] ||
		fail "the old version was not opened by passthrough (the test tests nothing)"
	tilefs_umount "$MNT"
}

@test "passthrough: a new version beside a passed-through old one gets a new inode number, which its path keeps" {
	# the one case where a path changes number within a mount (inodes.h):
	# the old open keeps the old number, the path the new one, after both
	# are closed and the kernel has forgotten them too
	mount_counted --ttl 1
	"$PY" -c 'import sys; open(sys.argv[1], "wb").write(bytes(255 - b for b in open(sys.argv[2], "rb").read()))' \
		"$T/new.bin" "$SAMPLES/random.bin"
	touch -d '2025-03-04 05:06:07 UTC' "$T/new.bin"
	cache_whole random.bin
	local first
	first=$(stat -c %i "$MNT/random.bin")
	sleep 1.2	# past --ttl: the next open revalidates
	run_to 60 "$PY" - "$MNT/random.bin" "$SAMPLES/random.bin" "$T/new.bin" "$first" <<'PYEOF'
import mmap, os, shutil, sys, time
mnt, origin, new, first = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
new_b = open(new, "rb").read()
fd1 = os.open(mnt, os.O_RDONLY)                 # the old version, by passthrough
assert os.fstat(fd1).st_ino == first, "the old open: the path's number"
shutil.copy2(new, origin + ".tmp")
os.rename(origin + ".tmp", origin)
time.sleep(1.2)
fd2 = os.open(mnt, os.O_RDONLY)                 # past --ttl: the new version
second = os.fstat(fd2).st_ino
assert second != first, "the new version has a number of its own"
assert os.stat(mnt).st_ino == second, "the path now has the new number"
assert os.fstat(fd1).st_ino == first, "the old open keeps the old one"
m2 = mmap.mmap(fd2, 0, mmap.MAP_PRIVATE, mmap.PROT_READ)
assert m2[:] == new_b, "a map of the new open reads new bytes"
m2.close()
os.close(fd1)
os.close(fd2)
PYEOF
	local second
	second=$("$PY" -c 'import os, sys; print(os.stat(sys.argv[1]).st_ino)' "$MNT/random.bin")
	[ "$second" != "$first" ] || fail "the path kept the old number $first"
	sleep 0.5	# the kernel releases asynchronously
	cd /
	sync
	echo 2 >/proc/sys/vm/drop_caches	# the kernel forgets both inodes
	sleep 1
	assert_eq "$(stat -c %i "$MNT/random.bin")" "$second" "the path's number after the kernel forgot it"
	cmp "$T/new.bin" "$MNT/random.bin"
	assert_eq "$(stat -c %i "$MNT/random.bin")" "$second" "the path's number after an open"
	[ "$(metric tilefs_passthrough_opens_total)" -ge 1 ] ||
		fail "the old version was not opened by passthrough (the test tests nothing)"
	tilefs_umount "$MNT"
}

@test "passthrough: a mount by a user other than root says passthrough is off and reads through the daemon" {
	local ud
	ud=$(mktemp -d /tmp/tilefs-user.XXXXXX)
	chmod 755 "$ud"
	mkdir -p "$ud/mnt"
	cp "$TILEFS" "$ud/tilefs"
	cp "$SAMPLES/t512.tif" "$ud/t512.tif"
	chown -R nobody "$ud"
	# /dev/fuse 0666 as Debian makes it, in a mount namespace of this test
	run -0 run_to 60 unshare -m --propagation private sh -c "
		set -e
		mknod -m 666 $ud/fuse c 10 229 && mount --bind $ud/fuse /dev/fuse
		runuser -u nobody -- env HOME=$ud XDG_CACHE_HOME=$ud/xdg $ud/tilefs mount \
			--log-level info $ORIGIN_URL $ud/mnt
		for i in 1 2 3; do
			runuser -u nobody -- cmp $ud/t512.tif $ud/mnt/t512.tif || {
				runuser -u nobody -- fusermount3 -u $ud/mnt; exit 1; }
			sleep 0.5
		done
		runuser -u nobody -- fusermount3 -u $ud/mnt"
	echo "$output"
	grep -q "FUSE passthrough is off for this mount (Operation not permitted: it needs root)" \
		"$ud/xdg/tilefs/tilefs.log" || fail "log: $(cat "$ud/xdg/tilefs/tilefs.log")"
	rm -rf "$ud"
}

@test "passthrough: --no-passthrough reads every file through the daemon" {
	local served
	mount_counted --no-passthrough
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"
	sleep 1
	served=$(metric tilefs_served_bytes_total)
	sync
	echo 3 >/proc/sys/vm/drop_caches
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"
	assert_eq "$(metric tilefs_passthrough_opens_total)" 0 "passthrough opens"
	[ "$(metric tilefs_served_bytes_total)" -gt "$served" ] ||
		fail "the daemon served nothing for the third read"
	tilefs_umount "$MNT"
}

@test "passthrough: many readers opening the same files while they are fetched and sealed: no open fails" {
	# Six processes open each of 80 small files three times, while the
	# files are fetched, cached whole and sealed: the daemon answers the
	# opens in turn, but the kernel applies each answer when its opener
	# runs, so a direct-I/O answer sent before a passthrough one could be
	# applied after it and fail with EIO (passthrough.h, rule 1).
	mkdir -p "$T/many"
	local i
	for i in $(seq 1 80); do cp "$SAMPLES/nested/with space.tif" "$T/many/f$i.tif"; done
	origin_stop
	origin_start "$T/many"
	origin_fault 'delay?ms=20&count=-1'
	mount_counted
	run "$PY" - "$MNT" "$T/many" <<'PY'
import multiprocessing, os, sys
mnt, src = sys.argv[1:]
names = sorted(os.listdir(src))
want = {n: open(os.path.join(src, n), "rb").read() for n in names}
def reader(k):
    bad = []
    for n in names:
        for _ in range(3):
            try:
                with open(os.path.join(mnt, n), "rb") as f:
                    if f.read() != want[n]:
                        bad.append("%s: other bytes" % n)
            except OSError as e:
                bad.append("%s: %s" % (n, e.strerror))
    return bad
with multiprocessing.Pool(6) as pool:
    bad = [b for r in pool.map(reader, range(6)) for b in r]
print("%d failed opens or reads: %s" % (len(bad), bad[:8]))
sys.exit(1 if bad else 0)
PY
	assert_eq "$status" 0 "$output"
	[ "$(metric tilefs_passthrough_opens_total)" -gt 0 ] ||
		fail "no open passed through: the test did not reach passthrough"
}
