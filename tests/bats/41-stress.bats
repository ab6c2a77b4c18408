#!/usr/bin/env bats
# The stress test (tests/stress/run, issue 54), bounded to 60 s of load: two
# mounts and a `tilefs warm` restarted in a loop on one small cache dir
# (eviction running), a fault-injecting origin (503, 429, cut, stalled and
# slow answers), a 1 s claim wait (TILEFS_CLAIM_WAIT_S) so claims are taken
# over, a SIGKILL of a mount or the warm every 2 to 5 s, and readers of
# random ranges, whole tiles and mmap slices through both mounts, every byte
# compared with the source. No wrong byte, no crash. The longer run is
# `make stress SECONDS=N`.

bats_require_minimum_version 1.5.0
load ../lib/tilefs

setup() {
	[ "$(id -u)" = 0 ] || skip "the stress test mounts FUSE file systems: needs root"
	[ -c /dev/fuse ] || skip "no /dev/fuse"
	command -v fusermount3 >/dev/null || skip "no fusermount3 (fuse3)"
}

teardown() {
	# the run cleans up after itself; should it have been killed, detach
	# whatever it left mounted under this test's scratch dir
	local mnt
	awk '{ print $2 }' /proc/mounts | grep "^${BATS_TEST_TMPDIR}/" | while read -r mnt; do
		fusermount3 -uz "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
	done
	return 0
}

@test "stress: 60 s of two mounts, a warm loop, origin faults and SIGKILLs: no wrong byte, no crash" {
	local summary reads wrong errors crashes
	TMPDIR=$BATS_TEST_TMPDIR run --separate-stderr \
		timeout -k 15 240 "$REPO_ROOT/tests/stress/run" --seconds 60
	printf '%s\n' "$output" >&2
	printf '%s\n' "$stderr" | tail -n 60 >&2
	summary=$(grep '^stress: reads ' <<<"$output" | tail -n 1)
	[[ $summary =~ ^stress:\ reads\ ([0-9]+),\ wrong\ reads\ ([0-9]+),\ errors\ ([0-9]+),\ crashes\ ([0-9]+)\  ]] ||
		fail "no summary line 'stress: reads R, wrong reads W, errors E, crashes C (...)' (exit $status)"
	reads=${BASH_REMATCH[1]} wrong=${BASH_REMATCH[2]} errors=${BASH_REMATCH[3]} crashes=${BASH_REMATCH[4]}
	assert_eq "$wrong" 0 "wrong reads"
	assert_eq "$crashes" 0 "crashes"
	[ "$reads" -ge 100 ] || fail "only $reads reads in 60 s (at least 100 expected)"
	assert_eq "$status" 0 "exit status of tests/stress/run"
}
