#!/usr/bin/env bats
# Reading through the mount: bytes identical to the origin, concurrent random
# reads, rasterio, directory listings, missing names, --list manifests.

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

# errno_of OP PATH: errno of os.stat/os.listdir/reading PATH in python, or "ok"
errno_of() {
	"$PY" - "$1" "$2" <<'EOF'
import os, sys
op, path = sys.argv[1], sys.argv[2]
try:
    if op == "stat":
        os.stat(path)
    elif op == "listdir":
        os.listdir(path)
    else:
        with open(path, "rb") as fh:
            while fh.read(1 << 20):
                pass
    print("ok")
except OSError as e:
    print(e.errno)
EOF
}

# copy_corpus: the shared TIFF corpus into the origin as good/ and bad/
# (copies: the corpus itself is never touched), or skip the test.
copy_corpus() {
	local corpus=${TILEFS_CORPUS:-$REPO_ROOT/tests/data/corpus}
	[ -d "$corpus/good" ] || skip "no TIFF corpus at $corpus (set TILEFS_CORPUS)"
	cp -r "$corpus/good" "$SAMPLES/good"
	cp -r "$corpus/bad" "$SAMPLES/bad"
}

@test "every file of the origin reads byte-identical (cat/cmp)" {
	tilefs_mount "$ORIGIN_URL" "$MNT"
	assert_eq "$(file_list "$MNT")" "$(file_list "$SAMPLES")" "files under the mount"
	cmp_tree "$SAMPLES" "$MNT"
	tilefs_umount "$MNT"
}

@test "the TIFF corpus, good and malformed, reads byte-identical" {
	copy_corpus
	tilefs_mount "$ORIGIN_URL" "$MNT"
	assert_eq "$(file_list "$MNT/bad")" "$(file_list "$SAMPLES/bad")" "files under bad/"
	assert_eq "$(file_list "$MNT/good")" "$(file_list "$SAMPLES/good")" "files under good/"
	cmp_tree "$SAMPLES/bad" "$MNT/bad"
	cmp_tree "$SAMPLES/good" "$MNT/good"
	tilefs_alive "$MNT"
	tilefs_umount "$MNT"
}

@test "random preads from 4 processes x 4 threads match the local files" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --block-size 64K
	# cold cache: the processes race on the same misses
	run_to 120 "$PY" "$TESTS_LIB/pread_check.py" --seed 7 --procs 4 --threads 4 \
		--reads 150 "$MNT" "$SAMPLES"
	# warm (partly) cache, other offsets
	run_to 120 "$PY" "$TESTS_LIB/pread_check.py" --seed 8 --procs 4 --threads 4 \
		--reads 150 "$MNT" "$SAMPLES"
	tilefs_alive "$MNT"
	tilefs_umount "$MNT"
}

@test "several whole-file readers at once get identical bytes" {
	tilefs_mount "$ORIGIN_URL" "$MNT"
	local f i pids=()
	for i in 1 2 3; do
		for f in t256.tif t512.tif nested/f32.tif random.bin; do
			run_to 120 cmp "$SAMPLES/$f" "$MNT/$f" &
			pids+=($!)
		done
	done
	for i in "${pids[@]}"; do
		wait "$i" || fail "a concurrent cmp failed"
	done
	tilefs_umount "$MNT"
}

@test "rasterio reads the same windows and overviews as from the local file" {
	tilefs_mount "$ORIGIN_URL" "$MNT"
	local f
	for f in t256.tif t512.tif nested/f32.tif nested/deeper/small.tif "nested/with space.tif"; do
		run_to 120 "$PY" "$TESTS_LIB/rio_compare.py" "$MNT/$f" "$SAMPLES/$f"
	done
	tilefs_umount "$MNT"
}

