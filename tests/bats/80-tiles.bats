#!/usr/bin/env bats
# Tile-aware caching (issue 3): `tilefs inspect` against tiffdump and GDAL,
# the same tile maps through a mount, malformed TIFFs served as plain bytes,
# and request accounting per tile (--prefetch none, --header-size) from the
# origin's access log.
#
# The reference side is tests/lib/tiff_blocks.py (tiffdump, GDAL, rasterio).

bats_require_minimum_version 1.5.0
load ../lib/tilefs

TB=$TESTS_LIB/tiff_blocks.py
CORPUS=${TILEFS_CORPUS:-$REPO_ROOT/tests/data/corpus}

setup() {
	tilefs_setup
	MNT=$T/mnt
}

teardown() {
	tilefs_teardown
}

need_corpus() {
	[ -d "$CORPUS/good" ] && [ -d "$CORPUS/bad" ] ||
		skip "no TIFF corpus at $CORPUS (set TILEFS_CORPUS)"
}

# inspect_all DIR OUTDIR [PREFIX]: `tilefs inspect --blocks PREFIX/NAME` for
# every NAME in DIR (PREFIX defaults to DIR), stdout in OUTDIR/NAME.out, exit
# status in OUTDIR/NAME.rc, stderr in OUTDIR/NAME.err.
inspect_all() {
	local dir=$1 outdir=$2 prefix=${3:-$1} name rc
	mkdir -p "$outdir"
	while IFS= read -r name; do
		rc=0
		run_to 20 "$TILEFS" inspect --blocks "$prefix/$name" \
			>"$outdir/$name.out" 2>"$outdir/$name.err" </dev/null || rc=$?
		echo "$rc" >"$outdir/$name.rc"
	done < <(file_list "$dir")
}

# make_tile_cogs DIR: 4096x4096 uint8 COGs (DEFLATE, overviews) with 256,
# 512 and 1024 tiles: cog256.tif, cog512.tif, cog1024.tif; and cog128.tif,
# whose IFDs and tile index (about 11 KB) do not fit in 4 KiB. Built once
# into $ORIGIN_CACHE_DIR/tiles-v2 and copied from there.
make_tile_cogs() {
	local dest=$1 src=$ORIGIN_CACHE_DIR/tiles-v2 b
	if [ ! -f "$src/.done" ]; then
		rm -rf "$src.tmp"
		mkdir -p "$src.tmp" || return 1
		if ! {
			"$PY" - "$src.tmp/raw.tif" <<'PYEOF'
import sys
import numpy as np
import rasterio
from rasterio.transform import from_origin
rng = np.random.default_rng(80)
yy, xx = np.mgrid[0:4096, 0:4096]
a = (np.sin(xx / 97.0) + np.cos(yy / 61.0)) * 50 + 128 + rng.integers(0, 24, xx.shape)
with rasterio.open(sys.argv[1], "w", driver="GTiff", width=4096, height=4096, count=1,
                   dtype="uint8", crs="EPSG:32633",
                   transform=from_origin(500000, 5000000, 10, 10)) as ds:
    ds.write(a.clip(0, 255).astype("uint8")[None])
PYEOF
			for b in 128 256 512 1024; do
				gdal_translate -q -of COG -co BLOCKSIZE=$b -co COMPRESS=DEFLATE \
					-co OVERVIEWS=AUTO -co NUM_THREADS=1 \
					"$src.tmp/raw.tif" "$src.tmp/cog$b.tif" || exit 1
			done
		} >"$src.tmp/.log" 2>&1; then
			echo "make_tile_cogs: generation failed:" >&2
			cat "$src.tmp/.log" >&2
			return 1
		fi
		rm -f "$src.tmp/raw.tif" "$src.tmp"/*.aux.xml "$src.tmp/.log"
		find "$src.tmp" -exec touch -h -d '2024-01-02 03:04:05 UTC' {} +
		touch "$src.tmp/.done"
		rm -rf "$src"
		mv "$src.tmp" "$src" || return 1
	fi
	mkdir -p "$dest" || return 1
	cp -p "$src"/cog*.tif "$dest/"
}

# warn_count LOG NAME: lines of LOG saying NAME is not a usable TIFF.
warn_count() {
	grep -cF -e " $2: not a usable TIFF" -e "/$2: not a usable TIFF" "$1" || true
}

@test "inspect: usage errors exit 2, a missing file 1, a non-TIFF file is plain bytes" {
	tilefs_run inspect --help
	assert_eq "$status" 0 "exit status of inspect --help"
	tilefs_run inspect
	assert_eq "$status" 2 "exit status of inspect without a path"
	tilefs_run inspect --no-such-option "$SAMPLES/t256.tif"
	assert_eq "$status" 2 "exit status of inspect --no-such-option"
	tilefs_run inspect "$T/no-such-file.tif"
	assert_eq "$status" 1 "exit status of inspect of a missing file"
	tilefs_run inspect "$SAMPLES/notes.txt"
	assert_eq "$status" 0 "exit status of inspect of a text file"
	[[ ${out%%$'\n'*} =~ ^(.*/)?notes\.txt:\ $(stat -c %s "$SAMPLES/notes.txt")\ bytes,\ plain\ bytes\ \(.+\)$ ]] ||
		fail "first line for notes.txt: ${out%%$'\n'*}"
	tilefs_run mount --help
	local o
	for o in --prefetch --merge-gap --header-size; do
		grep -q -- "$o" <<<"$out" || fail "mount --help does not mention $o" || return 1
	done
	mkdir -p "$MNT"
	tilefs_run mount --prefetch sometimes "http://127.0.0.1:9/" "$MNT"
	assert_eq "$status" 2 "exit status of mount --prefetch sometimes"
	[[ $err1 == "tilefs: "* ]] || fail "stderr does not start with 'tilefs: ': $err1"
}

