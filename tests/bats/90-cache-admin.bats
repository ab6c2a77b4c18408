#!/usr/bin/env bats
# tilefs cache stat|ls|verify|evict|clear: on a cache dir a mount filled,
# with the mount stopped or still running.

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

# ls_tsv CACHEDIR [PATTERN]: `tilefs cache ls --json` as lines of
# "CACHED_BYTES<TAB>SIZE<TAB>UNITS<TAB>VERSION<TAB>URL"
ls_tsv() {
	"$TILEFS" cache ls --json --cache-dir "$@" | "$PY" -c 'import json, sys
for o in json.load(sys.stdin):
    print("%d\t%d\t%d\t%s\t%s" % (o["cached_bytes"], o["size"], o["units"], o["version"], o["url"]))'
}

# ls_field FILE N: field N of ls_tsv for the object ending in /FILE
ls_field() {
	ls_tsv "$CACHE" | awk -F'\t' -v f="/$1" -v n="$2" \
		'substr($5, length($5) - length(f) + 1) == f { print $n }'
}

@test "cache: usage errors exit 2 and say what to fix" {
	tilefs_run cache
	assert_eq "$status" 2 "exit of 'tilefs cache'"
	[[ $err == *"which command"* ]] || fail "no hint: $err"
	tilefs_run cache bogus
	assert_eq "$status" 2 "exit of an unknown command"
	tilefs_run cache evict
	assert_eq "$status" 2 "exit of evict without a pattern"
	[[ $err == *"which objects"* ]] || fail "no hint: $err"
	tilefs_run cache stat extra
	assert_eq "$status" 2 "exit of stat with an argument"
	tilefs_run cache --help
	assert_eq "$status" 0 "exit of --help"
	[[ $out == *"verify"* && $out == *"evict PATTERN"* ]] || fail "help lacks commands: $out"
}

@test "cache ls and stat show what a mount cached, bytes exact" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-dir "$CACHE"
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	cmp "$SAMPLES/notes.txt" "$MNT/notes.txt"
	tilefs_umount "$MNT"
	local size
	for f in t256.tif notes.txt; do
		size=$(stat -c %s "$SAMPLES/$f")
		assert_eq "$(ls_field "$f" 1)" "$size" "cached bytes of $f (read whole)"
		assert_eq "$(ls_field "$f" 2)" "$size" "size of $f"
	done
	tilefs_run cache stat --cache-dir "$CACHE"
	assert_eq "$status" 0 "exit of cache stat"
	local total
	total=$(($(stat -c %s "$SAMPLES/t256.tif") + $(stat -c %s "$SAMPLES/notes.txt")))
	[[ $out == *"objects: 2"* ]] || fail "stat: $out"
	# exact bytes from --json: the text says them for people (KiB, MiB)
	assert_eq "$("$TILEFS" cache stat --json --cache-dir "$CACHE" |
		"$PY" -c 'import json, sys; print(json.load(sys.stdin)["bytes"])')" "$total" \
		"stat --json bytes"
	"$TILEFS" cache ls --cache-dir "$CACHE" 't*.tif' | grep -q '/t256.tif$' ||
		fail "ls PATTERN does not list t256.tif"
	[ -z "$("$TILEFS" cache ls --cache-dir "$CACHE" 'nothing*')" ] ||
		fail "ls of a pattern matching nothing printed something"
}

@test "cache verify finds and drops a unit whose bytes were flipped on disk" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-dir "$CACHE"
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	tilefs_umount "$MNT"
	tilefs_run cache verify --cache-dir "$CACHE"
	assert_eq "$status" 0 "exit of verify on a sound cache"
	local size data
	size=$(stat -c %s "$SAMPLES/t256.tif")
	data=$(find "$CACHE"/data-* -type f -size "${size}c" | head -n 1)
	[ -n "$data" ] || fail "no data file of t256.tif's size"
	printf '\xff\x00\xff\x00' | dd of="$data" bs=1 seek=500000 conv=notrunc status=none
	tilefs_run cache verify --cache-dir "$CACHE"
	assert_eq "$status" 1 "exit of verify with a damaged unit"
	[[ $out == *"dropped: "*"/t256.tif at "*"checksum mismatch"* ]] || fail "verify output: $out"
	[[ $out == *"1 bad"* ]] || fail "verify count: $out"
	tilefs_run cache verify --cache-dir "$CACHE"
	assert_eq "$status" 0 "exit of a second verify"
	# the dropped unit is fetched again, right
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-dir "$CACHE"
	origin_log_reset
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	assert_eq "$(origin_gets /t256.tif)" 1 "ranged GETs for the one dropped unit"
	tilefs_umount "$MNT"
}

