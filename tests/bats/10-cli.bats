#!/usr/bin/env bats
# Command line: help, version, usage errors (exit 2), start-up failures
# (exit 1), the mount/unmount life cycle and the log format.

bats_require_minimum_version 1.5.0
load ../lib/tilefs

setup() {
	tilefs_setup
	origin_start "$SAMPLES"
	MNT=$T/mnt
	mkdir -p "$MNT" "$T/cache"
}

teardown() {
	tilefs_teardown
}

# usage_error: the last tilefs_run was a command-line error.
usage_error() {
	assert_eq "$status" 2 "exit status" || return 1
	[[ $err1 == "tilefs: "* ]] || fail "stderr does not start with 'tilefs: ': $err1" || return 1
	grep -q -- "--help" <<<"$err" || fail "usage message does not mention --help"
}

# startup_error: the last tilefs_run failed at start-up and mounted nothing.
startup_error() {
	assert_eq "$status" 1 "exit status" || return 1
	[[ $err1 == "tilefs: "* ]] || fail "stderr does not start with 'tilefs: ': $err1" || return 1
	! is_mounted "$MNT" || fail "$MNT got mounted anyway"
}

@test "--help exits 0 and describes the mount command" {
	tilefs_run --help
	assert_eq "$status" 0 "exit status"
	grep -qi "usage" <<<"$out$err"
	grep -q "mount" <<<"$out"
	grep -q -- "--version" <<<"$out"
}

@test "mount --help names every kind of SOURCE: http(s)://, s3://, az://, gs://" {
	tilefs_run mount --help
	assert_eq "$status" 0 "exit status"
	local usage scheme missing=""
	usage=$(sed -n '/^Options:/q;p' <<<"$out")
	for scheme in 'http(s)://' 's3://' 'az://' 'gs://'; do
		grep -qF -- "$scheme" <<<"$usage" || missing="$missing $scheme"
	done
	[ -z "$missing" ] || fail "mount --help's SOURCE text does not name:$missing
$usage"
}

@test "--version exits 0 and prints the name and a version number" {
	tilefs_run --version
	assert_eq "$status" 0 "exit status"
	grep -Eq '^tilefs.*[0-9]+\.[0-9]+' <<<"$out" || fail "no 'tilefs X.Y' in: $out"
}

@test "mount --help exits 0 and mentions every option of the contract" {
	tilefs_run mount --help
	assert_eq "$status" 0 "exit status"
	local o missing=""
	for o in --foreground --cache-dir --cache-size --block-size --ttl --list \
		--ca-file --retries --log-level --log-file; do
		grep -q -- "$o\b" <<<"$out" || missing="$missing $o"
	done
	grep -Eq -- '(^|[^-[:alnum:]])-f\b' <<<"$out" || missing="$missing -f"
	grep -Eq -- '(^|[^-[:alnum:]])-o\b' <<<"$out" || missing="$missing -o"
	[ -z "$missing" ] || fail "mount --help does not mention:$missing"
	grep -q "SOURCE" <<<"$out" || grep -qi "url" <<<"$out" || fail "no SOURCE in the usage"
}

@test "no arguments: exit 2 with a usage message" {
	tilefs_run
	usage_error
}

@test "unknown subcommand: exit 2" {
	tilefs_run frobnicate
	usage_error
	grep -q frobnicate <<<"$err" || fail "message does not name the subcommand"
}

@test "unknown option: exit 2 naming the option" {
	tilefs_run mount --bogus-option "$ORIGIN_URL" "$MNT"
	usage_error
	grep -q -- "bogus-option" <<<"$err" || fail "message does not name --bogus-option"
	! is_mounted "$MNT" || fail "mounted anyway"
}

@test "mount without a mountpoint argument: exit 2" {
	tilefs_run mount "$ORIGIN_URL"
	usage_error
}

@test "bad option values: exit 2 naming the option or the value" {
	local args
	for args in "--cache-size banana" "--block-size 12Q" "--ttl soon" \
		"--retries many" "--log-level loud" "--cache-size -5"; do
		# shellcheck disable=SC2086
		tilefs_run mount --cache-dir "$T/cache" $args "$ORIGIN_URL" "$MNT"
		usage_error || fail "for $args" || return 1
		set -- $args
		grep -q -e "${1#--}" -e "$2" <<<"$err" ||
			fail "message for '$args' names neither the option nor the value: $err" || return 1
		! is_mounted "$MNT" || fail "mounted despite $args" || return 1
	done
}

