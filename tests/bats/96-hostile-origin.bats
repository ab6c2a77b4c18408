#!/usr/bin/env bats
# A hostile origin (tests/lib/hostile_origin.py) and a hostile manifest: what
# leaves tilefs. Credentials go to the source's own scheme, host and port
# only; only http and https are spoken; a signed request follows no
# redirect and https never redirects to http; a trickle ends in bounded
# time; a broken index page lists in linear time. The daemon lives on.

bats_require_minimum_version 1.5.0
load ../lib/tilefs

setup() {
	tilefs_setup
	MNT=$T/mnt
	HOSTILE_LOG=$T/hostile.log
	: >"$HOSTILE_LOG"
}

teardown() {
	tilefs_teardown
}

# hostile_start ROLE...: start hostile_origin.py serving $T/www; sets
# PORT0, PORT1, ... (one per role, in order).
hostile_start() {
	local i port ports=$T/hostile.ports tls=()
	mkdir -p "$T/www"
	if [[ " $* " == *" tls-"* ]]; then
		_origin_make_tls "$T/tls" || return 1
		tls=(--cert "$T/tls/server.pem" --key "$T/tls/server.key")
		HOSTILE_CA=$T/tls/ca.pem
	fi
	rm -f "$ports"
	"$PY" "$TESTS_LIB/hostile_origin.py" --log "$HOSTILE_LOG" --ports "$ports" \
		--root "$T/www" "${tls[@]}" "$@" </dev/null >"$T/hostile.out" 2>&1 3>&- &
	TILEFS_EXTRA_PIDS+=("$!")
	disown "$!"	# the teardown's kill is not news
	for ((i = 0; i < 100; i++)); do
		[ -f "$ports" ] && break
		sleep 0.05
	done
	[ -f "$ports" ] || {
		cat "$T/hostile.out" >&2
		fail "hostile_origin.py did not start"
		return 1
	}
	i=0
	while read -r port; do
		printf -v "PORT$i" '%s' "$port"
		i=$((i + 1))
	done <"$ports"
}

# hostile_query LISTENER WHAT: from the log, for listener LISTENER, print
#   connects      the number of connections accepted
#   requests      the number of HTTP requests
#   secrets       the names of credential headers received (authorization,
#                 x-amz-*, x-ms-*), one a line, sorted, unique
hostile_query() {
	"$PY" - "$HOSTILE_LOG" "$1" "$2" <<'EOF'
import json, sys
log, listener, what = sys.argv[1], int(sys.argv[2]), sys.argv[3]
recs = [json.loads(l) for l in open(log) if l.strip()]
recs = [r for r in recs if r["listener"] == listener]
if what == "connects":
    print(sum(1 for r in recs if r.get("connect")))
elif what == "requests":
    print(sum(1 for r in recs if "method" in r))
elif what == "secrets":
    names = {h for r in recs for h in r.get("headers", {})
             if h == "authorization" or h.startswith("x-amz-") or h.startswith("x-ms-")}
    print("\n".join(sorted(names)))
EOF
}

# read_errno PATH: read PATH to the end; print ok or the errno.
read_errno() {
	run_to "${2:-60}" "$PY" - "$1" <<'EOF'
import os, sys
try:
    with open(sys.argv[1], "rb") as f:
        while f.read(1 << 20):
            pass
    print("ok")
except OSError as e:
    print(e.errno)
EOF
}

@test "s3 manifest: a URL on another host is fetched without the source's credentials" {
	hostile_start files files
	mkdir -p "$T/www/eo"
	cp "$SAMPLES/t256.tif" "$T/www/eo/own.tif"
	cp "$SAMPLES/t512.tif" "$T/www/other.tif"
	printf '%s\n' own.tif "http://127.0.0.1:$PORT1/other.tif" >"$T/list"
	AWS_ACCESS_KEY_ID=AKIDHOSTILE AWS_SECRET_ACCESS_KEY=SECRETHOSTILE \
		AWS_SESSION_TOKEN=SESSIONTOKENHOSTILE AWS_EC2_METADATA_DISABLED=true \
		tilefs_mount "s3://eo" "$MNT" --endpoint "http://127.0.0.1:$PORT0" --list "$T/list"
	cmp "$SAMPLES/t256.tif" "$MNT/own.tif"
	cmp "$SAMPLES/t512.tif" "$MNT/127.0.0.1:$PORT1/other.tif"
	# the source's endpoint got signed requests; the other host none of it
	[ "$(hostile_query 0 secrets)" = "$(printf '%s\n' authorization x-amz-content-sha256 \
		x-amz-date x-amz-security-token)" ] || fail "own: $(hostile_query 0 secrets)"
	[ "$(hostile_query 1 requests)" -gt 0 ] || fail "the other host got no request"
	assert_eq "$(hostile_query 1 secrets)" "" "credential headers sent to the other host"
	! grep -q SESSIONTOKENHOSTILE "$TILEFS_LOG"
	tilefs_alive "$MNT"
	tilefs_umount "$MNT"
}