@test "inspect --blocks of every corpus/good file: tiffdump's blocks exactly, and every block GDAL reports" {
	need_corpus
	inspect_all "$CORPUS/good" "$T/local"
	run_to 120 "$PY" "$TB" check-local "$CORPUS/good" "$T/local"
}

@test "inspect of every corpus/bad file exits 0 with a well-formed first line" {
	need_corpus
	local name rc
	mkdir -p "$T/bad"
	while IFS= read -r name; do
		rc=0
		run_to 20 "$TILEFS" inspect "$CORPUS/bad/$name" >"$T/bad/$name.out" 2>"$T/bad/$name.err" ||
			rc=$?
		echo "$rc" >"$T/bad/$name.rc"
	done < <(file_list "$CORPUS/bad")
	run_to 60 "$PY" "$TB" check-plain "$CORPUS/bad" "$T/bad"
}

@test "corpus/good through a mount: inspect gives the local blocks; random rasterio windows equal" {
	need_corpus
	mkdir -p "$T/web"
	cp -r "$CORPUS/good" "$T/web/good"
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT"
	local rc=0
	# inspect before anything is opened: it reports from the mount's index
	inspect_all "$CORPUS/good" "$T/mounted" "$MNT/good"
	inspect_all "$CORPUS/good" "$T/local"
	run_to 60 "$PY" "$TB" check-same "$CORPUS/good" "$T/local" "$T/mounted" || rc=1
	run_to 240 "$PY" "$TB" windows "$MNT/good" "$CORPUS/good" --seed 80 --n 4 || rc=1
	tilefs_alive "$MNT"
	[ "$rc" = 0 ] || fail "inspect or rasterio through the mount differ (see above)"
	local name n bad=""
	while IFS= read -r name; do
		n=$(warn_count "$TILEFS_LOG" "$name")
		[ "$n" = 0 ] || bad="$bad $name"
	done < <(file_list "$CORPUS/good")
	[ -z "$bad" ] || fail "'not a usable TIFF' logged for good files:$bad" \
		"$(grep -F 'not a usable TIFF' "$TILEFS_LOG" | head -n 5)"
	tilefs_umount "$MNT"
}

@test "corpus/bad through a mount: exact bytes twice, daemon alive, at most one warning per file" {
	need_corpus
	mkdir -p "$T/web"
	cp -r "$CORPUS/bad" "$T/web/bad"
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT"
	local name pass n bad=0 warned=0
	for pass in 1 2; do
		while IFS= read -r name; do
			if ! run_to 20 cmp -- "$CORPUS/bad/$name" "$MNT/bad/$name"; then
				echo "pass $pass: bad/$name differs or hangs" >&2
				bad=1
			fi
			tilefs_alive "$MNT" || fail "the daemon died reading bad/$name (pass $pass)" || return 1
		done < <(file_list "$CORPUS/bad")
	done
	[ "$bad" = 0 ] || fail "some corpus/bad files did not read back exactly"
	while IFS= read -r name; do
		n=$(warn_count "$TILEFS_LOG" "$name")
		[ "$n" -le 1 ] || fail "'$name: not a usable TIFF' logged $n times:" \
			"$(grep -F "$name: not a usable TIFF" "$TILEFS_LOG")" || return 1
		[ "$n" = 0 ] || warned=$((warned + 1))
	done < <(file_list "$CORPUS/bad")
	echo "# $warned of $(file_list "$CORPUS/bad" | wc -l) bad files logged as not usable" >&3
	tilefs_umount "$MNT"
}