@test "ls shows exactly the origin's names; stat sizes match" {
	tilefs_mount "$ORIGIN_URL" "$MNT"
	assert_eq "$(ls -A "$MNT" | LC_ALL=C sort)" "$(ls -A "$SAMPLES" | LC_ALL=C sort)" "ls of the root"
	assert_eq "$(ls -A "$MNT/nested" | LC_ALL=C sort)" "$(ls -A "$SAMPLES/nested" | LC_ALL=C sort)" "ls of nested/"
	assert_eq "$(ls -A "$MNT/nested/deeper")" "small.tif" "ls of nested/deeper/"
	[ -d "$MNT/nested" ] && [ -d "$MNT/nested/deeper" ] || fail "nested dirs are not directories"
	[ -f "$MNT/t256.tif" ] || fail "t256.tif is not a regular file"
	# the types readdir gives (d_type: scandir asks no stat)
	local types='import os, sys
print(sorted((e.name, e.is_dir(follow_symlinks=False)) for e in os.scandir(sys.argv[1])))'
	assert_eq "$("$PY" -c "$types" "$MNT")" "$("$PY" -c "$types" "$SAMPLES")" "entry types in the root"
	local f
	while IFS= read -r f; do
		assert_eq "$(stat -c %s "$MNT/$f")" "$(stat -c %s "$SAMPLES/$f")" "size of $f" || return 1
	done < <(file_list "$SAMPLES")
	tilefs_umount "$MNT"
}

@test "names that do not exist give ENOENT" {
	tilefs_mount "$ORIGIN_URL" "$MNT"
	run -1 stat "$MNT/nope.tif"
	[[ $output == *"No such file or directory"* ]] || fail "stat said: $output"
	assert_eq "$(errno_of stat "$MNT/nope.tif")" 2 "errno of stat nope.tif"
	assert_eq "$(errno_of read "$MNT/nested/nope.tif")" 2 "errno of open nested/nope.tif"
	assert_eq "$(errno_of listdir "$MNT/nodir")" 2 "errno of listdir nodir"
	assert_eq "$(errno_of stat "$MNT/nodir/t256.tif")" 2 "errno of stat nodir/t256.tif"
	assert_eq "$(errno_of stat "$MNT/T256.TIF")" 2 "errno of stat T256.TIF (names are case-sensitive)"
	tilefs_alive "$MNT"
	tilefs_umount "$MNT"
}

@test "the mount is read-only: writes fail, the origin is untouched" {
	tilefs_mount "$ORIGIN_URL" "$MNT"
	! touch "$MNT/new.tif" 2>/dev/null || fail "creating a file succeeded"
	! sh -c "echo x >> '$MNT/notes.txt'" 2>/dev/null || fail "appending succeeded"
	! mkdir "$MNT/newdir" 2>/dev/null || fail "mkdir succeeded"
	! rm -f "$MNT/notes.txt" 2>/dev/null || fail "rm succeeded"
	[ ! -e "$SAMPLES/new.tif" ] || fail "new.tif appeared at the origin"
	[ ! -e "$SAMPLES/newdir" ] || fail "newdir appeared at the origin"
	cmp "$SAMPLES/notes.txt" "$MNT/notes.txt"
	assert_eq "$(grep -Evc '^(GET|HEAD) ' "$ORIGIN_LOG")" 0 "requests other than GET/HEAD"
	tilefs_umount "$MNT"
}

@test "after readdir, opening and reading a file twice does not list the directory again" {
	tilefs_mount "$ORIGIN_URL" "$MNT"
	ls -l "$MNT/nested" >/dev/null
	cmp "$SAMPLES/nested/f32.tif" "$MNT/nested/f32.tif"
	cmp "$SAMPLES/nested/f32.tif" "$MNT/nested/f32.tif"
	run_to 60 "$PY" "$TESTS_LIB/rio_compare.py" "$MNT/nested/f32.tif" "$SAMPLES/nested/f32.tif"
	ls "$MNT/nested" >/dev/null
	assert_eq "$(origin_count GET /nested/)" 1 "GETs of the directory /nested/"
	[ "$(origin_count GET /)" -le 1 ] || fail "the root was listed $(origin_count GET /) times"
	tilefs_umount "$MNT"
}

@test "lookups of missing sidecars are answered without requests (DESIGN)" {
	tilefs_mount "$ORIGIN_URL" "$MNT"
	ls "$MNT" "$MNT/nested" >/dev/null
	stat "$MNT/t256.tif" "$MNT/nested/f32.tif" >/dev/null
	origin_log_reset
	local s
	for s in .aux.xml .ovr .msk .tfw .xml .imd .rpb; do
		assert_enoent "$MNT/t256.tif$s"
		assert_enoent "$MNT/nested/f32.tif$s"
	done
	assert_enoent "$MNT/t256.tfw"
	assert_enoent "$MNT/nested/f32.aux"
	if [ -s "$ORIGIN_LOG" ]; then
		cat "$ORIGIN_LOG"
		fail "negative lookups went to the origin"
	fi
	tilefs_umount "$MNT"
}

