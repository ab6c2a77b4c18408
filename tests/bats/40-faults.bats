#!/usr/bin/env bats
# Origin faults: 5xx and 429 answers, truncated bodies, an origin that keeps
# failing or is gone. Reads either succeed with the right bytes (after
# `retrying`) or fail with EIO (after `giving up`); the daemon never dies.

bats_require_minimum_version 1.5.0
load ../lib/tilefs

setup() {
	tilefs_setup
	origin_start "$SAMPLES"
	MNT=$T/mnt
}

teardown() {
	tilefs_teardown
}

# read_errno PATH: reads PATH to the end in python; prints ok or the errno.
read_errno() {
	run_to 120 "$PY" - "$1" <<'EOF'
import os, sys
try:
    fd = os.open(sys.argv[1], os.O_RDONLY)
    try:
        off = 0
        while True:
            b = os.pread(fd, 1 << 20, off)
            if not b:
                break
            off += len(b)
    finally:
        os.close(fd)
    print("ok")
except OSError as e:
    print(e.errno)
EOF
}

log_has() {
	grep -q -- "$1" "$TILEFS_LOG" || {
		echo "--- tilefs log ---" >&2
		tail -n 40 "$TILEFS_LOG" >&2
		fail "the log does not say '$1'"
	}
}

# transient FAULT-QUERY CODE: inject a fault for the next data requests; the
# read of a not yet cached file succeeds with the right bytes.
transient() {
	local q=$1 f=$2
	tilefs_mount "$ORIGIN_URL" "$MNT" --log-level info
	ls -R "$MNT" >/dev/null
	origin_fault "$q"
	run_to 120 cmp "$SAMPLES/$f" "$MNT/$f"
	tilefs_alive "$MNT"
	log_has retrying
	grep -q ' warn: .*retrying' "$TILEFS_LOG" || fail "'retrying' is not logged at warn"
}

@test "503 three times: the read succeeds and the log says retrying" {
	transient 'status?code=503&count=3' t256.tif
	assert_eq "$(origin_select 'st == 503' | wc -l)" 3 "503 answers logged by the origin"
	cmp_tree "$SAMPLES" "$MNT"
	tilefs_umount "$MNT"
}

@test "500 twice: the read succeeds and the log says retrying" {
	transient 'status?code=500&count=2' nested/f32.tif
	assert_eq "$(origin_select 'st == 500' | wc -l)" 2 "500 answers logged by the origin"
	tilefs_umount "$MNT"
}

@test "429 with Retry-After twice: the read succeeds and the log says retrying" {
	transient 'status?code=429&count=2&retry_after=1' t512.tif
	assert_eq "$(origin_select 'st == 429' | wc -l)" 2 "429 answers logged by the origin"
	tilefs_umount "$MNT"
}

@test "bodies truncated mid-way twice: the read gets the full, right bytes" {
	transient 'truncate?bytes=1000&count=2' random.bin
	assert_eq "$(origin_select 'nb == 1000' | wc -l)" 2 "truncated answers sent by the origin"
	cmp_tree "$SAMPLES" "$MNT"
	tilefs_umount "$MNT"
}

@test "a fault on the revalidating HEAD (--ttl 0) is retried" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --ttl 0 --log-level info
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	origin_log_reset
	origin_fault 'status?code=503&count=2&path=/t256.tif'
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	assert_eq "$(origin_select 'st == 503' | wc -l)" 2 "503 answers"
	log_has retrying
	tilefs_umount "$MNT"
}

