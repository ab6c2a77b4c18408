#!/usr/bin/env bats
# Unit claims across processes (issue 54, items 1-4): a claim held by a
# process that still works must fence. Each test scripts one interleaving
# of two or three tilefs processes on one cache dir (real FUSE mounts, a
# real `tilefs warm`) against tests/lib/script_origin.py, which holds a
# chosen GET (dripping a byte every 250 ms, so curl's stall check stays
# quiet) until the test lets it go or cuts it. Every process runs with
# TILEFS_CLAIM_WAIT_S=1: a reader waits 1 s for another live process's
# fetch of a unit, then fetches it for its own read without storing it; a
# live holder's claim is never taken over.
#
# Each test waits for events (a GET held, a read returned, a process
# exited, a row in the index), never for a fixed time, so on a build that
# ignores TILEFS_CLAIM_WAIT_S (cd10cfa: 30 s, and a claim older than that
# taken over) the same steps still happen, only 30 s later, and the test
# fails on what the user would see: zeros read, a unit punched under
# another process's row, a claim dropped, a reader made to wait.
#
# The file: big.bin, 4 MiB of pseudo-random bytes, a plain file, so its
# units are the --header-size head [0, 64K) and --block-size (256K)
# blocks: [64K, 256K), then [k*256K, (k+1)*256K).

bats_require_minimum_version 1.5.0
load ../lib/tilefs

K=1024
BIG_SIZE=$((4 * 1024 * K))

setup() {
	T=${BATS_TEST_TMPDIR:?run under bats}
	[ -x "$TILEFS" ] || fail "tilefs binary not found at $TILEFS (run make first)"
	# (packaging/debian-packages.txt lists it: install it with
	# packaging/install-deps)
	command -v sqlite3 >/dev/null || fail "sqlite3 is not installed: run packaging/install-deps"
	CACHE=$T/cache
	WWW=$T/www
	mkdir -p "$CACHE" "$WWW"
	"$PY" -c 'import random, sys
open(sys.argv[1], "wb").write(random.Random(54).randbytes(int(sys.argv[2])))' \
		"$WWW/big.bin" "$BIG_SIZE"
	export TILEFS_CLAIM_WAIT_S=1
	so_start
}

teardown() {
	tilefs_teardown
}

# ---- the scripted origin ---------------------------------------------------

# so_start: script_origin.py serving $WWW; sets ORIGIN_URL, ORIGIN_LOG (the
# origin.bash helpers read it), SO_CTL (its control dir).
so_start() {
	SO_CTL=$T/so-ctl
	local ports=$T/so.port
	ORIGIN_LOG=$T/so-access.log
	# started from a subshell: not a job of the test's shell, whose end
	# (killed by the teardown) it would report
	(
		"$PY" "$TESTS_LIB/script_origin.py" --root "$WWW" --ctl "$SO_CTL" \
			--port-file "$ports" --log "$ORIGIN_LOG" </dev/null >"$T/so.out" 2>&1 3>&- &
		echo $! >"$T/so.pid"
	)
	TILEFS_EXTRA_PIDS+=("$(cat "$T/so.pid")")
	wait_until "script_origin.py's start" test -s "$ports"
	ORIGIN_URL="http://127.0.0.1:$(cat "$ports")/"
	export ORIGIN_URL ORIGIN_LOG
}

# so_hold NAME KEY=VALUE...: hold the GETs the rule matches (script_origin.py
# says how) until so_release or so_cut NAME.
so_hold() {
	local name=$1 kv
	shift
	touch "$SO_CTL/$name.hold"
	for kv in "$@"; do
		echo "$kv"
	done >"$SO_CTL/$name.rule.tmp"
	mv "$SO_CTL/$name.rule.tmp" "$SO_CTL/$name.rule"
}

# so_held NAME: the rule holds a GET now (wait_until it)
so_held() {
	[ -s "$SO_CTL/$1.hits" ] && [ ! -e "$SO_CTL/$1.done" ]
}

# so_range NAME: the Range of the GET the rule held first ("bytes=A-B")
so_range() {
	head -n 1 "$SO_CTL/$1.hits"
}

so_release() {
	rm -f "$SO_CTL/$1.hold"
	wait_until "the end of the GET held by rule $1" test -s "$SO_CTL/$1.done"
}

so_cut() {
	touch "$SO_CTL/$1.cut"
	rm -f "$SO_CTL/$1.hold"
	wait_until "the cut of the GET held by rule $1" test -s "$SO_CTL/$1.done"
}