@test "--prefetch none: open costs 1 GET (2 past --header-size), windows fetch only their tiles, once" {
	make_tile_cogs "$T/web"
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT" --prefetch none
	ls -l "$MNT" >/dev/null
	local b rc=0
	for b in 256 512 1024; do
		run_to 120 "$PY" "$TB" cost "$MNT/cog$b.tif" "$T/web/cog$b.tif" "/cog$b.tif" 65536 \
			--seed "$b" --n 4 || rc=1
	done
	tilefs_alive "$MNT"
	tilefs_umount "$MNT"
	# --header-size 4096: cog128.tif's header does not fit (2 GETs allowed).
	# (A header that fits in 4096 bytes still costs 2: GDAL reads 8 KiB.)
	local M2=$T/mnt2
	tilefs_mount "$ORIGIN_URL" "$M2" --prefetch none --header-size 4096 --cache-dir "$T/cache2"
	ls -l "$M2" >/dev/null
	for b in 128; do
		run_to 120 "$PY" "$TB" cost "$M2/cog$b.tif" "$T/web/cog$b.tif" "/cog$b.tif" 4096 \
			--seed $((b + 1)) --n 2 || rc=1
	done
	tilefs_umount "$M2"
	[ "$rc" = 0 ] || fail "request accounting failed (see above)"
}

@test "a chip file listed at no more than 4 --header-size is read with one GET; a larger one is not" {
	mkdir -p "$T/web"
	"$PY" - "$T/web" <<'PYEOF'
import sys
import numpy as np
import rasterio
from rasterio.transform import from_origin
rng = np.random.default_rng(81)
for name, side in (("chip.tif", 256), ("big.tif", 512)):
    a = rng.integers(0, 4000, (1, side, side)).astype("uint16")
    with rasterio.open(sys.argv[1] + "/" + name, "w", driver="COG", width=side, height=side,
                       count=1, dtype="uint16", crs="EPSG:32633", blocksize=side,
                       compress="deflate", transform=from_origin(500000, 5000000, 10, 10)) as d:
        d.write(a)
PYEOF
	local chip big
	chip=$(stat -c %s "$T/web/chip.tif")
	big=$(stat -c %s "$T/web/big.tif")
	[ "$chip" -gt 65536 ] && [ "$chip" -le 262144 ] && [ "$big" -gt 262144 ] ||
		fail "sizes out of the cases: chip $chip, big $big bytes"
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT"
	ls "$MNT" >/dev/null
	origin_log_reset
	run_to 60 "$PY" "$TESTS_LIB/rio_compare.py" "$MNT/chip.tif" "$T/web/chip.tif"
	run_to 60 "$PY" "$TESTS_LIB/rio_compare.py" "$MNT/big.tif" "$T/web/big.tif"
	cmp "$T/web/chip.tif" "$MNT/chip.tif"
	assert_eq "$(origin_select 'm == "GET" && u == "/chip.tif"' | wc -l)" 1 "GETs of chip.tif"
	assert_eq "$(origin_select 'm == "GET" && u == "/chip.tif" && r == "bytes=0-'$((chip - 1))'"' | wc -l)" 1 \
		"chip.tif's GET is all of it"
	assert_eq "$(origin_select 'm == "GET" && u == "/big.tif" && r == "bytes=0-65535"' | wc -l)" 1 \
		"big.tif's first GET is its header"
	tilefs_umount "$MNT"
}