@test "503 for longer than --retries 2: EIO, 'giving up' logged, the daemon lives on" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --retries 2
	ls -R "$MNT" >/dev/null
	origin_fault 'status?code=503&count=-1'
	SECONDS=0
	run_to 120 cat "$MNT/t512.tif" >/dev/null 2>"$T/cat.err" && fail "cat succeeded against a failing origin"
	grep -q "Input/output error" "$T/cat.err" || fail "cat said: $(cat "$T/cat.err")"
	assert_eq "$(read_errno "$MNT/nested/f32.tif")" 5 "errno of a read from python"
	[ "$SECONDS" -lt 60 ] || fail "giving up took ${SECONDS}s with --retries 2"
	tilefs_alive "$MNT"
	log_has "giving up"
	grep "giving up" "$TILEFS_LOG" | grep -q "t512.tif" || fail "'giving up' line does not name the object"
	grep "giving up" "$TILEFS_LOG" | grep -q "HTTP 503" || fail "'giving up' line does not say HTTP 503"
	grep -q ' error: .*giving up' "$TILEFS_LOG" || fail "'giving up' is not logged at error"
	local n503
	n503=$(origin_select 'u == "/t512.tif" && st == 503' | wc -l)
	[ "$n503" -ge 3 ] || fail "only $n503 attempts for t512.tif with --retries 2"
	origin_fault clear
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"
	cmp "$SAMPLES/nested/f32.tif" "$MNT/nested/f32.tif"
	tilefs_umount "$MNT"
}

@test "origin stopped: EIO, daemon alive, still mounted; cached files still read; back after restart" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --retries 1
	ls -R "$MNT" >/dev/null
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	local port=$ORIGIN_PORT
	origin_stop
	SECONDS=0
	run_to 120 cat "$MNT/t512.tif" >/dev/null 2>"$T/cat.err" && fail "cat succeeded with the origin stopped"
	grep -q "Input/output error" "$T/cat.err" || fail "cat said: $(cat "$T/cat.err")"
	assert_eq "$(read_errno "$MNT/notes.txt")" 5 "errno from python"
	[ "$SECONDS" -lt 60 ] || fail "failing took ${SECONDS}s with --retries 1"
	tilefs_alive "$MNT"
	log_has "giving up"
	grep "giving up" "$TILEFS_LOG" | grep -qi "connect" || fail "'giving up' line does not say connection"
	# a file read before the origin went away is served from the cache (--ttl 60)
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	ORIGIN_WANT_PORT=$port origin_start "$SAMPLES"
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"
	cmp "$SAMPLES/notes.txt" "$MNT/notes.txt"
	tilefs_umount "$MNT"
}

# took_ms START_NS: milliseconds since START_NS (date +%s%N)
took_ms() {
	echo $((($(date +%s%N) - $1) / 1000000))
}

@test "origin down: what was read is served at once (files, listings), the rest fails fast; back: a changed file reads new" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --ttl 2 --log-level info --metrics-file "$T/m.prom"
	ls -R "$MNT" >/dev/null
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	cmp "$SAMPLES/notes.txt" "$MNT/notes.txt"
	local port=$ORIGIN_PORT
	origin_stop
	sleep 3	# past --ttl: every open and listing would ask the origin
	local t0
	# the first open meets the outage: one attempt, then the version cached
	t0=$(date +%s%N)
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	[ "$(took_ms "$t0")" -lt 5000 ] || fail "the first cached open took $(took_ms "$t0") ms"
	sleep 3
	for f in t256.tif notes.txt; do
		t0=$(date +%s%N)
		cmp "$SAMPLES/$f" "$MNT/$f"
		[ "$(took_ms "$t0")" -lt 5000 ] || fail "$f took $(took_ms "$t0") ms with the origin down"
	done
	t0=$(date +%s%N)
	ls -R "$MNT" >"$T/ls.out" || fail "ls -R failed with the origin down"
	[ "$(took_ms "$t0")" -lt 5000 ] || fail "ls -R took $(took_ms "$t0") ms with the origin down"
	grep -q t512.tif "$T/ls.out" || fail "the last listing is not shown: $(cat "$T/ls.out")"
	# never cached: EIO, fast (no retries while the origin is known down)
	t0=$(date +%s%N)
	! cat "$MNT/t512.tif" >/dev/null 2>"$T/cat.err" || fail "an uncached file read with the origin down"
	grep -q "Input/output error" "$T/cat.err" || fail "cat said: $(cat "$T/cat.err")"
	[ "$(took_ms "$t0")" -lt 15000 ] || fail "the uncached file took $(took_ms "$t0") ms to fail"
	assert_eq "$(grep -c 'origin unreachable' "$TILEFS_LOG")" 1 "'origin unreachable' lines"
	wait_until "tilefs_origin_up 0" metric_is "$T/m.prom" tilefs_origin_up 0
	wait_until "stale answers counted" metric_ge "$T/m.prom" tilefs_stale_answers_total 2
	tilefs_alive "$MNT"
	# back, with t256.tif changed meanwhile: read as its new version
	same_size_rewrite "$SAMPLES/t256.tif" "$T/t256.new"
	cp "$T/t256.new" "$SAMPLES/t256.tif"
	ORIGIN_WANT_PORT=$port origin_start "$SAMPLES"
	wait_until "the changed file read as its new version" cmp -s "$T/t256.new" "$MNT/t256.tif"
	grep -q 'origin answers again' "$TILEFS_LOG" || fail "the log does not say the origin is back"
	wait_until "tilefs_origin_up 1" metric_is "$T/m.prom" tilefs_origin_up 1
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"
	tilefs_umount "$MNT"
}

