#!/usr/bin/env bats
# Bytes per tile: a tiled TIFF read tile by tile through a mount costs the
# origin each tile's bytes once, whatever the prefetch policy. The figure
# comes from the origin's access log (nginx's $body_bytes_sent).
#
# Definitions, per file:
#   open bytes  the body bytes of the GETs a first open sends (rasterio.open
#               on a fresh mount, nothing read);
#   tile bytes  the sum of TileByteCounts of the full-resolution tiles, but
#               for those the open's GETs brought whole (cached by the open,
#               so never fetched again);
#   read bytes  the body bytes of every GET of the file sent from then on,
#               on a second mount of the same cache (whose open costs
#               nothing): every tile read once, one block window at a time,
#               in a random order (as a data loader reads chips) or in the
#               file's order (a scan), up to the unmount (so a stream still
#               running is counted whole).
# The test asserts tile bytes x 0.9 <= read bytes <= tile bytes x 1.02.
# Before tilefs left out of a tile's GET the bytes of it kept as edges
# beside its neighbours (slivers, spills), the random order cost +10.7% on
# the 256x256 DEFLATE file and +56% on the 128x128 LZW one.

bats_require_minimum_version 1.5.0
load ../lib/tilefs

setup() {
	tilefs_setup
	MNT=$T/mnt
}

teardown() {
	tilefs_teardown
}

