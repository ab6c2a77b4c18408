# tests/lib/tilefs.bash: mount/unmount helpers for the tilefs bats suite.
#
#   load ../lib/tilefs              (from a .bats file; also loads origin.bash)
#   tilefs_setup                    per-test set-up: T (scratch dir), SAMPLES
#                                   (a fresh copy of the sample data set)
#   tilefs_teardown                 always unmounts (lazily), kills leftover
#                                   daemons, unmounts test tmpfs, stops nginx
#   tilefs_mount SOURCE MNT [OPTS]  tilefs mount OPTS --log-file LOG SOURCE MNT
#                                   (adds --cache-dir $T/cache unless given);
#                                   sets TILEFS_LOG; fails showing the log
#   tilefs_umount MNT               fusermount3 -u, then waits for the daemon
#                                   (wait_until) and asserts that it exited 0
#   tilefs_run ARGS...              run tilefs, set status/out/err/err1
#   tilefs_pid MNT                  pid of the daemon serving MNT
#   tilefs_alive MNT                daemon running and MNT still mounted
#   tilefs_kill9 MNT                SIGKILL the daemon, detach the mount
#   tilefs_log MNT                  path of that mount's log file
#   is_mounted MNT                  true while MNT is in /proc/mounts
#   wait_until WHAT CMD...          run CMD until it succeeds (an event the
#                                   daemon brings about in the background),
#                                   up to $TILEFS_WAIT_S s; else fail: WHAT
#   cmp_tree LOCAL MNT, file_list DIR, data_bytes CACHEDIR, run_to SECS CMD,
#   assert_eq, assert_enoent, fail, ro_tmpfs DIR
#   metric FILE NAME, metric_is FILE NAME VALUE, metric_ge FILE NAME MIN
#                                   a sample (no labels) of a metrics file
#
# The daemon's exit status: `tilefs mount` runs under reaper.py, a child
# subreaper, so the daemon it forks is re-parented to the reaper, which
# records how it exited.

TESTS_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$TESTS_LIB/../.." && pwd)
# shellcheck source=origin.bash
source "$TESTS_LIB/origin.bash"