@test "ftp:// source: refused with a message naming the scheme" {
	tilefs_run mount --cache-dir "$T/cache" ftp://x/data "$MNT"
	[ "$status" = 1 ] || [ "$status" = 2 ] || fail "exit status $status, want 1 or 2"
	[[ $err1 == "tilefs: "* ]] || fail "stderr does not start with 'tilefs: '"
	grep -qi "ftp" <<<"$err" || fail "message does not name the ftp source/scheme"
	! is_mounted "$MNT" || fail "mounted anyway"
}

@test "missing mountpoint directory: exit 1" {
	tilefs_run mount --cache-dir "$T/cache" "$ORIGIN_URL" "$T/no/such/dir"
	startup_error
	grep -q -e "$T/no/such/dir" -e "mountpoint" <<<"$err" || fail "message names neither the path nor the mountpoint"
}

@test "unreachable origin (closed port): exit 1, nothing mounted" {
	local port
	port=$(_origin_free_port)
	SECONDS=0
	tilefs_run mount --cache-dir "$T/cache" --retries 1 "http://127.0.0.1:$port/" "$MNT"
	startup_error
	grep -q "127.0.0.1" <<<"$err" || fail "message does not name the origin"
	[ "$SECONDS" -lt 30 ] || fail "took ${SECONDS}s to give up with --retries 1"
	# the cause, the question and the log, in one line
	[[ $err1 == *"Couldn't connect to server"* ]] || fail "the cause is not named: $err1"
	[[ $err1 == *"is the origin up?"* ]] || fail "no question: $err1"
	[[ $err1 == *"$T/cache/tilefs.log"* ]] || fail "the log is not named: $err1"
}

@test "an origin answering HTTP 500 at start: the message names the status and the log, not 'is the origin up?'" {
	origin_fault 'status?code=500&count=-1&path=/'
	tilefs_run mount --cache-dir "$T/cache" --retries 1 "$ORIGIN_URL" "$MNT"
	startup_error
	[[ $err1 == *"HTTP 500"* ]] || fail "the status is not named: $err1"
	[[ $err1 != *"is the origin up?"* ]] || fail "asks whether an answering origin is up: $err1"
	[[ $err1 == *"$T/cache/tilefs.log"* ]] || fail "the log is not named: $err1"
}

@test "cache dir on a read-only file system: exit 1 naming the cache dir" {
	ro_tmpfs "$T/rofs"
	tilefs_run mount --cache-dir "$T/rofs/cache" "$ORIGIN_URL" "$MNT"
	startup_error
	grep -qi "cache" <<<"$err" || fail "message does not mention the cache dir"
	tilefs_run mount --cache-dir "$T/rofs" "$ORIGIN_URL" "$MNT"
	startup_error
	grep -qi "cache" <<<"$err" || fail "message does not mention the cache dir"
}

@test "cache dir below a regular file: exit 1" {
	touch "$T/afile"
	tilefs_run mount --cache-dir "$T/afile/cache" "$ORIGIN_URL" "$MNT"
	startup_error
	grep -qi "cache" <<<"$err" || fail "message does not mention the cache dir"
}

@test "mountpoint already mounted: exit 1, the first mount keeps working" {
	tilefs_mount "$ORIGIN_URL" "$MNT"
	tilefs_run mount --cache-dir "$T/cache2" "$ORIGIN_URL" "$MNT"
	assert_eq "$status" 1 "exit status of the second mount"
	[[ $err1 == "tilefs: "* ]] || fail "stderr does not start with 'tilefs: '"
	assert_eq "$(awk -v m="$MNT" '$2 == m' /proc/mounts | wc -l)" 1 "mounts on $MNT"
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	tilefs_umount "$MNT"
}

@test "mount returns when the mount is ready; daemon exits 0 after fusermount3 -u" {
	tilefs_mount "$ORIGIN_URL" "$MNT"
	# No sleep: the mount must already serve.
	assert_eq "$(ls "$MNT" | LC_ALL=C sort | tr '\n' ' ')" \
		"nested notes.txt random.bin t256.tif t512.tif " "ls right after mount"
	local pid
	pid=$(tilefs_pid "$MNT")
	[ -n "$pid" ] || fail "no daemon process found"
	cmp "$SAMPLES/notes.txt" "$MNT/notes.txt"
	tilefs_umount "$MNT"
	! pid_alive "$pid" || fail "daemon $pid still alive"
}

