#!/usr/bin/env bats
# A cache dir on a filesystem smaller than --cache-size (an 8 MiB tmpfs):
# the mount warns at start, naming the sizes, and caches within what the
# disk holds; a disk filled by someone else is said once a minute, with a
# count; reads that succeed log no error; the log, in the cache dir on the
# same disk, never holds a line cut short.

bats_require_minimum_version 1.5.0
load ../lib/tilefs

setup() {
	tilefs_setup
	# a 12 MiB file: more than the disk holds
	"$PY" -c 'import random, sys; r = random.Random(31)
sys.stdout.buffer.write(r.randbytes(12 << 20))' >"$SAMPLES/big.bin"
	origin_start "$SAMPLES"
	MNT=$T/mnt
	DISK=$T/disk
	mkdir -p "$DISK"
	mount -t tmpfs -o size=8m tmpfs "$DISK" && TILEFS_EXTRA_MOUNTS+=("$DISK") ||
		fail "cannot mount an 8 MiB tmpfs" || return 1
	CACHE=$DISK/cache
	LOG=$CACHE/tilefs.log
}

teardown() {
	tilefs_teardown
}

# LINE_RE: a whole log line: time, process, level, message.
LINE_RE='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z tilefs\[[0-9]+\]: (error|warn|info|debug): [^ ]'

# log_whole FILE: every line of FILE has the log line format, and the file
# ends with a newline.
log_whole() {
	local bad
	bad=$(grep -cvE "$LINE_RE" "$1" || true)
	[ "$bad" = 0 ] || fail "$bad log lines cut or garbled:" "$(grep -vE "$LINE_RE" "$1" | head -5)" ||
		return 1
	[ ! -s "$1" ] || [ "$(tail -c 1 "$1" | od -An -c | tr -d ' ')" = '\n' ] ||
		fail "the log ends mid-line: $(tail -c 200 "$1")"
}

# disk_full_once_a_minute FILE: the log's disk-full warnings are a minute
# apart or more, by their time stamps (to the second)
disk_full_once_a_minute() {
	"$PY" - "$1" <<'PYEOF'
import datetime, sys
ts = [datetime.datetime.strptime(line.split()[0], "%Y-%m-%dT%H:%M:%S.%fZ")
      for line in open(sys.argv[1]) if "cache disk is full" in line]
sys.exit(any((b - a).total_seconds() < 59 for a, b in zip(ts, ts[1:])))
PYEOF
}

# no_errors FILE: no error line (every read of the test succeeded), and
# no reader waited on a claim of its own process (one the full disk kept
# it from releasing)
no_errors() {
	! grep -E ': error: ' "$1" || fail "error lines for reads that succeeded"
	! grep "for another process's fetch" "$1" ||
		fail "a reader waited on a claim of its own process"
}

# read_all [SKIP]: every file of the origin (but those under its folder
# SKIP) read through the mount, twice, bytes identical to the origin's
read_all() {
	cmp_tree "$SAMPLES" "$MNT" "$@" || return 1
	cmp_tree "$SAMPLES" "$MNT" "$@"
}

@test "--cache-size 1G on an 8 MiB disk: one start warning naming the sizes and the size used; at most one disk-full warning, no error, whole log lines" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-dir "$CACHE" --cache-size 1G --log-file "$LOG" --log-level info
	origin_log_reset
	read_all || return 1
	tilefs_umount "$MNT"
	cat "$LOG" >&2
	grep -E 'warn: --cache-size 1\.0 GiB, .*reserve \([0-9.]+ KiB\).* index \([0-9.]+ MiB\).* holds for it \((8\.0|7\.[0-9]) MiB\): using [0-9.]+ MiB$' "$LOG" ||
		fail "no start warning naming --cache-size, the disk and the size used" || return 1
	assert_eq "$(grep -c 'cache-size' "$LOG")" 1 "start warnings"
	# units written ahead of their eviction may still fill it for a moment:
	# said once a minute at most (a slow run may last past a minute)
	disk_full_once_a_minute "$LOG" ||
		fail "more than one disk-full warning within a minute" || return 1
	no_errors "$LOG"
	log_whole "$LOG"
	# read twice through a cache smaller than it: big.bin comes twice, not
	# more (each unit once a read, none GET again for want of room)
	local got
	got=$(origin_range_bytes /big.bin)
	[ "$got" -le $((2 * (12 << 20) + (1 << 20))) ] || fail "big.bin fetched as $got bytes"
}

@test "a cache disk filled by another program, twice: one disk-full warning a minute, with a count, no error, reads right, whole log lines" {
	# a file for each round that nothing reads before it, each alone in
	# its folder (a sample's other files are opened with it): reading it
	# writes to the full disk, whatever the cache holds of the others
	local round
	for round in 1 2; do
		mkdir -p "$SAMPLES/rounds/$round"
		"$PY" -c "import random, sys; r = random.Random($round)
sys.stdout.buffer.write(r.randbytes(512 << 10))" >"$SAMPLES/rounds/$round/fresh.bin"
	done
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-dir "$CACHE" --log-file "$LOG" --log-level info
	cmp_tree "$SAMPLES" "$MNT" rounds || return 1
	for round in 1 2; do
		# another program takes every free byte of the disk, what
		# eviction freed after the first time included
		dd if=/dev/zero of="$DISK/filler$round" bs=4k 2>/dev/null || true
		# reads come to the daemon, not the kernel's page cache
		echo 3 >/proc/sys/vm/drop_caches
		run_to 120 cmp -- "$SAMPLES/rounds/$round/fresh.bin" "$MNT/rounds/$round/fresh.bin" ||
			fail "round $round: fresh.bin differs" || return 1
		read_all rounds || return 1
	done
	rm -f "$DISK"/filler*
	tilefs_umount "$MNT"
	cat "$LOG" >&2
	grep -q 'cache disk is full' "$LOG" || fail "the full disk was not said" || return 1
	disk_full_once_a_minute "$LOG" ||
		fail "more than one disk-full warning within a minute" || return 1
	grep -qE 'warn: cache disk (was full [0-9]+ more times? since it was last said|is full \(and [0-9]+ more times? in the last 60 s\))' "$LOG" ||
		fail "no count of the times the disk was full and not said"
	no_errors "$LOG"
	log_whole "$LOG"
}
