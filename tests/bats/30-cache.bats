#!/usr/bin/env bats
# The on-disk cache: what is fetched once is never fetched again (same
# mount, remount, a second mount on the same cache dir), --ttl and changed
# objects, --cache-size, a killed daemon, a damaged cache dir.

bats_require_minimum_version 1.5.0
load ../lib/tilefs

setup() {
	tilefs_setup
	origin_start "$SAMPLES"
	MNT=$T/mnt
	CACHE=$T/cache
}

teardown() {
	tilefs_teardown
}

# max_heads: the largest number of HEADs any one URI got.
max_heads() {
	origin_select 'm == "HEAD"' | sed 's/ "[^"]*" [0-9]* [0-9]*$//' | sort | uniq -c |
		awk '{ if ($1 > mx) mx = $1 } END { print mx + 0 }'
}

# file_gets: GET requests (with or without Range) for files, not listings.
file_gets() {
	origin_select 'm == "GET" && u !~ /\/$/' | wc -l
}

@test "second read: no request; after a remount: no ranged GET, at most a HEAD per file" {
	tilefs_mount "$ORIGIN_URL" "$MNT"
	origin_log_reset
	cmp_tree "$SAMPLES" "$MNT"
	run_to 60 "$PY" "$TESTS_LIB/rio_compare.py" "$MNT/t256.tif" "$SAMPLES/t256.tif"
	local first
	first=$(origin_gets)
	[ "$first" -gt 0 ] || fail "the first read logged no ranged GET at all"

	origin_log_reset
	cmp_tree "$SAMPLES" "$MNT"
	run_to 60 "$PY" "$TESTS_LIB/rio_compare.py" "$MNT/t256.tif" "$SAMPLES/t256.tif"
	assert_eq "$(origin_gets)" 0 "ranged GETs on the second read (first read: $first)"
	assert_eq "$(origin_file_requests)" 0 "requests for files on the second read within --ttl"
	tilefs_umount "$MNT"

	[ -f "$CACHE/index.db" ] || fail "no index.db in the cache dir"
	compgen -G "$CACHE/data-*" >/dev/null || fail "no data-* dir in the cache dir"
	assert_eq "$(sqlite3 "$CACHE/index.db" 'pragma journal_mode;')" wal "index.db journal mode"

	origin_log_reset
	tilefs_mount "$ORIGIN_URL" "$MNT"
	cmp_tree "$SAMPLES" "$MNT"
	run_to 60 "$PY" "$TESTS_LIB/rio_compare.py" "$MNT/t512.tif" "$SAMPLES/t512.tif"
	assert_eq "$(origin_gets)" 0 "ranged GETs after the remount"
	assert_eq "$(file_gets)" 0 "GETs of files after the remount"
	[ "$(max_heads)" -le 1 ] || fail "a file got $(max_heads) HEADs after the remount"
	tilefs_umount "$MNT"
}

@test "a remount revalidates ahead: a listing's cached files get their HEAD in the background, once; their opens send nothing; a changed one reads new bytes" {
	tilefs_mount "$ORIGIN_URL" "$MNT"
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"
	tilefs_umount "$MNT"
	same_size_rewrite "$SAMPLES/t512.tif" "$T/t512.new"
	touch -d '2025-03-04 05:06:07 UTC' "$T/t512.new"
	mv "$T/t512.new" "$SAMPLES/t512.tif"
	origin_log_reset
	tilefs_mount "$ORIGIN_URL" "$MNT"
	ls "$MNT" >/dev/null
	revalidated() {
		[ "$(origin_count HEAD /t256.tif)" = 1 ] && [ "$(origin_count HEAD /t512.tif)" = 1 ] &&
			[ "$(origin_gets /t512.tif)" -ge 1 ]
	}
	wait_until "the revalidation ahead of t256.tif and t512.tif" revalidated
	assert_eq "$(origin_count HEAD /t256.tif)" 1 "HEADs of t256.tif (cached) after the listing"
	assert_eq "$(origin_count HEAD /t512.tif)" 1 "HEADs of t512.tif (cached, changed) after the listing"
	assert_eq "$(origin_select 'u == "/random.bin" || u == "/notes.txt"' | wc -l)" 0 \
		"requests for files never cached"
	sleep 0.3
	origin_log_reset
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	assert_eq "$(origin_lines | wc -l)" 0 "requests for the open and read of t256.tif"
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"	# the new version
	assert_eq "$(origin_count HEAD)" 0 "HEADs at the opens"
	ls "$MNT" >/dev/null
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	assert_eq "$(origin_count HEAD)" 0 "HEADs after another listing within --ttl"
	tilefs_umount "$MNT"
}