# ---- the index -------------------------------------------------------------

sq() {
	sqlite3 -cmd '.timeout 10000' "$CACHE/index.db" "$@"
}

# big_id: the index id of big.bin (one version of it)
big_id() {
	sq "SELECT id FROM objects WHERE url LIKE '%/big.bin'"
}

# unit_rows OFF: rows of big.bin's unit at OFF (0 or 1)
unit_rows() {
	sq "SELECT count(*) FROM units WHERE object_id = $(big_id) AND off = $1"
}

has_unit() {
	[ "$(unit_rows "$1")" = 1 ]
}

# claimed_offs: the offsets of big.bin's units claimed now, one a line
claimed_offs() {
	sq "SELECT off FROM claims WHERE object_id = $(big_id) AND off >= 0 ORDER BY off"
}

is_claimed() {
	[ "$(sq "SELECT count(*) FROM claims WHERE object_id = $(big_id) AND off = $1")" = 1 ]
}

# claim_holder OFF: the pid the claim of the unit at OFF names, or nothing
# (no claim); "?" if the claims table has no pid column any more.
claim_holder() {
	if [ "$(sq "SELECT count(*) FROM pragma_table_info('claims') WHERE name = 'pid'")" != 1 ]; then
		is_claimed "$1" && echo "?"
		return 0
	fi
	sq "SELECT pid FROM claims WHERE object_id = $(big_id) AND off = $1"
}

# claimed_by OFF PID: the unit at OFF is claimed, by PID (as far as the
# claims table says who)
claimed_by() {
	local h
	h=$(claim_holder "$1")
	[ "$h" = "$2" ] || [ "$h" = "?" ]
}

# stored_or_claimed_by OFF PID: the unit at OFF has a row, or PID claims it
stored_or_claimed_by() {
	has_unit "$1" || claimed_by "$1" "$2"
}

# ---- reads -----------------------------------------------------------------

# slice FILE OFF LEN OUT: LEN bytes of FILE at OFF (both multiples of 4K)
slice() {
	dd if="$1" of="$4" bs=4096 skip=$(($2 / 4096)) count=$(($3 / 4096)) status=none
}

# read_check MNTFILE OFF LEN WHAT: read LEN bytes at OFF through a mount
# (within 55 s) and compare them with the source file's
read_check() {
	local f=$1 off=$2 len=$3 what=$4 out=$T/read.$RANDOM
	run_to 55 dd if="$f" of="$out" bs=4096 skip=$((off / 4096)) count=$((len / 4096)) \
		status=none || {
		fail "$what: reading $len bytes at $off through the mount failed or hung"
		return 1
	}
	slice "$WWW/big.bin" "$off" "$len" "$out.want"
	cmp "$out" "$out.want" || {
		fail "$what: the bytes at $off read through the mount are not the file's" \
			"($(cmp "$out" "$out.want" 2>&1 | head -n 1); zeros: $(tr -d '\0' <"$out" | wc -c) nonzero of $len)"
		return 1
	}
}

# bg_read NAME MNTFILE OFF LEN: start a read through a mount in the
# background (it may block on a held GET); bg_done NAME, bg_check NAME
bg_read() {
	local name=$1 f=$2 off=$3 len=$4
	slice "$WWW/big.bin" "$off" "$len" "$T/$name.want"
	(
		(
			run_to 85 dd if="$f" of="$T/$name.out" bs=4096 skip=$((off / 4096)) \
				count=$((len / 4096)) status=none
			echo $? >"$T/$name.rc.tmp"
			mv "$T/$name.rc.tmp" "$T/$name.rc"
		) </dev/null >/dev/null 2>&1 3>&- &
		echo $! >"$T/$name.pid"
	)
	TILEFS_EXTRA_PIDS+=("$(cat "$T/$name.pid")")
}

bg_done() {
	[ -f "$T/$1.rc" ]
}

# bg_check NAME WHAT: the background read ended, read without error, and got
# the file's bytes
bg_check() {
	local name=$1 what=$2
	wait_until "the end of $what" bg_done "$name" || return 1
	[ "$(cat "$T/$name.rc")" = 0 ] || {
		fail "$what failed (dd exit $(cat "$T/$name.rc"))"
		return 1
	}
	cmp "$T/$name.out" "$T/$name.want" || {
		fail "$what: wrong bytes ($(cmp "$T/$name.out" "$T/$name.want" 2>&1 | head -n 1);" \
			"$(tr -d '\0' <"$T/$name.out" | wc -c) nonzero bytes of $(stat -c %s "$T/$name.want"))"
		return 1
	}
}

