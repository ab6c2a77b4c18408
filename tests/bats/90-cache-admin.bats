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

# ls_field FILE N: field N of `tilefs cache ls` for the object ending in /FILE
ls_field() {
	"$TILEFS" cache ls --cache-dir "$CACHE" | awk -F'\t' -v f="/$1" -v n="$2" \
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
	[[ $out == *"bytes: $total"* ]] || fail "stat bytes, expected $total: $out"
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