@test "a 404 is an answer, not an outage: a file deleted at the origin is not served from the cache" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --ttl 1 --log-level info
	cmp "$SAMPLES/notes.txt" "$MNT/notes.txt"
	mv "$SAMPLES/notes.txt" "$T/notes.gone"
	sleep 2
	! cat "$MNT/notes.txt" >/dev/null 2>"$T/cat.err" || fail "a file deleted at the origin was served"
	! grep -q 'origin unreachable' "$TILEFS_LOG" || fail "a 404 was taken for an outage"
	tilefs_umount "$MNT"
}

@test "a burst of concurrent reads during intermittent 503s gets the right bytes" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --block-size 64K --log-level info
	ls -R "$MNT" >/dev/null
	origin_fault 'status?code=503&count=4'
	run_to 120 "$PY" "$TESTS_LIB/pread_check.py" --seed 11 --procs 3 --threads 3 \
		--reads 60 "$MNT" "$SAMPLES"
	assert_eq "$(origin_select 'st == 503' | wc -l)" 4 "503 answers"
	tilefs_umount "$MNT"
	# a fresh cache, so that there is something left to fetch
	tilefs_mount "$ORIGIN_URL" "$MNT" --block-size 64K --log-level info --cache-dir "$T/cache2"
	origin_fault 'truncate?bytes=5000&count=4'
	run_to 120 "$PY" "$TESTS_LIB/pread_check.py" --seed 12 --procs 3 --threads 3 \
		--reads 60 "$MNT" "$SAMPLES"
	[ "$(origin_select 'nb == 5000' | wc -l)" -ge 1 ] || fail "no truncated answer was sent"
	tilefs_alive "$MNT"
	log_has retrying
	tilefs_umount "$MNT"
}

@test "origin ignores Range (200 with the whole body): right bytes or EIO, never wrong bytes" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --block-size 64K --retries 1
	ls -R "$MNT" >/dev/null
	origin_fault 'norange?count=-1&path=/random.bin'
	local rc=0
	run_to 120 cmp "$SAMPLES/random.bin" "$MNT/random.bin" 2>"$T/cmp.err" || rc=$?
	if [ "$rc" != 0 ]; then
		grep -q "Input/output error" "$T/cmp.err" || fail "wrong bytes, not EIO: $(cat "$T/cmp.err")"
	fi
	# a file whose Range is honoured meanwhile is fine
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	origin_fault clear
	cmp "$SAMPLES/random.bin" "$MNT/random.bin"
	tilefs_alive "$MNT"
	tilefs_umount "$MNT"
}