@test "cache evict while a mount reads: that object is fetched again, the other not" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-dir "$CACHE"
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"
	tilefs_run cache evict --cache-dir "$CACHE" t256.tif
	assert_eq "$status" 0 "exit of evict"
	[[ $out == *"of 1 objects"* ]] || fail "evict output: $out"
	assert_eq "$(ls_field t256.tif 1)" 0 "cached bytes of t256.tif after evict"
	assert_eq "$(ls_field t512.tif 1)" "$(stat -c %s "$SAMPLES/t512.tif")" "t512.tif untouched"
	origin_log_reset
	echo 3 >/proc/sys/vm/drop_caches
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"
	[ "$(origin_gets /t256.tif)" -gt 0 ] || fail "t256.tif was not fetched again"
	assert_eq "$(origin_gets /t512.tif)" 0 "GETs for t512.tif"
	tilefs_run cache evict --cache-dir "$CACHE" 'no-such-*'
	assert_eq "$status" 1 "exit of evict matching nothing"
	[[ $err == *"no cached object matches"* ]] || fail "stderr: $err"
	tilefs_alive "$MNT"
	tilefs_umount "$MNT"
}

@test "cache clear drops everything; the disk space goes and reads stay right" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-dir "$CACHE"
	cmp_tree "$SAMPLES" "$MNT"
	tilefs_umount "$MNT"
	[ "$(data_bytes "$CACHE")" -gt 1000000 ] || fail "nothing cached to clear"
	tilefs_run cache clear --cache-dir "$CACHE"
	assert_eq "$status" 0 "exit of clear"
	tilefs_run cache stat --cache-dir "$CACHE"
	[[ $out == *"units: 0"* && $out == *"bytes: 0"* ]] || fail "stat after clear: $out"
	[ "$(data_bytes "$CACHE")" -lt 200000 ] ||
		fail "data files still take $(data_bytes "$CACHE") bytes after clear"
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-dir "$CACHE"
	cmp_tree "$SAMPLES" "$MNT"
	tilefs_umount "$MNT"
}

@test "cache stat, ls, evict of a mountpoint or a path in it use that mount's cache dir" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-dir "$CACHE"
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"
	local size
	size=$(stat -c %s "$SAMPLES/t256.tif")
	tilefs_run cache stat "$MNT"
	assert_eq "$status" 0 "exit of cache stat MOUNTPOINT"
	[[ $out == *"cache dir: $CACHE"$'\n'* ]] || fail "stat of the mount: $out"
	[[ $out == *$'\nobjects: 2\n'* ]] || fail "objects: $out"
	# sizes for people
	[[ $out =~ $'\n'bytes:\ [0-9.]+\ (KiB|MiB)$'\n' ]] || fail "stat bytes: $out"
	tilefs_run cache stat "$MNT/t256.tif"
	assert_eq "$status" 0 "exit of cache stat of a file in the mount"
	[[ $out == *"cache dir: $CACHE"$'\n'* ]] || fail "stat of a path in the mount: $out"

	tilefs_run cache ls "$MNT"
	assert_eq "$status" 0 "exit of cache ls MOUNTPOINT"
	[[ $(head -n 1 <<<"$out") =~ ^CACHED\ +SIZE\ +UNITS\ +VERSION\ +URL$ ]] ||
		fail "ls header: $out"
	assert_eq "$(wc -l <<<"$out")" 3 "lines of ls: the header and 2 objects"
	grep -Eq "^[0-9.]+ (KiB|MiB) +[0-9.]+ (KiB|MiB) +[0-9]+ .*/t256.tif\$" <<<"$out" ||
		fail "ls line of t256.tif: $out"
	tilefs_run cache ls "$MNT" 't256*'
	assert_eq "$(wc -l <<<"$out")" 2 "lines of ls MOUNTPOINT PATTERN"
	tilefs_run cache ls "$MNT" 'nothing*'
	assert_eq "$status" 1 "exit of ls of a pattern matching nothing"
	[[ $err == *"no cached object matches"* ]] || fail "stderr: $err"

	(cd "$MNT" && "$TILEFS" cache evict . t256.tif) >"$T/evict.out" 2>&1 ||
		fail "evict . t256.tif in the mount: $(cat "$T/evict.out")"
	grep -q "of 1 objects" "$T/evict.out" || fail "evict: $(cat "$T/evict.out")"
	assert_eq "$(ls_field t256.tif 1)" 0 "cached bytes of t256.tif after evict"
	assert_eq "$(ls_field t512.tif 1)" "$(stat -c %s "$SAMPLES/t512.tif")" "t512.tif kept"

	tilefs_run cache stat "$T"
	assert_eq "$status" 2 "exit of cache stat of a dir not in a mount"
	[[ $err == *"$T is not in a tilefs mount"* ]] || fail "stderr: $err"
	tilefs_run cache stat "$MNT" --cache-dir "$CACHE"
	assert_eq "$status" 2 "exit of cache stat with a mount and --cache-dir"
	tilefs_umount "$MNT"
	[ "$size" -gt 0 ]
}