@test "--list with relative paths shows exactly those files" {
	printf '%s\n' t512.tif '' nested/f32.tif "nested/with space.tif" '' >"$T/manifest"
	tilefs_mount "$ORIGIN_URL" "$MNT" --list "$T/manifest"
	assert_eq "$(file_list "$MNT" | tr '\n' '|')" \
		"nested/f32.tif|nested/with space.tif|t512.tif|" "files under the mount"
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"
	cmp "$SAMPLES/nested/f32.tif" "$MNT/nested/f32.tif"
	cmp "$SAMPLES/nested/with space.tif" "$MNT/nested/with space.tif"
	assert_eq "$(stat -c %s "$MNT/t512.tif")" "$(stat -c %s "$SAMPLES/t512.tif")" "size of t512.tif"
	assert_eq "$(errno_of stat "$MNT/t256.tif")" 2 "errno of a file not in the manifest"
	tilefs_umount "$MNT"
}

@test "--list with full URLs: files readable, query strings never logged" {
	printf '%s\n' "${ORIGIN_URL}t256.tif?sig=SEKRIT-7f3a&X-Amz-Credential=KEYID-99" \
		"${ORIGIN_URL}nested/deeper/small.tif" >"$T/manifest"
	tilefs_mount "$ORIGIN_URL" "$MNT" --list "$T/manifest" --log-level debug
	local names
	names=$(file_list "$MNT" | xargs -rd '\n' -n1 basename | LC_ALL=C sort | tr '\n' ' ')
	assert_eq "$names" "small.tif t256.tif " "file names from the URL manifest"
	local f
	f=$(cd "$MNT" && find . -type f -name t256.tif)
	cmp "$SAMPLES/t256.tif" "$MNT/$f"
	f=$(cd "$MNT" && find . -type f -name small.tif)
	cmp "$SAMPLES/nested/deeper/small.tif" "$MNT/$f"
	tilefs_umount "$MNT"
	[ -s "$TILEFS_LOG" ] || fail "debug log is empty"
	! grep -n -e SEKRIT -e KEYID -e 'sig=' "$TILEFS_LOG" || fail "the log contains the URL query string"
	local without
	without=$(grep ' /t256.tif' "$ORIGIN_LOG_FULL" | grep -v 'sig=SEKRIT-7f3a' | head -n 3)
	[ -z "$without" ] || fail "requests for t256.tif without its query string: $without"

	# a bad line with a token: the message names the line, not the token
	local line
	for line in "${ORIGIN_URL}a/../b.tif?sig=SEKRIT-7f3a&X-Amz-Credential=KEYID-99" \
		"https://other.example/%00.tif?sig=SEKRIT-7f3a&X-Amz-Credential=KEYID-99" \
		"https://user:SEKRIT-pw@other.example/../x.tif" "../x.tif?sig=SEKRIT-7f3a"; do
		printf '%s\n' "${ORIGIN_URL}t256.tif" "$line" >"$T/manifest"
		tilefs_run mount --cache-dir "$T/cache" --list "$T/manifest" "$ORIGIN_URL" "$MNT"
		assert_eq "$status" 1 "exit with a bad line"
		[[ $err == *"manifest line 2: '"*"' is not a usable file path"* ]] || fail "message: $err"
		! grep -n -e SEKRIT -e KEYID -e 'sig=' <<<"$err" || fail "stderr contains the query string"
	done
}

@test "odd file names (space, +, %, #, ?, ;, UTF-8) list and read correctly" {
	mkdir -p "$SAMPLES/odd"
	local n names=("a b.txt" "a+b.txt" "100%.txt" "x#y.txt" "q?.txt" "semi;colon.txt" \
		"é-ü-ß.txt" "amp&er=sand.txt" "[brackets].txt" "'quote'.txt")
	for n in "${names[@]}"; do
		printf 'content of <%s>\n' "$n" >"$SAMPLES/odd/$n"
	done
	tilefs_mount "$ORIGIN_URL" "$MNT"
	assert_eq "$(ls -A "$MNT/odd" | LC_ALL=C sort)" "$(ls -A "$SAMPLES/odd" | LC_ALL=C sort)" "ls of odd/"
	for n in "${names[@]}"; do
		cmp "$SAMPLES/odd/$n" "$MNT/odd/$n" || fail "odd/$n differs" || return 1
	done
	tilefs_umount "$MNT"
}