# fg_start [OPTS...]: `tilefs mount -f OPTS ORIGIN MNT` in the background,
# with SIGINT and SIGTERM at their defaults (a shell starts a background
# job with SIGINT ignored; a service manager does not); waits until it
# serves. FG_PID: its pid.
fg_start() {
	env --default-signal=INT,TERM "$TILEFS" mount -f --cache-dir "$T/cache" "$@" \
		"$ORIGIN_URL" "$MNT" </dev/null >"$T/fg.out" 2>"$T/fg.err" 3>&- &
	FG_PID=$!
	TILEFS_MNTS+=("$MNT")
	TILEFS_STATES+=("$T/fg-state")
	TILEFS_EXTRA_PIDS+=("$FG_PID")
	mounted_or_gone() { is_mounted "$MNT" || ! kill -0 "$FG_PID" 2>/dev/null; }
	wait_until "the -f mount" mounted_or_gone
	is_mounted "$MNT" || { cat "$T/fg.err"; fail "-f mount never appeared"; }
	pid_alive "$FG_PID" || fail "foreground tilefs exited"
}

# fg_exited_0 AFTER: FG_PID ends, with status 0, not mounted any more.
fg_exited_0() {
	local rc=0
	run_to 30 tail --pid="$FG_PID" -f /dev/null || fail "foreground tilefs still running after $1"
	wait "$FG_PID" || rc=$?
	assert_eq "$rc" 0 "exit status of tilefs mount -f after $1 (stderr: $(tail -c 300 "$T/fg.err"))"
	! is_mounted "$MNT" || fail "$MNT still mounted after $1"
}

@test "-f runs in the foreground, logs to stderr, exits 0 on unmount" {
	fg_start --log-level debug
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"
	fusermount3 -u "$MNT"
	fg_exited_0 "fusermount3 -u"
	# (the exact line format is checked by the next test)
	grep -Eq 'tilefs\[[0-9]+\]: (error|warn|info|debug): ' "$T/fg.err" ||
		fail "no log line on stderr with -f: $(head -c 500 "$T/fg.err")"
}

# fg_stop_by SIG: a `mount -f` stopped by SIG unmounts and exits 0.
fg_stop_by() {
	fg_start
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"
	kill -"$1" "$FG_PID"
	fg_exited_0 "SIG$1"
}

@test "mount -f stopped by SIGTERM unmounts and exits 0" {
	fg_stop_by TERM
}

@test "mount -f stopped by SIGINT unmounts and exits 0" {
	fg_stop_by INT
}

@test "log lines have the contract's format" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --log-level debug
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	cat "$MNT/nested/f32.tif" >/dev/null
	ls "$MNT/nested" >/dev/null
	stat "$MNT/nope" 2>/dev/null || true
	tilefs_umount "$MNT"
	[ -s "$TILEFS_LOG" ] || fail "--log-level debug wrote nothing to --log-file"
	local badlines
	badlines=$(grep -Ev '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z tilefs\[[0-9]+\]: (error|warn|info|debug): .' \
		"$TILEFS_LOG" | head -n 5)
	[ -z "$badlines" ] ||
		fail "log lines are not exactly 'TIME tilefs[pid]: level: message' (CONTRACT.md, Log): $badlines"
}

@test "--log-level error logs nothing on a clean mount and read" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --log-level error
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	tilefs_umount "$MNT"
	if [ -s "$TILEFS_LOG" ]; then
		cat "$TILEFS_LOG"
		fail "error-level log not empty after a clean run"
	fi
}

@test "FUSE options via -o are accepted (-o allow_other,ro)" {
	tilefs_mount "$ORIGIN_URL" "$MNT" -o allow_other,ro
	cmp "$SAMPLES/notes.txt" "$MNT/notes.txt"
	tilefs_umount "$MNT"
}