@test "default options: a remount on the same --cache-dir opens a COG without any GET" {
	make_tile_cogs "$T/web"
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT"
	run_to 60 "$PY" -c '
import sys, rasterio
with rasterio.open(sys.argv[1]) as ds:
    ds.read(window=((1000, 1256), (2000, 2256)))' "$MNT/cog512.tif"
	tilefs_umount "$MNT"
	tilefs_mount "$ORIGIN_URL" "$MNT"
	ls -l "$MNT" >/dev/null
	origin_log_reset
	run_to 60 "$PY" -c '
import sys, rasterio
with rasterio.open(sys.argv[1]) as ds:
    print(ds.width, ds.height, ds.overviews(1))' "$MNT/cog512.tif"
	sleep 0.3
	local gets
	gets=$(origin_select 'm == "GET" && u == "/cog512.tif"')
	[ -z "$gets" ] || fail "opening cog512.tif after the remount sent GETs:" "$gets"
	[ "$(origin_count HEAD /cog512.tif)" -le 1 ] || fail "more than one HEAD:" "$(origin_lines)"
	tilefs_umount "$MNT"
}

@test "inspect of a file in the mount: cached units grow after reading a window" {
	make_tile_cogs "$T/web"
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT" --prefetch none
	local f=$MNT/cog256.tif size u1 c1 u2 c2 u3 c3
	size=$(stat -c %s "$T/web/cog256.tif")
	run_to 60 "$PY" -c 'import sys, rasterio; rasterio.open(sys.argv[1]).close()' "$f"
	tilefs_run inspect "$f"
	assert_eq "$status" 0 "exit status of inspect MNT/cog256.tif"
	printf '%s\n' "$out" >"$T/i1"
	read -r u1 c1 _ < <("$PY" "$TB" cached-line "$T/i1" "$size") || fail "no cached line after open" || return 1
	[ "$u1" -ge 1 ] || fail "after open: $u1 units cached (the header unit at least)"
	run_to 60 "$PY" -c '
import sys, rasterio
with rasterio.open(sys.argv[1]) as ds:
    ds.read(window=((1100, 1356), (2100, 2356)))' "$f"
	tilefs_run inspect "$f"
	assert_eq "$status" 0 "exit status of the second inspect"
	printf '%s\n' "$out" >"$T/i2"
	read -r u2 c2 _ < <("$PY" "$TB" cached-line "$T/i2" "$size") || fail "no cached line after a read" || return 1
	[ "$u2" -gt "$u1" ] || fail "cached units did not grow after reading a window: $u1 -> $u2"
	[ "$c2" -gt "$c1" ] || fail "cached bytes did not grow after reading a window: $c1 -> $c2"
	# a window over 4 tiles of another row of tiles: 4 more units
	run_to 60 "$PY" -c '
import sys, rasterio
with rasterio.open(sys.argv[1]) as ds:
    ds.read(window=((3000, 3256), (200, 456)))' "$f"
	run_to 20 "$TILEFS" inspect --blocks "$f" >"$T/i3" 2>"$T/i3.err" ||
		fail "inspect --blocks MNT/cog256.tif exited $?: $(cat "$T/i3.err")" || return 1
	read -r u3 c3 _ < <("$PY" "$TB" cached-line "$T/i3" "$size") || fail "no cached line with --blocks" || return 1
	[ "$u3" -ge $((u2 + 4)) ] || fail "a window over 4 new tiles: units $u2 -> $u3"
	[ "$c3" -gt "$c2" ] || fail "cached bytes did not grow after reading 4 new tiles: $c2 -> $c3"
	[ "$(grep -c '^block ' "$T/i3")" = 341 ] || fail "cog256.tif: expected 341 block lines"
	# the source URL with the mount's options reports the same blocks
	local rc=0
	run_to 20 "$TILEFS" inspect --blocks --cache-dir "$T/cache" "${ORIGIN_URL}cog256.tif" \
		>"$T/i4" 2>"$T/i4.err" || rc=$?
	[ "$rc" = 0 ] || fail "tilefs inspect --blocks --cache-dir CACHE ${ORIGIN_URL}cog256.tif" \
		"exited $rc, expected 0; stderr: $(cat "$T/i4.err")" || return 1
	assert_eq "$(grep '^block ' "$T/i4" | md5sum)" "$(grep '^block ' "$T/i3" | md5sum)" \
		"block lines of inspect URL vs inspect MNT/cog256.tif"
	tilefs_umount "$MNT"
}