@test "a directory of 1500 files lists completely" {
	mkdir -p "$SAMPLES/many"
	local i
	for ((i = 0; i < 1500; i++)); do
		printf '%d\n' "$i" >"$SAMPLES/many/file-with-a-rather-long-name-to-be-truncated-by-autoindex-$i.txt"
	done
	tilefs_mount "$ORIGIN_URL" "$MNT"
	assert_eq "$(ls "$MNT/many" | wc -l)" 1500 "entries in many/"
	assert_eq "$(ls "$MNT/many" | LC_ALL=C sort | md5sum)" "$(ls "$SAMPLES/many" | LC_ALL=C sort | md5sum)" "names in many/"
	for i in 0 1 777 1499; do
		cmp "$SAMPLES/many/file-with-a-rather-long-name-to-be-truncated-by-autoindex-$i.txt" \
			"$MNT/many/file-with-a-rather-long-name-to-be-truncated-by-autoindex-$i.txt"
	done
	tilefs_umount "$MNT"
}

@test "a directory read again within --ttl costs the daemon no request; a change shows after --ttl" {
	mkdir -p "$SAMPLES/many"
	local i
	for ((i = 0; i < 300; i++)); do
		printf '%d\n' "$i" >"$SAMPLES/many/chip-$i.txt"
	done
	# -o debug logs every request the kernel sends (libfuse, on stderr)
	mkdir -p "$MNT"
	"$TILEFS" mount -f -o debug --ttl 1 --cache-dir "$T/cache" "$ORIGIN_URL" "$MNT" \
		</dev/null >"$T/fg.out" 2>"$T/fg.err" 3>&- &
	local pid=$!
	TILEFS_MNTS+=("$MNT")
	TILEFS_STATES+=("$T/fg-state")
	TILEFS_EXTRA_PIDS+=("$pid")
	wait_until "the -f mount" is_mounted "$MNT"
	is_mounted "$MNT" || { cat "$T/fg.err"; fail "-f mount never appeared"; }
	requests() { grep -c "opcode: $1 " "$T/fg.err"; }
	assert_eq "$(ls "$MNT/many" | wc -l)" 300 "entries in many/"
	local readdirs opendirs
	readdirs=$(requests READDIR) opendirs=$(requests OPENDIR)
	[ "$readdirs" -gt 0 ] || fail "the first listing sent no READDIR: is -o debug logging?"
	# GDAL lists a data set's directory at each open: 20 opens, within --ttl
	"$PY" -c 'import os, sys
for i in range(20):
    os.listdir(sys.argv[1])
    open(os.path.join(sys.argv[1], f"chip-{i}.txt"), "rb").read()' "$MNT/many"
	assert_eq "$(requests READDIR)" "$readdirs" "READDIR requests after 20 more listings"
	assert_eq "$(requests OPENDIR)" "$opendirs" "OPENDIR requests after 20 more listings"
	assert_eq "$(requests OPEN)" 20 "OPEN requests for 20 files"
	printf 'new\n' >"$SAMPLES/many/chip-new.txt"
	rm "$SAMPLES/many/chip-7.txt"
	sleep 2.2
	origin_log_reset
	stat "$MNT/many" >/dev/null
	assert_eq "$(origin_count GET /many/)" 0 "listings of many/ for a stat after --ttl"
	assert_eq "$(ls "$MNT/many" | LC_ALL=C sort | md5sum)" "$(ls "$SAMPLES/many" | LC_ALL=C sort | md5sum)" \
		"names in many/ after the origin changed and --ttl passed"
	assert_eq "$(origin_count GET /many/)" 1 "listings of many/ for the ls after it"
	cmp "$SAMPLES/many/chip-new.txt" "$MNT/many/chip-new.txt"
	# a file added and opened by name is in the next listing too
	printf 'newer\n' >"$SAMPLES/many/chip-newer.txt"
	sleep 2.2
	cmp "$SAMPLES/many/chip-newer.txt" "$MNT/many/chip-newer.txt"
	assert_eq "$(ls "$MNT/many" | LC_ALL=C sort | md5sum)" "$(ls "$SAMPLES/many" | LC_ALL=C sort | md5sum)" \
		"names in many/ after a file was added and opened by name"
	fusermount3 -u "$MNT"
	run_to 20 tail --pid="$pid" -f /dev/null || fail "tilefs still running after unmount"
}

