#!/usr/bin/env bats
# The readers' order as a prefetch plan (issue 30, item 2): `tilefs hint`
# hands a mount the reads to come; the mount fetches their tiles ahead of
# the readers, within --hint-budget, and the origin's access log shows it.
# Also what a user gets wrong: a mountpoint that is not tilefs, a line of
# the order at fault, a user who does not own the mount.

bats_require_minimum_version 1.5.0
load ../lib/tilefs

setup() {
	tilefs_setup
	MNT=$T/mnt
	PROM=$T/metrics.prom
}

teardown() {
	tilefs_teardown
}

# hint_cog DIR: cog.tif, a 4096x4096 uint8 COG with 256x256 tiles (16x16 at
# full resolution, about 70 KB each). Built once into
# $ORIGIN_CACHE_DIR/hint-v1 and copied from there.
hint_cog() {
	local dest=$1 src=$ORIGIN_CACHE_DIR/hint-v1
	if [ ! -f "$src/.done" ]; then
		rm -rf "$src.tmp"
		mkdir -p "$src.tmp" || return 1
		"$PY" - "$src.tmp/raw.tif" >"$src.tmp/.log" 2>&1 <<'PYEOF' || { cat "$src.tmp/.log" >&2; return 1; }
import sys
import numpy as np
import rasterio
from rasterio.transform import from_origin
rng = np.random.default_rng(36)
a = rng.integers(0, 255, (4096, 4096)).astype("uint8")
with rasterio.open(sys.argv[1], "w", driver="GTiff", width=4096, height=4096, count=1,
                   dtype="uint8", crs="EPSG:32633",
                   transform=from_origin(500000, 5000000, 10, 10)) as ds:
    ds.write(a[None])
PYEOF
		gdal_translate -q -of COG -co BLOCKSIZE=256 -co COMPRESS=DEFLATE -co OVERVIEWS=NONE \
			-co NUM_THREADS=1 "$src.tmp/raw.tif" "$src.tmp/cog.tif" >>"$src.tmp/.log" 2>&1 ||
			{ cat "$src.tmp/.log" >&2; return 1; }
		rm -f "$src.tmp/raw.tif" "$src.tmp"/*.aux.xml "$src.tmp/.log"
		touch -d '2024-01-02 03:04:05 UTC' "$src.tmp/cog.tif"
		touch "$src.tmp/.done"
		rm -rf "$src"
		mv "$src.tmp" "$src" || return 1
	fi
	mkdir -p "$dest" && cp -p "$src/cog.tif" "$dest/cog.tif"
}

# block FILE COL ROW: "OFFSET LENGTH" of the full-resolution tile at COL,
# ROW of FILE (16 tiles a row), from tilefs inspect --blocks.
block() {
	"$TILEFS" inspect --blocks "$1" | awk -v k=$(($3 * 16 + $2)) '$1 == "block" && $2 == 0 && $3 == k { print $4, $5 }'
}

# fetched URI "OFFSET LENGTH": has the origin answered a GET of URI whose
# range holds the middle byte of that tile? (A GET of a neighbour holds up
# to 16 KiB of it: the page a reader's aligned read takes across their
# border; the tiles here weigh about 64 KiB.)
fetched() {
	awk -v want="$1" -v mid="$((${2% *} + ${2#* } / 2))" "$ORIGIN_AWK"'{ parse() }
		m == "GET" && u == want && st == 206 && r ~ /^bytes=/ {
			split(substr(r, 7), b, "-"); if (b[1] + 0 <= mid + 0 && mid + 0 <= b[2] + 0) n++ }
		END { exit !(n > 0) }' "$ORIGIN_LOG"
}

# read_tiles MNTFILE LOCALFILE "OFF LEN"...: read each range through the
# mount and compare with the local copy.
read_tiles() {
	"$PY" - "$@" <<'PYEOF'
import sys
mnt, local = sys.argv[1], sys.argv[2]
with open(mnt, "rb", buffering=0) as m, open(local, "rb") as l:
    for spec in sys.argv[3:]:
        off, n = map(int, spec.split())
        m.seek(off); l.seek(off)
        a, b = m.read(n), l.read(n)
        if a != b:
            sys.exit("bytes differ at %d (%d bytes)" % (off, n))
PYEOF
}

metric() {
	awk -v n="$2" '$1 == n { print $2 }' "$1" 2>/dev/null
}
metric_is() {
	[ "$(metric "$1" "$2")" = "$3" ]
}
metric_above() {
	local v
	v=$(metric "$1" "$2")
	[ -n "$v" ] && [ "$v" -gt "$3" ]
}

# read_three_tiles: through MNT, one open reads the tiles (3,2) and (4,2)
# of cog.tif, side by side, another the tile (10,12); sets the caller's a,
# b and c to their "OFFSET LENGTH"
read_three_tiles() {
	a=$(block "$T/web/cog.tif" 3 2)
	b=$(block "$T/web/cog.tif" 4 2)
	c=$(block "$T/web/cog.tif" 10 12)
	read_tiles "$MNT/cog.tif" "$T/web/cog.tif" "$a" "$b"
	read_tiles "$MNT/cog.tif" "$T/web/cog.tif" "$c"
}

# tile_gets: GETs of cog.tif that are not of its first bytes (the header)
tile_gets() {
	origin_select 'm == "GET" && u == "/cog.tif" && r !~ /^bytes=0-/' | wc -l
}

@test "hint: the hinted tiles are fetched before any reader asks; the reads then make no request" {
	hint_cog "$T/web"
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT" --prefetch none --metrics-file "$PROM"
	ls "$MNT" >/dev/null
	local tiles=() c
	# windows of one tile each, in the order given: (3,2) (15,15) (0,7), and
	# one of 2x2 tiles (8..9, 4..5) written with a tab
	printf '# next epoch\n\ncog.tif 768 512 256 256\n%s\n./cog.tif 0 1792 100 100\ncog.tif\t2048 1024 300 300\n' \
		"$MNT/cog.tif 3840 3840 256 256" >"$T/order"
	for c in "3 2" "15 15" "0 7" "8 4" "9 4" "8 5" "9 5"; do
		tiles+=("$(block "$T/web/cog.tif" $c)")
	done
	origin_log_reset
	tilefs_run hint "$MNT" "$T/order"
	assert_eq "$status" 0 "exit status of tilefs hint"
	assert_eq "$out" "hinted 4 entries on $MNT" "what tilefs hint says"
	local t
	for t in "${tiles[@]}"; do
		wait_until "a GET of the hinted tile at ${t% *}" fetched /cog.tif "${t}"
	done
	wait_until "tilefs_hint_entries 4" metric_is "$PROM" tilefs_hint_entries 4
	# no reader asked for any of it
	assert_eq "$(metric "$PROM" tilefs_hint_position)" 0 "tilefs_hint_position before reading"
	local before
	before=$(origin_count GET)
	read_tiles "$MNT/cog.tif" "$T/web/cog.tif" "${tiles[@]}"
	assert_eq "$(origin_count GET)" "$before" "GETs while reading the hinted tiles"
	wait_until "tilefs_hint_position 4" metric_is "$PROM" tilefs_hint_position 4
	tilefs_umount "$MNT"
}

@test "hint: with default options (the file fits the cache, so it is streamed whole), a window comes with the tiles beside it; page-aligned reads across its borders miss nothing" {
	hint_cog "$T/web"
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT" --metrics-file "$PROM"
	# tiles (3,2) and (4,2); a reader's page-aligned reads of them take a
	# few KiB of (2,2) and of (5,2), which a streamed file fetches whole
	printf 'cog.tif 768 512 512 256\n' >"$T/order"
	local left first second right
	left=$(block "$T/web/cog.tif" 2 2)
	first=$(block "$T/web/cog.tif" 3 2)
	second=$(block "$T/web/cog.tif" 4 2)
	right=$(block "$T/web/cog.tif" 5 2)
	tilefs_run hint "$MNT" "$T/order"
	assert_eq "$status" 0 "exit status of tilefs hint"
	local t
	for t in "$left" "$first" "$second" "$right"; do
		wait_until "a GET of the tile at ${t% *}" fetched /cog.tif "$t"
	done
	# the pages that hold the two tiles, and the next one, as the kernel's
	# page cache reads them
	local from=$((${first% *} / 4096 * 4096))
	local to=$(((${second% *} + ${second#* } + 4095) / 4096 * 4096 + 4096))
	read_tiles "$MNT/cog.tif" "$T/web/cog.tif" "$from $((to - from))"
	wait_until "the four units read in the metrics" metric_above "$PROM" tilefs_cache_hits_total 3
	assert_eq "$(metric "$PROM" tilefs_cache_misses_total)" 0 "tilefs_cache_misses_total"
	tilefs_umount "$MNT"
}

@test "hint: a few KiB read across the border of a coming tile (stdio's buffer) do not move the readers' cursor" {
	hint_cog "$T/web"
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT" --prefetch none --metrics-file "$PROM"
	printf 'cog.tif 768 512 256 256\ncog.tif 3840 3840 256 256\ncog.tif 0 1792 256 256\n' >"$T/order"
	local first last
	first=$(block "$T/web/cog.tif" 3 2)
	last=$(block "$T/web/cog.tif" 0 7)
	tilefs_run hint "$MNT" "$T/order"
	assert_eq "$status" 0 "exit status of tilefs hint"
	# 8 KiB across the start of the third entry's tile, as glibc's stdio
	# reads after a tile read with fread (not a reader reading that tile),
	# 8 KiB inside it, then the first entry's tile
	read_tiles "$MNT/cog.tif" "$T/web/cog.tif" "$((${last% *} - 4096)) 8192" \
		"$((${last% *} + 8192)) 8192" "$first"
	wait_until "tilefs_hint_position 1 or more" metric_above "$PROM" tilefs_hint_position 0
	assert_eq "$(metric "$PROM" tilefs_hint_position)" 1 "tilefs_hint_position"
	tilefs_umount "$MNT"
}

# hint_striped DIR: striped.tif, a plain GeoTIFF of 2000x600 uint16 in
# strips of one row (4000 bytes each), uncompressed, as GDAL writes a
# GeoTIFF by default but with finer strips.
hint_striped() {
	mkdir -p "$1" && "$PY" - "$1/striped.tif" <<'PYEOF'
import sys
import numpy as np
import rasterio
a = (np.arange(600 * 2000, dtype="uint32") % 65521).astype("uint16").reshape(1, 600, 2000)
with rasterio.open(sys.argv[1], "w", driver="GTiff", width=2000, height=600, count=1,
                   dtype="uint16", tiled=False, blockysize=1) as ds:
    ds.write(a)
PYEOF
}

# read_strips_100_355: through MNT, the strips of rows 100-355 of
# striped.tif, then 8 KiB from 1 KiB before their end, as a buffered
# reader takes them (the strip after them whole); returns once both reads
# were answered and the metrics file written after them
read_strips_100_355() {
	local blocks first last
	blocks=$("$TILEFS" inspect --blocks "$T/web/striped.tif")
	first=$(awk '$1 == "block" && $2 == 0 && $3 == 100 { print $4 }' <<<"$blocks")
	last=$(awk '$1 == "block" && $2 == 0 && $3 == 355 { print $4 + $5 }' <<<"$blocks")
	[ -n "$first" ] && [ -n "$last" ] || fail "strips: $first $last"
	read_tiles "$MNT/striped.tif" "$T/web/striped.tif" "$first $((last - first))" \
		"$((last - 1024)) 8192"
	touch "$T/read"
	wait_until "the metrics file written after the reads" test "$PROM" -nt "$T/read"
}

@test "hint: the few KiB a reader's buffer takes past a window of fine strips do not move the cursor far ahead" {
	hint_striped "$T/web"
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT" --prefetch none --metrics-file "$PROM"
	# the window of rows 100-355 first, then 70 lines elsewhere in the
	# file, then one whose window starts at row 356, the strip after it
	{
		echo "striped.tif 0 100 256 256"
		for i in $(seq 70); do echo "striped.tif 1000 $((400 + i)) 16 1"; done
		echo "striped.tif 0 356 256 100"
	} >"$T/order"
	local next
	next=$("$TILEFS" inspect --blocks "$T/web/striped.tif" | awk '$1 == "block" && $2 == 0 && $3 == 356 { print $5 }')
	[ "$next" = 4000 ] || fail "the strip after the window: $next bytes"
	tilefs_run hint "$MNT" "$T/order"
	assert_eq "$status" 0 "exit status of tilefs hint"
	read_strips_100_355
	assert_eq "$(metric "$PROM" tilefs_hint_position)" 1 "tilefs_hint_position"
	assert_eq "$(metric "$PROM" tilefs_hint_skipped_total)" 0 "tilefs_hint_skipped_total"
	tilefs_umount "$MNT"
}

@test "hint: the strip a reader's buffer takes after a window does not move the cursor onto a coming entry that holds it" {
	hint_striped "$T/web"
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT" --prefetch none --metrics-file "$PROM"
	# the window of rows 100-355, one elsewhere, then one whose window
	# starts at row 356, the strip after the first window
	printf 'striped.tif 0 100 256 256\nstriped.tif 1000 400 16 1\nstriped.tif 0 356 256 100\n' >"$T/order"
	tilefs_run hint "$MNT" "$T/order"
	assert_eq "$status" 0 "exit status of tilefs hint"
	read_strips_100_355
	assert_eq "$(metric "$PROM" tilefs_hint_position)" 1 "tilefs_hint_position"
	tilefs_umount "$MNT"
}

@test "hint: readers of two windows that share a tile both count as read; none is skipped" {
	hint_cog "$T/web"
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT" --prefetch none --metrics-file "$PROM"
	# tiles (3,2) and (4,2); the tile (4,2) alone; the tile (10,12)
	printf 'cog.tif 768 512 512 256\ncog.tif 1024 512 256 256\ncog.tif 2560 3072 256 256\n' >"$T/order"
	tilefs_run hint "$MNT" "$T/order"
	assert_eq "$status" 0 "exit status of tilefs hint"
	# three readers at once: the first and the third are done before the
	# second reads its tile, which the first read too
	local a b c
	read_three_tiles
	read_tiles "$MNT/cog.tif" "$T/web/cog.tif" "$b"
	wait_until "tilefs_hint_position 3" metric_is "$PROM" tilefs_hint_position 3
	run -0 "$TILEFS" hint "$MNT" --clear
	wait_until "tilefs_hint_entries 0" metric_is "$PROM" tilefs_hint_entries 0
	assert_eq "$(metric "$PROM" tilefs_hint_skipped_total)" 0 "tilefs_hint_skipped_total"
	tilefs_umount "$MNT"
}

@test "hint: an order that goes back and forth between two files opens each once, not once a line" {
	hint_cog "$T/web"
	cp -p "$T/web/cog.tif" "$T/web/cog2.tif"
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT" --prefetch none --metrics-file "$PROM"
	# both cached (their headers), so every window of the order is checked
	head -c 1 "$MNT/cog.tif" >/dev/null
	head -c 1 "$MNT/cog2.tif" >/dev/null
	local k f
	for k in $(seq 16 55); do
		f=cog.tif
		[ $((k % 2)) = 1 ] && f=cog2.tif
		echo "$f $((k % 16 * 256)) $((k / 16 % 16 * 256)) 256 256"
	done >"$T/order"
	origin_log_reset
	tilefs_run hint "$MNT" "$T/order"
	assert_eq "$status" 0 "exit status of tilefs hint"
	local t
	for k in $(seq 16 55); do
		f=cog.tif
		[ $((k % 2)) = 1 ] && f=cog2.tif
		t=$(block "$T/web/$f" $((k % 16)) $((k / 16 % 16)))
		wait_until "a GET of the hinted tile at ${t% *} of $f" fetched "/$f" "${t}"
	done
	# the order's checks open each file once, and so does the hint's thread:
	# at most a HEAD each per file, never one per line
	local heads
	heads=$(origin_count HEAD)
	[ "$heads" -le 4 ] || fail "$heads HEADs for an order of 40 lines over 2 files"
	tilefs_umount "$MNT"
}

@test "hint: an order of 600 lines, more than one allocation of entries, is taken whole" {
	hint_cog "$T/web"
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT" --prefetch none --metrics-file "$PROM"
	local k
	for k in $(seq 0 599); do
		echo "cog.tif $((k % 16 * 256)) $((k / 16 % 16 * 256)) 256 256"
	done >"$T/order"
	tilefs_run hint "$MNT" "$T/order"
	assert_eq "$status" 0 "exit status of tilefs hint"
	assert_eq "$out" "hinted 600 entries on $MNT" "what tilefs hint says"
	wait_until "tilefs_hint_entries 600" metric_is "$PROM" tilefs_hint_entries 600
	# the last of the 256 tiles, hinted in line 256, is fetched
	local t
	t=$(block "$T/web/cog.tif" 15 15)
	wait_until "a GET of the tile at ${t% *}" fetched /cog.tif "${t}"
	read_tiles "$MNT/cog.tif" "$T/web/cog.tif" "$t"
	tilefs_umount "$MNT"
}

@test "hint: small files, a GET each, are opened ahead of the readers, many at once; the readers' opens and reads then ask the origin nothing" {
	local i b d
	for ((i = 0; i < 40; i++)); do
		d=$(printf 'p%03d' "$i")
		mkdir -p "$T/web/$d"
		for b in B02 B03 B04 B08; do
			head -c $((6000 + i * 50)) /dev/urandom >"$T/web/$d/$b.tif"
			echo "$d/$b.tif"
		done
	done >"$T/order"
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT"
	find "$MNT" >/dev/null	# the listings, all of them
	origin_log_reset
	tilefs_run hint "$MNT" "$T/order"
	assert_eq "$status" 0 "exit status of tilefs hint: $out"
	every_file_fetched() {
		[ "$(origin_select 'm == "GET" && u ~ /\.tif$/ && st < 300' | awk '{ print $2 }' |
			sort -u | wc -l)" = 160 ]
	}
	wait_until "a GET of each of the 160 files" every_file_fetched
	assert_eq "$(origin_select 'u ~ /\.tif$/' | awk '{ print $2 }' | sort | uniq -d)" "" \
		"files the hint asked for twice"
	origin_log_reset
	while read -r f; do
		cmp "$MNT/$f" "$T/web/$f" || fail "$f differs through the mount"
	done <"$T/order"
	assert_eq "$(origin_lines)" "" "requests of the readers"
	tilefs_umount "$MNT"
}

@test "hint: --hint-budget bounds what is fetched ahead of the readers; a read moves it on" {
	hint_cog "$T/web"
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT" --prefetch none --hint-budget 150K
	ls "$MNT" >/dev/null
	local r c t tiles=()
	for r in 0 1 2 3; do
		for c in 0 1 2 3 4 5 6 7; do
			echo "cog.tif $((c * 256 + 10)) $((r * 256 + 10)) 20 20"
			tiles+=("$(block "$T/web/cog.tif" $c $r)")
		done
	done >"$T/order"
	# random pixels: every tile weighs about 64 KiB, so two stay under 150K
	# and the third takes the hint over it
	for t in "${tiles[@]:0:6}"; do
		[ "${t#* }" -gt 60000 ] && [ "${t#* }" -lt 70000 ] || fail "a tile of ${t#* } bytes"
	done
	origin_log_reset
	tilefs_run hint "$MNT" "$T/order"
	assert_eq "$status" 0 "exit status of tilefs hint"
	for t in "${tiles[@]:0:3}"; do
		wait_until "a GET of the hinted tile at ${t% *}" fetched /cog.tif "${t}"
	done
	! fetched /cog.tif "${tiles[3]}" || fail "the fourth tile was fetched beyond the budget"
	# the readers read the first one: the cursor moves past it, room for one more
	read_tiles "$MNT/cog.tif" "$T/web/cog.tif" "${tiles[0]}"
	wait_until "a GET of the fourth tile" fetched /cog.tif "${tiles[3]}"
	# what was fetched ahead of the readers: within the budget and one
	# tile more (the one that took it over), and with each GET at most the
	# 16-KiB pages its readers' reads take at each end
	local bytes gets
	bytes=$(origin_select 'm == "GET" && u == "/cog.tif" && r !~ /^bytes=0-/ && st == 206' |
		awk '{ s += $NF } END { print s + 0 }')
	gets=$(tile_gets)
	[ "$bytes" -le $((150 * 1024 + 70000 + ${tiles[0]#* } + gets * 32768)) ] ||
		fail "fetched $bytes bytes of tiles in $gets GETs, over the budget of 150K, a tile, the one read and their pages"
	! fetched /cog.tif "${tiles[4]}" || fail "the fifth tile was fetched beyond the budget"
	assert_eq "$(tile_gets)" 4 "tile GETs after one read"
	tilefs_umount "$MNT"
}

@test "hint: a new hint replaces the one in force; --clear drops it" {
	hint_cog "$T/web"
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT" --prefetch none --hint-budget 1 --metrics-file "$PROM"
	ls "$MNT" >/dev/null
	local a b z
	a=$(block "$T/web/cog.tif" 0 0)
	b=$(block "$T/web/cog.tif" 1 0)
	z=$(block "$T/web/cog.tif" 15 15)
	printf 'cog.tif 0 0 256 256\ncog.tif 256 0 256 256\n' >"$T/first"
	printf 'cog.tif 3840 3840 256 256\n' >"$T/second"
	origin_log_reset
	tilefs_run hint "$MNT" "$T/first"
	assert_eq "$status" 0 "exit status of the first hint"
	# a budget of 1 byte: one entry ahead of the readers
	wait_until "a GET of the first entry" fetched /cog.tif "${a}"
	# (tilefs_run reads stdin from /dev/null: the tool directly for -)
	run -0 "$TILEFS" hint "$MNT" - <"$T/second"
	assert_eq "$output" "hinted 1 entries on $MNT" "what tilefs hint - says"
	wait_until "a GET of the new hint's entry" fetched /cog.tif "${z}"
	wait_until "tilefs_hint_entries 1" metric_is "$PROM" tilefs_hint_entries 1
	# the reader reads the old hint's first tile: the old hint is gone, so
	# its second entry is never fetched
	read_tiles "$MNT/cog.tif" "$T/web/cog.tif" "$a"
	run -0 "$TILEFS" hint "$MNT" --clear
	assert_eq "$output" "hint dropped on $MNT" "what tilefs hint --clear says"
	wait_until "tilefs_hint_entries 0" metric_is "$PROM" tilefs_hint_entries 0
	! fetched /cog.tif "${b}" || fail "the replaced hint's second entry was fetched"
	assert_eq "$(tile_gets)" 2 "tile GETs: one entry of each hint"
	tilefs_umount "$MNT"
}

@test "hint: what a user can act on: not a tilefs mount, the line at fault, a window outside the image" {
	hint_cog "$T/web"
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT" --prefetch none
	ls "$MNT" >/dev/null
	echo cog.tif >"$T/good"
	mkdir -p "$T/plain"
	tilefs_run hint "$T/plain" "$T/good"
	assert_eq "$status" 1 "exit status for a directory that is not a mount"
	assert_eq "$err1" "tilefs: hint: $T/plain is not the mountpoint of a running tilefs mount" \
		"message for a directory that is not a mount"
	tilefs_run hint "$MNT"
	assert_eq "$status" 2 "exit status without an order"
	[[ $err1 == *"--help"* ]] || fail "usage message does not name --help: $err1"
	printf '# comment\n\ncog.tif 0 0 256 256\n../../etc/passwd\n' >"$T/bad"
	tilefs_run hint "$MNT" "$T/bad"
	assert_eq "$status" 1 "exit status for a path outside the mount"
	assert_eq "$err1" "tilefs: hint: $T/bad: line 4: ../../etc/passwd is not under the mount $MNT" \
		"message for a path outside the mount"
	printf 'cog.tif\n/etc/passwd\n' >"$T/bad"
	tilefs_run hint "$MNT" "$T/bad"
	assert_eq "$err1" "tilefs: hint: $T/bad: line 2: /etc/passwd is not under the mount $MNT" \
		"message for an absolute path outside the mount"
	printf 'cog.tif\nmissing.tif 0 0 10 10\n' >"$T/bad"
	tilefs_run hint "$MNT" "$T/bad"
	assert_eq "$err1" "tilefs: hint: $T/bad: line 2: missing.tif: no such file in the mount" \
		"message for a missing file"
	printf 'cog.tif\tzero 0 1 1\n' >"$T/bad"
	tilefs_run hint "$MNT" "$T/bad"
	assert_eq "$err1" "tilefs: hint: $T/bad: line 1: 'zero 0 1 1' after the tab is not a window X Y W H" \
		"message for a bad window"
	# once the file's layout is known, a window outside it is refused
	head -c 100 "$MNT/cog.tif" >/dev/null
	printf 'cog.tif 0 0 256 256\ncog.tif 4000 0 256 256\n' >"$T/bad"
	tilefs_run hint "$MNT" "$T/bad"
	assert_eq "$status" 1 "exit status for a window outside the image"
	assert_eq "$err1" "tilefs: hint: $T/bad: line 2: cog.tif: window 4000 0 256 256 is outside the image (4096x4096)" \
		"message for a window outside the image"
	tilefs_alive "$MNT"
	tilefs_umount "$MNT"
}

@test "hint: only the mount's owner or root may hint" {
	hint_cog "$T/web"
	origin_start "$T/web"
	local ud
	ud=$(mktemp -d /tmp/tilefs-hint.XXXXXX)
	chmod 755 "$ud"
	cp "$TILEFS" "$ud/tilefs"
	mkdir -p "$ud/mnt" "$ud/cache"
	chmod 700 "$ud/cache"
	tilefs_mount "$ORIGIN_URL" "$ud/mnt" --prefetch none -o allow_other --cache-dir "$ud/cache"
	ls "$ud/mnt" >/dev/null
	local sock
	sock=$(echo "$ud"/cache/mounts/*.hint.sock)
	assert_eq "$(stat -c %a "$sock")" 600 "the socket's mode"
	# let the user reach the socket itself: the daemon must refuse it
	chmod 711 "$ud/cache" "$ud/cache/mounts"
	chmod 666 "$sock"
	echo cog.tif >"$ud/order"
	origin_log_reset
	run runuser -u nobody -- "$ud/tilefs" hint "$ud/mnt" - <"$ud/order"
	echo "$output"
	assert_eq "$status" 1 "exit status for a user who does not own the mount"
	[[ $output == *"only the mount's owner (uid 0) or root may hint"* ]] ||
		fail "the refusal does not say who may hint: $output"
	grep -q "hint: refused a client of uid $(id -u nobody)" "$TILEFS_LOG" ||
		fail "the refusal is not logged"
	assert_eq "$(origin_count GET)" 0 "GETs after a refused hint"
	# the owner may
	run -0 "$TILEFS" hint "$ud/mnt" "$ud/order"
	chmod 700 "$ud/cache" "$ud/cache/mounts"
	tilefs_umount "$ud/mnt"
	rm -rf "$ud"
}

@test "hint: mount --record writes what the readers read; warm --from-file and hint replay it to the same tiles" {
	hint_cog "$T/web"
	cp "$SAMPLES/notes.txt" "$T/web/notes.txt"
	origin_start "$T/web"
	echo stale >"$T/record"
	chmod 644 "$T/record"
	tilefs_mount "$ORIGIN_URL" "$MNT" --prefetch none --record "$T/record"
	local a b c
	read_three_tiles
	# and a third open a text file
	cmp "$T/web/notes.txt" "$MNT/notes.txt"
	tilefs_umount "$MNT"
	assert_eq "$(stat -c %a "$T/record")" 600 "the record's mode"
	printf 'cog.tif\t768 512 512 256\ncog.tif\t2560 3072 256 256\nnotes.txt\n' >"$T/want"
	diff "$T/want" "$T/record" || fail "the record is not what the readers read"
	# a symlink is never followed
	ln -s "$T/elsewhere" "$T/link"
	tilefs_run mount --prefetch none --record "$T/link" --cache-dir "$T/cache" \
		--log-file "$T/link.log" "$ORIGIN_URL" "$MNT"
	[ "$status" -ne 0 ] || fail "mount --record through a symlink did not fail"
	[ ! -e "$T/elsewhere" ] || fail "the record followed the symlink"
	# warm --from-file on a fresh cache fetches just those tiles
	origin_log_reset
	tilefs_run warm --cache-dir "$T/cache2" --from-file "$T/record" "$ORIGIN_URL"
	assert_eq "$status" 0 "exit status of warm --from-file"
	local t
	for t in "$a" "$b" "$c"; do
		fetched /cog.tif "${t}" || fail "warm did not fetch the tile at ${t% *}"
	done
	# those three tiles and nothing more (with GDAL's 4-byte leader and trailer)
	assert_eq "$(origin_select 'm == "GET" && u == "/cog.tif" && r !~ /^bytes=0-/ && st == 206' |
		awk '{ s += $NF } END { print s + 0 }')" $((${a#* } + ${b#* } + ${c#* } + 24)) \
		"tile bytes warm --from-file fetched"
	# the same record as a hint, on a mount of a third cache
	tilefs_mount "$ORIGIN_URL" "$MNT" --prefetch none --cache-dir "$T/cache3"
	ls "$MNT" >/dev/null
	origin_log_reset
	run -0 "$TILEFS" hint "$MNT" "$T/record"
	for t in "$a" "$b" "$c"; do
		wait_until "a GET of the hinted tile at ${t% *}" fetched /cog.tif "${t}"
	done
	wait_until "notes.txt fetched" test "$(origin_count GET /notes.txt)" -ge 1
	local before
	before=$(origin_count GET)
	read_tiles "$MNT/cog.tif" "$T/web/cog.tif" "$a" "$b" "$c"
	cmp "$T/web/notes.txt" "$MNT/notes.txt"
	assert_eq "$(origin_count GET)" "$before" "GETs while replaying the record"
	tilefs_umount "$MNT"
}

@test "hint: reads through the page cache (a file cached whole, passthrough off) follow the hint by their opens: the kernel's readahead does not move the cursor past what the readers read next" {
	hint_cog "$T/web"
	origin_start "$T/web"
	tilefs_run warm --cache-dir "$T/cache" "$ORIGIN_URL"
	assert_eq "$status" 0 "exit status of warm"
	cp "$T/web/cog.tif" "$T/web/cog2.tif"
	tilefs_mount "$ORIGIN_URL" "$MNT" --no-passthrough --metrics-file "$PROM"
	# tile (0,0) of cog.tif, then 100 tiles of cog2.tif, then tile (1,0) of
	# cog.tif, which the kernel's readahead after the first read takes
	# along; each entry is read by an open of its own, in order
	"$TILEFS" inspect --blocks "$T/web/cog.tif" >"$T/blocks"
	"$PY" - "$T/blocks" "$T/order" "$T/reads" <<'PYEOF'
import sys
blocks = {}
for line in open(sys.argv[1]):
    f = line.split()
    if f[:1] == ["block"] and f[1] == "0":
        blocks[int(f[2])] = (int(f[3]), int(f[4]))
entries = [("cog.tif", 0, 0)] + [("cog2.tif", k % 16, 2 + k // 16) for k in range(100)] + \
          [("cog.tif", 1, 0)]
with open(sys.argv[2], "w") as o, open(sys.argv[3], "w") as r:
    for name, col, row in entries:
        o.write("%s %d %d 256 256\n" % (name, col * 256, row * 256))
        r.write("%s %d %d\n" % ((name,) + blocks[row * 16 + col]))
PYEOF
	run -0 "$TILEFS" hint "$MNT" "$T/order"
	"$PY" - "$MNT" "$T/web" "$T/reads" <<'PYEOF'
import sys
mnt, web = sys.argv[1], sys.argv[2]
for line in open(sys.argv[3]):
    name, off, n = line.split()
    off, n = int(off), int(n)
    with open("%s/%s" % (mnt, name), "rb", buffering=0) as m:
        m.seek(off)
        got = m.read(n)
    with open("%s/%s" % (web, name), "rb") as l:
        l.seek(off)
        if got != l.read(n):
            sys.exit("%s: bytes differ at %d" % (name, off))
PYEOF
	wait_until "tilefs_hint_position 102" metric_is "$PROM" tilefs_hint_position 102
	run -0 "$TILEFS" hint "$MNT" --clear
	wait_until "tilefs_hint_entries 0" metric_is "$PROM" tilefs_hint_entries 0
	assert_eq "$(metric "$PROM" tilefs_hint_skipped_total)" 0 "hint entries counted skipped"
}

@test "hint: with default options, mount --record of a file the cache holds whole writes the tiles the readers read, not the kernel's readahead around them" {
	hint_cog "$T/web"
	origin_start "$T/web"
	tilefs_run warm --cache-dir "$T/cache" "$ORIGIN_URL"
	assert_eq "$status" 0 "exit status of warm"
	tilefs_mount "$ORIGIN_URL" "$MNT" --record "$T/record"
	local a b c
	read_three_tiles
	tilefs_umount "$MNT"
	printf 'cog.tif\t768 512 512 256\ncog.tif\t2560 3072 256 256\n' >"$T/want"
	diff "$T/want" "$T/record" || fail "the record is not what the readers read"
}

# torch_loader ARGS...: examples/torch_loader.py --hint over $MNT with
# ARGS (its sampler hints through the package, tools/python/tilefs, on
# PYTHONPATH); fails unless it ran and hinted
torch_loader() {
	"$PY" -c 'import torch' 2>/dev/null ||
		fail "python3-torch is not installed (packaging/install-deps installs it)"
	run -0 run_to 240 "$PY" "$REPO_ROOT/examples/torch_loader.py" "$MNT" --epochs 1 --hint "$@"
	echo "$output"
	[[ $output != *"no hint"* ]] || fail "the sampler did not hint"
}

@test "hint: examples/torch_loader.py --hint hands each epoch's order to the mount" {
	hint_cog "$T/web"
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT" --prefetch none --metrics-file "$PROM"
	# 16 x 16 chips of 256 pixels: one tile each, in a shuffled order
	torch_loader --workers 2
	[[ $output == *"epoch 1: 256 steps"* ]] || fail "the loader did not read 256 chips"
	# the readers' reads moved the hint's cursor (not always to its end: a
	# file all cached may be read by the kernel, unseen); the hint was the
	# loader's process's, and ended with it
	wait_until "tilefs_hint_read_total above 0" metric_above "$PROM" tilefs_hint_read_total 0
	wait_until "tilefs_hint_clients 0" metric_is "$PROM" tilefs_hint_clients 0
	assert_eq "$(origin_dup_ranges)" "" "ranges fetched twice"
	tilefs_umount "$MNT"
}

@test "hint: a DataLoader of batches (4 workers, 40 chips a batch: one reads the first batch while another starts the fourth) reads every entry, none skipped" {
	hint_cog "$T/web"
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT" --prefetch none --metrics-file "$PROM"
	# 13 x 13 chips of 64 pixels, 320 apart: each inside a tile of its own,
	# 169 of the 256 (so the file is never cached whole, and every read
	# comes to the mount as made), in 5 batches
	torch_loader --workers 4 --chip 64 --stride 320 --batch-size 40
	[[ $output == *"epoch 1: 5 steps"* ]] || fail "the loader did not read 5 batches"
	# the hint was the loader's process's: it ended with it, every entry
	# counted read or skipped then
	wait_until "tilefs_hint_clients 0" metric_is "$PROM" tilefs_hint_clients 0
	wait_until "tilefs_hint_read_total 169" metric_is "$PROM" tilefs_hint_read_total 169
	assert_eq "$(metric "$PROM" tilefs_hint_entries)" 0 "tilefs_hint_entries"
	assert_eq "$(metric "$PROM" tilefs_hint_skipped_total)" 0 "tilefs_hint_skipped_total"
	assert_eq "$(origin_dup_ranges)" "" "ranges fetched twice"
	tilefs_umount "$MNT"
}

# gets_of URI "OFFSET LENGTH": how many GETs of URI the origin answered
# whose range holds the middle byte of that tile
gets_of() {
	awk -v want="$1" -v mid="$((${2% *} + ${2#* } / 2))" "$ORIGIN_AWK"'{ parse() }
		m == "GET" && u == want && st == 206 && r ~ /^bytes=/ {
			split(substr(r, 7), b, "-"); if (b[1] + 0 <= mid + 0 && mid + 0 <= b[2] + 0) n++ }
		END { print n + 0 }' "$ORIGIN_LOG"
}

@test "hint: in a full cache, a tile read for one line that a later line reads again is kept for it: one GET, where the reads between cycle the whole cache" {
	hint_cog "$T/web"
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT" --prefetch none --cache-size 1M --metrics-file "$PROM"
	ls "$MNT" >/dev/null
	local c r t a between=()
	# fill the cache (tiles of about 64 KiB: 16 of them pass 1M)
	for c in $(seq 0 15); do
		read_tiles "$MNT/cog.tif" "$T/web/cog.tif" "$(block "$T/web/cog.tif" $c 10)"
	done
	wait_until "the cache full, evicting" metric_above "$PROM" tilefs_evicted_bytes_total 0
	# the order: tile (3,2), then 32 other tiles (twice the cache), then a
	# window of (3,2) again
	a=$(block "$T/web/cog.tif" 3 2)
	echo "cog.tif 768 512 256 256" >"$T/order"
	for r in 5 6; do
		for c in $(seq 0 15); do
			echo "cog.tif $((c * 256)) $((r * 256)) 256 256"
			between+=("$(block "$T/web/cog.tif" $c $r)")
		done
	done >>"$T/order"
	echo "cog.tif 800 600 64 64" >>"$T/order"
	origin_log_reset
	tilefs_run hint "$MNT" "$T/order"
	assert_eq "$status" 0 "exit status of tilefs hint"
	# the first line's reader reads its tile
	read_tiles "$MNT/cog.tif" "$T/web/cog.tif" "$a"
	wait_until "tilefs_hint_position 1" metric_is "$PROM" tilefs_hint_position 1
	for t in "${between[@]}"; do
		read_tiles "$MNT/cog.tif" "$T/web/cog.tif" "$t"
	done
	# the reads between fetched twice the cache: without the keep, the
	# first tile (on probation once read) would have gone
	local gets
	gets=$(origin_select 'm == "GET" && u == "/cog.tif" && st == 206' | wc -l)
	[ "$gets" -ge 32 ] || fail "only $gets GETs for the 32 tiles between: the test reads from the cache"
	read_tiles "$MNT/cog.tif" "$T/web/cog.tif" "$a"
	assert_eq "$(gets_of /cog.tif "$a")" 1 "GETs of the first line's tile, read again by the last line"
	tilefs_umount "$MNT"
}

@test "hint: mount --record of GDAL reading a one-tile window records that tile alone (not the neighbours its buffered reads touch the edges of); warm --from-file of it fetches that tile and the header" {
	hint_cog "$T/web"
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT" --prefetch none --record "$T/record"
	# tile (3,2) through GDAL, whose 8 KiB-aligned reads of a tile start in
	# the last bytes of the tile before it and end in the first of the next
	"$PY" - "$MNT/cog.tif" "$T/web/cog.tif" <<'PYEOF'
import sys
import rasterio
from rasterio.windows import Window
w = Window(768, 512, 256, 256)
with rasterio.open(sys.argv[1]) as m, rasterio.open(sys.argv[2]) as l:
    if (m.read(1, window=w) != l.read(1, window=w)).any():
        sys.exit("the window read through the mount differs")
PYEOF
	tilefs_umount "$MNT"
	printf 'cog.tif\t768 512 256 256\n' >"$T/want"
	diff "$T/want" "$T/record" || fail "the record is not the one tile GDAL read"
	# warm --from-file of the record into an empty cache: the header, and
	# that tile (with GDAL's 4-byte leader and trailer), nothing more
	local a
	a=$(block "$T/web/cog.tif" 3 2)
	origin_log_reset
	tilefs_run warm --cache-dir "$T/cache2" --from-file "$T/record" "$ORIGIN_URL"
	assert_eq "$status" 0 "exit status of warm --from-file"
	fetched /cog.tif "$a" || fail "warm did not fetch the tile at ${a% *}"
	local header tiles
	header=$(origin_select 'm == "GET" && u == "/cog.tif" && r ~ /^bytes=0-/ && st == 206' |
		awk '{ s += $NF } END { print s + 0 }')
	tiles=$(origin_select 'm == "GET" && u == "/cog.tif" && r !~ /^bytes=0-/ && st == 206' |
		awk '{ s += $NF } END { print s + 0 }')
	assert_eq "$tiles" $((${a#* } + 8)) "tile bytes warm --from-file fetched"
	assert_eq "$(origin_range_bytes /cog.tif)" $((header + tiles)) \
		"bytes warm --from-file fetched (header $header)"
}

# tile_counts: "MIN MAX" over the full-resolution tiles of cog.tif of the
# GETs the origin answered whose range holds the tile's middle byte; not
# counting the GETs of the file's first bytes (its header, which opens
# read), nor the tiles whose middle byte one of those held
tile_counts() {
	"$TILEFS" inspect --blocks "$T/web/cog.tif" |
		awk '$1 == "block" && $2 == 0 { print $4, $5 }' >"$T/tiles"
	awk "$ORIGIN_AWK"'NR == FNR { mid[NR] = $1 + int($2 / 2); nt = NR; next }
		{ parse() }
		m == "GET" && u == "/cog.tif" && st == 206 && r ~ /^bytes=/ {
			split(substr(r, 7), b, "-")
			if (b[1] + 0 == 0) { if (b[2] + 0 > head) head = b[2] + 0; next }
			for (i = 1; i <= nt; i++) if (b[1] + 0 <= mid[i] && mid[i] <= b[2] + 0) c[i]++ }
		END { mn = -1; for (i = 1; i <= nt; i++) { if (mid[i] <= head) continue; v = c[i] + 0
			if (mn < 0 || v < mn) mn = v; if (v > mx) mx = v }
			print mn, mx + 0 }' "$T/tiles" "$ORIGIN_LOG"
}

@test "hint: two clients' hints are served side by side; a client's new hint replaces only its own; --clear drops only its own, --clear-all every one" {
	hint_cog "$T/web"
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT" --prefetch none --metrics-file "$PROM"
	ls "$MNT" >/dev/null
	local a b y z
	a=$(block "$T/web/cog.tif" 5 1)
	b=$(block "$T/web/cog.tif" 6 1)
	y=$(block "$T/web/cog.tif" 14 15)
	z=$(block "$T/web/cog.tif" 15 15)
	printf 'cog.tif 1280 256 256 256\n' >"$T/a1"
	printf 'cog.tif 3840 3840 256 256\n' >"$T/b1"
	printf 'cog.tif 1536 256 256 256\ncog.tif 3584 3840 256 256\n' >"$T/a2"
	origin_log_reset
	run -0 "$TILEFS" hint --client rank0 "$MNT" "$T/a1"
	assert_eq "$output" "hinted 1 entries on $MNT (client rank0)" "what tilefs hint --client says"
	run -0 "$TILEFS" hint --client=rank1 "$MNT" "$T/b1"
	wait_until "a GET of rank0's entry" fetched /cog.tif "$a"
	wait_until "a GET of rank1's entry" fetched /cog.tif "$z"
	wait_until "tilefs_hint_clients 2" metric_is "$PROM" tilefs_hint_clients 2
	assert_eq "$(metric "$PROM" tilefs_hint_entries)" 2 "entries of both hints"
	# rank0's new hint replaces rank0's, not rank1's
	run -0 "$TILEFS" hint --client rank0 "$MNT" "$T/a2"
	wait_until "tilefs_hint_entries 3" metric_is "$PROM" tilefs_hint_entries 3
	wait_until "a GET of rank0's new first entry" fetched /cog.tif "$b"
	wait_until "a GET of rank0's new second entry" fetched /cog.tif "$y"
	assert_eq "$(metric "$PROM" tilefs_hint_clients)" 2 "clients after rank0's new hint"
	run -0 "$TILEFS" hint --client rank1 "$MNT" --clear
	assert_eq "$output" "hint dropped on $MNT (client rank1)" "what --clear says"
	wait_until "tilefs_hint_entries 2" metric_is "$PROM" tilefs_hint_entries 2
	assert_eq "$(metric "$PROM" tilefs_hint_clients)" 1 "clients after rank1's --clear"
	run -0 "$TILEFS" hint "$MNT" --clear-all
	assert_eq "$output" "every client's hint dropped on $MNT" "what --clear-all says"
	wait_until "tilefs_hint_clients 0" metric_is "$PROM" tilefs_hint_clients 0
	local t
	for t in "$a" "$b" "$y" "$z"; do
		assert_eq "$(gets_of /cog.tif "$t")" 1 "GETs of the tile at $t"
	done
	run -2 "$TILEFS" hint --client 'a b' "$MNT" "$T/a1"
	[[ $output == *"--client 'a b': a name is 1 to 64 letters"* ]] ||
		fail "a bad client name is not refused as such: $output"
	tilefs_umount "$MNT"
}

@test "hint: eight ranks of a distributed job (DistributedSampler under tilefs.torch.HintedSampler, a process each): every rank's share fetched ahead of its readers, no tile twice; a rank's hint ends with its process" {
	"$PY" -c 'import torch' 2>/dev/null ||
		fail "python3-torch is not installed (packaging/install-deps installs it)"
	hint_cog "$T/web"
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT" --prefetch none --metrics-file "$PROM"
	ls "$MNT" >/dev/null
	mkdir -p "$T/ranks"
	origin_log_reset
	"$PY" "$TESTS_LIB/hint_ranks.py" "$MNT" "$T/web" 8 "$T/ranks" 2>"$T/ranks.err" &
	local driver=$!
	wait_until "tilefs_hint_clients 8" metric_is "$PROM" tilefs_hint_clients 8
	wait_until "tilefs_hint_entries 256" metric_is "$PROM" tilefs_hint_entries 256
	# each rank's share is its own: together every chip once
	assert_eq "$(cat "$T"/ranks/order.* | sort -n | uniq | wc -l)" 256 "chips hinted"
	assert_eq "$(cat "$T"/ranks/order.* | wc -l)" 256 "chips hinted, with repeats"
	tiles_all_fetched() {
		local c
		c=$(tile_counts)
		[ "${c% *}" -ge 1 ]
	}
	wait_until "every tile fetched ahead of the readers" tiles_all_fetched
	local before
	before=$(tile_counts)
	assert_eq "$before" "1 1" "GETs a tile (fewest, most) before the readers read"
	touch "$T/ranks/go"
	local rc=0
	wait "$driver" || rc=$?
	[ "$rc" = 0 ] || fail "the ranks failed ($rc): $(cat "$T/ranks.err")"
	assert_eq "$(tile_counts)" "1 1" "GETs a tile (fewest, most) after the readers read"
	wait_until "tilefs_hint_clients 0 (the ranks exited)" metric_is "$PROM" tilefs_hint_clients 0
	assert_eq "$(metric "$PROM" tilefs_hint_entries)" 0 "entries once the ranks exited"
	tilefs_umount "$MNT"
}

@test "hint: the Python package (tilefs.Mount) hints from a path in the mount, names the line at fault and what is not a mount, reads the counters; its hint ends with its process" {
	hint_cog "$T/web"
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT" --prefetch none --metrics-file "$PROM"
	ls "$MNT" >/dev/null
	local a
	a=$(block "$T/web/cog.tif" 2 3)
	origin_log_reset
	"$PY" - "$MNT" "$T/py" >"$T/py.out" 2>&1 <<'PYEOF' &
import os, sys, time
import tilefs
mnt, state = sys.argv[1], sys.argv[2]
m = tilefs.Mount(os.path.join(mnt, "cog.tif"))   # a path in the mount
print("mountpoint", m.mountpoint == mnt)
print("entries", m.hint([("cog.tif", (512, 768, 256, 256)), ("cog.tif", None)]))
try:
    m.hint(["nope.tif"])
except tilefs.Error as e:
    print("refused", e)
try:
    tilefs.Mount("/")
except tilefs.Error as e:
    print("not a mount", e)
for _ in range(1200):
    if m.counters().get("tilefs_hint_entries") == 2:
        print("counters", "ok")
        break
    time.sleep(0.1)
open(state, "w").close()
for _ in range(1200):
    if os.path.exists(state + ".go"):
        break
    time.sleep(0.1)
PYEOF
	local py=$!
	wait_until "the script's hint and checks" test -e "$T/py"
	cat "$T/py.out"
	grep -qx "mountpoint True" "$T/py.out" || fail "tilefs.Mount did not find the mountpoint"
	grep -qx "entries 2" "$T/py.out" || fail "hint did not answer 2 entries"
	grep -qx "refused $MNT: line 1: nope.tif: no such file in the mount" "$T/py.out" ||
		fail "the refusal does not name the line"
	grep -q "^not a mount / is not in a running tilefs mount" "$T/py.out" ||
		fail "a path outside a mount is not said so"
	grep -qx "counters ok" "$T/py.out" || fail "counters() did not show the hint's entries"
	wait_until "a GET of the hinted tile" fetched /cog.tif "$a"
	assert_eq "$(metric "$PROM" tilefs_hint_clients)" 1 "clients while the script runs"
	touch "$T/py.go"
	wait "$py"
	wait_until "tilefs_hint_clients 0 (the script exited)" metric_is "$PROM" tilefs_hint_clients 0
	tilefs_umount "$MNT"
}