@test "a 206 carrying another range than the one asked for: EIO, never wrong bytes, none cached" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --retries 1 --block-size 64K
	# every range comes back from offset 0: right only for the open's
	# first block, which starts there
	origin_fault 'shiftrange?count=-1'
	assert_eq "$(read_errno "$MNT/random.bin")" 5 "read while ranges come back shifted"
	log_has "a range other than the one asked for"
	origin_fault clear
	cmp "$SAMPLES/random.bin" "$MNT/random.bin"
	tilefs_umount "$MNT"
	# and nothing wrong was kept: a fresh mount on the same cache reads right
	tilefs_mount "$ORIGIN_URL" "$MNT" --block-size 64K
	cmp "$SAMPLES/random.bin" "$MNT/random.bin"
}

@test "a body cut short, then a 200 with the whole object for the resumed range: the right bytes" {
	head -c 100000 "$SAMPLES/random.bin" > "$SAMPLES/small.bin"
	tilefs_mount "$ORIGIN_URL" "$MNT"
	# first answer: the whole file, cut after 30000 bytes; the resume of
	# bytes 30000- is then answered with the whole file again (200)
	origin_fault 'norange?count=2&path=/small.bin'
	origin_fault 'truncate?bytes=30000&count=1&path=/small.bin'
	cmp "$SAMPLES/small.bin" "$MNT/small.bin"
	assert_eq "$(stat -c %s "$MNT/small.bin")" 100000 "size"
	log_has "retrying"
}

@test "answers without the ETag of the version being read: an error, never another version's bytes" {
	# a tiled TIFF: read with direct I/O until cached whole, so the kernel
	# reads no further ahead than the reader; --prefetch none: the tiles are
	# fetched after the change (the data would fit the cache, so auto
	# would stream them at the first read)
	cp "$SAMPLES/t512.tif" "$SAMPLES/big.tif"
	tilefs_mount "$ORIGIN_URL" "$MNT" --prefetch none
	run "$PY" - "$MNT/big.tif" "$SAMPLES/big.tif" "$ORIGIN_URL" <<'PY'
import os, sys, urllib.request
mnt, src, url = sys.argv[1:]
old = open(src, "rb").read()
with open(mnt, "rb") as f:
    head = f.read(4096)
    # another version of the same size, every byte changed; from now on
    # the origin ignores If-Match and names no ETag
    new = bytes(b ^ 0xFF for b in old)
    with open(src + ".tmp", "wb") as out:
        out.write(new)
    os.rename(src + ".tmp", src)
    urllib.request.urlopen(url + "_fault/novalidators?count=-1&path=/big.tif").read()
    try:
        rest = f.read()
    except OSError as e:
        print("error", e.errno)
        sys.exit(0)
got = head + rest
print("old" if got == old else "new" if got == new else "mixed: %d of %d bytes old" % (
    sum(1 for a, b in zip(got, old) if a == b), len(old)))
PY
	assert_eq "$status" 0 "reader: $output"
	[[ $output == "error "* ]] || fail "the read gave: $output"
	tilefs_alive "$MNT"
}

@test "503 twice on the directory listing at mount time, --retries 3: the mount succeeds" {
	origin_fault 'status?code=503&count=2&path=/'
	tilefs_mount "$ORIGIN_URL" "$MNT" --log-level info --retries 3
	assert_eq "$(origin_select 'st == 503' | wc -l)" 2 "503 answers"
	assert_eq "$(ls "$MNT" | LC_ALL=C sort | tr '\n' ' ')" "nested notes.txt random.bin t256.tif t512.tif " "ls"
	tilefs_umount "$MNT"
}