@test "--ttl 0: a cold open costs one ranged GET at 0 (no HEAD); a warm open exactly one HEAD" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --ttl 0
	ls "$MNT" >/dev/null
	origin_log_reset
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"
	assert_eq "$(origin_count HEAD /t512.tif)" 0 "HEADs on the cold open"
	local firstline
	firstline=$(origin_select 'u == "/t512.tif"' | head -n 1)
	[[ $firstline == 'GET /t512.tif "bytes=0-'* ]] || fail "first request for t512.tif: $firstline"

	origin_log_reset
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"
	assert_eq "$(origin_count HEAD /t512.tif)" 1 "HEADs on the warm open"
	assert_eq "$(origin_count GET /t512.tif)" 0 "GETs on the warm open"
	origin_log_reset
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"
	assert_eq "$(origin_count HEAD /t512.tif)" 1 "HEADs on the third open"
	assert_eq "$(origin_count GET /t512.tif)" 0 "GETs on the third open"
	tilefs_umount "$MNT"
}

@test "-o ttl=0 works like --ttl 0" {
	tilefs_mount "$ORIGIN_URL" "$MNT" -o ttl=0
	cmp "$SAMPLES/notes.txt" "$MNT/notes.txt"
	origin_log_reset
	cmp "$SAMPLES/notes.txt" "$MNT/notes.txt"
	assert_eq "$(origin_count HEAD /notes.txt)" 1 "HEADs on the second open with -o ttl=0"
	tilefs_umount "$MNT"
}

@test "ranged GETs are aligned to --block-size and no byte is fetched twice" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --block-size 64K
	origin_log_reset
	cmp "$SAMPLES/random.bin" "$MNT/random.bin"
	local size bad
	size=$(stat -c %s "$SAMPLES/random.bin")
	bad=$(awk -v sz="$size" -v bs=65536 "$ORIGIN_AWK"'{ parse() }
		m == "GET" && u == "/random.bin" {
			sub(/^bytes=/, "", r); split(r, p, "-")
			if (p[1] % bs != 0 || ((p[2] + 1) % bs != 0 && p[2] != sz - 1)) print $0
		}' "$ORIGIN_LOG")
	[ -z "$bad" ] || fail "ranges not aligned to 64K: $bad"
	[ "$(origin_gets /random.bin)" -gt 0 ] || fail "no ranged GET for random.bin"
	assert_eq "$(origin_range_bytes /random.bin)" "$size" "bytes fetched for random.bin (size $size)"
	# A TIFF's first fetch at open (--header-size, 64K) may end inside a
	# tile, which is then fetched whole as its own unit: those bytes, and
	# only those, come twice.
	local f got size
	for f in t256.tif t512.tif nested/f32.tif "nested/with space.tif"; do
		cmp "$SAMPLES/$f" "$MNT/$f"
		got=$(origin_range_bytes "/$f")
		size=$(stat -c %s "$SAMPLES/$f")
		[ "$got" -ge "$size" ] && [ "$got" -le $((size + 65536)) ] ||
			fail "bytes fetched for $f: $got, not its size $size (+ at most the 64K first fetch)" ||
			return 1
	done
	cmp "$SAMPLES/notes.txt" "$MNT/notes.txt"
	assert_eq "$(origin_range_bytes /notes.txt)" "$(stat -c %s "$SAMPLES/notes.txt")" \
		"bytes fetched for notes.txt (= its size if nothing was fetched twice)" || return 1
	assert_eq "$(origin_select 'm == "GET" && u !~ /\/$/ && r == "-"')" "" \
		"GETs of files without a Range header"
	tilefs_umount "$MNT"
}