TILEFS=${TILEFS:-$REPO_ROOT/build/tilefs}
case $TILEFS in
/*) ;;
*) TILEFS=$REPO_ROOT/$TILEFS ;;
esac
export TILEFS
# the Python package (tools/python/tilefs) as the tree has it; the package
# test (99-packaging.bats) imports the one the .deb installs instead
export PYTHONPATH=$REPO_ROOT/tools/python${PYTHONPATH:+:$PYTHONPATH}

TILEFS_MNTS=()
TILEFS_STATES=()
TILEFS_EXTRA_MOUNTS=()
TILEFS_EXTRA_PIDS=()
TILEFS_NSTATE=0

fail() {
	printf '%s\n' "$*" >&2
	return 1
}

# How long wait_until waits for an event: generous, as the machine may be
# busy with other work (a test waits only as long as the event takes).
TILEFS_WAIT_S=${TILEFS_WAIT_S:-90}

# wait_until WHAT CMD...: run CMD every 0.1 s until it succeeds. CMD tests
# for an event the daemon brings about in its own time (a metric, an index
# row, a log line): never wait for that with a fixed sleep or a tight
# bound. After TILEFS_WAIT_S seconds, fail: "WHAT did not happen ...".
wait_until() {
	local what=$1 deadline=$((SECONDS + TILEFS_WAIT_S))
	shift
	until "$@"; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			fail "$what did not happen within $TILEFS_WAIT_S s"
			return 1
		fi
		sleep 0.1
	done
}

# assert_eq ACTUAL EXPECTED WHAT
assert_eq() {
	[ "$1" = "$2" ] || fail "$3: expected '$2', got '$1'"
}

# assert_enoent PATH: stat PATH fails with "No such file or directory".
assert_enoent() {
	local e
	if e=$(stat -- "$1" 2>&1); then
		fail "$1 exists"
		return 1
	fi
	[[ $e == *"No such file or directory"* ]] || fail "stat $1: $e"
}

# same_size_rewrite SRC DST: DST gets SRC's bytes with the first 16
# reversed: another version of the same size.
same_size_rewrite() {
	/usr/bin/python3 - "$1" "$2" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
open(sys.argv[2], "wb").write(data[:16][::-1] + data[16:])
PY
	! cmp -s "$1" "$2" || fail "rewriting $1 changed nothing"
}

# tilefs_setup: scratch dir T, the sample data set in $T/origin (SAMPLES).
tilefs_setup() {
	T=${BATS_TEST_TMPDIR:?run under bats}
	SAMPLES=$T/origin
	make_sample_cogs "$SAMPLES" || return 1
	[ -x "$TILEFS" ] || fail "tilefs binary not found at $TILEFS (run make first)"
}

is_mounted() {
	# /proc/mounts writes a blank, tab, newline and backslash as \ooo
	awk -v m="$1" '{
		p = $2; gsub(/\\040/, " ", p); gsub(/\\011/, "\t", p); gsub(/\\012/, "\n", p)
		gsub(/\\134/, "\\", p)
		if (p == m) found = 1
	} END { exit !found }' /proc/mounts
}

_tilefs_state() {
	local i
	for ((i = ${#TILEFS_MNTS[@]} - 1; i >= 0; i--)); do
		if [ "${TILEFS_MNTS[$i]}" = "$1" ]; then
			echo "${TILEFS_STATES[$i]}"
			return 0
		fi
	done
	return 1
}

tilefs_log() {
	local s
	s=$(_tilefs_state "$1") || return 1
	echo "$s/tilefs.log"
}

# tilefs_pid MNT: the daemon serving MNT (a child of our reaper; failing
# that, the process whose command line ends with MNT).
tilefs_pid() {
	local s rp pid
	s=$(_tilefs_state "$1") || return 1
	rp=$(cat "$s/reaper.pid" 2>/dev/null)
	if [ -n "$rp" ]; then
		for pid in $(pgrep -P "$rp"); do
			pid_alive "$pid" && echo "$pid" && return 0
		done
	fi
	pgrep -f -- " $1\$" | head -n 1 | grep .
}

_tilefs_show() {
	local s=$1 f
	for f in stdout stderr tilefs.log; do
		if [ -s "$s/$f" ]; then
			echo "--- $f (last 60 lines) ---"
			tail -n 60 "$s/$f"
		fi
	done >&2
}

# tilefs_mount SOURCE MNT [OPTIONS...]
tilefs_mount() {
	local src=$1 mnt=$2 s i rc has_cache=0 has_log=0 a
	shift 2
	mkdir -p "$mnt" || return 1
	mnt=$(cd "$mnt" && pwd)
	for a in "$@"; do
		case $a in
		--cache-dir | --cache-dir=*) has_cache=1 ;;
		--log-file | --log-file=*) has_log=1 ;;
		esac
	done
	TILEFS_NSTATE=$((TILEFS_NSTATE + 1))
	s=$T/tilefs-state.$TILEFS_NSTATE
	mkdir -p "$s" || return 1
	local opts=("$@")
	if [ "$has_cache" = 0 ]; then
		mkdir -p "$T/cache"
		opts+=(--cache-dir "$T/cache")
	fi
	[ "$has_log" = 1 ] || opts+=(--log-file "$s/tilefs.log")
	TILEFS_MNTS+=("$mnt")
	TILEFS_STATES+=("$s")
	echo "$TILEFS mount ${opts[*]} $src $mnt" >"$s/cmdline"
	"$PY" "$TESTS_LIB/reaper.py" "$s" -- "$TILEFS" mount "${opts[@]}" "$src" "$mnt" \
		</dev/null >"$s/stdout" 2>"$s/stderr" 3>&- &
	for ((i = 0; i < 600; i++)); do
		[ -f "$s/cmd.status" ] && break
		sleep 0.05
	done
	if [ ! -f "$s/cmd.status" ]; then
		_tilefs_show "$s"
		fail "tilefs mount $src $mnt did not return within 30 s"
		return 1
	fi
	rc=$(cat "$s/cmd.status")
	TILEFS_LOG=$s/tilefs.log
	if [ "$rc" != 0 ]; then
		_tilefs_show "$s"
		fail "tilefs mount $src $mnt exited $rc"
		return 1
	fi
	if ! is_mounted "$mnt"; then
		_tilefs_show "$s"
		fail "tilefs mount returned 0 but $mnt is not in /proc/mounts"
		return 1
	fi
	return 0
}

# tilefs_run ARGS...: run `$TILEFS ARGS` (up to 60 s) with its output in
# files, under the reaper, so that a daemon it may start by mistake neither
# holds bats' pipes nor outlives the test. Sets status, out, err (stdout and
# stderr text) and err1 (first line of stderr). If the last argument is a
# directory it is remembered as a possible mountpoint for the teardown.
tilefs_run() {
	local s i last=${!#}
	TILEFS_NSTATE=$((TILEFS_NSTATE + 1))
	s=$T/tilefs-state.$TILEFS_NSTATE
	mkdir -p "$s" || return 1
	if [ $# -gt 0 ] && [ -d "$last" ]; then
		TILEFS_MNTS+=("$(cd "$last" && pwd)")
		TILEFS_STATES+=("$s")
	fi
	echo "$TILEFS $*" >"$s/cmdline"
	"$PY" "$TESTS_LIB/reaper.py" "$s" -- "$TILEFS" "$@" \
		</dev/null >"$s/stdout" 2>"$s/stderr" 3>&- &
	for ((i = 0; i < 1200; i++)); do
		[ -f "$s/cmd.status" ] && break
		sleep 0.05
	done
	out=$(cat "$s/stdout")
	err=$(cat "$s/stderr")
	err1=$(head -n 1 "$s/stderr")
	if [ ! -f "$s/cmd.status" ]; then
		status=124
		fail "tilefs $* did not return within 60 s"
		return 0
	fi
	status=$(cat "$s/cmd.status")
	printf '$ tilefs %s\n[exit %s]\n--- stdout ---\n%s\n--- stderr ---\n%s\n' \
		"$*" "$status" "$out" "$err" >&2
	return 0
}

# tilefs_umount MNT: unmount, wait for the daemon, assert it exited 0.
tilefs_umount() {
	local mnt=$1 s pid st bad=0
	mnt=$(cd "$mnt" && pwd)
	s=$(_tilefs_state "$mnt") || {
		fail "tilefs_umount: $mnt was not mounted by tilefs_mount"
		return 1
	}
	# busy while the kernel still holds a file of it (releases are
	# asynchronous)
	if ! wait_until "a successful fusermount3 -u $mnt" fusermount3 -u "$mnt" 2>"$s/umount.err"; then
		cat "$s/umount.err" >&2
		return 1
	fi
	# the daemon stores what it fetched and closes the index before it exits
	if ! wait_until "the exit of the daemon for $mnt after fusermount3 -u" test -f "$s/done"; then
		_tilefs_show "$s"
		return 1
	fi
	if [ -f "$s/daemon.status" ]; then
		while read -r pid st; do
			if [ "$st" != 0 ]; then
				echo "tilefs daemon $pid exited with status $st after unmount" >&2
				bad=1
			fi
		done <"$s/daemon.status"
	fi
	if [ "$bad" = 1 ]; then
		_tilefs_show "$s"
		return 1
	fi
	! is_mounted "$mnt" || fail "$mnt still mounted after tilefs_umount"
}

# tilefs_kill9 MNT: SIGKILL the daemon, detach the dead mount.
tilefs_kill9() {
	local mnt=$1 pid s i
	pid=$(tilefs_pid "$mnt") || {
		fail "no tilefs daemon found for $mnt"
		return 1
	}
	kill -KILL "$pid"
	s=$(_tilefs_state "$mnt")
	for ((i = 0; i < 100; i++)); do
		pid_alive "$pid" || break
		sleep 0.05
	done
	fusermount3 -uz "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
}

# tilefs_alive MNT: the daemon runs and MNT is still mounted.
tilefs_alive() {
	local pid
	pid=$(tilefs_pid "$1") || {
		fail "tilefs daemon for $1 is gone"
		return 1
	}
	is_mounted "$1" || fail "$1 is no longer in /proc/mounts"
}

# ro_tmpfs DIR: mount an empty read-only tmpfs on DIR (unmounted in teardown;
# other mounts a test makes can be added to TILEFS_EXTRA_MOUNTS too)
ro_tmpfs() {
	mkdir -p "$1" && mount -t tmpfs -o ro,size=1m tmpfs "$1" && TILEFS_EXTRA_MOUNTS+=("$1")
}

tilefs_teardown() {
	local i j mnt s pid rp
	for ((i = ${#TILEFS_MNTS[@]} - 1; i >= 0; i--)); do
		mnt=${TILEFS_MNTS[$i]}
		s=${TILEFS_STATES[$i]}
		if is_mounted "$mnt"; then
			fusermount3 -uz "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
		fi
		rp=$(cat "$s/reaper.pid" 2>/dev/null)
		[ -n "$rp" ] || continue
		for ((j = 0; j < 40; j++)); do
			[ -f "$s/done" ] && break
			[ -f "$s/cmd.status" ] || { [ "$j" -lt 2 ] || break; }
			sleep 0.05
		done
		if [ ! -f "$s/done" ]; then
			for pid in $(pgrep -P "$rp"); do
				kill -KILL "$pid" 2>/dev/null
			done
			sleep 0.1
			kill -TERM "$rp" 2>/dev/null
		fi
	done
	for pid in "${TILEFS_EXTRA_PIDS[@]}"; do
		kill -KILL "$pid" 2>/dev/null
	done
	for mnt in "${TILEFS_EXTRA_MOUNTS[@]}"; do
		umount -l "$mnt" 2>/dev/null || true
	done
	origin_stop
	return 0
}

# run_to SECONDS CMD...: CMD with a time limit (a hung FUSE read must fail
# the test, not hang the suite).
run_to() {
	local t=$1
	shift
	timeout -k 5 "$t" "$@"
}

# patch_folders DIR N: N patch folders p000, p001... under DIR, each of
# three small band files (B02.txt, B03.txt, B04.txt): a flat folder of
# samples, as BigEarthNet's
patch_folders() {
	local i b d
	for ((i = 0; i < $2; i++)); do
		d=$1/p$(printf %03d "$i")
		mkdir -p "$d"
		for b in B02 B03 B04; do
			echo "patch $i band $b" >"$d/$b.txt"
		done
	done
}

# cmp_tree LOCALDIR MNTDIR [SKIP]: every file under LOCALDIR (but those
# under its folder SKIP) reads identical under MNTDIR. Prints the first
# mismatches.
cmp_tree() {
	local local_dir=$1 mnt=$2 f bad=0
	local -a skip=()
	[ -z "${3:-}" ] || skip=(! -path "./$3/*")
	while IFS= read -r -d '' f; do
		if ! run_to 120 cmp -- "$local_dir/$f" "$mnt/$f"; then
			echo "differs: $f" >&2
			bad=1
		fi
	done < <(cd "$local_dir" && find . -type f ! -name '.*' "${skip[@]}" -print0 | sort -z)
	return "$bad"
}

# file_list DIR: relative paths of the regular files under DIR, sorted.
file_list() {
	(cd "$1" && find . -type f ! -name '.*' | sed 's|^\./||' | LC_ALL=C sort)
}

# data_bytes CACHEDIR: disk space the data-* dirs of a cache dir take
# (allocated blocks: evicted units are holes in sparse files, and holes are
# exactly the space --cache-size gives back).
data_bytes() {
	local dirs
	dirs=$(compgen -G "$1/data-*")
	if [ -z "$dirs" ]; then
		echo 0
		return
	fi
	# shellcheck disable=SC2086
	du -s -B1 -c $dirs | tail -n 1 | cut -f 1
}

# metric FILE NAME: the value of the sample NAME (no labels) in the metrics
# file FILE (--metrics-file, rewritten every 5 s: wait_until for a change)
metric() {
	awk -v n="$2" '$1 == n { print $2 }' "$1"
}

# metric_is FILE NAME VALUE: the sample NAME in FILE is VALUE
metric_is() {
	[ "$(metric "$1" "$2" 2>/dev/null)" = "$3" ]
}

# metric_ge FILE NAME MIN: the sample NAME in FILE is at least MIN
metric_ge() {
	local v
	v=$(metric "$1" "$2" 2>/dev/null)
	[ -n "$v" ] && [ "$v" -ge "$3" ]
}