@test "a query string on SOURCE (signed URL) is sent with every request and never logged" {
	tilefs_mount "${ORIGIN_URL}?sv=2024-01-01&sig=SEKRIT-q1w2" "$MNT" --log-level debug
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	cmp "$SAMPLES/nested/f32.tif" "$MNT/nested/f32.tif"
	tilefs_umount "$MNT"
	[ -s "$ORIGIN_LOG_FULL" ] || fail "no requests logged"
	local without
	without=$(grep -v 'sig=SEKRIT-q1w2' "$ORIGIN_LOG_FULL" | head -n 5)
	[ -z "$without" ] || fail "requests without the query string: $without"
	! grep -n -e SEKRIT -e 'sig=' "$TILEFS_LOG" || fail "the log contains the query string"

	# a SOURCE with a token that fails: neither stderr nor the log shows it
	local bad
	for bad in "${ORIGIN_URL}nope/?sv=2024-01-01&sig=SEKRIT-q1w2" \
		"http://user:SEKRIT-pw@127.0.0.1:1/x/?sig=SEKRIT-q1w2"; do
		tilefs_run mount --cache-dir "$T/cache" --log-file "$T/fail.log" --log-level debug \
			--retries 0 "$bad" "$MNT"
		assert_eq "$status" 1 "exit of a failing mount"
		[[ $err == "tilefs: cannot list "* ]] || fail "message: $err"
		! grep -n -e SEKRIT -e 'sig=' <<<"$err" || fail "stderr contains the query string"
		! grep -n -e SEKRIT -e 'sig=' "$T/fail.log" || fail "the log contains the query string"
	done
	[ -s "$T/fail.log" ] || fail "debug log of the failing mounts is empty"
	# a SOURCE refused as it is parsed: named without its query either
	for bad in "ftp://h/x?sig=SEKRIT-q1w2" "http://[bad/x?sig=SEKRIT-q1w2"; do
		tilefs_run mount --cache-dir "$T/cache" "$bad" "$MNT"
		assert_eq "$status" 2 "exit of a mount of $bad"
		[[ $err == *"tilefs: "*"'"*"'"* ]] || fail "message: $err"
		! grep -n -e SEKRIT -e 'sig=' <<<"$err" || fail "stderr contains the query string: $err"
	done
}

@test "-o block-size=64K works like --block-size 64K" {
	tilefs_mount "$ORIGIN_URL" "$MNT" -o block-size=64K
	origin_log_reset
	cmp "$SAMPLES/random.bin" "$MNT/random.bin"
	local first
	first=$(origin_select 'u == "/random.bin"' | head -n 1)
	[[ $first == 'GET /random.bin "bytes=0-65535" '* ]] || fail "first request with -o block-size=64K: $first"
	tilefs_umount "$MNT"
}

@test "an unknown -o option: exit 2 with a tilefs: message naming it" {
	tilefs_run mount --cache-dir "$T/cache" -o no_such_option_xyz "$ORIGIN_URL" "$MNT"
	assert_eq "$status" 2 "exit status"
	grep -q '^tilefs: .*no_such_option_xyz' <<<"$err" || fail "no 'tilefs: ' line naming the option"
	! is_mounted "$MNT" || fail "mounted anyway"
}

@test "sizes are accepted as 500M, 2G and plain bytes" {
	local s
	for s in "--cache-size 500M" "--cache-size 2G" "--cache-size 1048576" \
		"--block-size 64K" "--block-size 1M" "--block-size 131072"; do
		# shellcheck disable=SC2086
		tilefs_mount "$ORIGIN_URL" "$MNT" $s || fail "mount with $s failed" || return 1
		cmp "$SAMPLES/notes.txt" "$MNT/notes.txt"
		tilefs_umount "$MNT"
	done
}

@test "docs/OPTIONS.md is what 'tilefs --help-markdown' prints (make docs)" {
	tilefs_run --help-markdown
	assert_eq "$status" 0 "exit status"
	printf '%s\n' "$out" >"$T/options.md"
	diff -u "$REPO_ROOT/docs/OPTIONS.md" "$T/options.md" >"$T/options.diff" ||
		fail "docs/OPTIONS.md differs from the option table: run 'make docs'
$(head -n 40 "$T/options.diff")"
	local o
	for o in --cache-dir --tier-allow-http --jobs --partial; do
		grep -q -- "\`$o" "$REPO_ROOT/docs/OPTIONS.md" || fail "docs/OPTIONS.md lacks $o" || return 1
	done
}