# drop_page_cache FILE: forget the kernel's cached pages of FILE (a file in
# a mount), so that the next read asks the daemon
drop_page_cache() {
	"$PY" -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
os.close(fd)' "$1"
}

# ---- tilefs warm in the background ------------------------------------------

# warm_bg NAME ARGS...: `tilefs warm ARGS` in the background, under the
# reaper (tests/lib/reaper.py); sets WARM_PID. warm_wait NAME: wait for its
# exit; sets status, out, err.
warm_bg() {
	local name=$1 s=$T/warm.$1
	shift
	mkdir -p "$s"
	echo "$TILEFS warm $*" >"$s/cmdline"
	(
		"$PY" "$TESTS_LIB/reaper.py" "$s" -- "$TILEFS" warm "$@" \
			</dev/null >"$s/stdout" 2>"$s/stderr" 3>&- &
	)
	wait_until "the start of tilefs warm ($name)" test -s "$s/cmd.pid"
	WARM_PID=$(cat "$s/cmd.pid")
	TILEFS_EXTRA_PIDS+=("$WARM_PID")
}

warm_wait() {
	local s=$T/warm.$1
	wait_until "the exit of tilefs warm ($1)" test -f "$s/cmd.status" || return 1
	status=$(cat "$s/cmd.status")
	out=$(cat "$s/stdout")
	err=$(cat "$s/stderr")
	printf '$ %s\n[exit %s]\n--- stdout ---\n%s\n--- stderr ---\n%s\n' \
		"$(cat "$s/cmdline")" "$status" "$out" "$err" >&2
}

warm_running() {
	[ ! -f "$T/warm.$1/cmd.status" ]
}

verify_cache() {
	tilefs_run cache verify --cache-dir "$CACHE"
	if [ "$status" != 0 ] || [[ $out == *dropped:* ]]; then
		fail "tilefs cache verify found units whose bytes are not their rows' (exit $status)"
		return 1
	fi
}

# A mount that fetches only what it is asked for: no prefetch, no readahead.
QUIET=(--prefetch none --readahead 0)

# ---- 1 ----------------------------------------------------------------------

# Guards item 1: a mount's background run (whole-file prefetch) whose GET
# outlives the claim wait while another process reads one of its units.
# On cd10cfa the other mount took the claim over (30 s), stored the unit,
# and once it was evicted the run, ending, noted a punch count that already
# held that eviction: the readers that had joined the run's entry read the
# punched hole, 256 KiB of zeros, with no error. Now the claim stands (its
# holder lives): the other mount reads the unit for itself after 1 s and
# stores nothing, and the first mount's readers get the file's bytes.
@test "a background GET outliving the claim wait: its readers get the file's bytes after another process read, stored and evicted the unit" {
	local U=$((256 * K))	# the unit [256K, 512K): in the prefetch's first GET
	# the first GET over U (the prefetch's) sends [.., 832K) at once: U is
	# then in the data file (832K ends a page-grid stage of that run),
	# then the rest drips
	so_hold m1 path=/big.bin covers=$((U + 4 * K)) send=$((832 * K))
	tilefs_mount "$ORIGIN_URL" "$T/m1" --cache-size 256M
	# a miss in the last block starts the whole-file prefetch (auto)
	read_check "$T/m1/big.bin" $((BIG_SIZE - 256 * K)) $((4 * K)) "the first read of m1"
	wait_until "the prefetch's GET over [256K, 512K) held" so_held m1
	wait_until "m1's claim of [256K, 512K)" is_claimed "$U"
	# a reader of m1 joins the prefetch's entry of U and waits for it
	bg_read r1 "$T/m1/big.bin" "$U" $((16 * K))

	# a second process reads U past the claim wait, while m1's GET is held
	tilefs_mount "$ORIGIN_URL" "$T/m2" --cache-size 256M "${QUIET[@]}"
	read_check "$T/m2/big.bin" $((U + 128 * K)) $((4 * K)) \
		"a read of m2 while m1's GET is held (it must not wait for that GET)"
	so_held m1 || fail "m1's GET ended before the test let it go"
	tilefs_umount "$T/m2"	# what m2 stored is in the index now
	local m2_stored=0
	has_unit "$U" && m2_stored=1

	# the cache drops big.bin (U too, if m2 stored it)
	tilefs_run cache evict --cache-dir "$CACHE" big.bin
	[ "$status" = 0 ]
	bg_done r1 && fail "m1's reader of [256K, 512K) returned before its GET ended"

	so_release m1
	bg_check r1 "m1's read of [256K, 512K), which waited for the held GET"
	# and every other read, through m1 and a new mount
	run_to 60 cmp "$WWW/big.bin" "$T/m1/big.bin"
	tilefs_mount "$ORIGIN_URL" "$T/m3" --cache-size 256M "${QUIET[@]}"
	run_to 60 cmp "$WWW/big.bin" "$T/m3/big.bin"
	verify_cache
	tilefs_umount "$T/m3"
	tilefs_umount "$T/m1"
	# and the claim stood: m2 read U for itself, it stored nothing of it
	[ "$m2_stored" = 0 ] ||
		fail "m2 stored [256K, 512K) while m1, alive, held its claim (taken over)"
}

