#!/usr/bin/env bats
# tilefs warm: fill a cache dir without a mount, so that a mount on it reads
# what was warmed without a request. What it fetches is checked against the
# origin's access log, unit by unit: tests/lib/warm_expect.py cuts each file
# into units from GDAL's block offsets (BLOCK_OFFSET_x_y / BLOCK_SIZE_x_y,
# every band, mask and overview) as tests/CONTRACT.md describes them.

bats_require_minimum_version 1.5.0
load ../lib/tilefs

WE=$TESTS_LIB/warm_expect.py

setup() {
	tilefs_setup
	MNT=$T/mnt
	CACHE=$T/cache
}

teardown() {
	tilefs_teardown
}

# make_warm_cogs DIR: larger files than the samples (about 17 MB), built once
# into $ORIGIN_CACHE_DIR/warm-v1 and copied from there:
#   big0.tif, big1.tif  2048x2048 uint8 COGs, 256x256 tiles, DEFLATE, overviews
#   mask.tif            1300x1500 2-band uint8 COG with an internal mask: mask
#                       IFDs beside the image and each overview, tiny tiles
#   band.tif            1300x1500 2-band tiled GeoTIFF, INTERLEAVE=BAND (2
#                       planes), overviews, no COG ghost header (no leader)
make_warm_cogs() {
	local dest=$1 src=$ORIGIN_CACHE_DIR/warm-v1
	if [ ! -f "$src/.done" ]; then
		rm -rf "$src.tmp"
		mkdir -p "$src.tmp" || return 1
		if ! (
			set -e
			cd "$src.tmp"
			"$PY" - <<'PYEOF'
import numpy as np
import rasterio
from rasterio.transform import from_origin
rng = np.random.default_rng(95)
n = 2048
yy, xx = np.mgrid[0:n, 0:n]
for i in range(2):
    a = (np.sin(xx / (37.0 + 11 * i)) + np.cos(yy / (23.0 + 7 * i))) * 50 + 128
    a = (a + rng.integers(0, 40, xx.shape)).clip(0, 255).astype("uint8")
    with rasterio.open("raw%d.tif" % i, "w", driver="GTiff", width=n, height=n, count=1,
                       dtype="uint8", crs="EPSG:32633",
                       transform=from_origin(500000, 5000000, 10, 10)) as ds:
        ds.write(a[None])
yy, xx = np.mgrid[0:1500, 0:1300]
a = (np.sin(xx / 40.0) + np.cos(yy / 30.0)) * 60 + 128 + rng.integers(0, 30, xx.shape)
a = a.clip(0, 255).astype("uint8")
m = np.full(a.shape, 255, "uint8")
m[(xx - 600) ** 2 + (yy - 700) ** 2 > 600 ** 2] = 0
with rasterio.Env(GDAL_TIFF_INTERNAL_MASK=True):
    with rasterio.open("rawm.tif", "w", driver="GTiff", width=1300, height=1500, count=2,
                       dtype="uint8", crs="EPSG:32633", tiled=True,
                       transform=from_origin(500000, 5000000, 10, 10)) as ds:
        ds.write(np.stack([a, 255 - a]))
        ds.write_mask(m)
PYEOF
			cog=(-q -of COG -co BLOCKSIZE=256 -co COMPRESS=DEFLATE -co OVERVIEWS=AUTO
				-co NUM_THREADS=1)
			gdal_translate "${cog[@]}" raw0.tif big0.tif
			gdal_translate "${cog[@]}" raw1.tif big1.tif
			gdal_translate "${cog[@]}" rawm.tif mask.tif
			cp rawm.tif rawb.tif
			gdaladdo -q -r average rawb.tif 2 4
			gdal_translate -q -of GTiff -co TILED=YES -co BLOCKXSIZE=256 -co BLOCKYSIZE=256 \
				-co COMPRESS=DEFLATE -co INTERLEAVE=BAND -co COPY_SRC_OVERVIEWS=YES \
				rawb.tif band.tif
			rm -f raw*.tif ./*.aux.xml
		) >"$src.tmp/.log" 2>&1; then
			echo "make_warm_cogs: generation failed:" >&2
			cat "$src.tmp/.log" >&2
			return 1
		fi
		rm -f "$src.tmp/.log"
		find "$src.tmp" -exec touch -h -d '2024-01-02 03:04:05 UTC' {} +
		touch "$src.tmp/.done"
		rm -rf "$src"
		mv "$src.tmp" "$src" || return 1
	fi
	mkdir -p "$dest" || return 1
	cp -p "$src"/*.tif "$dest/"
}

# summary: the `warmed K of N files: ...` line of the last tilefs_run
summary() {
	grep -E '^warmed [0-9]+ of [0-9]+ files: ' <<<"$out"
}

# warm_ok WHAT: the last tilefs_run exited 0 and says all N files warmed,
# none failed
warm_ok() {
	local s
	assert_eq "$status" 0 "exit status of $1" || return 1
	s=$(summary)
	[[ $s =~ ^warmed\ ([0-9]+)\ of\ ([0-9]+)\ files:\ .*\ 0\ failed ]] &&
		[ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] ||
		fail "$1: the summary does not say every file was warmed: '$s'"
}

# data_gets: the log's requests for file data (GETs of files, not listings)
data_gets() {
	origin_select 'm == "GET" && u !~ /\/$/'
}

# ls_tsv CACHEDIR [PATTERN]: `tilefs cache ls --json` as lines of
# "CACHED_BYTES<TAB>SIZE<TAB>UNITS<TAB>VERSION<TAB>URL"
ls_tsv() {
	"$TILEFS" cache ls --json --cache-dir "$@" | "$PY" -c 'import json, sys
for o in json.load(sys.stdin):
    print("%d\t%d\t%d\t%s\t%s" % (o["cached_bytes"], o["size"], o["units"], o["version"], o["url"]))'
}

# ls_cached URL_SUFFIX: "BYTES_CACHED SIZE" of the object whose URL ends in
# URL_SUFFIX (as `cache ls` prints it, percent-encoded), per `cache ls`
ls_cached() {
	ls_tsv "${2:-$CACHE}" | awk -F'\t' -v f="$1" \
		'substr($5, length($5) - length(f) + 1) == f { print $1, $2 }'
}

# rio_read MODE MNTDIR LOCALDIR FILE...: read each FILE through the mount
# and locally with rasterio: the same result, or exit 1. MODE: open
# (metadata only), overviews (every overview level, data and masks), level:K
# (overview level K, data), window:X,Y,W,H (data and mask).
rio_read() {
	run_to 120 "$PY" - "$@" <<'PYEOF'
import os
import sys
import numpy as np
import rasterio
from rasterio.windows import Window
mode, mnt, loc = sys.argv[1:4]

def get(path):
    res = []
    if mode == "open":
        with rasterio.open(path) as ds:
            res.append(repr((ds.profile, ds.overviews(1), ds.mask_flag_enums, ds.tags(),
                             ds.block_shapes)))
    elif mode == "overviews" or mode.startswith("level:"):
        with rasterio.open(path) as ds:
            levels = range(len(ds.overviews(1))) if mode == "overviews" else [int(mode[6:])]
        for k in levels:
            with rasterio.open(path, overview_level=k) as ds:
                res.append(ds.read())
                if mode == "overviews":
                    res.append(ds.read_masks())
    elif mode.startswith("window:"):
        w = Window(*map(int, mode[7:].split(",")))
        with rasterio.open(path) as ds:
            res += [ds.read(window=w), ds.read_masks(window=w)]
    return res

bad = 0
for f in sys.argv[4:]:
    a, b = get(os.path.join(mnt, f)), get(os.path.join(loc, f))
    if len(a) != len(b) or not all(
            (x == y) if isinstance(x, str) else np.array_equal(x, y) for x, y in zip(a, b)):
        print("%s %s: the mount and the local file differ" % (mode, f), file=sys.stderr)
        bad = 1
sys.exit(bad)
PYEOF
}

# gets_of WHAT FILE...: for each FILE with GETs of data in the log, a line
# "WHAT, FILE: the GETs"
gets_of() {
	local what=$1 f g
	shift
	sleep 0.3
	for f in "$@"; do
		# a reader's aligned buffers also touch the unselected tiles around
		# the selection: parts of them (slivers) or tiny tiles (masks) within
		# the same 16 KiB are not warmed, so they may be fetched
		g=$(origin_select "m == \"GET\" && u == \"/$f\" && nb > 16384" | tr '\n' ';')
		[ -z "$g" ] || printf '\n%s, %s: %s' "$what" "$f" "$g"
	done
}

# sel_origin: the origin for the selection tests: $T/web/sel holds t256.tif
# (3 bands, pixel interleaved), mask.tif and band.tif
sel_origin() {
	mkdir -p "$T/web/sel"
	cp -p "$SAMPLES/t256.tif" "$T/web/sel/"
	make_warm_cogs "$T/web/big" || return 1
	cp -p "$T/web/big/mask.tif" "$T/web/big/band.tif" "$T/web/sel/"
	origin_start "$T/web"
}

SEL_FILES=(sel/t256.tif sel/mask.tif sel/band.tif)

# warm_sel CACHEDIR OPTIONS...: warm the sel/ prefix with OPTIONS into a
# fresh CACHEDIR, the log holding just that warm; asserts it warmed all
warm_sel() {
	local c=$1
	shift
	rm -rf "$c"
	origin_log_reset
	tilefs_run warm --cache-dir "$c" "$@" "$ORIGIN_URL" sel
	warm_ok "tilefs warm $*"
}

# no_gets_after WHAT: the log holds no GET of file data (HEADs are fine)
no_gets_after() {
	sleep 0.3
	local g
	g=$(data_gets)
	[ -z "$g" ] || fail "$1 sent GETs:" "$g"
}

@test "warm a prefix: all warmed, each unit fetched once; a mount then reads it all without a GET" {
	mkdir -p "$T/web/other"
	cp -a "$SAMPLES" "$T/web/data"
	cp -p "$SAMPLES/t256.tif" "$T/web/other/outside.tif"
	origin_start "$T/web"
	tilefs_run warm --cache-dir "$CACHE" "$ORIGIN_URL" data
	warm_ok "the warm of data/"
	[[ $(summary) == "warmed 7 of 7 files: "* ]] || fail "summary: $(summary)"
	assert_eq "$(sqlite3 "$CACHE/index.db" 'SELECT count(*) FROM seals')" 7 \
		"files the warm sealed (a mount's kernel reads them by passthrough)"
	sleep 0.3
	local outside
	outside=$(origin_select 'u ~ /^\/other\/./')
	[ -z "$outside" ] || fail "the warm of data/ requested files outside it:" "$outside"
	local files=()
	mapfile -t files < <(file_list "$T/web/data" | sed 's|^|data/|')
	run_to 120 "$PY" "$WE" fetched "$ORIGIN_LOG" "$T/web" all -- "${files[@]}" ||
		fail "the warm's GETs are not each file's units, once each (see above)"
	local dups f got size
	dups=$(origin_dup_ranges)
	[ -z "$dups" ] || fail "ranges fetched more than once: $dups"
	for f in "${files[@]}"; do
		got=$(origin_range_bytes "/$f")
		size=$(stat -c %s "$T/web/$f")
		# what the first 64K GET took of the tile it ends in comes again
		[ "$got" -ge "$size" ] && [ "$got" -le $((size + 65536)) ] ||
			fail "$f: $got bytes fetched, size $size (+ at most the 64K first GET)" || return 1
	done

	origin_log_reset
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-dir "$CACHE"
	cmp_tree "$SAMPLES" "$MNT/data" || fail "bytes read through the mount differ"
	for f in t256.tif nested/f32.tif; do
		run_to 60 "$PY" "$TESTS_LIB/rio_compare.py" "$MNT/data/$f" "$SAMPLES/$f" >/dev/null ||
			fail "rasterio reads of $f differ" || return 1
	done
	no_gets_after "reading the warmed files through a mount"
	tilefs_umount "$MNT"
}

@test "warm beside a mount reading the same files: right bytes, no unit fetched twice" {
	make_warm_cogs "$T/web/big"
	cp -p "$SAMPLES/t256.tif" "$T/web/big/"
	origin_start "$T/web"
	# --merge-gap 0: a mount merging two misses skips gaps holding cached
	# units, but cannot see a unit of the gap that the warm has claimed and
	# not yet stored, and would fetch those bytes too (never serving them:
	# the warm's copy is the one kept); that race is not what is tested here
	# --prefetch none: readers fetch what they read, not whole files, so
	# the warm has work left to race them for
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-dir "$CACHE" --merge-gap 0 --prefetch none
	ls -R "$MNT" >/dev/null
	origin_log_reset
	# slow every answer, so the two overlap for a while
	origin_fault 'rate?bps=3000000'
	origin_fault 'delay?ms=150&count=-1'
	local f pids=() names=() rc=0 i
	for f in big0.tif big1.tif t256.tif mask.tif band.tif; do
		(run_to 120 cmp "$T/web/big/$f" "$MNT/big/$f" &&
			run_to 120 "$PY" "$TESTS_LIB/rio_compare.py" "$MNT/big/$f" "$T/web/big/$f" \
				>/dev/null) 3>&- &
		pids+=($!)
		names+=("cmp and rasterio of $f")
	done
	run_to 120 "$PY" "$TESTS_LIB/pread_check.py" --seed 95 --procs 2 --threads 2 --reads 40 \
		"$MNT/big" "$T/web/big" >/dev/null 3>&- &
	pids+=($!)
	names+=("random preads")
	tilefs_run warm -j 4 --cache-dir "$CACHE" "$ORIGIN_URL" big
	for i in "${!pids[@]}"; do
		wait "${pids[$i]}" || {
			echo "${names[$i]} through the mount failed" >&2
			rc=1
		}
	done
	origin_fault clear
	[ "$rc" = 0 ] || fail "reads through the mount beside the warm failed"
	warm_ok "the warm beside the mount"
	[[ $(summary) == "warmed 5 of 5 files: "* ]] || fail "summary: $(summary)"
	# else the readers were done before the warm began: nothing overlapped
	[[ $(summary) != *": 0 B fetched, "* ]] || fail "the warm found everything fetched already"
	echo "# beside the mount: $(summary)" >&3
	sleep 0.3
	cp "$ORIGIN_LOG" "$T/both.log"
	local files=(big/big0.tif big/big1.tif big/t256.tif big/mask.tif big/band.tif)
	run_to 120 "$PY" "$WE" once "$T/both.log" "$T/web" -- "${files[@]}" ||
		fail "the warm and the mount fetched some bytes twice (see above)"
	# everything is cached now, for the mount too
	origin_log_reset
	echo 3 >/proc/sys/vm/drop_caches
	cmp_tree "$T/web/big" "$MNT/big" || fail "bytes read through the mount differ"
	no_gets_after "reading again once the warm and the readers were done"
	tilefs_alive "$MNT"
	tilefs_umount "$MNT"
}

@test "--header-only, --overviews, --ifd N, --window: the GETs are exactly the selected tiles" {
	sel_origin
	local c=$T/c rc=0
	# name of the selection for warm_expect.py | warm options
	local runs=(
		"header|--header-only"
		"overviews|--overviews"
		"ifd:1|--ifd 1"
		"ifd:5|--ifd 5"
		"window:300,500,400,300|--window 300,500,400,300"
		"window:1200,1400,500,500|--window 1200,1400,500,500"
		"overviews window:0,0,1,1 ifd:3|--overviews --window 0,0,1,1 --ifd 3"
	)
	local r sel opts
	for r in "${runs[@]}"; do
		sel=${r%%|*}
		read -r -a opts <<<"${r#*|}"
		warm_sel "$c" "${opts[@]}" || return 1
		sleep 0.3
		# shellcheck disable=SC2086
		run_to 120 "$PY" "$WE" fetched "$ORIGIN_LOG" "$T/web" $sel -- "${SEL_FILES[@]}" || {
			echo "^^^ tilefs warm ${opts[*]}" >&2
			rc=1
		}
		if [ "${opts[*]}" = "--ifd 5" ]; then
			# t256.tif has 3 IFDs: said, and the rest warmed
			[[ $err == *"t256.tif has no IFD 5"* ]] ||
				fail "--ifd 5: no word that t256.tif has no IFD 5: $err" || return 1
		fi
	done
	[ "$rc" = 0 ] || fail "a selective warm fetched other bytes than its tiles (see above)"
}

@test "after --header-only, opening each file through a mount costs no GET" {
	sel_origin
	warm_sel "$CACHE" --header-only
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-dir "$CACHE"
	ls -R "$MNT" >/dev/null
	origin_log_reset
	rio_read open "$MNT" "$T/web" "${SEL_FILES[@]}" || fail "rasterio through the mount differs"
	no_gets_after "opening the files warmed with --header-only"
	tilefs_umount "$MNT"
}

# The mount's own read-ahead (a reader that reads overview after overview
# looks sequential) is off, and so is streaming (--prefetch none: auto would
# fetch the rest of each file once a read misses): what is measured is what
# the warm left out.
@test "after --overviews or --ifd N, reading those levels through a mount costs no GET but slivers" {
	sel_origin
	local bad=""
	warm_sel "$CACHE" --overviews
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-dir "$CACHE" --readahead 0 --prefetch none
	ls -R "$MNT" >/dev/null
	origin_log_reset
	rio_read overviews "$MNT" "$T/web" "${SEL_FILES[@]}" || fail "rasterio through the mount differs"
	bad+=$(gets_of "--overviews, every level" "${SEL_FILES[@]}")
	tilefs_umount "$MNT"
	# IFD 2 of mask.tif is its first overview (IFD 1 is the mask)
	warm_sel "$T/c2" --ifd 2
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-dir "$T/c2" --readahead 0 --prefetch none
	ls -R "$MNT" >/dev/null
	origin_log_reset
	rio_read level:0 "$MNT" "$T/web" sel/mask.tif || fail "rasterio through the mount differs"
	bad+=$(gets_of "--ifd 2, overview 0" sel/mask.tif)
	tilefs_umount "$MNT"
	[ -z "$bad" ] || fail "reading what was warmed sent GETs:$bad"
}

@test "after --window, reading that window (and its mask) through a mount costs no GET but slivers" {
	sel_origin
	local w bad=""
	for w in 300,500,400,300 256,256,256,256; do
		warm_sel "$T/c-$w" --window "$w"
		tilefs_mount "$ORIGIN_URL" "$MNT" --cache-dir "$T/c-$w" --prefetch none
		ls -R "$MNT" >/dev/null
		origin_log_reset
		rio_read "window:$w" "$MNT" "$T/web" "${SEL_FILES[@]}" ||
			fail "rasterio through the mount differs"
		bad+=$(gets_of "--window $w" "${SEL_FILES[@]}")
		tilefs_umount "$MNT"
	done
	[ -z "$bad" ] || fail "reading the warmed window sent GETs:$bad"
}

@test "after a selective warm, reading the whole file through a mount never fetches a warmed unit again" {
	sel_origin
	local r sel opts f rc=0
	# mask.tif's IFD 1 is its mask: tiny tiles between the image's tiles
	for r in "ifd:1|--ifd 1|sel/mask.tif" "overviews|--overviews|sel/band.tif"; do
		IFS='|' read -r sel opts f <<<"$r"
		# shellcheck disable=SC2086
		warm_sel "$T/c-$sel" $opts || return 1
		tilefs_mount "$ORIGIN_URL" "$MNT" --cache-dir "$T/c-$sel"
		ls -R "$MNT" >/dev/null
		origin_log_reset
		run_to 60 cmp "$T/web/$f" "$MNT/$f" || fail "$f read through the mount differs" || return 1
		sleep 0.3
		run_to 60 "$PY" "$WE" again "$ORIGIN_LOG" "$T/web" "$sel" -- "$f" || {
			echo "^^^ after tilefs warm $opts" >&2
			rc=1
		}
		tilefs_umount "$MNT"
	done
	[ "$rc" = 0 ] || fail "a mount fetched warmed units again (see above)"
}

# interrupt_warm SIG RUN OPTIONS...: start a warm in the background, send
# SIG once every file's header is read (the fetching started), wait for it;
# its stdout, stderr and exit status in $T/RUN.out, .err, .rc
interrupt_warm() {
	local sig=$1 run=$2 pid i
	shift 2
	"$TILEFS" warm "$@" >"$T/$run.out" 2>"$T/$run.err" </dev/null 3>&- &
	pid=$!
	TILEFS_EXTRA_PIDS+=("$pid")
	headers_read() {
		[ "$(origin_select 'r == "bytes=0-65535" || m == "HEAD"' | wc -l)" -ge 5 ]
	}
	wait_until "the headers of the warm's 5 files read" headers_read || return 1
	sleep 0.3
	kill -"$sig" "$pid"
	for ((i = 0; i < 600; i++)); do
		pid_alive "$pid" || break
		sleep 0.05
	done
	if pid_alive "$pid"; then
		kill -KILL "$pid"
		fail "tilefs warm still runs 30 s after SIG$sig"
		return 1
	fi
	wait "$pid"
	echo $? >"$T/$run.rc"
	printf '$ tilefs warm %s (SIG%s)\n[exit %s]\n--- stdout ---\n%s\n--- stderr ---\n%s\n' \
		"$*" "$sig" "$(cat "$T/$run.rc")" "$(cat "$T/$run.out")" "$(cat "$T/$run.err")" >&2
}

@test "an interrupted warm (SIGINT, then SIGTERM) exits 130; the rerun fetches only the rest" {
	make_warm_cogs "$T/web/big"
	cp -p "$SAMPLES/t256.tif" "$T/web/big/"
	origin_start "$T/web"
	local run opts=(-j 2 --cache-dir "$CACHE" "$ORIGIN_URL" big)
	origin_fault 'rate?bps=3000000'
	: >"$T/all.log"
	for run in 1:INT 2:TERM; do
		origin_log_reset
		interrupt_warm "${run#*:}" "run${run%%:*}" "${opts[@]}" || return 1
		assert_eq "$(cat "$T/run${run%%:*}.rc")" 130 "exit status after SIG${run#*:}" || return 1
		grep -qE '^warmed [0-4] of 5 files: ' "$T/run${run%%:*}.out" ||
			fail "no summary of a part warmed after SIG${run#*:}" || return 1
		grep -qx 'interrupted: run the same command again to fetch the rest' "$T/run${run%%:*}.out" ||
			fail "no 'interrupted: ...' line after SIG${run#*:}" || return 1
		sleep 0.3
		[ "$(data_gets | grep -cv 'bytes=0-65535')" -gt 0 ] ||
			fail "the warm stopped by SIG${run#*:} fetched no tile at all" || return 1
		cat "$ORIGIN_LOG" >>"$T/all.log"
		echo "# SIG${run#*:}: $(head -n 1 "$T/run${run%%:*}.out")" >&3
	done
	origin_fault clear
	origin_log_reset
	tilefs_run warm "${opts[@]}"
	warm_ok "the warm run again"
	sleep 0.3
	[ "$(data_gets | wc -l)" -gt 0 ] || fail "nothing was left for the third run: the interrupts came too late"
	cat "$ORIGIN_LOG" >>"$T/all.log"
	# across the three runs: one open GET per file, each unit fetched once
	run_to 120 "$PY" "$WE" fetched "$T/all.log" "$T/web" all -- \
		big/big0.tif big/big1.tif big/t256.tif big/mask.tif big/band.tif ||
		fail "the runs fetched some bytes twice or left some out (see above)"
	origin_log_reset
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-dir "$CACHE"
	cmp_tree "$T/web/big" "$MNT/big" || fail "bytes read through the mount differ"
	no_gets_after "reading after the warm was completed"
	tilefs_umount "$MNT"
}

@test "a warm longer than 5 s prints progress lines on stderr, the summary alone on stdout" {
	origin_start "$SAMPLES"
	origin_fault 'rate?bps=700000'
	tilefs_run warm -j 1 --cache-dir "$CACHE" "$ORIGIN_URL"
	origin_fault clear
	warm_ok "the slow warm"
	grep -qE '^warming: [0-9]+ of 7 files, .+ of .+, .+/s, ETA ' <<<"$err" ||
		fail "no 'warming: K of 7 files, ...' progress line on stderr: $err"
	assert_eq "$(wc -l <<<"$out")" 1 "lines on stdout (the summary alone)"
}

# dry_files OUT: the paths of the per-file lines of a dry run, sorted
dry_files() {
	awk -F'\t' 'NF == 2 { print $1 }' <<<"$1" | LC_ALL=C sort
}

@test "--shard 1/3, 2/3, 3/3 split a dozen files disjointly and cover them all; bad shards exit 2" {
	local i s
	mkdir -p "$T/web/many/sub"
	for i in 01 02 03 04 05 06 07 08 09 10; do
		cp -p "$SAMPLES/nested/deeper/small.tif" "$T/web/many/s$i.tif"
	done
	for i in 1 2 3 4; do
		cp -p "$SAMPLES/notes.txt" "$T/web/many/sub/n$i.txt"
	done
	cp -p "$SAMPLES/nested/with space.tif" "$T/web/many/sub/"
	origin_start "$T/web"
	file_list "$T/web" >"$T/all"
	: >"$T/union"
	for s in 1 2 3; do
		origin_log_reset
		tilefs_run warm -n --shard "$s/3" --cache-dir "$T/c$s" "$ORIGIN_URL" many
		assert_eq "$status" 0 "exit status of the dry run of shard $s/3" || return 1
		dry_files "$out" >"$T/shard$s"
		[[ $out == *"dry run: $(wc -l <"$T/shard$s") files,"* ]] ||
			fail "shard $s/3: the total line does not count its files: $out" || return 1
		cat "$T/shard$s" >>"$T/union"
		# each machine touches its own files only
		sleep 0.3
		local stray
		stray=$(awk "$ORIGIN_AWK"'{ parse() } u !~ /\/$/ { print u }' "$ORIGIN_LOG" | sort -u |
			grep -vxF -f <(sed 's|^|/|' "$T/shard$s") || true)
		[ -z "$stray" ] || fail "shard $s/3 requested files of other shards:" "$stray" || return 1
		echo "# shard $s/3: $(wc -l <"$T/shard$s") files" >&3
	done
	LC_ALL=C sort "$T/union" >"$T/union.sorted"
	assert_eq "$(LC_ALL=C sort -u "$T/union" | wc -l)" "$(wc -l <"$T/union")" \
		"files listed by more than one shard: $(LC_ALL=C sort "$T/union" | uniq -d | tr '\n' ' ')" || return 1
	assert_eq "$(cat "$T/union.sorted")" "$(cat "$T/all")" "the files of the 3 shards together"
	# a real warm of one shard fetches its files, and only those
	origin_log_reset
	tilefs_run warm --shard 2/3 --cache-dir "$T/w2" "$ORIGIN_URL" many
	warm_ok "the warm of shard 2/3"
	assert_eq "$(ls_tsv "$T/w2" | awk -F'\t' '$1 == $2' | wc -l)" \
		"$(wc -l <"$T/shard2")" "files fully cached by the warm of shard 2/3"
	for s in 0/3 4/3 1/0 -1/3 x/3 2/3x 3; do
		tilefs_run warm -n --shard "$s" --cache-dir "$T/c" "$ORIGIN_URL" many
		assert_eq "$status" 2 "exit status of --shard $s" || return 1
		[[ $err == *"--shard"* ]] || fail "--shard $s: the message does not name --shard: $err" ||
			return 1
	done
}

# dry_bytes OUT PATH: "B C" of PATH's line in a dry run
dry_bytes() {
	awk -F'\t' -v p="$2" '$1 == p { split($2, a, " "); print a[1], a[5] }' <<<"$1"
}

@test "--dry-run fetches only headers; its byte counts are what the warm then fetches" {
	origin_start "$SAMPLES"
	tilefs_run warm -n --cache-dir "$CACHE" "$ORIGIN_URL"
	assert_eq "$status" 0 "exit status of the dry run"
	local dry=$out
	sleep 0.3
	local other
	other=$(data_gets | grep -v '"bytes=0-65535"' || true)
	[ -z "$other" ] || fail "the dry run fetched more than the headers:" "$other"
	assert_eq "$(data_gets | wc -l)" 7 "header GETs of the dry run (one per file)"
	local f b c size tb=0 tc=0
	while IFS= read -r f; do
		read -r b c < <(dry_bytes "$dry" "$f")
		size=$(stat -c %s "$SAMPLES/$f")
		[ -n "$b" ] || fail "no dry-run line for $f: $dry" || return 1
		assert_eq "$((b + c))" "$size" "$f: bytes to fetch + cached" || return 1
		tb=$((tb + b))
		tc=$((tc + c))
	done < <(file_list "$SAMPLES")
	[[ $dry == *"dry run: 7 files, $tb bytes to fetch ("*"), $tc bytes cached ("* ]] ||
		fail "the total line, expected $tb to fetch and $tc cached: $dry"

	origin_log_reset
	tilefs_run warm --cache-dir "$CACHE" "$ORIGIN_URL"
	warm_ok "the warm after the dry run"
	sleep 0.3
	assert_eq "$(origin_select 'r ~ /^bytes=0-/' | wc -l)" 0 "GETs at byte 0 (the dry run read the headers)"
	while IFS= read -r f; do
		read -r b c < <(dry_bytes "$dry" "$f")
		assert_eq "$(origin_range_bytes "/$f")" "$b" "bytes the warm fetched of $f (the dry run said)" ||
			return 1
	done < <(file_list "$SAMPLES")
	local human
	human=$(sed -n 's/.* bytes to fetch (\([^)]*\)).*/\1/p' <<<"$dry")
	[[ $(summary) == *": $human fetched, "* ]] || fail "the warm's summary vs the dry run's $human: $(summary)"

	tilefs_run warm -n --cache-dir "$CACHE" "$ORIGIN_URL"
	assert_eq "$status" 0 "exit status of a dry run once all is cached"
	[[ $out == *"dry run: 7 files, 0 bytes to fetch (0 B), $((tb + tc)) bytes cached ("* ]] ||
		fail "dry run once all is cached: $out"
}

@test "--dry-run of a selection: its byte counts are what the warm of it then fetches" {
	sel_origin
	local opts=(--overviews --window 300,500,400,300) f b c
	origin_log_reset
	tilefs_run warm -n --cache-dir "$CACHE" "${opts[@]}" "$ORIGIN_URL" sel
	assert_eq "$status" 0 "exit status of the dry run"
	local dry=$out
	sleep 0.3
	[ -z "$(data_gets | grep -v '"bytes=0-65535"')" ] ||
		fail "the dry run fetched more than the headers:" "$(data_gets)"
	origin_log_reset
	tilefs_run warm --cache-dir "$CACHE" "${opts[@]}" "$ORIGIN_URL" sel
	warm_ok "the warm after the dry run"
	sleep 0.3
	for f in "${SEL_FILES[@]}"; do
		read -r b c < <(dry_bytes "$dry" "$f")
		[ -n "$b" ] && [ "$b" -gt 0 ] || fail "dry run: nothing to fetch for $f: $dry" || return 1
		assert_eq "$(origin_range_bytes "/$f")" "$b" "bytes the warm fetched of $f (the dry run said)" ||
			return 1
	done
}

@test "an unreachable origin: exit 1, the message names the source and the origin" {
	tilefs_run warm --retries 0 --cache-dir "$CACHE" http://127.0.0.1:1/
	assert_eq "$status" 1 "exit status with an unreachable origin"
	[[ $err == *"tilefs: "*"http://127.0.0.1:1/"* ]] || fail "the message does not name the source: $err"
	[[ $err == *"origin"* ]] || fail "the message does not say to check the origin: $err"
	[ -z "$(summary)" ] || fail "a summary when nothing could be listed: $out"
	# files named in a list: each named as failed
	printf '%s\n' a.tif b/c.tif >"$T/list"
	tilefs_run warm --retries 0 --cache-dir "$CACHE" --from-file "$T/list" http://127.0.0.1:1/
	assert_eq "$status" 1 "exit status with an unreachable origin and a list"
	[ "$(grep -c 'tilefs: warm: a.tif: ' <<<"$err")" = 1 ] &&
		[ "$(grep -c 'tilefs: warm: b/c.tif: ' <<<"$err")" = 1 ] ||
		fail "each file of the list is not named once: $err"
}

@test "--from-file with a missing object: it is named once, the others are warmed, exit 1" {
	origin_start "$SAMPLES"
	printf '%s\n' t256.tif missing.tif "${ORIGIN_URL}nested/f32.tif" "nested/with space.tif" \
		>"$T/list"
	tilefs_run warm --retries 0 --cache-dir "$CACHE" --from-file "$T/list" "$ORIGIN_URL"
	assert_eq "$status" 1 "exit status with a missing object"
	assert_eq "$(grep -c 'missing.tif' <<<"$err")" 1 "lines of stderr naming missing.tif"
	grep -qx 'tilefs: warm: missing.tif: not found on the origin' <<<"$err" ||
		fail "no 'tilefs: warm: missing.tif: not found on the origin' line: $err"
	[[ $(summary) == "warmed 3 of 4 files: "*", 1 failed"* ]] || fail "summary: $(summary)"
	local f c s
	for f in t256.tif nested/f32.tif "nested/with%20space.tif"; do
		read -r c s < <(ls_cached "/$f")
		[ -n "$s" ] && [ "$c" = "$s" ] || fail "$f is not fully cached: '$c' of '$s'" || return 1
	done
	sleep 0.3
	assert_eq "$(origin_select 'u ~ /\/$/')" "" "listings with --from-file (no listing wanted)"
}

@test "a selection over --cache-size: refused, no data GET; --partial warms the files that fit" {
	origin_start "$SAMPLES"
	tilefs_run warm --cache-dir "$CACHE" --cache-size 2M "$ORIGIN_URL"
	assert_eq "$status" 1 "exit status of a selection over --cache-size"
	[[ $err == *"--cache-size"* && $err == *"--partial"* ]] ||
		fail "the message does not say to give a larger --cache-size or --partial: $err"
	sleep 0.3
	local other
	other=$(data_gets | grep -v '"bytes=0-65535"' || true)
	[ -z "$other" ] || fail "a refused warm fetched data:" "$other"

	origin_log_reset
	tilefs_run warm --cache-dir "$CACHE" --cache-size 2M --partial "$ORIGIN_URL"
	assert_eq "$status" 0 "exit status with --partial"
	local s k n left
	s=$(summary)
	[[ $s =~ ^warmed\ ([0-9]+)\ of\ ([0-9]+)\ files:\ .*\ 0\ failed,\ ([0-9]+)\ left\ out\ \(--partial\) ]] ||
		fail "--partial: the summary does not say how many were left out: '$s'" || return 1
	k=${BASH_REMATCH[1]} n=${BASH_REMATCH[2]} left=${BASH_REMATCH[3]}
	assert_eq "$k" "$n" "files warmed of those kept"
	assert_eq "$((n + left))" 7 "files kept + left out"
	[ "$left" -gt 0 ] && [ "$k" -gt 0 ] || fail "--partial: $k warmed, $left left out"
	# the warmed ones are complete, and fit
	local complete total
	complete=$(ls_tsv "$CACHE" | awk -F'\t' '$1 == $2' | wc -l)
	total=$(ls_tsv "$CACHE" | awk -F'\t' '$1 == $2 { n += $2 } END { print n + 0 }')
	assert_eq "$complete" "$k" "files fully cached after --partial (cache ls)"
	[ "$total" -le $((2 * 1048576)) ] || fail "the complete files take $total bytes > 2M"
	[ "$(data_bytes "$CACHE")" -le $((3 * 1048576)) ] || fail "data-* over 2M + 1MiB"
}

# warm_onto_small_disk: warm all of $SAMPLES into $T/disk/cache, on a 2 MB
# tmpfs that cannot hold it (--cache-size allows it): it must exit 1
warm_onto_small_disk() {
	origin_start "$SAMPLES"
	mkdir -p "$T/disk"
	mount -t tmpfs -o size=2m tmpfs "$T/disk" && TILEFS_EXTRA_MOUNTS+=("$T/disk") ||
		fail "cannot mount a tmpfs" || return 1
	tilefs_run warm --cache-dir "$T/disk/cache" --cache-size 100M "$ORIGIN_URL"
	assert_eq "$status" 1 "exit status with the cache disk full"
}

@test "a cache dir on a full disk: exit 1 naming the files; a mount then reads right bytes" {
	warm_onto_small_disk || return 1
	grep -qE '^tilefs: warm: .+: no room left on the cache disk$' <<<"$err" ||
		fail "no 'tilefs: warm: PATH: no room left on the cache disk' line: $err"
	local named
	named=$(sed -n 's/^tilefs: warm: \(.*\): no room left on the cache disk$/\1/p' <<<"$err")
	assert_eq "$(sort <<<"$named" | uniq -d)" "" "files named twice"
	local f
	while IFS= read -r f; do
		[ -f "$SAMPLES/$f" ] || fail "'$f' is not a file of the source" || return 1
	done <<<"$named"
	[[ $(summary) == *", $(wc -l <<<"$named") failed"* ]] || fail "summary: $(summary)"
	# a mount on that cache dir serves right bytes
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-dir "$T/disk/cache" --cache-size 100M
	cmp_tree "$SAMPLES" "$MNT" || fail "bytes read through the mount differ"
	run_to 60 "$PY" "$TESTS_LIB/rio_compare.py" "$MNT/t512.tif" "$SAMPLES/t512.tif" >/dev/null ||
		fail "rasterio reads of t512.tif differ"
	tilefs_alive "$MNT"
	tilefs_umount "$MNT"
}

@test "a cache disk that fills up: a file the warm does not name as failed is cached whole" {
	warm_onto_small_disk || return 1
	local f c s bad=""
	while IFS= read -r f; do
		grep -qF "tilefs: warm: $f: " <<<"$err" && continue
		read -r c s < <(ls_cached "/${f// /%20}" "$T/disk/cache")
		[ -n "$s" ] && [ "$c" = "$s" ] || bad+=" $f ($c of $s bytes cached)"
	done < <(file_list "$SAMPLES")
	[ -z "$bad" ] || fail "not named as failed, yet not cached whole:$bad"
}

@test "usage: unknown option, bad --window exit 2 with a message; --help exits 0" {
	tilefs_run warm --help
	assert_eq "$status" 0 "exit status of warm --help"
	local o
	for o in --header-only --overviews --ifd --window --shard --dry-run --partial --from-file --jobs; do
		[[ $out == *"$o"* ]] || fail "warm --help does not mention $o" || return 1
	done
	tilefs_run warm --no-such-option http://127.0.0.1:1/
	assert_eq "$status" 2 "exit status of an unknown option"
	[[ $err1 == "tilefs: "* && $err == *"--no-such-option"* && $err == *"--help"* ]] ||
		fail "message for an unknown option: $err"
	tilefs_run warm
	assert_eq "$status" 2 "exit status without a SOURCE"
	[[ $err1 == "tilefs: "* && $err == *"--help"* ]] || fail "message without a SOURCE: $err"
	local w
	for w in 1,2,3 0,0,0,5 0,0,5,0 a,b,c,d -1,0,5,5 1.5,2,3,4 1,2,3,4x ""; do
		tilefs_run warm -n --retries 0 --cache-dir "$CACHE" --window "$w" http://127.0.0.1:1/
		assert_eq "$status" 2 "exit status of --window '$w'" || return 1
		[[ $err1 == "tilefs: "*"--window"* && $err == *"--help"* ]] ||
			fail "message for --window '$w': $err" || return 1
	done
	tilefs_run warm -n --retries 0 --cache-dir "$CACHE" --jobs 0 http://127.0.0.1:1/
	assert_eq "$status" 2 "exit status of --jobs 0"
}

@test "usage: --window with a negative width, height or offset exits 2" {
	local w
	for w in 0,0,-5,10 0,0,10,-5 0,-1,10,10 10,-300,100,100; do
		tilefs_run warm -n --retries 0 --cache-dir "$CACHE" --window "$w" http://127.0.0.1:1/
		assert_eq "$status" 2 "exit status of --window $w" || return 1
		[[ $err == *"--window"* ]] || fail "message for --window $w: $err" || return 1
	done
}

@test "the summary: a cold warm has nothing 'already cached'; a rerun fetches nothing" {
	origin_start "$SAMPLES"
	tilefs_run warm --cache-dir "$CACHE" "$ORIGIN_URL"
	warm_ok "the warm into an empty cache dir"
	# 4767464 bytes in all
	[[ $(summary) == "warmed 7 of 7 files: 4.5 MiB fetched, 0 B already cached, 0 failed, in "* ]] ||
		fail "a warm into an empty cache dir, expected '4.5 MiB fetched, 0 B already cached': $(summary)"
	tilefs_run warm --cache-dir "$CACHE" "$ORIGIN_URL"
	warm_ok "the warm run again"
	[[ $(summary) == "warmed 7 of 7 files: 0 B fetched, 4.5 MiB already cached, 0 failed, in "* ]] ||
		fail "the warm run again, expected '0 B fetched, 4.5 MiB already cached': $(summary)"
}

@test "ranges answered from another offset: warm fails those files, keeps none of it; a mount reads right" {
	origin_start "$SAMPLES"
	# every ranged answer starts at offset 0: right only for GETs from there
	origin_fault 'shiftrange?count=-1'
	tilefs_run warm --cache-dir "$CACHE" --retries 1 "$ORIGIN_URL"
	assert_eq "$status" 1 "exit status with ranges shifted"
	[[ $err == *"a range other than the one asked for"* ]] || fail "the reason is not given: $err"
	origin_fault clear
	# nothing the warm kept is wrong: a mount on its cache dir reads right bytes
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-dir "$CACHE"
	cmp_tree "$SAMPLES" "$MNT" || fail "bytes read through the mount differ"
	tilefs_umount "$MNT"
}

@test "warm MOUNTPOINT: the mount's source into its cache dir; a read through the mount then sends no GET" {
	mkdir -p "$T/web/other"
	cp -a "$SAMPLES" "$T/web/data"
	cp -p "$SAMPLES/t256.tif" "$T/web/other/outside.tif"
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-dir "$CACHE"
	origin_log_reset
	# a path in the mount: that directory of its source
	tilefs_run warm "$MNT/data"
	warm_ok "the warm of $MNT/data"
	[[ $(summary) == "warmed 7 of 7 files: "* ]] || fail "summary: $(summary)"
	[[ $err == *"the mount at $MNT: $ORIGIN_URL"*" into $CACHE"* ]] || fail "stderr: $err"
	sleep 0.3
	local outside
	outside=$(origin_select 'u ~ /^\/other\/./')
	[ -z "$outside" ] || fail "the warm of $MNT/data requested files outside it:" "$outside"
	origin_log_reset
	cmp_tree "$SAMPLES" "$MNT/data" || fail "bytes read through the mount differ"
	no_gets_after "reading the files warmed through the mountpoint"
	# the mountpoint with PATHS, relative or absolute under it
	origin_log_reset
	tilefs_run warm "$MNT" other "$MNT/data/t256.tif"
	warm_ok "the warm of $MNT other $MNT/data/t256.tif"
	[[ $(summary) == "warmed 2 of 2 files: "* ]] || fail "summary: $(summary)"
	origin_log_reset
	cmp "$T/web/other/outside.tif" "$MNT/other/outside.tif"
	no_gets_after "reading other/outside.tif warmed through the mountpoint"
	tilefs_run warm "$MNT" /elsewhere/x.tif
	assert_eq "$status" 2 "exit of a warm of a path outside the mount"
	tilefs_umount "$MNT"
}

@test "warm of a path in no tilefs mount: exit 2, says SOURCE is neither a URL nor a mount" {
	mkdir -p "$T/plain"
	tilefs_run warm --cache-dir "$CACHE" "$T/plain"
	assert_eq "$status" 2 "exit of a warm of a plain dir"
	[[ $err == *"SOURCE '$T/plain' is neither a URL nor a path in a tilefs mount"* ]] ||
		fail "stderr: $err"
}