@test "azure manifest: no Shared Key signature or x-ms- header reaches another host" {
	hostile_start files files
	mkdir -p "$T/www/devstoreaccount1/cogs"
	cp "$SAMPLES/t256.tif" "$T/www/devstoreaccount1/cogs/own.tif"
	cp "$SAMPLES/t512.tif" "$T/www/other.tif"
	printf '%s\n' own.tif "http://127.0.0.1:$PORT1/other.tif" >"$T/list"
	AZURE_STORAGE_KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==' \
		tilefs_mount "az://devstoreaccount1/cogs" "$MNT" \
		--endpoint "http://127.0.0.1:$PORT0/devstoreaccount1" --list "$T/list"
	cmp "$SAMPLES/t256.tif" "$MNT/own.tif"
	cmp "$SAMPLES/t512.tif" "$MNT/127.0.0.1:$PORT1/other.tif"
	hostile_query 0 secrets | grep -qx authorization || fail "own: $(hostile_query 0 secrets)"
	assert_eq "$(hostile_query 1 secrets)" "" "credential headers sent to the other host"
	tilefs_umount "$MNT"
}

@test "manifest: gopher:// and file:// lines are refused, nothing is sent" {
	hostile_start files
	cp "$SAMPLES/t256.tif" "$T/www/a.tif"
	printf '%s\n' a.tif "gopher://127.0.0.1:$PORT0/1x" "file://localhost/etc/hostname" >"$T/list"
	tilefs_mount "http://127.0.0.1:$PORT0/" "$MNT" --list "$T/list" --retries 0
	cmp "$SAMPLES/t256.tif" "$MNT/a.tif"
	local before
	before=$(hostile_query 0 connects)
	assert_eq "$(read_errno "$MNT/127.0.0.1:$PORT0/1x")" 5 "gopher read"
	assert_eq "$(read_errno "$MNT/localhost/etc/hostname")" 5 "file read"
	assert_eq "$(hostile_query 0 connects)" "$before" "connections after the gopher read"
	grep -q 'only http:// and https:// URLs are fetched' "$TILEFS_LOG" ||
		fail "no clear message: $(tail -n 5 "$TILEFS_LOG")"
	tilefs_alive "$MNT"
	tilefs_umount "$MNT"
}

@test "a redirect of a signed request is not followed" {
	hostile_start redirect=1 files
	mkdir -p "$T/www/eo"
	cp "$SAMPLES/t256.tif" "$T/www/eo/a.tif"
	echo a.tif >"$T/list"
	AWS_ACCESS_KEY_ID=AKIDHOSTILE AWS_SECRET_ACCESS_KEY=SECRETHOSTILE \
		AWS_SESSION_TOKEN=SESSIONTOKENHOSTILE AWS_EC2_METADATA_DISABLED=true \
		tilefs_mount "s3://eo" "$MNT" --endpoint "http://127.0.0.1:$PORT0" --list "$T/list"
	assert_eq "$(read_errno "$MNT/a.tif")" 5 "read through a redirect"
	[ "$(hostile_query 0 requests)" -gt 0 ] || fail "no request reached the endpoint"
	assert_eq "$(hostile_query 1 connects)" 0 "connections to the redirect's target"
	grep -q 'redirect of a signed request: not followed' "$TILEFS_LOG" ||
		fail "no clear message: $(tail -n 5 "$TILEFS_LOG")"
	tilefs_alive "$MNT"
	tilefs_umount "$MNT"
}