# read_windows MNT N SEED [CHECK_DIR]: N random 256x256 windows of band 1 of
# cog256/512/1024.tif under MNT, opened afresh for each window (GDAL reads
# through the mount in 8 KiB-aligned buffers, so tile edges are read too);
# with CHECK_DIR, each window is compared with the same window there.
read_windows() {
	run_to 120 "$PY" - "$@" <<'PYEOF'
import random, sys
import numpy as np
import rasterio
from rasterio.windows import Window
mnt, n, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
check = sys.argv[4] if len(sys.argv) > 4 else None
rng = random.Random(seed)
for i in range(n):
    name = ("cog256.tif", "cog512.tif", "cog1024.tif")[i % 3]
    w = Window(rng.randrange(0, 4096 - 256), rng.randrange(0, 4096 - 256), 256, 256)
    with rasterio.open(f"{mnt}/{name}") as ds:
        got = ds.read(1, window=w)
    if check:
        with rasterio.open(f"{check}/{name}") as ds:
            if not np.array_equal(got, ds.read(1, window=w)):
                sys.exit(f"{name} {w}: pixels differ")
PYEOF
}

@test "--prefetch none: random GDAL windows read again, in another process and after a remount, send no GET" {
	# tiles only, so the tile-edge slivers of 8 KiB-aligned reads are what
	# is kept (auto streams whole files when they fit: see below)
	make_tile_cogs "$T/web"
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT" --prefetch none
	ls -l "$MNT" >/dev/null
	read_windows "$MNT" 30 12 "$T/web" || fail "cold windows differ"
	origin_log_reset
	read_windows "$MNT" 30 12 "$T/web" || fail "warm windows differ"
	local gets
	gets=$(origin_select 'm == "GET"')
	[ -z "$gets" ] || fail "the same windows again, in a new process, sent GETs:" "$gets"
	tilefs_umount "$MNT"
	tilefs_mount "$ORIGIN_URL" "$MNT" --prefetch none
	ls -l "$MNT" >/dev/null
	origin_log_reset
	read_windows "$MNT" 30 12 "$T/web" || fail "windows after the remount differ"
	gets=$(origin_select 'm == "GET"')
	[ -z "$gets" ] || fail "the same windows after a remount sent GETs:" "$gets"
	local b
	for b in 256 512 1024; do
		[ "$(origin_count HEAD "/cog$b.tif")" -le 1 ] || fail "more than one HEAD:" "$(origin_lines)"
	done
	tilefs_umount "$MNT"
}

# cached_bytes FILE SIZE: print how many bytes of FILE (of SIZE bytes)
# tilefs inspect says are cached; fails if it does not say.
cached_bytes() {
	local c
	"$TILEFS" inspect "$1" >"$T/inspect.out" 2>&1 &&
		read -r _ c _ < <("$PY" "$TB" cached-line "$T/inspect.out" "$2") &&
		echo "$c"
}

# wait_cached FILE SIZE: wait up to 60 s until tilefs inspect FILE says
# every byte of it is cached.
wait_cached() {
	local i
	for i in $(seq 1 120); do
		[ "$(cached_bytes "$1" "$2")" = "$2" ] && return 0
		sleep 0.5
	done
	fail "$1 never became fully cached:" "$(cat "$T/inspect.out")"
}

# no_byte_twice: fail if two ranged GETs of one file overlap, but for the
# open's GET of the first --header-size (64K) bytes (of those, only the
# units it covers whole are kept, so the tile it cuts is fetched whole later)
# and GETs that an unmount cut short (their bytes were not kept).
no_byte_twice() {
	origin_select 'm == "GET" && st == 206' | "$PY" -c '
import re, sys
seen = {}
for line in sys.stdin:
    m = re.search(r"^GET (\S+) \"bytes=(\d+)-(\d+)\" 206 (\d+)$", line)
    # a GET cut short (by an unmount) kept nothing: a unit is stored whole
    if m and (m[2], m[3]) != ("0", "65535") and int(m[3]) + 1 - int(m[2]) == int(m[4]):
        seen.setdefault(m[1], []).append((int(m[2]), int(m[3]) + 1))
bad = []
for uri, v in seen.items():
    v.sort()
    bad += [f"{uri}: {a} and {b}" for a, b in zip(v, v[1:]) if b[0] < a[1]]
sys.exit("overlapping GETs: " + "; ".join(bad) if bad else 0)' || fail "a byte was fetched twice:" "$(origin_lines)"
}