@test "a file deleted at the origin after the listing: open fails cleanly, 404 is not retried" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --log-level info
	ls -R "$MNT" >/dev/null
	rm "$SAMPLES/t512.tif"
	origin_log_reset
	local e
	e=$(read_errno "$MNT/t512.tif")
	[ "$e" = 2 ] || [ "$e" = 5 ] || fail "reading a deleted file: errno $e, want ENOENT (2) or EIO (5)"
	assert_eq "$(origin_select 'u == "/t512.tif" && st == 404' | wc -l)" 1 "GETs answered 404 (a 404 is final)"
	tilefs_alive "$MNT"
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	tilefs_umount "$MNT"
}

@test "cache dir on a full disk (3 MB tmpfs, --cache-size 100M): reads still right (DESIGN)" {
	mkdir -p "$T/small"
	mount -t tmpfs -o size=3m tmpfs "$T/small"
	TILEFS_EXTRA_MOUNTS+=("$T/small")
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-dir "$T/small/cache" --cache-size 100M
	cmp_tree "$SAMPLES" "$MNT"
	run_to 60 "$PY" "$TESTS_LIB/rio_compare.py" "$MNT/t512.tif" "$SAMPLES/t512.tif"
	cmp_tree "$SAMPLES" "$MNT"
	tilefs_alive "$MNT"
	tilefs_umount "$MNT"
}

@test "index.db replaced by garbage while unmounted: the mount rebuilds it, reads right (DESIGN)" {
	tilefs_mount "$ORIGIN_URL" "$MNT"
	cmp_tree "$SAMPLES" "$MNT"
	tilefs_umount "$MNT"
	rm -f "$T/cache/index.db-wal" "$T/cache/index.db-shm"
	head -c 20000 /dev/urandom >"$T/cache/index.db"
	tilefs_mount "$ORIGIN_URL" "$MNT"
	cmp_tree "$SAMPLES" "$MNT"
	tilefs_umount "$MNT"
	assert_eq "$(sqlite3 "$T/cache/index.db" 'pragma integrity_check;')" ok "rebuilt index.db"
}

# The LD_PRELOAD library that makes I/O calls on chosen files fail with EIO
# (tests/lib/fault_shim.c), built by make beside tilefs.
fault_shim() {
	FAULT_SHIM=$(dirname "$TILEFS")/fault_shim.so
	[ -f "$FAULT_SHIM" ] || fail "no $FAULT_SHIM (run make first)"
	# a sanitizer runtime wants to be loaded first; the shim comes before it
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
}

# faulty_reads SEED MATCH PERCENT: a mount on an empty cache whose I/O calls
# on the files MATCH names fail, PERCENT of them (the shim's other settings
# from the caller's environment); every sample read right through it, twice,
# the second time on a dropped page cache.
faulty_reads() {
	local seed=$1
	rm -rf "$T/cache"
	LD_PRELOAD=$FAULT_SHIM TILEFS_FAULT_MATCH=$2 TILEFS_FAULT_PERCENT=$3 \
		TILEFS_FAULT_SEED=$seed TILEFS_FAULT_LOG=$T/faults \
		tilefs_mount "$ORIGIN_URL" "$MNT" --log-level info
	cmp_tree "$SAMPLES" "$MNT" || fail "seed $seed: bytes differ from the origin's"
	echo 3 >/proc/sys/vm/drop_caches
	cmp_tree "$SAMPLES" "$MNT" || fail "seed $seed: bytes differ the second time"
	tilefs_alive "$MNT"
	tilefs_umount "$MNT"
	# one process: a claim it could not release in the index is not
	# waited for by its own readers
	! grep "for another process's fetch" "$TILEFS_LOG" ||
		fail "seed $seed: a reader waited on a claim of its own process"
}

# origin_read_all: the 206 bodies the origin sent add up to every byte of
# the sample set (each file read whole went to the origin).
origin_read_all() {
	local total
	total=$(find "$SAMPLES" -type f ! -name '.*' -printf '%s\n' | awk '{ n += $1 } END { print n }')
	[ "$(origin_range_bytes)" -ge "$total" ] ||
		fail "the origin sent $(origin_range_bytes) bytes for $total bytes read"
}