# ---- 2 ----------------------------------------------------------------------

# Guards item 2: a holder that gives up must not punch a unit someone else
# recorded. On cd10cfa the mount took the stalled warm's claim of U over
# (30 s), fetched, recorded U and knew it checked; the warm's GET then
# failed and it abandoned its run: U punched, its row left standing, and
# the mount served its later reads of U from the hole (zeros), while
# `tilefs cache verify` found U's bytes bad. Now the warm abandons only
# what it still holds: the mount's reads and U's row stay right.
@test "a warm whose GET stalls then fails does not punch a unit a mount read meanwhile: right bytes, its row stands and verifies" {
	local U=$((256 * K))	# in the warm's first GET
	tilefs_mount "$ORIGIN_URL" "$T/m" --cache-size 256M "${QUIET[@]}"
	# the warm's first GET over U: held from its first byte, then cut
	so_hold w path=/big.bin covers=$((U + 4 * K))
	warm_bg w --cache-dir "$CACHE" --cache-size 256M -j 1 --retries 0 "$ORIGIN_URL" big.bin
	wait_until "the warm's GET over [256K, 512K) held" so_held w
	wait_until "the warm's claim of [256K, 512K)" is_claimed "$U"

	# the mount reads U past the claim wait while the warm's GET is held
	read_check "$T/m/big.bin" $((U + 128 * K)) $((4 * K)) \
		"a read of the mount while the warm's GET is held"
	# the mount has stored U (if the claim was taken over, as on cd10cfa)
	# or the warm still holds its claim: no store of the mount is on its way
	wait_until "U stored by the mount, or still the warm's" stored_or_claimed_by "$U" "$WARM_PID"
	local taken=0
	has_unit "$U" && taken=1
	warm_running w || fail "the warm ended before its GET was cut"

	so_cut w
	warm_wait w
	[ "$status" = 1 ]
	[[ $err == *"tilefs: warm: big.bin"* ]]

	# the mount's reads of U, from the daemon (not the kernel's pages)
	drop_page_cache "$T/m/big.bin"
	read_check "$T/m/big.bin" "$U" $((256 * K)) "the mount's read of U after the warm failed"
	wait_until "U's row in the index" has_unit "$U"
	drop_page_cache "$T/m/big.bin"
	read_check "$T/m/big.bin" "$U" $((256 * K)) "the mount's second read of U"
	has_unit "$U" || fail "U's row went"
	verify_cache
	run_to 60 cmp "$WWW/big.bin" "$T/m/big.bin"
	tilefs_umount "$T/m"
	[ "$taken" = 0 ] || fail "the mount stored U while the warm, alive, held its claim (taken over)"
}

# ---- 3 ----------------------------------------------------------------------

