#!/usr/bin/env bats
# A mount's counters: --metrics-file, --metrics-port, and the recent
# mounts `tilefs cache stat` shows; every figure checked against nginx's
# log or against what was read.

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

# wait_metric FILE NAME VALUE: wait for it (the file is rewritten every 5 s)
wait_metric() {
	wait_until "$2 = $3 in $1" metric_is "$@" ||
		fail "$2 in $1: expected $3, got '$(metric "$1" "$2" 2>/dev/null)'"
}

# wait_metric_ge FILE NAME MIN: wait for a value of at least MIN
wait_metric_ge() {
	wait_until "$2 >= $3 in $1" metric_ge "$@" ||
		fail "$2 in $1: expected at least $3, got '$(metric "$1" "$2" 2>/dev/null)'"
}

free_port() {
	"$PY" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

@test "metrics: --metrics-file counts the requests, bytes, hits and misses nginx and the reader saw" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --metrics-file "$T/m.prom"
	[ -s "$T/m.prom" ] || fail "no metrics file at start"
	assert_eq "$(metric "$T/m.prom" tilefs_up)" 1 "tilefs_up"
	grep -q "^tilefs_mount_info{source=\"$ORIGIN_URL\",mountpoint=\"$MNT\"" "$T/m.prom" ||
		fail "no mount info: $(grep mount_info "$T/m.prom")"

	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	local size reqs bytes
	size=$(stat -c %s "$SAMPLES/t256.tif")
	reqs=$(origin_lines | wc -l)
	assert_eq "$(origin_count GET /)" 1 "root listings"
	# nginx logs the listing with its chunked framing: count its body
	bytes=$(($(origin_range_bytes) + $(curl -fsS "$ORIGIN_URL" | wc -c)))
	wait_metric "$T/m.prom" tilefs_requests_total "$reqs"
	assert_eq "$(metric "$T/m.prom" tilefs_fetched_bytes_total)" "$bytes" "bytes fetched vs nginx"
	assert_eq "$(metric "$T/m.prom" tilefs_served_bytes_total)" $((2 * size)) "bytes served"
	local hits misses units
	hits=$(metric "$T/m.prom" tilefs_cache_hits_total)
	misses=$(metric "$T/m.prom" tilefs_cache_misses_total)
	units=$("$TILEFS" inspect --cache-dir "$CACHE" "${ORIGIN_URL}t256.tif" |
		awk '/^cached:/ { print $2 }')
	[ "$misses" -ge 1 ] || fail "no miss counted"
	[ "$hits" -ge "$units" ] || fail "second read of $units units counted $hits hits"
	assert_eq "$(metric "$T/m.prom" tilefs_requests_in_flight)" 0 "in flight when idle"
	assert_eq "$(metric "$T/m.prom" tilefs_request_duration_seconds_count)" "$reqs" \
		"latency histogram count"
	grep -q '^tilefs_request_duration_seconds_bucket{le="+Inf"} '"$reqs"'$' "$T/m.prom" ||
		fail "histogram +Inf bucket"
	grep -Eq '^tilefs_request_duration_quantile_seconds\{quantile="0.99"\} [0-9.]+$' \
		"$T/m.prom" || fail "no p99: $(grep quantile "$T/m.prom")"
	tilefs_umount "$MNT"
	assert_eq "$(metric "$T/m.prom" tilefs_up)" 0 "tilefs_up after unmount"
}

@test "metrics: a link planted where the metrics file is written is not followed; the file is still written" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --metrics-file "$T/m.prom"
	local pid i
	pid=$(tilefs_pid "$MNT") || fail "no daemon for $MNT"
	# the name an older tilefs wrote its next rewrite to
	echo untouched >"$T/victim"
	ln -s "$T/victim" "$T/m.prom.$pid.tmp"
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	local size
	size=$(stat -c %s "$SAMPLES/t256.tif")
	# a rewrite after the read (every 5 s): up to 60 s on a busy machine
	for ((i = 0; i < 600; i++)); do
		[ "$(metric "$T/m.prom" tilefs_served_bytes_total 2>/dev/null)" = "$size" ] && break
		sleep 0.1
	done
	assert_eq "$(metric "$T/m.prom" tilefs_served_bytes_total)" "$size" "bytes served, rewritten"
	assert_eq "$(cat "$T/victim")" untouched "the file the planted link names"
	[ -L "$T/m.prom.$pid.tmp" ] || fail "the planted link was moved or replaced"
	[ -f "$T/m.prom" ] && [ ! -L "$T/m.prom" ] || fail "the metrics file is not a regular file"
	assert_eq "$(stat -c %a "$T/m.prom")" 644 "the metrics file's mode"
	tilefs_umount "$MNT"
	assert_eq "$(metric "$T/m.prom" tilefs_up)" 0 "tilefs_up after unmount"
	assert_eq "$(cat "$T/victim")" untouched "the file the planted link names, after unmount"
	assert_eq "$(find "$T" -maxdepth 1 -name 'm.prom.*' ! -type l | wc -l)" 0 \
		"temporary files left beside the metrics file"
}