@test "an unsigned http redirect is followed (documented); https to http is refused" {
	hostile_start redirect=1 files tls-redirect=1
	cp "$SAMPLES/t256.tif" "$T/www/a.tif"
	echo a.tif >"$T/list"
	tilefs_mount "http://127.0.0.1:$PORT0/" "$MNT" --list "$T/list"
	cmp "$SAMPLES/t256.tif" "$MNT/a.tif"
	tilefs_umount "$MNT"

	: >"$HOSTILE_LOG"
	tilefs_mount "https://127.0.0.1:$PORT2/" "$MNT" --list "$T/list" --ca-file "$HOSTILE_CA" \
		--cache-dir "$T/cache2"
	assert_eq "$(read_errno "$MNT/a.tif")" 5 "https read redirected to http"
	[ "$(hostile_query 2 requests)" -gt 0 ] || fail "no request reached the https origin"
	assert_eq "$(hostile_query 1 connects)" 0 "connections to the http target"
	grep -q 'https redirects only to https' "$TILEFS_LOG" ||
		fail "no clear message: $(tail -n 5 "$TILEFS_LOG")"
	tilefs_alive "$MNT"
	tilefs_umount "$MNT"
}

@test "a trickling origin: the read fails with EIO in bounded time, the daemon lives on" {
	hostile_start trickle
	cp "$SAMPLES/t256.tif" "$T/www/a.tif"
	echo a.tif >"$T/list"
	tilefs_mount "http://127.0.0.1:$PORT0/" "$MNT" --list "$T/list" --retries 0 \
		--header-size 4096
	local t0=$SECONDS
	assert_eq "$(read_errno "$MNT/a.tif" 90)" 5 "read from a trickle"
	[ $((SECONDS - t0)) -lt 40 ] || fail "took $((SECONDS - t0)) s"
	grep -q 'giving up on .*Timeout' "$TILEFS_LOG" || fail "$(tail -n 5 "$TILEFS_LOG")"
	tilefs_alive "$MNT"
	tilefs_umount "$MNT"
}

@test "an index page of 200k links without </a> lists in seconds" {
	hostile_start listing=200000
	tilefs_mount "http://127.0.0.1:$PORT0/" "$MNT"
	local t0=$SECONDS n
	n=$(run_to 60 ls -f "$MNT" | grep -c '^f.*\.tif$')
	assert_eq "$n" 200000 "entries listed"
	[ $((SECONDS - t0)) -lt 30 ] || fail "took $((SECONDS - t0)) s"
	tilefs_alive "$MNT"
	tilefs_umount "$MNT"
}

@test "names held are bounded (--max-names): the oldest listings are dropped and listed again, the daemon lives" {
	hostile_start tree=11x20000
	cp "$SAMPLES/t256.tif" "$T/www/t256.tif"
	tilefs_mount "http://127.0.0.1:$PORT0/" "$MNT" --max-names 50000 \
		--metrics-file "$T/metrics.prom"
	local k n i nodes
	for ((k = 0; k < 11; k++)); do
		n=$(run_to 60 ls -f "$MNT/d$k" | grep -c '^f.*\.tif$')
		assert_eq "$n" 20000 "entries listed in d$k"
	done
	grep -q 'names in memory, over --max-names 50000: dropped the listings of' "$TILEFS_LOG" ||
		fail "no line about dropped listings: $(tail -n 5 "$TILEFS_LOG")"
	# the names held, in samples taken after the walk (files queued for
	# revalidation ahead keep their directories in use a while)
	rm -f "$T/metrics.prom"
	for ((i = 0; i < 900; i++)); do
		nodes=$(awk '$1 == "tilefs_namespace_nodes" { print $2 }' "$T/metrics.prom" 2>/dev/null || :)
		[ -n "$nodes" ] && [ "$nodes" -le 50000 ] && break
		sleep 0.1
	done
	[ -n "$nodes" ] && [ "$nodes" -le 50000 ] || fail "names held after the walk: '$nodes'"
	# d0's listing was dropped: a name in it is found by listing it again
	assert_eq "$(grep -c '"path": "/d0/"' "$HOSTILE_LOG")" 1 "listings of d0 before"
	stat "$MNT/d0/f19999.tif" >/dev/null
	assert_eq "$(grep -c '"path": "/d0/"' "$HOSTILE_LOG")" 2 "listings of d0 after a lookup in it"
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	tilefs_alive "$MNT"
	tilefs_umount "$MNT"
}