# Guards item 3: a late unclaim (after a failed GET) must not drop a claim
# another process holds. The warm's first run [64K, 512K) is held; a mount
# claims U2 = [768K, 1M), a unit of the warm's next run, and its own GET
# of U2 is held too. The warm's GET is then cut. On cd10cfa the warm had
# claimed U2 up front, the mount took it over (30 s), and the failed warm
# let go of the claims of the runs it had not fetched by index_unclaim(),
# which drops the claim whoever holds it: the mount's. Now the mount's
# claim stands until the mount records U2.
@test "a warm that fails late does not drop the claim a mount holds on a unit of its next run" {
	local P=$((512 * K)) U2=$((768 * K))
	tilefs_mount "$ORIGIN_URL" "$T/m" --cache-size 256M "${QUIET[@]}"
	# [512K, 768K) cached first: the warm's first GET is [64K, 512K), its
	# next from 768K
	read_check "$T/m/big.bin" "$P" $((4 * K)) "the mount's read of [512K, 768K)"
	wait_until "[512K, 768K) stored" has_unit "$P"
	local MPID
	MPID=$(tilefs_pid "$T/m")

	so_hold w path=/big.bin covers=$((256 * K))
	so_hold m path=/big.bin covers=$((U2 + 4 * K))
	warm_bg w --cache-dir "$CACHE" --cache-size 256M -j 1 --retries 0 "$ORIGIN_URL" big.bin
	wait_until "the warm's first GET held" so_held w
	# the mount reads U2; its GET of U2 is held
	bg_read r "$T/m/big.bin" "$U2" $((4 * K))
	wait_until "the mount's GET of [768K, 1M) held" so_held m
	wait_until "the mount's claim of [768K, 1M)" claimed_by "$U2" "$MPID"

	so_cut w
	warm_wait w
	[ "$status" = 1 ]
	claimed_by "$U2" "$MPID" ||
		fail "the mount's claim of [768K, 1M) was dropped by the failed warm" \
			"(claims of big.bin now: $(claimed_offs | tr '\n' ' '))"

	so_release m
	bg_check r "the mount's read of [768K, 1M)"
	wait_until "[768K, 1M) stored by the mount" has_unit "$U2"
	verify_cache
	run_to 60 cmp "$WWW/big.bin" "$T/m/big.bin"
	tilefs_umount "$T/m"
}

# ---- 4 ----------------------------------------------------------------------

# Guards item 4: `tilefs warm` claims each run just before its GET. On
# cd10cfa a warm claimed every unit of a chunk of the file up front (1 to
# 16 MiB; here 1 MiB, two runs), so while its first GET was slow its
# later claims aged, and a mount reading a later part waited 30 s for a GET
# never sent (then took the claim over). Now, while the warm's first GET is
# held, the claims table holds that GET's units only, and a mount reads,
# fetches and stores a unit of the warm's next run at once.
@test "a warm claims each run just before its GET: while its first GET is held a mount fetches and stores a later unit" {
	local P=$((512 * K)) U2=$((768 * K))
	tilefs_mount "$ORIGIN_URL" "$T/m" --cache-size 256M "${QUIET[@]}"
	# [512K, 768K) cached first: the warm's first run ends at 512K, its
	# next starts at 768K (in the same chunk of work: 1 MiB at least)
	read_check "$T/m/big.bin" "$P" $((4 * K)) "the mount's read of [512K, 768K)"
	wait_until "[512K, 768K) stored" has_unit "$P"

	so_hold w path=/big.bin covers=$((256 * K))
	warm_bg w --cache-dir "$CACHE" --cache-size 256M -j 1 "$ORIGIN_URL" big.bin
	wait_until "the warm's first GET held" so_held w
	local range first last off bad=""
	range=$(so_range w)
	[[ $range =~ ^bytes=([0-9]+)-([0-9]+)$ ]] || fail "held GET's range: '$range'"
	first=${BASH_REMATCH[1]}
	last=${BASH_REMATCH[2]}
	[ "$last" -lt "$U2" ] || fail "the warm's first GET ($range) holds [768K, 1M)"
	wait_until "the warm's claims of its first run" is_claimed $((256 * K))
	for off in $(claimed_offs); do
		[ "$off" -ge "$first" ] && [ "$off" -le "$last" ] || bad+=" $off"
	done
	[ -z "$bad" ] || fail "while its GET $range is held the warm claims units outside it:$bad" \
		"(claims of big.bin: $(claimed_offs | tr '\n' ' '))"

	# the mount reads U2 (in the warm's next run): fetched and stored now,
	# not after a claim wait, and not just for this read
	run_to 20 dd if="$T/m/big.bin" of="$T/u2.out" bs=4096 skip=$((U2 / 4096)) count=1 \
		status=none || fail "the mount's read of [768K, 1M) waited (or failed)"
	slice "$WWW/big.bin" "$U2" $((4 * K)) "$T/u2.want"
	cmp "$T/u2.out" "$T/u2.want"
	TILEFS_WAIT_S=25 wait_until "[768K, 1M) stored by the mount" has_unit "$U2"
	so_held w || fail "the warm's first GET ended before the test let it go"
	warm_running w || fail "the warm ended while its GET was held"

	so_release w
	warm_wait w
	[ "$status" = 0 ]
	[[ $out == *"warmed 1 of 1 files"* ]]
	verify_cache
	run_to 60 cmp "$WWW/big.bin" "$T/m/big.bin"
	tilefs_umount "$T/m"
}