@test "two mounts on one cache dir read concurrently: same bytes, each range fetched once" {
	local M1=$T/m1 M2=$T/m2
	tilefs_mount "$ORIGIN_URL" "$M1" --cache-dir "$CACHE"
	tilefs_mount "$ORIGIN_URL" "$M2" --cache-dir "$CACHE"
	origin_log_reset
	cmp_tree "$SAMPLES" "$M1" &
	local p1=$!
	cmp_tree "$SAMPLES" "$M2" &
	local p2=$!
	run_to 120 "$PY" "$TESTS_LIB/pread_check.py" --seed 3 --procs 2 --threads 2 --reads 300 "$M1" "$SAMPLES" &
	local p3=$!
	run_to 120 "$PY" "$TESTS_LIB/pread_check.py" --seed 3 --procs 2 --threads 2 --reads 300 "$M2" "$SAMPLES" &
	local p4=$!
	wait "$p1" || fail "mount 1 read wrong bytes"
	wait "$p2" || fail "mount 2 read wrong bytes"
	wait "$p3" || fail "random reads on mount 1 failed"
	wait "$p4" || fail "random reads on mount 2 failed"
	# Units are claimed across processes, so none comes twice. The few
	# bytes a read takes from the edge of a tile it does not want (a
	# sliver, under 16K, never cached) are each process's own.
	local dups
	dups=$(origin_dup_ranges | awk '{ split($3, b, /[=-]/); if (b[3] - b[2] + 1 >= 16384) print }')
	[ -z "$dups" ] || fail "ranges fetched more than once: $dups"
	# nor any byte twice (overlapping but different ranges)
	local f got size
	while IFS= read -r f; do
		got=$(origin_range_bytes "/$f")
		size=$(stat -c %s "$SAMPLES/$f")
		# A TIFF's bytes may come twice where it was designed so: the part
		# of a tile the 64K first fetch ended in, and the edges of tiles
		# (under 16K each) fetched alone for random reads that end in a
		# tile's first or last bytes. Whole ranges never come twice (above).
		case $f in
		*.tif) [ "$got" -le $((size + size / 8 + 65536)) ] ;;
		*) [ "$got" -le "$size" ] ;;
		esac || fail "$got bytes of $f ($size bytes) were fetched: some twice" || return 1
	done < <(file_list "$SAMPLES")
	origin_log_reset
	cmp_tree "$SAMPLES" "$M2"
	cmp_tree "$SAMPLES" "$M1"
	assert_eq "$(origin_gets)" 0 "ranged GETs once both mounts have read everything"
	tilefs_umount "$M1"
	tilefs_umount "$M2"
}

@test "one mount, 4 readers opening the same files at once (slow origin): each range fetched once" {
	local f i pids
	tilefs_mount "$ORIGIN_URL" "$MNT"
	ls -R "$MNT" >/dev/null
	origin_log_reset
	origin_fault 'delay?ms=300&count=-1'
	for f in t256.tif random.bin; do
		pids=()
		for i in 1 2 3 4; do
			head -c 300000 "$MNT/$f" >"$T/out.$i" &
			pids+=($!)
		done
		for i in "${pids[@]}"; do wait "$i"; done
		for i in 1 2 3 4; do
			cmp -n 300000 "$SAMPLES/$f" "$T/out.$i"
		done
	done
	origin_fault clear
	local dups
	dups=$(origin_dup_ranges)
	[ -z "$dups" ] || fail "ranges fetched more than once: $dups"
	tilefs_umount "$MNT"
}

@test "two mounts on one cache dir opening the same files at once (slow origin): each range fetched once" {
	local M1=$T/m1 M2=$T/m2 f
	tilefs_mount "$ORIGIN_URL" "$M1" --cache-dir "$CACHE"
	tilefs_mount "$ORIGIN_URL" "$M2" --cache-dir "$CACHE"
	ls -R "$M1" "$M2" >/dev/null
	origin_log_reset
	# every request takes 300 ms, so the two opens overlap
	origin_fault 'delay?ms=300&count=-1'
	for f in t256.tif t512.tif nested/f32.tif random.bin; do
		head -c 4096 "$M1/$f" >"$T/a" &
		head -c 4096 "$M2/$f" >"$T/b"
		wait $!
		cmp "$T/a" "$T/b"
		cmp -n 4096 "$SAMPLES/$f" "$T/a"
	done
	origin_fault clear
	local dups
	dups=$(origin_dup_ranges)
	[ -z "$dups" ] || fail "ranges fetched more than once: $dups"
	tilefs_umount "$M1"
	tilefs_umount "$M2"
}

