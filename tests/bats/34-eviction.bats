#!/usr/bin/env bats
# Eviction that keeps what fits: epochs in random order over a data set
# twice the cache fetch about half of it again, not all of it; a one-off
# read of other files does not flush a working set that fits. Default
# options but --cache-size; what the origin sent is read from nginx's log.

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

# make_files DIR N: N files of 1 MiB of random bytes, DIR/f01 ... DIR/fN.
make_files() {
	local i
	mkdir -p "$1"
	for ((i = 1; i <= $2; i++)); do
		head -c 1048576 /dev/urandom >"$1/$(printf 'f%02d' "$i")"
	done
}

# shuffled SEED NAMES...: the names in a random order fixed by SEED.
shuffled() {
	"$PY" -c 'import random, sys
names = sys.argv[2:]
random.Random(int(sys.argv[1])).shuffle(names)
print("\n".join(names))' "$@"
}

# body_bytes PREFIX: body bytes the origin sent for GETs of files under PREFIX.
body_bytes() {
	awk -v p="$1" "$ORIGIN_AWK"'{ parse() }
		m == "GET" && index(u, p) == 1 && u !~ /\/$/ { n += nb }
		END { print n + 0 }' "$ORIGIN_LOG"
}

# read_all DIR NAMES...: read each file of the mount's DIR in full, in that
# order, checking its bytes against the origin's; from tilefs, not from the
# kernel's page cache of an earlier read.
read_all() {
	local d=$1 f
	shift
	echo 1 >/proc/sys/vm/drop_caches
	for f in "$@"; do
		cmp "$SAMPLES/$d/$f" "$MNT/$d/$f" || fail "$d/$f differs from the origin" || return 1
	done
}

# settled LIMIT: the index holds at most LIMIT bytes (eviction has run).
settled() {
	local usage
	usage=$(sqlite3 "$CACHE/index.db" "SELECT value FROM meta WHERE key = 'usage'") || return 1
	[ "$usage" -le "$1" ]
}

@test "epochs in random order over twice the cache: epochs 2 and 3 fetch at most 0.6x of epoch 1" {
	local limit=$((12 * 1048576)) names epoch first bytes
	make_files "$SAMPLES/epochs" 24
	names=$(cd "$SAMPLES/epochs" && echo f*)
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-size 12M
	ls "$MNT/epochs" >/dev/null
	for epoch in 1 2 3; do
		origin_log_reset
		# shellcheck disable=SC2086
		read_all epochs $(shuffled "$((1000 + epoch))" $names) || return 1
		wait_until "the cache back within --cache-size" settled "$limit"
		bytes=$(body_bytes /epochs/)
		echo "epoch $epoch: $bytes bytes from the origin" >&2
		if [ "$epoch" = 1 ]; then
			first=$bytes
			[ "$first" -ge $((24 * 1048576)) ] ||
				fail "epoch 1 fetched $first bytes, less than the 24 MiB it read" || return 1
		else
			[ $((bytes * 10)) -le $((first * 6)) ] ||
				fail "epoch $epoch fetched $bytes bytes, more than 0.6x epoch 1's $first" ||
				return 1
		fi
	done
	tilefs_umount "$MNT"
}

@test "a one-off read of other files between two epochs of a set that fits leaves it cached" {
	local limit=$((12 * 1048576)) hot others
	make_files "$SAMPLES/hot" 6
	make_files "$SAMPLES/scan" 20
	hot=$(cd "$SAMPLES/hot" && echo f*)
	others=$(cd "$SAMPLES/scan" && echo f*)
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-size 12M
	# shellcheck disable=SC2086
	read_all hot $(shuffled 1 $hot) || return 1
	wait_until "the cache within --cache-size" settled "$limit"
	origin_log_reset
	# shellcheck disable=SC2086
	read_all scan $others || return 1
	[ "$(body_bytes /scan/)" -ge $((20 * 1048576)) ] || fail "the scan was not read from the origin"
	wait_until "the cache back within --cache-size" settled "$limit"
	origin_log_reset
	# shellcheck disable=SC2086
	read_all hot $(shuffled 2 $hot) || return 1
	assert_eq "$(body_bytes /hot/)" 0 "bytes fetched again for the set read before the scan"
	assert_eq "$(origin_gets)" 0 "ranged GETs in its second epoch"
	tilefs_umount "$MNT"
}

# cached_bytes NAME: BYTES_CACHED of the object whose URL ends in /NAME
# (`tilefs cache ls`), 0 if none.
cached_bytes() {
	"$TILEFS" cache ls --json --cache-dir "$CACHE" | "$PY" -c 'import json, sys
f = "/" + sys.argv[1]
print(sum(o["cached_bytes"] for o in json.load(sys.stdin) if o["url"].endswith(f)))' "$1"
}

@test "tilefs warm into a full cache keeps every file it warms whole, and a mount then reads them with no request" {
	local limit=$((12 * 1048576)) names f
	make_files "$SAMPLES/fill" 16
	make_files "$SAMPLES/want" 4
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-size 12M
	names=$(cd "$SAMPLES/fill" && echo f*)
	# shellcheck disable=SC2086
	read_all fill $names || return 1
	wait_until "the cache within --cache-size" settled "$limit"
	# the mount stores what it fetched after the cache first comes within
	# its bound, and those later, fresher units would push the warmed ones
	# out (least recently read first): the unmount waits for its writes
	tilefs_umount "$MNT"
	settled "$limit" || fail "the cache over --cache-size after the unmount"
	tilefs_run warm --cache-dir "$CACHE" --cache-size 12M "$ORIGIN_URL" want
	assert_eq "$status" 0 "tilefs warm's exit status"
	for f in f01 f02 f03 f04; do
		assert_eq "$(cached_bytes "want/$f")" 1048576 "bytes of want/$f cached after the warm"
	done
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-size 12M
	origin_log_reset
	read_all want f01 f02 f03 f04 || return 1
	assert_eq "$(body_bytes /want/)" 0 "bytes fetched for the files warmed"
	tilefs_umount "$MNT"
}