@test "default (auto) with the files fitting in --cache-size: a read streams its file once; every window after it, and after a remount, sends no GET" {
	make_tile_cogs "$T/web"
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT"
	ls -l "$MNT" >/dev/null
	read_windows "$MNT" 6 21 "$T/web" || fail "cold windows differ"
	local b size total=0
	for b in 256 512 1024; do
		size=$(stat -c %s "$T/web/cog$b.tif")
		wait_cached "$MNT/cog$b.tif" "$size"
		total=$((total + size))
	done
	no_byte_twice
	[ "$(origin_range_bytes)" -le $((total + 3 * 65536)) ] ||
		fail "fetched $(origin_range_bytes) bytes for $total bytes of files"
	origin_log_reset
	read_windows "$MNT" 30 12 "$T/web" || fail "warm windows differ"
	[ -z "$(origin_select 'm == "GET"')" ] || fail "warm windows sent GETs:" "$(origin_lines)"
	tilefs_umount "$MNT"
	tilefs_mount "$ORIGIN_URL" "$MNT"
	ls -l "$MNT" >/dev/null
	origin_log_reset
	read_windows "$MNT" 30 13 "$T/web" || fail "windows after the remount differ"
	[ -z "$(origin_select 'm == "GET"')" ] || fail "windows after a remount sent GETs:" "$(origin_lines)"
	tilefs_umount "$MNT"
}

@test "default (auto): a stream cut short by an unmount is finished by the next mount's first read, no byte twice" {
	make_tile_cogs "$T/web"
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT"
	ls -l "$MNT" >/dev/null
	origin_fault 'rate?bps=500000'	# the stream takes seconds: cut it short
	run_to 60 "$PY" -c '
import sys, rasterio
with rasterio.open(sys.argv[1]) as ds:
    ds.read(1, window=((0, 256), (0, 256)))' "$MNT/cog512.tif"
	tilefs_umount "$MNT"
	origin_fault clear
	local size
	size=$(stat -c %s "$T/web/cog512.tif")
	tilefs_mount "$ORIGIN_URL" "$MNT"
	ls -l "$MNT" >/dev/null
	local c0
	c0=$(cached_bytes "$MNT/cog512.tif" "$size") || fail "no cached line:" "$(cat "$T/inspect.out")"
	[ "$c0" -lt "$size" ] || fail "the first mount's stream was not cut short (test too fast)"
	# the same window: all hits, yet it restarts the stream
	run_to 60 "$PY" -c '
import sys, rasterio
with rasterio.open(sys.argv[1]) as ds:
    ds.read(1, window=((0, 256), (0, 256)))' "$MNT/cog512.tif"
	wait_cached "$MNT/cog512.tif" "$size"
	no_byte_twice
	tilefs_umount "$MNT"
}

@test "default (auto) with more files than --cache-size: a window fetches only its tiles" {
	make_tile_cogs "$T/web"
	origin_start "$T/web"
	local total
	total=$(cat "$T"/web/*.tif | wc -c)
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-size $((total / 2))
	ls -l "$MNT" >/dev/null
	origin_log_reset
	read_windows "$MNT" 3 8 "$T/web" || fail "windows differ"
	sleep 1	# a stream, were one started, would show by now
	local got
	got=$(origin_range_bytes)
	[ "$got" -gt 0 ] || fail "nothing fetched"
	[ "$got" -le $((total / 5)) ] || fail "3 windows fetched $got of $total bytes:" "$(origin_lines)"
	tilefs_umount "$MNT"
}

@test "a file warmed whole is read through the page cache: exact bytes, windows and preads, no GET" {
	make_tile_cogs "$T/web"
	origin_start "$T/web"
	run_to 120 "$TILEFS" warm --cache-dir "$T/cache" "$ORIGIN_URL" cog512.tif cog256.tif ||
		fail "warm failed"
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-dir "$T/cache"
	ls -l "$MNT" >/dev/null
	origin_log_reset
	cmp "$MNT/cog512.tif" "$T/web/cog512.tif" || fail "cog512.tif differs"
	read_windows "$MNT" 20 5 "$T/web" || fail "windows differ"
	run_to 120 "$PY" "$TESTS_LIB/pread_check.py" --seed 4 --procs 2 --threads 2 --reads 200 \
		"$MNT" "$T/web" || fail "random preads differ"
	local gets
	gets=$(origin_select 'm == "GET" && (u == "/cog512.tif" || u == "/cog256.tif")')
	[ -z "$gets" ] || fail "reads of warmed files sent GETs:" "$gets"
	tilefs_umount "$MNT"
}