@test "a block cached by one mount is not fetched by a second mount on the same cache dir" {
	local M1=$T/m1 M2=$T/m2
	tilefs_mount "$ORIGIN_URL" "$M1" --cache-dir "$CACHE"
	tilefs_mount "$ORIGIN_URL" "$M2" --cache-dir "$CACHE"
	cmp "$SAMPLES/t256.tif" "$M1/t256.tif"
	origin_log_reset
	cmp "$SAMPLES/t256.tif" "$M2/t256.tif"
	assert_eq "$(origin_gets /t256.tif)" 0 "ranged GETs by mount 2 for a file mount 1 has read"
	[ "$(origin_count HEAD /t256.tif)" -le 1 ] || fail "more than one HEAD"
	tilefs_umount "$M1"
	tilefs_umount "$M2"
}

@test "the object changes on the origin between two opens (--ttl 0)" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --ttl 0
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	cmp "$SAMPLES/random.bin" "$MNT/random.bin"

	# other content, other size
	cp "$SAMPLES/t512.tif" "$T/new.tif"
	mv "$T/new.tif" "$SAMPLES/t256.tif"
	cmp "$SAMPLES/t512.tif" "$MNT/t256.tif"
	assert_eq "$(stat -c %s "$MNT/t256.tif")" "$(stat -c %s "$SAMPLES/t512.tif")" "size after the change"
	run_to 60 "$PY" "$TESTS_LIB/rio_compare.py" "$MNT/t256.tif" "$SAMPLES/t512.tif"

	# same size, other content, other mtime
	"$PY" -c 'import os, sys
data = bytearray(open(sys.argv[1], "rb").read())
for i in range(0, len(data), 4093):
    data[i] ^= 0x5a
open(sys.argv[2], "wb").write(data)' "$SAMPLES/random.bin" "$T/new.bin"
	touch -d '2025-06-07 08:09:10 UTC' "$T/new.bin"
	mv "$T/new.bin" "$SAMPLES/random.bin"
	cmp "$SAMPLES/random.bin" "$MNT/random.bin"

	# and back to a smaller file
	head -c 1000 "$SAMPLES/notes.txt" >"$T/small"
	mv "$T/small" "$SAMPLES/random.bin"
	cmp "$SAMPLES/random.bin" "$MNT/random.bin"
	assert_eq "$(stat -c %s "$MNT/random.bin")" 1000 "size after shrinking"
	tilefs_umount "$MNT"
}

@test "the object changed while unmounted: the remount reads the new bytes" {
	tilefs_mount "$ORIGIN_URL" "$MNT"
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"
	tilefs_umount "$MNT"
	cp "$SAMPLES/nested/f32.tif" "$T/new.tif"
	touch -d '2025-01-01 00:00:00 UTC' "$T/new.tif"
	mv "$T/new.tif" "$SAMPLES/t512.tif"
	tilefs_mount "$ORIGIN_URL" "$MNT"
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"
	tilefs_umount "$MNT"
}

@test "--cache-size 1M --block-size 64K: correct bytes, data-* stays within 1M + 1MiB" {
	local limit=$((1048576 + 1048576)) pass f used max=0
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-size 1M --block-size 64K
	for pass in 1 2; do
		while IFS= read -r f; do
			cmp "$SAMPLES/$f" "$MNT/$f" || fail "pass $pass: $f differs" || return 1
			used=$(data_bytes "$CACHE")
			[ "$used" -gt "$max" ] && max=$used
			[ "$used" -le "$limit" ] ||
				fail "pass $pass after $f: du -sb of data-* is $used bytes > $limit" \
					"(allocated on disk: $(du -scB1 "$CACHE"/data-* | tail -n 1 | cut -f 1))" || return 1
		done < <(file_list "$SAMPLES")
	done
	run_to 60 "$PY" "$TESTS_LIB/rio_compare.py" "$MNT/t512.tif" "$SAMPLES/t512.tif"
	[ "$max" -gt 0 ] || fail "nothing was ever cached"
	[ "$(data_bytes "$CACHE")" -le "$limit" ] || fail "data-* over the limit at the end"
	tilefs_umount "$MNT"
	[ "$(data_bytes "$CACHE")" -le "$limit" ] || fail "data-* over the limit after unmount"
}

