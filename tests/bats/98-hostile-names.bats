#!/usr/bin/env bats
# Hostile names: listings and manifests that name files with control
# characters (a newline forges a log line, ESC drives the terminal of
# `ls`) are refused, and each refused name is logged once, escaped. And
# a hostile metrics client: one that trickles its request.

bats_require_minimum_version 1.5.0
load ../lib/tilefs

setup() {
	tilefs_setup
	MNT=$T/mnt
	mkdir -p "$MNT"
}

teardown() {
	tilefs_teardown
}

# hostile_samples DIR: files whose names hold a newline, ESC, 0x01 and DEL
hostile_samples() {
	local n
	for n in $'forged\n2026-01-01T00:00:00.000Z tilefs[1]: error: x.tif' \
		$'esc\e[2Jclear.tif' $'soh\x01.tif' $'del\x7f.tif' $'tab\tname.tif'; do
		printf 'hostile\n' >"$1/$n"
	done
}

@test "names with control characters in a listing are refused, logged once, escaped" {
	hostile_samples "$SAMPLES"
	origin_start "$SAMPLES"
	tilefs_mount "$ORIGIN_URL" "$MNT" --ttl 0
	local i names
	for ((i = 0; i < 3; i++)); do
		names=$(ls -A "$MNT")
	done
	assert_eq "$(LC_ALL=C grep -c '[[:cntrl:]]' <<<"$names")" 0 "listed names with control characters"
	assert_eq "$(ls -A "$MNT" | wc -l)" "$(($(find "$SAMPLES" -mindepth 1 -maxdepth 1 -printf x | wc -c) - 5))" "names listed"
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	tilefs_umount "$MNT"
	! LC_ALL=C grep -n $'\e\|\x01\|\x7f' "$TILEFS_LOG" || fail "raw control bytes in the log"
	! grep -n '^[^0-9]' "$TILEFS_LOG" || fail "a log line not starting with a time (forged?)"
	local want
	for want in '"forged\n2026-01-01T00:00:00.000Z tilefs[1]: error: x.tif"' \
		'"esc\x1b[2Jclear.tif"' '"soh\x01.tif"' '"del\x7f.tif"' '"tab\tname.tif"'; do
		assert_eq "$(grep -cF "refusing the name $want: it holds control characters" \
			"$TILEFS_LOG")" 1 "log lines for $want"
	done
}

@test "a manifest naming a file with control characters fails the mount, message escaped" {
	origin_start "$SAMPLES"
	printf '%s\n' t256.tif $'bad\e]0;owned\a.tif' >"$T/manifest"
	tilefs_run mount --cache-dir "$T/cache" --list "$T/manifest" "$ORIGIN_URL" "$MNT"
	assert_eq "$status" 1 "exit"
	! LC_ALL=C grep -q $'\e\|\a' <<<"$err" || fail "raw control bytes on stderr: $err"
	[[ $err == *"manifest line 2: 'bad\x1b]0;owned\x07.tif' is not a usable file path"* ]] ||
		fail "message: $err"
	! is_mounted "$MNT" || fail "mounted anyway"

	printf '%s\n' "${ORIGIN_URL}t256.tif" "${ORIGIN_URL}new%0Aline.tif?sig=SEKRIT-m4" >"$T/manifest"
	tilefs_run mount --cache-dir "$T/cache" --list "$T/manifest" "$ORIGIN_URL" "$MNT"
	assert_eq "$status" 1 "exit with an encoded newline"
	[[ $err == *"manifest line 2: '${ORIGIN_URL}new%0Aline.tif' is not a usable file path"* ]] ||
		fail "message: $err"
	! grep -n -e SEKRIT -e 'sig=' <<<"$err" || fail "the query string on stderr"
}


# trickle PORT SECONDS: a client sending its request one byte a second
trickle() {
	"$PY" -c 'import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
for i in range(int(sys.argv[2])):
    try:
        s.send(b"G")
    except OSError:
        break
    time.sleep(1)' "$1" "$2" </dev/null >/dev/null 2>&1 3>&- &
	TRICKLE_PID=$!
}

@test "metrics: a client trickling its request holds neither other scrapes nor unmount" {
	origin_start "$SAMPLES"
	local port
	port=$("$PY" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')
	tilefs_mount "$ORIGIN_URL" "$MNT" --metrics-port "$port"
	trickle "$port" 30
	sleep 0.5
	local t0=$SECONDS body
	body=$(curl -fsS --max-time 10 "http://127.0.0.1:$port/metrics") || fail "scrape failed"
	grep -q '^tilefs_up 1$' <<<"$body" || fail "scrape: $body"
	[ $((SECONDS - t0)) -le 4 ] || fail "the scrape waited $((SECONDS - t0)) s behind a slow client"
	kill "$TRICKLE_PID" 2>/dev/null || true

	trickle "$port" 30
	sleep 0.5
	t0=$SECONDS
	tilefs_umount "$MNT"
	[ $((SECONDS - t0)) -le 3 ] || fail "unmount took $((SECONDS - t0)) s behind a slow client"
	kill "$TRICKLE_PID" 2>/dev/null || true
}

@test "names that leave a listing are freed: 8 renamings of 300 files keep the nodes of one" {
	local d=$T/churn r
	mkdir -p "$d/sub"
	"$PY" -c 'import sys; [open(f"{sys.argv[1]}/r0-{i}.tif", "w").close() for i in range(300)]' "$d/sub"
	origin_start "$d"
	tilefs_mount "$ORIGIN_URL" "$MNT" --ttl 0 --metrics-file "$T/metrics.prom"
	ls "$MNT/sub" >/dev/null
	for ((r = 1; r <= 8; r++)); do
		"$PY" -c 'import os, sys
d, r = sys.argv[1], int(sys.argv[2])
for i in range(300):
    os.rename(f"{d}/r{r - 1}-{i}.tif", f"{d}/r{r}-{i}.tif")' "$d/sub" "$r"
		assert_eq "$(ls "$MNT/sub" | grep -c "^r$r-")" 300 "names listed after renaming $r"
	done
	tilefs_umount "$MNT"
	local nodes
	nodes=$(awk '$1 == "tilefs_namespace_nodes" { print $2 }' "$T/metrics.prom")
	[ -n "$nodes" ] || fail "no tilefs_namespace_nodes in the metrics:" "$(cat "$T/metrics.prom")"
	[ "$nodes" -le 310 ] || fail "$nodes nodes held after 8 renamings of 300 files"
}