@test "metrics: failed requests and reads are counted as errors" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --metrics-file "$T/m.prom" --retries 1
	origin_fault 'status?code=503&count=-1&path=/t512.tif'
	run ! cat "$MNT/t512.tif"
	origin_fault 'clear'
	wait_metric_ge "$T/m.prom" tilefs_errors_total 1
	[ "$(metric "$T/m.prom" tilefs_request_errors_total)" -ge 1 ] || fail "request errors"
	[ "$(metric "$T/m.prom" tilefs_request_retries_total)" -ge 1 ] || fail "retries"
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
}

@test "metrics: --metrics-port serves the counters on 127.0.0.1; a taken port stops the mount" {
	local port
	port=$(free_port)
	tilefs_mount "$ORIGIN_URL" "$MNT" --metrics-port "$port"
	cmp "$SAMPLES/nested/deeper/small.tif" "$MNT/nested/deeper/small.tif"
	local body reqs
	body=$(curl -fsS "http://127.0.0.1:$port/metrics")
	reqs=$(origin_lines | wc -l)
	grep -q "^tilefs_requests_total $reqs\$" <<<"$body" ||
		fail "scrape says $(grep '^tilefs_requests_total' <<<"$body"), nginx logged $reqs"
	grep -q '^# TYPE tilefs_cache_hits_total counter$' <<<"$body" || fail "no TYPE lines"
	assert_eq "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/nope")" 404 \
		"status of another path"
	ss -ltn | grep -q "127.0.0.1:$port " || fail "not listening on loopback"
	! ss -ltn | grep -q "0.0.0.0:$port " || fail "listening on every address"

	mkdir -p "$T/mnt2"
	tilefs_run mount --metrics-port "$port" --cache-dir "$T/cache2" "$ORIGIN_URL" "$T/mnt2"
	assert_eq "$status" 1 "exit with the port taken"
	[[ $err == *"--metrics-port $port"*"Address already in use"* ]] || fail "message: $err"
	! is_mounted "$T/mnt2" || fail "mounted anyway"
	[ ! -e "$T/cache2/mounts/"*.prom ] || fail "a mount that never ran is listed"
}

@test "cache stat: the hits and misses of recent mounts, running and ended" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --metrics-file "$T/m.prom"
	cat "$MNT/t256.tif" "$MNT/t256.tif" >/dev/null
	tilefs_umount "$MNT"
	local hits misses
	hits=$(metric "$T/m.prom" tilefs_cache_hits_total)
	misses=$(metric "$T/m.prom" tilefs_cache_misses_total)
	[ "$misses" -ge 1 ] && [ "$hits" -ge 1 ] || fail "hits $hits misses $misses"

	# through the daemon, so that its reads count as hits (a mount's
	# kernel reads a sealed file by passthrough: 33-passthrough.bats)
	tilefs_mount "$ORIGIN_URL" "$MNT" --no-passthrough
	cat "$MNT/t256.tif" >/dev/null
	run "$TILEFS" cache stat --cache-dir "$CACHE"
	assert_eq "$status" 0 "exit of stat"
	grep -q '^recent mounts: 2$' <<<"$output" || fail "stat: $output"
	grep -q "^mount $(tilefs_pid "$MNT") (running, " <<<"$output" || fail "running one: $output"
	grep -q "^mount [0-9]* (ended, .*: $hits hits, $misses misses, .* on $MNT\$" \
		<<<"$output" || fail "ended one: $output"
	tilefs_umount "$MNT"
	run "$TILEFS" cache stat --cache-dir "$CACHE"
	local total_hits
	total_hits=$(awk '/^hits: / { print $2 }' <<<"$output")
	[ "$total_hits" -gt "$hits" ] || fail "second mount's hits not added: $output"
	grep -q "^misses: $misses\$" <<<"$output" || fail "the second mount missed: $output"
}