@test "kill -9 during a large read, remount on the same cache dir: identical bytes" {
	head -c $((64 * 1048576)) /dev/urandom >"$SAMPLES/big.bin"
	tilefs_mount "$ORIGIN_URL" "$MNT"
	# 500 KB/s a response: the whole-file stream's GETs of 2 MiB, one a
	# connection (32 by default), take 4 s each, and 64 MiB needs two
	# rounds of them, so the first round has landed and the read is still
	# going when the kill comes (a file one round covers lands all at once,
	# at its end)
	origin_fault 'rate?bps=500000'
	run_to 120 cat "$MNT/big.bin" >/dev/null 2>&1 &
	local reader=$!
	# wait until a few MB have landed (allocated, not apparent, size)
	landed() { [ "$(data_bytes "$CACHE")" -gt $((3 * 1048576)) ]; }
	wait_until "3 MB cached" landed
	tilefs_kill9 "$MNT"
	wait "$reader" && fail "the read survived the daemon's death?"
	origin_fault clear
	tilefs_mount "$ORIGIN_URL" "$MNT"
	cmp "$SAMPLES/big.bin" "$MNT/big.bin"
	cmp_tree "$SAMPLES" "$MNT"
	tilefs_umount "$MNT"
	assert_eq "$(sqlite3 "$CACHE/index.db" 'pragma integrity_check;')" ok "index.db integrity"
	# and everything is served from the cache now
	origin_log_reset
	tilefs_mount "$ORIGIN_URL" "$MNT"
	cmp "$SAMPLES/big.bin" "$MNT/big.bin"
	assert_eq "$(origin_gets /big.bin)" 0 "ranged GETs of big.bin once fully cached"
	tilefs_umount "$MNT"
}

@test "data files deleted while unmounted: reads still correct (DESIGN)" {
	tilefs_mount "$ORIGIN_URL" "$MNT"
	cmp_tree "$SAMPLES" "$MNT"
	tilefs_umount "$MNT"
	find "$CACHE" -path "$CACHE/data-*" -type f -delete
	tilefs_mount "$ORIGIN_URL" "$MNT"
	cmp_tree "$SAMPLES" "$MNT"
	tilefs_alive "$MNT"
	tilefs_umount "$MNT"
}

@test "data files overwritten with garbage while unmounted: reads still correct (DESIGN checksums)" {
	tilefs_mount "$ORIGIN_URL" "$MNT"
	cmp_tree "$SAMPLES" "$MNT"
	tilefs_umount "$MNT"
	local n
	n=$(find "$CACHE" -path "$CACHE/data-*" -type f | wc -l)
	[ "$n" -gt 0 ] || fail "no data files in the cache"
	find "$CACHE" -path "$CACHE/data-*" -type f -print0 | xargs -0 "$PY" -c '
import os, sys
for p in sys.argv[1:]:
    n = os.path.getsize(p)
    with open(p, "r+b") as fh:
        for off in range(0, n, 512):
            fh.seek(off)
            fh.write(b"\xa5" * min(64, n - off))'
	tilefs_mount "$ORIGIN_URL" "$MNT"
	cmp_tree "$SAMPLES" "$MNT"
	tilefs_alive "$MNT"
	tilefs_umount "$MNT"
}

@test "--ttl 1: after expiry the listing is refreshed and a reopen costs one HEAD" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --ttl 1
	cmp "$SAMPLES/notes.txt" "$MNT/notes.txt"
	ls "$MNT/nested" >/dev/null
	cp "$SAMPLES/notes.txt" "$SAMPLES/nested/added.txt"
	rm "$SAMPLES/nested/f32.tif"
	sleep 2.2
	origin_log_reset
	cmp "$SAMPLES/notes.txt" "$MNT/notes.txt"
	assert_eq "$(origin_count HEAD /notes.txt)" 1 "HEADs of notes.txt after the ttl expired"
	assert_eq "$(origin_gets /notes.txt)" 0 "ranged GETs of notes.txt"
	assert_eq "$(ls "$MNT/nested" | LC_ALL=C sort | tr '\n' ' ')" "added.txt deeper with space.tif " \
		"ls nested/ after the origin changed and the ttl expired"
	cmp "$SAMPLES/nested/added.txt" "$MNT/nested/added.txt"
	assert_enoent "$MNT/nested/f32.tif"
	tilefs_umount "$MNT"
}