@test "cache stat --json and ls --json: one object, an array, sizes in bytes" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-dir "$CACHE"
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	cmp "$SAMPLES/notes.txt" "$MNT/notes.txt"
	local s256 snotes pid
	s256=$(stat -c %s "$SAMPLES/t256.tif")
	snotes=$(stat -c %s "$SAMPLES/notes.txt")
	pid=$(tilefs_pid "$MNT")
	"$TILEFS" cache stat --json "$MNT" >"$T/stat.json" || fail "stat --json exited $?"
	"$PY" -c 'import json, sys
s = json.load(open(sys.argv[1]))
assert s["cache_dir"] == sys.argv[2], s
assert s["index_error"] is None, s
assert s["objects"] == 2 and s["bytes"] == int(sys.argv[3]), s
m = [m for m in s["recent_mounts"] if m["pid"] == int(sys.argv[4])]
assert len(m) == 1 and m[0]["running"] is True and m[0]["mountpoint"] == sys.argv[5], s
# counted every few seconds: 91-metrics.bats checks their values
for k in ("hits", "misses", "passthrough_opens", "served_bytes", "fetched_bytes", "requests",
          "errors", "started", "updated"):
    assert isinstance(m[0][k], int), (k, m)
' "$T/stat.json" "$CACHE" $((s256 + snotes)) "$pid" "$MNT" || fail "stat --json: $(cat "$T/stat.json")"
	"$TILEFS" cache ls --json --cache-dir "$CACHE" >"$T/ls.json" || fail "ls --json exited $?"
	"$PY" -c 'import json, sys
v = json.load(open(sys.argv[1]))
assert isinstance(v, list) and len(v) == 2, v
by = {o["url"].rsplit("/", 1)[1]: o for o in v}
for name, size in (("t256.tif", int(sys.argv[2])), ("notes.txt", int(sys.argv[3]))):
    o = by[name]
    assert o["size"] == size and o["cached_bytes"] == size and o["units"] >= 1, o
    assert o["version"] and o["url"].startswith("http"), o
' "$T/ls.json" "$s256" "$snotes" || fail "ls --json: $(cat "$T/ls.json")"
	assert_eq "$("$TILEFS" cache ls --json "$MNT" 'nothing*' 2>/dev/null)" "[]" \
		"ls --json of a pattern matching nothing"
	tilefs_run cache verify --json --cache-dir "$CACHE"
	assert_eq "$status" 2 "exit of verify --json"
	tilefs_umount "$MNT"
}

@test "cache verify says what it checked and what it found" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-dir "$CACHE"
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	tilefs_run cache verify "$MNT"
	assert_eq "$status" 0 "exit of verify of a mount's sound cache"
	[[ $out =~ ^checked\ [1-9][0-9]*\ units\ \([0-9.]+\ (KiB|MiB)\)\ of\ 1\ objects\ in\ $CACHE:\ all\ good$ ]] ||
		fail "verify of a sound cache: $out"
	tilefs_umount "$MNT"
	local size data
	size=$(stat -c %s "$SAMPLES/t256.tif")
	data=$(find "$CACHE"/data-* -type f -size "${size}c" | head -n 1)
	[ -n "$data" ] || fail "no data file of t256.tif's size"
	printf '\xff\x00\xff\x00' | dd of="$data" bs=1 seek=500000 conv=notrunc status=none
	tilefs_run cache verify --cache-dir "$CACHE"
	assert_eq "$status" 1 "exit of verify with a damaged unit"
	[[ $(tail -n 1 <<<"$out") =~ ^checked\ [1-9][0-9]*\ units\ .*:\ 1\ bad,\ dropped\ \(they\ will\ be\ fetched\ again\)$ ]] ||
		fail "verify of a damaged unit: $out"
}

@test "cache stat of a cache dir that does not exist: one message, exit 1" {
	tilefs_run cache stat --cache-dir "$T/none"
	assert_eq "$status" 1 "exit of cache stat of no cache dir"
	assert_eq "$err" "tilefs: cache: no cache dir $T/none" "stderr"
	assert_eq "$out" "" "stdout"
}