@test "docs/CONFIGURATION.md's credentials part is what 'tilefs --help-credentials-markdown' prints (make docs)" {
	local conf=$REPO_ROOT/docs/CONFIGURATION.md
	assert_eq "$(grep -c '^<!-- BEGIN credentials table' "$conf")" 1 "BEGIN lines in CONFIGURATION.md"
	assert_eq "$(grep -c '^<!-- END credentials table' "$conf")" 1 "END lines in CONFIGURATION.md"
	tilefs_run --help-credentials-markdown
	assert_eq "$status" 0 "exit status"
	printf '%s\n' "$out" >"$T/credentials.md"
	sed -n '/^<!-- BEGIN credentials table/,/^<!-- END credentials table/p' "$conf" >"$T/committed.md"
	diff -u "$T/committed.md" "$T/credentials.md" >"$T/credentials.diff" ||
		fail "docs/CONFIGURATION.md's credentials part differs from the table: run 'make docs'
$(head -n 40 "$T/credentials.diff")"
}

# The variables the providers read: each getenv("NAME"), and each NAME they
# read through a variable (a profile file's aws_file("NAME", ...), an
# identity's *_env = "NAME").
provider_variables() {
	grep -ohE 'getenv\("[A-Za-z0-9_]+"\)|aws_file\("[A-Z0-9_]+"|_env = "[A-Z0-9_]+"' \
		"$REPO_ROOT"/cache/origin/providers/*.c | grep -oE '"[A-Za-z0-9_]+"' | tr -d '"' | sort -u
}

@test "man tilefs's ENVIRONMENT names every variable the providers read, each on a source's line" {
	tilefs_run --help-man
	assert_eq "$status" 0 "exit status"
	local env tags names name missing="" n=0
	env=$(sed -n '/^\.SH ENVIRONMENT/,/^\.SH [^E]/p' <<<"$out")
	[ -n "$env" ] || fail "tilefs(1) has no ENVIRONMENT section"
	# a source's line: the tag after .TP, where the table puts its variables
	tags=$(awk 'prev == ".TP" { print } { prev = $0 }' <<<"$env")
	names=$(provider_variables)
	for name in $names; do
		n=$((n + 1))
		grep -qF -- "\\fB$name\\fR" <<<"$tags" || missing="$missing $name"
	done
	[ "$n" -ge 30 ] || fail "only $n variables found in cache/origin/providers/: is the grep reading them?"
	[ -z "$missing" ] || fail "read in cache/origin/providers/ but on no line of ENVIRONMENT (add a row to tools/credentials_table.c):$missing"
	if command -v man >/dev/null; then
		printf '%s\n' "$out" >"$T/tilefs.1"
		env=$(MANWIDTH=200 man -l "$T/tilefs.1" 2>/dev/null | sed -n '/^ENVIRONMENT/,/^FILES/p')
		for name in $names; do
			grep -qw -- "$name" <<<"$env" || missing="$missing $name"
		done
		[ -z "$missing" ] || fail "not in ENVIRONMENT as man shows it:$missing"
	fi
}

@test "README.md is at most 300 lines, and every file the README and docs/ name exists" {
	local lines
	lines=$(wc -l <"$REPO_ROOT/README.md")
	[ "$lines" -le 300 ] || fail "README.md has $lines lines (at most 300: the rest goes to docs/)"
	local md target path missing="" n=0
	for md in "$REPO_ROOT/README.md" "$REPO_ROOT"/docs/*.md; do
		# Markdown links and images to files: relative to the page
		while IFS= read -r target; do
			target=${target%%#*}
			[ -n "$target" ] || continue
			n=$((n + 1))
			[ -e "$(dirname "$md")/$target" ] || missing="$missing
  ${md#"$REPO_ROOT"/}: ($target)"
		done < <(grep -oE '\]\([^)]+\)' "$md" | sed -E 's/^\]\((.*)\)$/\1/' |
			grep -vE '^(https?|mailto):')
		# a code span that is exactly a path of the tree: from the top
		while IFS= read -r path; do
			n=$((n + 1))
			[ -e "$REPO_ROOT/$path" ] || missing="$missing
  ${md#"$REPO_ROOT"/}: \`$path\`"
		done < <(grep -oE '`(fs|cache|tools|tests|packaging|examples|docs)/[A-Za-z0-9_./@+-]*`' "$md" |
			tr -d '`')
	done
	[ -z "$missing" ] || fail "names that lead nowhere:$missing"
	[ "$n" -ge 20 ] || fail "only $n links and paths found: is the check reading the pages?"
}

# The peers' option names (issue 57): Mountpoint's --allow-other, --profile
# and --debug, an exporter's listen address; and --help by group.

@test "--allow-other mounts with allow_other, as -o allow_other does" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --allow-other
	local opts
	opts=$(awk -v m="$MNT" '$2 == m { print $4 }' /proc/mounts)
	[[ ,$opts, == *,allow_other,* ]] || fail "mount options in /proc/mounts: '$opts'"
	cmp "$SAMPLES/notes.txt" "$MNT/notes.txt"
	tilefs_umount "$MNT"
}

@test "--debug logs debug lines, as --log-level debug does" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --debug
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	tilefs_umount "$MNT"
	grep -q 'tilefs\[[0-9]*\]: debug: ' "$TILEFS_LOG" ||
		fail "no debug line in the log: $(head -n 5 "$TILEFS_LOG")"
}

@test "--metrics-address: the metrics port listens there alone; not an IP address: exit 2" {
	local port addr
	port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	tilefs_mount "$ORIGIN_URL" "$MNT" --metrics-port "$port" --metrics-address 127.0.0.2
	cat "$MNT/notes.txt" >/dev/null
	curl -fsS "http://127.0.0.2:$port/metrics" | grep -q '^tilefs_requests_total ' ||
		fail "no counters at 127.0.0.2:$port"
	ss -ltn | grep -q " 127.0.0.2:$port " || fail "not listening on 127.0.0.2:$port"
	! ss -ltn | grep -q " 127.0.0.1:$port " || fail "listening on 127.0.0.1 too"
	tilefs_umount "$MNT"
	if [ -e /proc/net/if_inet6 ] && grep -q '^0*1 ' /proc/net/if_inet6; then
		tilefs_mount "$ORIGIN_URL" "$MNT" --metrics-port "$port" --metrics-address ::1
		curl -fsS "http://[::1]:$port/metrics" | grep -q '^tilefs_requests_total ' ||
			fail "no counters at [::1]:$port"
		tilefs_umount "$MNT"
	fi
	for addr in localhost 127.0.0.1:9100 300.1.1.1; do
		tilefs_run mount --cache-dir "$T/cache" --metrics-port "$port" \
			--metrics-address "$addr" "$ORIGIN_URL" "$MNT"
		usage_error || fail "for --metrics-address $addr" || return 1
		[[ $err == *"--metrics-address"*"$addr"* ]] || fail "message: $err" || return 1
		! is_mounted "$MNT" || fail "mounted with --metrics-address $addr" || return 1
	done
}

@test "--profile NAME: a name no profile has fails the mount, naming --profile, whatever AWS_PROFILE says" {
	printf '[default]\naws_access_key_id = AKDEFAULT\naws_secret_access_key = s\n' >"$T/creds"
	export AWS_SHARED_CREDENTIALS_FILE=$T/creds AWS_CONFIG_FILE=$T/none AWS_PROFILE=default
	export AWS_EC2_METADATA_DISABLED=true
	tilefs_run mount --cache-dir "$T/cache" --profile nosuch --endpoint "$ORIGIN_URL" \
		s3://bucket/ "$MNT"
	startup_error || return 1
	[[ $err == *"--profile nosuch names no profile"* ]] || fail "message: $err"
}

@test "mount --help: every line within 80 columns, the options under their headings" {
	local cmd wide
	for cmd in mount warm; do
		tilefs_run "$cmd" --help
		assert_eq "$status" 0 "$cmd --help exit status" || return 1
		wide=$(awk 'length > 80' <<<"$out")
		[ -z "$wide" ] || fail "$cmd --help lines over 80 columns:
$wide" || return 1
	done
	tilefs_run mount --help
	local heading last=0 at
	for heading in Source Cache Prefetch Credentials Mount "Logging and metrics"; do
		at=$(grep -n -x -- "$heading:" <<<"$out" | cut -d: -f1)
		[ -n "$at" ] || fail "no heading '$heading:'" || return 1
		[ "$at" -gt "$last" ] || fail "'$heading:' out of order" || return 1
		last=$at
	done
	local o
	for o in --allow-other --profile --debug --metrics-address; do
		grep -q -- "^ *$o\b" <<<"$out" || fail "mount --help lacks $o" || return 1
	done
}