@test "an object replaced while open: the open file gives old bytes or an error, never a mix (DESIGN)" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --ttl 0 --block-size 64K --retries 1
	cp "$SAMPLES/random.bin" "$T/old.bin"
	"$PY" -c 'import sys; open(sys.argv[1], "wb").write(bytes(255 - b for b in open(sys.argv[2], "rb").read()))' \
		"$T/new.bin" "$T/old.bin"
	touch -d '2025-03-04 05:06:07 UTC' "$T/new.bin"
	run_to 60 "$PY" - "$MNT/random.bin" "$SAMPLES/random.bin" "$T/old.bin" "$T/new.bin" <<'PYEOF'
import os, shutil, sys
mnt, origin, old, new = sys.argv[1:]
old_b = open(old, "rb").read()
fd = os.open(mnt, os.O_RDONLY)
first = os.pread(fd, 4096, 0)
assert first == old_b[:4096], "first 4 KiB differ before the change"
shutil.copy2(new, origin + ".tmp")
os.rename(origin + ".tmp", origin)
try:
    rest = b""
    off = 4096
    while True:
        b = os.pread(fd, 1 << 20, off)
        if not b:
            break
        rest += b
        off += len(b)
except OSError as e:
    if e.errno not in (5, 116):  # EIO, ESTALE
        raise
    print("%s after the change (acceptable)" % os.strerror(e.errno))
    sys.exit(0)
whole = first + rest
if whole != old_b:
    new_b = open(new, "rb").read()
    n_old = sum(1 for i in range(0, len(whole), 65536) if whole[i:i + 65536] == old_b[i:i + 65536])
    sys.exit("the open file returned %d bytes, not the old object (%d of %d blocks old, new object %s)" % (
        len(whole), n_old, (len(old_b) + 65535) // 65536, "matches" if whole == new_b else "does not match"))
print("old bytes to the end (acceptable)")
PYEOF
	# and a new open sees the new object
	cmp "$T/new.bin" "$MNT/random.bin"
	tilefs_umount "$MNT"
}

@test "concurrent random reads while a 1M cache evicts all the time: right bytes" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-size 1M --block-size 64K
	run_to 180 "$PY" "$TESTS_LIB/pread_check.py" --seed 21 --procs 4 --threads 4 \
		--reads 120 "$MNT" "$SAMPLES"
	cmp_tree "$SAMPLES" "$MNT"
	tilefs_alive "$MNT"
	tilefs_umount "$MNT"
}

@test "two mounts sharing a 1M cache dir, concurrent random reads: right bytes" {
	local M1=$T/m1 M2=$T/m2
	tilefs_mount "$ORIGIN_URL" "$M1" --cache-dir "$CACHE" --cache-size 1M --block-size 64K
	tilefs_mount "$ORIGIN_URL" "$M2" --cache-dir "$CACHE" --cache-size 1M --block-size 64K
	run_to 180 "$PY" "$TESTS_LIB/pread_check.py" --seed 31 --procs 3 --threads 3 \
		--reads 300 "$M1" "$SAMPLES" &
	local p1=$!
	run_to 180 "$PY" "$TESTS_LIB/pread_check.py" --seed 32 --procs 3 --threads 3 \
		--reads 300 "$M2" "$SAMPLES" &
	local p2=$!
	wait "$p1" || fail "random reads on mount 1 failed"
	wait "$p2" || fail "random reads on mount 2 failed"
	cmp_tree "$SAMPLES" "$M1"
	cmp_tree "$SAMPLES" "$M2"
	tilefs_umount "$M1"
	tilefs_umount "$M2"
}