@test "a 5 GiB (sparse) file: size and reads beyond 4 GiB are right" {
	local big=$SAMPLES/huge.bin
	truncate -s 5G "$big"
	# distinct markers around 2 GiB, 4 GiB and at the very end
	printf 'marker-2G' | dd of="$big" bs=1 seek=$((2 * 1073741824 - 3)) conv=notrunc status=none
	printf 'marker-4G' | dd of="$big" bs=1 seek=$((4 * 1073741824 + 12345)) conv=notrunc status=none
	head -c 70000 "$SAMPLES/random.bin" | dd of="$big" bs=1 seek=$((5 * 1073741824 - 70000)) conv=notrunc status=none
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-size 64M
	assert_eq "$(stat -c %s "$MNT/huge.bin")" $((5 * 1073741824)) "size of huge.bin"
	run_to 120 "$PY" - "$MNT/huge.bin" "$big" <<'PYEOF'
import os, sys
a = os.open(sys.argv[1], os.O_RDONLY)
b = os.open(sys.argv[2], os.O_RDONLY)
G = 1 << 30
for off, n in [(0, 4096), (2 * G - 100, 200), (4 * G - 10, 20), (4 * G + 12000, 1000),
               (5 * G - 70000, 70000), (5 * G - 1, 10), (5 * G, 10), (3 * G + 7, 300000)]:
    x, y = os.pread(a, n, off), os.pread(b, n, off)
    if x != y:
        sys.exit("huge.bin differs at %d+%d (%d vs %d bytes)" % (off, n, len(x), len(y)))
print("ok")
PYEOF
	tilefs_umount "$MNT"
	local used
	used=$(data_bytes "$T/cache")
	[ "$used" -le $((64 * 1048576 + 1048576)) ] ||
		fail "data-* takes $used bytes on disk with --cache-size 64M" \
			"(allocated on disk: $(du -scB1 "$T/cache"/data-* | tail -n 1 | cut -f 1))"
}

# mount_maybe_old MNT OPTIONS...: tilefs_mount of the origin, under
# $OLD_KERNEL_SHIM when it is set (old_kernel_shim).
mount_maybe_old() {
	if [ -n "${OLD_KERNEL_SHIM:-}" ]; then
		LD_PRELOAD=$OLD_KERNEL_SHIM tilefs_mount "$ORIGIN_URL" "$@"
	else
		tilefs_mount "$ORIGIN_URL" "$@"
	fi
}

# mmap_cold FLAG [OPTIONS...]: a fresh cache, then FLAG maps of a tiled TIFF
# and a plain file cold (the TIFF is opened with direct I/O where the kernel
# maps such files MAP_SHARED, else through the page cache: not cached
# whole), then warm (cached whole: the page cache, or passthrough), each
# the origin's bytes.
mmap_cold() {
	local flag=$1 f
	shift
	rm -rf "$T/cache"
	mount_maybe_old "$MNT" --prefetch none "$@"
	for f in t256.tif nested/f32.tif random.bin; do
		origin_log_reset
		run_to 60 "$PY" "$TESTS_LIB/mmap_check.py" map "$MNT/$f" "$SAMPLES/$f" "$flag" ||
			fail "$flag of $f, cold"
		# the open fetched a header at most: the map, the rest
		[ "$(origin_range_bytes "/$f")" -gt $(($(stat -c %s "$SAMPLES/$f") / 2)) ] ||
			fail "$f was not cold (the test tests nothing): $(origin_range_bytes "/$f") bytes fetched"
		run_to 60 "$PY" "$TESTS_LIB/mmap_check.py" map "$MNT/$f" "$SAMPLES/$f" \
			MAP_SHARED MAP_PRIVATE || fail "maps of $f, warm"
	done
	tilefs_umount "$MNT"
}

# np.memmap(mode="r"), mmap(ACCESS_READ) and torch.from_file map MAP_SHARED:
# a file must map the same whatever the cache holds (issue 45).
@test "mmap: MAP_SHARED of a cold tiled TIFF and a cold plain file reads the origin's bytes, cold and warm" {
	mmap_cold MAP_SHARED
}

@test "mmap: MAP_PRIVATE of a cold tiled TIFF and a cold plain file reads the origin's bytes, cold and warm" {
	mmap_cold MAP_PRIVATE
}