@test "3% of the I/O calls on index.db fail with EIO: every mount comes up and reads right" {
	fault_shim
	local seed
	for seed in 1 2 3; do
		faulty_reads "$seed" index.db 3
		! grep "reading every file from the origin" "$TILEFS_LOG" ||
			fail "seed $seed: the open was not tried again until it worked"
		tilefs_run cache stat --cache-dir "$T/cache"
		[[ $status == 0 && $out == *"units: "[1-9]* ]] ||
			fail "seed $seed: nothing was cached: $out"
	done
	[ -s "$T/faults" ] || fail "the shim made no call fail"
	echo "calls failed: $(wc -l <"$T/faults")" >&2
}

@test "writes to the data files fail (EIO): reads right, the units fetched again into memory" {
	fault_shim
	# a file long enough that its stream runs ahead of its reader
	head -c $((32 << 20)) /dev/urandom >"$SAMPLES/long.bin"
	local seed
	for seed in 1 2; do
		# all (then 30%) of the pwrite()s to the data files fail: the
		# units that stream to their files as they come are fetched
		# again into memory
		TILEFS_FAULT_CALLS=pwrite,pwrite64 \
			faulty_reads "$seed" "$T/cache/data-" $((seed == 1 ? 100 : 30))
		[ "$seed" != 1 ] ||
			log_has "to the cache as they come (Input/output error): fetching them again into memory"
	done
	[ -s "$T/faults" ] || fail "the shim made no call fail"
}

# uncached_mount: the cache index cannot be opened (set up by the caller,
# in $T/cache); the mount comes up anyway, says so in its log, its metric
# and `tilefs cache stat`, reads the origin's bytes, and every read goes
# to the origin.
uncached_mount() {
	tilefs_mount "$ORIGIN_URL" "$MNT" --metrics-file "$T/metrics.prom" "$@"
	log_has "error: cannot open the cache in $T/cache (.*): reading every file from the origin, uncached"
	cmp_tree "$SAMPLES" "$MNT"
	origin_log_reset
	echo 3 >/proc/sys/vm/drop_caches
	cmp_tree "$SAMPLES" "$MNT"
	origin_read_all
	tilefs_alive "$MNT"
}

@test "index.db a directory: the mount reads uncached, says so in its log, metric and cache stat" {
	mkdir -p -m 0700 "$T/cache/index.db"
	uncached_mount
	tilefs_run cache stat --cache-dir "$T/cache"
	assert_eq "$status" 1 "exit of cache stat on an index that cannot be opened"
	[[ $out == *"index: cannot be opened (Is a directory): mounts read uncached"* ]] ||
		fail "cache stat: $out"
	grep -q "^mount [0-9]* (running, uncached, counted .* on $MNT\$" <<<"$out" ||
		fail "cache stat does not say the mount is uncached: $out"
	tilefs_umount "$MNT"
	grep -q '^tilefs_cache_uncached 1$' "$T/metrics.prom" ||
		fail "metric: $(grep uncached "$T/metrics.prom")"
	[ -d "$T/cache/index.db" ] && ! compgen -G "$T/cache/data-*" >/dev/null ||
		fail "the cache dir was changed: $(ls "$T/cache")"
}

@test "every I/O call on index.db fails: the mount reads uncached, every read from the origin" {
	fault_shim
	LD_PRELOAD=$FAULT_SHIM TILEFS_FAULT_MATCH=index.db TILEFS_FAULT_PERCENT=100 \
		uncached_mount
	log_has "index.db: Input/output error at open; trying again"
	tilefs_umount "$MNT"
	grep -q '^tilefs_cache_uncached 1$' "$T/metrics.prom" ||
		fail "metric: $(grep uncached "$T/metrics.prom")"
}