@test "a cold 256x256 window read fetches a small part of the COG (--block-size 64K, --prefetch none)" {
	# the tile-only policy (auto streams whole files when the data fits:
	# 80-tiles.bats)
	tilefs_mount "$ORIGIN_URL" "$MNT" --block-size 64K --prefetch none
	ls "$MNT" >/dev/null
	origin_log_reset
	run_to 60 "$PY" -c '
import sys, rasterio
with rasterio.open(sys.argv[1]) as ds:
    ds.read(window=((512, 700), (512, 768)))' "$MNT/t256.tif"
	local got size
	got=$(origin_range_bytes /t256.tif)
	size=$(stat -c %s "$SAMPLES/t256.tif")
	[ "$got" -gt 0 ] || fail "nothing fetched"
	[ "$got" -le $((size * 4 / 10)) ] || fail "a one-window read fetched $got of $size bytes"
	tilefs_umount "$MNT"
}

@test "two open files of two versions never see each other's bytes through the page cache" {
	# --ttl 1: the kernel keeps attributes for a second, so it does not drop
	# pages by itself; the newer open must not fill pages the older file reads
	tilefs_mount "$ORIGIN_URL" "$MNT" --ttl 1 --block-size 64K --retries 1
	cp "$SAMPLES/random.bin" "$T/old.bin"
	"$PY" -c 'import sys; open(sys.argv[1], "wb").write(bytes(255 - b for b in open(sys.argv[2], "rb").read()))' \
		"$T/new.bin" "$T/old.bin"
	touch -d '2025-03-04 05:06:07 UTC' "$T/new.bin"
	run_to 60 "$PY" - "$MNT/random.bin" "$SAMPLES/random.bin" "$T/old.bin" "$T/new.bin" <<'PYEOF'
import os, shutil, sys, time
mnt, origin, old, new = sys.argv[1:]
old_b, new_b = open(old, "rb").read(), open(new, "rb").read()
fd1 = os.open(mnt, os.O_RDONLY)                 # pinned to the old version
assert os.pread(fd1, 4096, 0) == old_b[:4096]
shutil.copy2(new, origin + ".tmp")
os.rename(origin + ".tmp", origin)
time.sleep(1.2)
fd2 = os.open(mnt, os.O_RDONLY)                 # past --ttl: the new version
assert os.pread(fd2, 131072, 131072) == new_b[131072:262144], "new open reads new bytes"
try:
    got = os.pread(fd1, 131072, 131072)         # same range through the old file
except OSError as e:
    if e.errno not in (5, 116):
        raise
    print("old file: %s (acceptable)" % os.strerror(e.errno))
    sys.exit(0)
if got != old_b[131072:262144]:
    sys.exit("the old file read %s bytes" % ("the new version's" if got == new_b[131072:262144] else "mixed"))
print("old file: old bytes (acceptable)")
PYEOF
}

@test "a busy index at start fails the mount and is not rebuilt; the cache survives" {
	tilefs_mount "$ORIGIN_URL" "$MNT"
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	tilefs_umount "$MNT"
	# another process holds the index's write lock longer than tilefs waits
	"$PY" -c 'import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(12)' "$CACHE/index.db" > "$T/locker.out" 3>&- &
	local locker=$!
	wait_until "the locker's BEGIN IMMEDIATE" grep -q locked "$T/locker.out"
	tilefs_run mount --cache-dir "$CACHE" --log-file "$T/busy.log" "$ORIGIN_URL" "$MNT"
	assert_eq "$status" 1 "exit status with the index busy"
	[[ "$err" == *"cache"* ]] || fail "message: $err"
	[ ! -e "$CACHE/index.db.broken" ] || fail "a busy index was set aside"
	wait "$locker"
	origin_log_reset
	tilefs_mount "$ORIGIN_URL" "$MNT"
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	assert_eq "$(origin_gets)" 0 "ranged GETs once the index is free again"
}

@test "only the cache's own data-<hex> directories are ever removed from --cache-dir" {
	mkdir -p "$CACHE/data-important" "$CACHE/data-0123456789abcdeg"
	echo precious > "$CACHE/data-important/keep.txt"
	tilefs_mount "$ORIGIN_URL" "$MNT"
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	tilefs_umount "$MNT"
	assert_eq "$(cat "$CACHE/data-important/keep.txt")" precious "a user's data-important/"
	[ -d "$CACHE/data-0123456789abcdeg" ] || fail "data-<not quite hex> was removed"
}
