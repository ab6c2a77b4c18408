#!/usr/bin/env bash
# examples/demo.sh: tilefs in one minute.
#
# Makes a few small Cloud-Optimized GeoTIFFs, serves them from a private
# nginx on 127.0.0.1, mounts that origin with tilefs, reads windows with
# rasterio through the mount (printing their means next to the local
# file's), and shows how many requests the origin saw for a cold read, a
# warm read, and a read after a remount. Cleans up after itself.
#
# Needs: the Debian packages in packaging/debian-packages.txt
# (packaging/install-deps) and `make` done. Run as root or as a user who may
# use fusermount3. TILEFS=path/to/tilefs to use another binary.

set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../tests/lib/origin.bash
source "$repo/tests/lib/origin.bash"
TILEFS=${TILEFS:-$repo/build/tilefs}

if [ ! -x "$TILEFS" ]; then
	echo "demo: $TILEFS not found; run 'make' first" >&2
	exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/tilefs-demo.XXXXXX")
data=$work/origin
mnt=$work/mnt
cache=$work/cache
mkdir -p "$mnt" "$cache"

cleanup() {
	if awk -v m="$mnt" '$2 == m { f = 1 } END { exit !f }' /proc/mounts; then
		fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt" 2>/dev/null || true
	fi
	origin_stop
	rm -rf "$work"
}
trap cleanup EXIT

step() { printf '\n== %s\n' "$*"; }

# read_windows FILE...: read windows with rasterio, print means from the
# mount and from the origin's own copy of the file side by side.
read_windows() {
	"$PY" - "$mnt" "$data" "$@" <<'EOF'
import sys
import rasterio
from rasterio.windows import Window

mnt, local, names = sys.argv[1], sys.argv[2], sys.argv[3:]
print("  %-16s %-28s %14s %14s" % ("file", "window (col,row,w,h)", "through tilefs", "local file"))
for name in names:
    with rasterio.open(f"{mnt}/{name}") as a, rasterio.open(f"{local}/{name}") as b:
        w, h = b.width, b.height
        for win in (Window(0, 0, 256, 256), Window(w // 2 - 100, h // 2 - 100, 200, 200),
                    Window(w - 300, h - 300, 300, 300)):
            ma, mb = a.read(window=win).mean(), b.read(window=win).mean()
            label = "%d,%d,%d,%d" % (win.col_off, win.row_off, win.width, win.height)
            print("  %-16s %-28s %14.3f %14.3f%s" % (name, label, ma, mb,
                                                     "" if ma == mb else "   MISMATCH"))
    # an overview level too
    with rasterio.open(f"{mnt}/{name}", overview_level=0) as a, \
            rasterio.open(f"{local}/{name}", overview_level=0) as b:
        ma, mb = a.read().mean(), b.read().mean()
        print("  %-16s %-28s %14.3f %14.3f%s" % (name, "overview 0 (%dx%d)" % (b.width, b.height),
                                                 ma, mb, "" if ma == mb else "   MISMATCH"))
EOF
}

# requests LABEL: what nginx logged since the last origin_log_reset.
requests() {
	printf '  origin requests during the %s: %d in all, %d ranged GETs (%d bytes), %d HEADs\n' \
		"$1" "$(wc -l <"$ORIGIN_LOG")" "$(origin_gets)" "$(origin_range_bytes)" \
		"$(origin_count HEAD)"
}

step "1. Sample data: small COGs (256 and 512 px tiles, DEFLATE, overviews)"
make_sample_cogs "$data"
(cd "$data" && find . -type f -printf '  %12s  %P\n' | sort -k 2)

step "2. A local HTTP origin (nginx, autoindex)"
origin_start "$data"
echo "  serving $data at $ORIGIN_URL"

step "3. Mount it"
echo "  \$ tilefs mount --cache-dir $cache $ORIGIN_URL $mnt"
"$TILEFS" mount --cache-dir "$cache" --log-file "$work/tilefs.log" "$ORIGIN_URL" "$mnt"
echo "  \$ ls $mnt"
ls -l "$mnt" | sed 's/^/  /'

step "4. First read through the mount (cold cache)"
origin_log_reset
read_windows t256.tif t512.tif
requests "first read"

step "5. Same windows again (warm cache)"
origin_log_reset
read_windows t256.tif t512.tif
requests "second read"

step "6. Unmount, mount again with the same --cache-dir, read again"
fusermount3 -u "$mnt"
"$TILEFS" mount --cache-dir "$cache" --log-file "$work/tilefs.log" "$ORIGIN_URL" "$mnt"
origin_log_reset
read_windows t256.tif t512.tif
requests "read after the remount"
echo "  (a HEAD per file checks that the cached version is still current)"

step "7. Cache on disk"
du -sh "$cache" | awk '{ printf "  %s in %s\n", $1, $2 }'
ls "$cache" | sed 's/^/  /'

fusermount3 -u "$mnt"
echo
echo "Done: unmounted, nginx stopped, $work removed."