# new_version FILE DATE: FILE in the origin gets another version of the same
# size and layout (the bytes of its second half inverted: a TIFF's IFDs
# stay), with mtime DATE; written aside as $T/new.
new_version() {
	"$PY" - "$SAMPLES/$1" "$T/new" <<'PYEOF'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
for i in range(len(data) // 2, len(data)):
    data[i] ^= 0xff
open(sys.argv[2], "wb").write(data)
PYEOF
	touch -d "$2" "$T/new"
}

# mmap_versions: FLAG maps of files whose version changes between two opens,
# the first still mapped when the second maps (mmap_check.py versions), for
# a tiled TIFF (read with direct I/O where the kernel maps such files
# MAP_SHARED) and a plain file (through the page cache), both flags.
mmap_versions() {
	rm -rf "$T/cache"
	mount_maybe_old "$MNT" --ttl 1 --prefetch none
	local flag f day=1
	for flag in MAP_SHARED MAP_PRIVATE; do
		for f in t256.tif random.bin; do
			# an old kernel maps a tiled TIFF not cached whole privately only
			[ -n "${MMAP_FLAGS_OLD:-}" ] && [ "$flag$f" = MAP_SHAREDt256.tif ] && continue
			day=$((day + 1))
			new_version "$f" "2025-03-0$day 05:06:07 UTC"
			sleep 1.2	# past --ttl: the first open revalidates
			run_to 60 "$PY" "$TESTS_LIB/mmap_check.py" versions "$MNT/$f" "$SAMPLES/$f" \
				"$T/new" "$flag" 1.2 || fail "$flag of $f across a new version"
		done
	done
	tilefs_alive "$MNT"
	tilefs_umount "$MNT"
}

# The kernel's page cache belongs to the inode: a map of the new version
# must not be given pages an open of the old one reads in, and the other
# way round, whether the file is read with direct I/O (a tiled TIFF not
# cached whole) or through the page cache (a plain file).
@test "mmap: a file whose version changes between two opens: each map reads its own version (MAP_SHARED, MAP_PRIVATE)" {
	mmap_versions
}

# old_kernel_shim: OLD_KERNEL_SHIM, the LD_PRELOAD library that shows tilefs
# the FUSE INIT of Linux 6.1 (tests/lib/old_kernel_shim.c), built by make
# beside tilefs.
old_kernel_shim() {
	OLD_KERNEL_SHIM=$(dirname "$TILEFS")/old_kernel_shim.so
	[ -f "$OLD_KERNEL_SHIM" ] ||
		fail "no $OLD_KERNEL_SHIM (make builds it from tests/lib/old_kernel_shim.c)"
	# a sanitizer runtime wants to be loaded first; the shim comes before it
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
}

# Debian 12's own kernel, Linux 6.1, cannot map a direct-I/O file
# MAP_SHARED: there a tiled TIFF not cached whole keeps direct I/O (a window
# fetches its tiles only), the log says what maps and what to do, a
# MAP_SHARED map of it fails with ENODEV and nothing else changes: its
# MAP_PRIVATE maps, and every map of a plain file or of the TIFF cached
# whole, read the origin's bytes, across versions too.
@test "mmap on a kernel without FUSE_DIRECT_IO_ALLOW_MMAP (Linux 6.1, simulated): MAP_SHARED of a cold tiled TIFF says ENODEV, every other map reads the origin's bytes" {
	old_kernel_shim
	rm -rf "$T/cache"
	mount_maybe_old "$MNT" --prefetch none
	grep -q "this kernel cannot map a file read with direct I/O MAP_SHARED.*MAP_PRIVATE only.*tilefs warm it first, or run Linux 6.6" "$TILEFS_LOG" ||
		fail "the log does not say what maps on this kernel (the shim did nothing?)"
	run -1 "$PY" "$TESTS_LIB/mmap_check.py" map "$MNT/t256.tif" "$SAMPLES/t256.tif" MAP_SHARED
	[[ "$output" == *"MAP_SHARED of $MNT/t256.tif: ENODEV"* ]] || fail "MAP_SHARED, cold: $output"
	run_to 60 "$PY" "$TESTS_LIB/mmap_check.py" map "$MNT/random.bin" "$SAMPLES/random.bin" \
		MAP_SHARED MAP_PRIVATE || fail "maps of a cold plain file"
	run_to 60 "$PY" "$TESTS_LIB/mmap_check.py" map "$MNT/t256.tif" "$SAMPLES/t256.tif" \
		MAP_PRIVATE || fail "MAP_PRIVATE of the cold tiled TIFF"
	# cached whole now (the private map read it all): shared maps too
	wait_until "t256.tif cached whole" "$PY" "$TESTS_LIB/mmap_check.py" map "$MNT/t256.tif" \
		"$SAMPLES/t256.tif" MAP_SHARED
	tilefs_umount "$MNT"
	MMAP_FLAGS_OLD=1 mmap_versions
}

# ... and a kernel that can is asked to: a tiled TIFF not cached whole keeps
# its direct I/O (its reads come as the reader made them).
@test "mmap: a kernel that offers FUSE_DIRECT_IO_ALLOW_MMAP (Linux 6.6 on) is asked for it" {
	local v
	v=$(uname -r)
	v=${v%%-*}
	if [ "${v%%.*}" -lt 6 ] || { [ "${v%%.*}" = 6 ] && [ "$(cut -d. -f2 <<<"$v")" -lt 6 ]; }; then
		skip "Linux $v has no FUSE_DIRECT_IO_ALLOW_MMAP"
	fi
	tilefs_mount "$ORIGIN_URL" "$MNT" --log-level info
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	! grep "the kernel cannot map a file read with direct I/O" "$TILEFS_LOG" ||
		fail "Linux $v offers FUSE_DIRECT_IO_ALLOW_MMAP, and tilefs did not see it"
	tilefs_umount "$MNT"
}

@test "a mount reads ahead 1 MiB (also at a mountpoint whose name has a blank and a tab)" {
	# The kernel's default for FUSE is 128 KiB: a cached 1 MiB tile would
	# cost eight requests to the daemon instead of one.
	local mnt=$T/"mount point"$'\t'x dev
	tilefs_mount "$ORIGIN_URL" "$mnt"
	dev=$(mountpoint -d "$mnt")
	assert_eq "$(cat "/sys/class/bdi/$dev/read_ahead_kb")" 1024 "read_ahead_kb of $mnt ($dev)"
	cmp "$SAMPLES/t256.tif" "$mnt/t256.tif"
	tilefs_umount "$mnt"
}

@test "rasterio on the TIFF corpus: same arrays (or the same failure) through the mount" {
	copy_corpus
	tilefs_mount "$ORIGIN_URL" "$MNT"
	run_to 240 "$PY" - "$MNT" "$SAMPLES" <<'PYEOF'
import os, sys, warnings
import numpy as np
import rasterio
warnings.filterwarnings("ignore")
mnt, local = sys.argv[1], sys.argv[2]

def load(path):
    try:
        with rasterio.open(path) as ds:
            h, w = min(ds.height, 2048), min(ds.width, 2048)
            if ds.width * ds.height * ds.count > 200_000_000:
                return ("big", ds.width, ds.height)
            return ("ok", ds.read(window=((0, h), (0, w))))
    except Exception as e:
        return ("error", type(e).__name__)

bad = 0
n = 0
for sub in ("good", "bad"):
    for name in sorted(os.listdir(os.path.join(local, sub))):
        n += 1
        a = load(os.path.join(mnt, sub, name))
        b = load(os.path.join(local, sub, name))
        same = a[0] == b[0] and (a[0] != "ok" or np.array_equal(a[1], b[1], equal_nan=True))
        if not same:
            bad += 1
            print("%s/%s: mount %s, local %s" % (sub, name, a[0], b[0]), file=sys.stderr)
print("%d files, %d differ" % (n, bad))
sys.exit(1 if bad else 0)
PYEOF
	tilefs_alive "$MNT"
	tilefs_umount "$MNT"
}

@test "SOURCE can be a subdirectory, with or without the trailing slash" {
	local src
	for src in "${ORIGIN_URL}nested/" "${ORIGIN_URL}nested"; do
		tilefs_mount "$src" "$MNT" || fail "mount of $src failed" || return 1
		assert_eq "$(file_list "$MNT" | tr '\n' '|')" "$(file_list "$SAMPLES/nested" | tr '\n' '|')" \
			"files under the mount of $src" || return 1
		cmp_tree "$SAMPLES/nested" "$MNT"
		tilefs_umount "$MNT"
	done
}

# mtime_open_read PATH: st_mtime of PATH, opened, read to the end and fstat'ed (a
# read after the attributes expired asks for them with the open file).
mtime_open_read() {
	"$PY" - "$1" <<'EOF2'
import os, sys
with open(sys.argv[1], "rb") as f:
    while f.read(1 << 20):
        pass
    print(int(os.fstat(f.fileno()).st_mtime))
EOF2
}

@test "a file's mtime is the origin's, to the minute nginx lists: before and after reads, after --ttl, in a new mount" {
	mkdir -p "$SAMPLES/dated"
	cp "$SAMPLES/t256.tif" "$SAMPLES/dated/read.tif"
	cp "$SAMPLES/t512.tif" "$SAMPLES/dated/unread.tif"
	touch -d '2024-03-05 07:08:09 UTC' "$SAMPLES/dated/read.tif"
	touch -d '2023-11-12 13:14:15 UTC' "$SAMPLES/dated/unread.tif"
	# nginx autoindex lists dates in UTC, to the minute
	local want_read=$(($(stat -c %Y "$SAMPLES/dated/read.tif") / 60 * 60))
	local want_unread=$(($(stat -c %Y "$SAMPLES/dated/unread.tif") / 60 * 60))
	local round
	for round in "fresh mount" "new mount, read.tif cached"; do
		tilefs_mount "$ORIGIN_URL" "$MNT" --ttl 1
		assert_eq "$(stat -c %Y "$MNT/dated/read.tif")" "$want_read" \
			"mtime of read.tif before a read ($round)"
		assert_eq "$(stat -c %Y "$MNT/dated/unread.tif")" "$want_unread" \
			"mtime of unread.tif ($round)"
		assert_eq "$(mtime_open_read "$MNT/dated/read.tif")" "$want_read" \
			"fstat mtime of read.tif while read ($round)"
		cmp "$SAMPLES/dated/read.tif" "$MNT/dated/read.tif"
		assert_eq "$(stat -c %Y "$MNT/dated/read.tif")" "$want_read" \
			"mtime of read.tif after a read ($round)"
		sleep 1.5	# --ttl passes: listing, version and attributes are asked again
		assert_eq "$(mtime_open_read "$MNT/dated/read.tif")" "$want_read" \
			"fstat mtime of read.tif read after --ttl ($round)"
		assert_eq "$(stat -c %Y "$MNT/dated/read.tif")" "$want_read" \
			"mtime of read.tif after --ttl ($round)"
		assert_eq "$(stat -c %Y "$MNT/dated/unread.tif")" "$want_unread" \
			"mtime of unread.tif after --ttl ($round)"
		tilefs_umount "$MNT"
	done
}

# fetch_threads PID: the daemon's fetch threads, by name, one a line, sorted
fetch_threads() {
	cat /proc/"$1"/task/*/comm | grep '^tilefs-fetch' | sort
}

@test "--fetch-threads N: N named fetch threads share the connections, bytes identical" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --fetch-threads 3 --connections 6
	local pid
	pid=$(tilefs_pid "$MNT")
	assert_eq "$(fetch_threads "$pid" | tr '\n' ' ')" "tilefs-fetch0 tilefs-fetch1 tilefs-fetch2 " \
		"the daemon's fetch threads"
	run_to 120 "$PY" "$TESTS_LIB/pread_check.py" --seed 9 --procs 3 --threads 4 \
		--reads 100 "$MNT" "$SAMPLES"
	cmp_tree "$SAMPLES" "$MNT"
	tilefs_umount "$MNT"
	# the default: one per 4 connections, whatever the cores
	tilefs_mount "$ORIGIN_URL" "$MNT"
	pid=$(tilefs_pid "$MNT")
	assert_eq "$(fetch_threads "$pid" | wc -l)" 16 "fetch threads by default (64 connections)"
	tilefs_umount "$MNT"
	tilefs_mount "$ORIGIN_URL" "$MNT" --connections 2
	pid=$(tilefs_pid "$MNT")
	assert_eq "$(fetch_threads "$pid" | wc -l)" 1 "fetch threads for 2 connections"
	tilefs_umount "$MNT"
	tilefs_run mount --fetch-threads 65 "$ORIGIN_URL" "$MNT"
	assert_eq "$status" 2 "exit status of --fetch-threads 65"
	[[ $err1 == "tilefs: "*"--fetch-threads"* ]] || fail "message: $err1"
}
