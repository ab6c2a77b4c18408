#!/usr/bin/env bats
# A large cache: a mount's memory grows with what its readers read, not
# with how many tiles the cache holds; a directory of 100,000 names lists
# whole. (The times of the same, at a million tiles, are in the bench:
# tests/bench/million.py.)

bats_require_minimum_version 1.5.0
load ../lib/tilefs

# Files of 4096x4096 pixels in 16x16 tiles: 65,536 tiles of a few bytes
# each, built once into the test data cache.
MILLION_FILES=4
MILLION_DATA=$ORIGIN_CACHE_DIR/million-v1-4096

setup() {
	tilefs_setup
	MNT=$T/mnt
	CACHE=$T/cache
}

teardown() {
	tilefs_teardown
}

# make_tiny_tile_cogs: MILLION_DATA/d/t0.tif .. t3.tif (copies of one COG).
make_tiny_tile_cogs() {
	[ -f "$MILLION_DATA/.done" ] && return 0
	rm -rf "$MILLION_DATA.tmp"
	mkdir -p "$MILLION_DATA.tmp/d" || return 1
	"$PY" - "$MILLION_DATA.tmp/d/t0.tif" <<'EOF' || return 1
import sys
import numpy as np
from osgeo import gdal
gdal.UseExceptions()
n = 4096
ds = gdal.GetDriverByName("MEM").Create("", n, n, 1, gdal.GDT_Byte)
y, x = np.mgrid[0:n, 0:n]
ds.GetRasterBand(1).WriteArray(((x // 16 + (y // 16) * 3 + x % 7) % 251).astype(np.uint8))
gdal.Translate(sys.argv[1], ds, format="COG",
               creationOptions=["BLOCKSIZE=16", "OVERVIEWS=NONE", "COMPRESS=DEFLATE"])
EOF
	local i
	for ((i = 1; i < MILLION_FILES; i++)); do
		cp "$MILLION_DATA.tmp/d/t0.tif" "$MILLION_DATA.tmp/d/t$i.tif" || return 1
	done
	touch "$MILLION_DATA.tmp/.done"
	mv "$MILLION_DATA.tmp" "$MILLION_DATA"
}

# rss_kb PID: the resident set of PID in KiB.
rss_kb() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}

# opened N: the mount's log shows N opens done.
opened() {
	[ "$(grep -c ': opened (' "$TILEFS_LOG")" -ge "$1" ]
}

@test "a mount of a cache of 262,144 tiles: the daemon's memory does not grow with them before a read" {
	make_tiny_tile_cogs || fail "cannot build the test COGs (python3 GDAL)"
	origin_start "$MILLION_DATA"
	tilefs_run warm --cache-dir "$CACHE" --cache-size 1G "$ORIGIN_URL" d
	[ "$status" -eq 0 ] || fail "warm exited $status: $err"
	tilefs_run cache stat --cache-dir "$CACHE"
	local units
	units=$(sed -n 's/^units: //p' <<<"$out")
	[ "$units" -ge $((MILLION_FILES * 65536)) ] || fail "only $units units cached: $out"

	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-dir "$CACHE" --log-level debug
	local pid before after
	pid=$(tilefs_pid "$MNT")
	before=$(rss_kb "$pid")
	# listing d/ makes the mount check each cached file ahead of its open
	# (revalidation ahead): a HEAD each, then an open of the version cached
	origin_log_reset
	assert_eq "$(ls "$MNT/d" | wc -l)" "$MILLION_FILES" "files listed"
	wait_until "an open of every file" opened "$MILLION_FILES"
	after=$(rss_kb "$pid")
	# 20 bytes a cached tile at most, and 4 MiB of slack (allocator arenas,
	# SQLite's pages): a cut held per tile (40 bytes) is well over it
	local bound=$(((units * 20) / 1024 + 4096))
	[ $((after - before)) -le "$bound" ] ||
		fail "RSS grew from $before KiB to $after KiB before any read ($units tiles cached; bound $bound KiB)"

	# what a reader reads is served right, from the cache
	origin_log_reset
	run_to 120 "$PY" "$TESTS_LIB/pread_check.py" --reads 200 "$MNT/d" "$MILLION_DATA/d"
	[ "$status" -eq 0 ] || fail "reads differ: $output"
	assert_eq "$(origin_gets)" 0 "ranged GETs for cached tiles"
}

@test "a directory of 100,000 names lists every name once" {
	local src=$ORIGIN_CACHE_DIR/names-v1-100000
	if [ ! -f "$src/.done" ]; then
		rm -rf "$src.tmp"
		mkdir -p "$src.tmp/many" || return 1
		(cd "$src.tmp/many" && seq -f 'n%06g' 0 99999 | xargs touch) || return 1
		touch "$src.tmp/.done"
		mv "$src.tmp" "$src"
	fi
	origin_start "$src"
	tilefs_mount "$ORIGIN_URL" "$MNT"
	ls -f "$MNT/many" | grep -v '^\.\.\?$' >"$T/names"
	assert_eq "$(wc -l <"$T/names")" 100000 "names listed"
	assert_eq "$(sort -u "$T/names" | wc -l)" 100000 "distinct names listed"
	diff <(sort "$T/names") <(ls "$src/many") >/dev/null || fail "the names differ from the origin's"
	# a name looked up alone, and one that is not there
	[ -f "$MNT/many/n054321" ] || fail "n054321 not found"
	assert_enoent "$MNT/many/n100000"
}