# make_tile_bytes_files DIR: two plain tiled GeoTIFFs (gdal_translate,
# IFD first, no overviews), 2048x2048, in DIR:
#   deflate256.tif  uint16, 256x256 tiles, DEFLATE (about 90 KB a tile: an
#                   S2-like band)
#   lzw128.tif      uint8, 128x128 tiles, LZW (about 20 KB a tile)
# Built once into $ORIGIN_CACHE_DIR/tile-bytes-v1 and copied from there.
make_tile_bytes_files() {
	local dest=$1 src=$ORIGIN_CACHE_DIR/tile-bytes-v1
	if [ ! -f "$src/.done" ]; then
		rm -rf "$src.tmp"
		mkdir -p "$src.tmp" || return 1
		if ! {
			"$PY" - "$src.tmp" <<'PYEOF'
import sys
import numpy as np
import rasterio
from rasterio.transform import from_origin
rng = np.random.default_rng(81)
yy, xx = np.mgrid[0:2048, 0:2048]
wave = np.sin(xx / 97.0) + np.cos(yy / 61.0)
for name, dtype, a in (
        ("raw16.tif", "uint16", wave * 800 + 3000 + rng.integers(0, 64, xx.shape)),
        ("raw8.tif", "uint8", (wave * 50 + 128 + rng.integers(0, 96, xx.shape)).clip(0, 255))):
    with rasterio.open(sys.argv[1] + "/" + name, "w", driver="GTiff", width=2048,
                       height=2048, count=1, dtype=dtype, crs="EPSG:32633",
                       transform=from_origin(500000, 5000000, 10, 10)) as ds:
        ds.write(a.astype(dtype)[None])
PYEOF
			gdal_translate -q -co TILED=YES -co BLOCKXSIZE=256 -co BLOCKYSIZE=256 \
				-co COMPRESS=DEFLATE "$src.tmp/raw16.tif" "$src.tmp/deflate256.tif" &&
				gdal_translate -q -co TILED=YES -co BLOCKXSIZE=128 -co BLOCKYSIZE=128 \
					-co COMPRESS=LZW "$src.tmp/raw8.tif" "$src.tmp/lzw128.tif"
		} >"$src.tmp/.log" 2>&1; then
			echo "make_tile_bytes_files: generation failed:" >&2
			cat "$src.tmp/.log" >&2
			return 1
		fi
		rm -f "$src.tmp"/raw*.tif "$src.tmp"/*.aux.xml "$src.tmp/.log"
		find "$src.tmp" -exec touch -h -d '2024-01-02 03:04:05 UTC' {} +
		touch "$src.tmp/.done"
		rm -rf "$src"
		mv "$src.tmp" "$src" || return 1
	fi
	mkdir -p "$dest" || return 1
	cp -p "$src"/*.tif "$dest/"
}

# open_file MNTFILE: open it with rasterio and read nothing.
open_file() {
	run_to 60 "$PY" -c 'import sys, rasterio; rasterio.open(sys.argv[1]).close()' "$1"
}

# read_every_tile MNTFILE LOCALFILE ORDER [HALF]: read every full-resolution
# tile (or the first or second HALF of them), one block window at a time, in
# ORDER: "rows" (the file's order, so a sequential scan) or "shuffled" (a
# fixed random order, as a data loader reads chips: each read far from the
# last); each equal to the local file's.
read_every_tile() {
	run_to 300 "$PY" - "$@" <<'PYEOF'
import random, sys
import numpy as np
import rasterio
bad = 0
with rasterio.open(sys.argv[1]) as mnt, rasterio.open(sys.argv[2]) as local:
    windows = [w for _ij, w in mnt.block_windows(1)]
    if sys.argv[3] == "shuffled":
        random.Random(81).shuffle(windows)
    half = sys.argv[4] if len(sys.argv) > 4 else "all"
    if half != "all":
        windows = windows[:len(windows) // 2] if half == "first" else windows[len(windows) // 2:]
    for w in windows:
        if not np.array_equal(mnt.read(1, window=w), local.read(1, window=w)):
            print("tile at col %d row %d differs" % (w.col_off, w.row_off))
            bad += 1
sys.exit(1 if bad else 0)
PYEOF
}

# tile_bytes LOCALFILE OPENLOG URI: the tile bytes (see the head of this
# file): TileByteCounts of the full-resolution tiles not inside a ranged GET
# of URI in OPENLOG.
tile_bytes() {
	"$PY" - "$@" <<'PYEOF'
import re, sys
from osgeo import gdal
ds = gdal.Open(sys.argv[1])
band = ds.GetRasterBand(1)
bw, bh = band.GetBlockSize()
across, down = -(-ds.RasterXSize // bw), -(-ds.RasterYSize // bh)
got = []
for line in open(sys.argv[2]):
    m = re.search(r'^GET (\S+) "bytes=(\d+)-(\d+)" 206 \d+$', line)
    if m and m[1] == sys.argv[3]:
        got.append((int(m[2]), int(m[3]) + 1))
total = 0
for y in range(down):
    for x in range(across):
        off = int(band.GetMetadataItem("BLOCK_OFFSET_%d_%d" % (x, y), "TIFF"))
        size = int(band.GetMetadataItem("BLOCK_SIZE_%d_%d" % (x, y), "TIFF"))
        if not any(a <= off and off + size <= b for a, b in got):
            total += size
print(total)
PYEOF
}

# check_tile_bytes NAME ORDER [MOUNT OPTIONS...]: mount a fresh cache, open
# NAME, read every tile of it in ORDER, unmount; read bytes <= 1.02 x tile
# bytes. ORDER "shuffled-remount": the first half of the shuffled order,
# then a remount on the same cache, then the rest.
check_tile_bytes() {
	local name=$1 order=$2 open_bytes tiles got
	shift 2
	rm -rf "$T/cache"
	tilefs_mount "$ORIGIN_URL" "$MNT" "$@"
	ls -l "$MNT" >/dev/null
	origin_log_reset
	open_file "$MNT/$name" || fail "cannot open $name"
	tilefs_umount "$MNT"
	open_bytes=$(origin_range_bytes "/$name")
	cp "$ORIGIN_LOG" "$T/open.log"
	tiles=$(tile_bytes "$T/web/$name" "$T/open.log" "/$name") || fail "no tile map of $name"
	tilefs_mount "$ORIGIN_URL" "$MNT" "$@"
	origin_log_reset
	if [ "$order" = shuffled-remount ]; then
		read_every_tile "$MNT/$name" "$T/web/$name" shuffled first ||
			fail "$name: tiles differ"
		tilefs_umount "$MNT"
		tilefs_mount "$ORIGIN_URL" "$MNT" "$@"
		read_every_tile "$MNT/$name" "$T/web/$name" shuffled second ||
			fail "$name: tiles differ after the remount"
	else
		read_every_tile "$MNT/$name" "$T/web/$name" "$order" || fail "$name: tiles differ"
	fi
	tilefs_umount "$MNT"
	got=$(origin_range_bytes "/$name")
	echo "# $name, $order ($*): open $open_bytes B; read $got B for $tiles B of tiles" \
		"($(awk -v g="$got" -v t="$tiles" 'BEGIN { printf "%+.2f%%", (g / t - 1) * 100 }'))," \
		"$(origin_gets "/$name") GETs" >&3
	[ "$((got * 100))" -le "$((tiles * 102))" ] ||
		fail "$name, $order ($*): $got bytes fetched for $tiles bytes of tiles (more than 2% over):" \
			"$(origin_lines)" || return 1
	[ "$((got * 10))" -ge "$((tiles * 9))" ] ||
		fail "$name, $order ($*): only $got bytes fetched for $tiles bytes of tiles: were they read?"
}

@test "--prefetch none: every tile read tile by tile, in a random order, is fetched once (within 2%)" {
	make_tile_bytes_files "$T/web"
	origin_start "$T/web"
	local rc=0
	check_tile_bytes deflate256.tif shuffled --prefetch none || rc=1
	check_tile_bytes lzw128.tif shuffled --prefetch none || rc=1
	return "$rc"
}

@test "--prefetch none: read half the tiles, remount, read the rest: the edges kept in the index serve (within 2%)" {
	make_tile_bytes_files "$T/web"
	origin_start "$T/web"
	local rc=0
	check_tile_bytes deflate256.tif shuffled-remount --prefetch none || rc=1
	check_tile_bytes lzw128.tif shuffled-remount --prefetch none || rc=1
	return "$rc"
}

@test "--prefetch none: every tile read in the file's order (a scan: readahead) is fetched once (within 2%)" {
	make_tile_bytes_files "$T/web"
	origin_start "$T/web"
	local rc=0
	check_tile_bytes deflate256.tif rows --prefetch none || rc=1
	check_tile_bytes lzw128.tif rows --prefetch none || rc=1
	return "$rc"
}

@test "default options (the files fit): every tile read tile by tile is fetched once (within 2%)" {
	make_tile_bytes_files "$T/web"
	origin_start "$T/web"
	local rc=0
	check_tile_bytes deflate256.tif shuffled || rc=1
	check_tile_bytes lzw128.tif shuffled || rc=1
	return "$rc"
}

@test "--prefetch neighbors and row: every tile read tile by tile is fetched once (within 2%)" {
	make_tile_bytes_files "$T/web"
	origin_start "$T/web"
	local rc=0
	check_tile_bytes deflate256.tif shuffled --prefetch neighbors || rc=1
	check_tile_bytes lzw128.tif shuffled --prefetch neighbors || rc=1
	check_tile_bytes deflate256.tif shuffled --prefetch row || rc=1
	check_tile_bytes lzw128.tif shuffled --prefetch row || rc=1
	return "$rc"
}
