# tests/lib/tier.bash: a tilefs cache tier (nginx configured by
# `tilefs tier-config`) on 127.0.0.1, in front of a store the test started.
#
#   tier_start STORE [TIER-CONFIG ARGS...]
#                         tier for STORE (a SOURCE or --endpoint URL) on a
#                         free port; sets TIER_URL, TIER_DIR, TIER_LOG,
#                         TIER_PORT (TIER_WANT_PORT reuses a port)
#   tier_stop             stop it (safe to call twice)
#   tier_count STATUS     requests the tier logged with upstream cache
#                         status STATUS (HIT, MISS, BYPASS, ...)
#   tier_log_reset        forget the requests logged so far
#
# Access log lines (tier-config's format):
#   $remote_addr $request_method $uri "$http_range" $status $body_bytes_sent
#   $upstream_cache_status "$upstream_addr"

tier_start() {
	local store=$1 port tries=0
	shift
	TIER_DIR=$(mktemp -d "${BATS_TEST_TMPDIR:-${TMPDIR:-/tmp}}/tier.XXXXXX") || return 1
	TIER_LOG=$TIER_DIR/access.log
	while :; do
		port=${TIER_WANT_PORT:-$(_origin_free_port)}
		"$TILEFS" tier-config "$store" --listen "127.0.0.1:$port" --cache-dir "$TIER_DIR/cache" \
			--access-log "$TIER_LOG" --error-log "$TIER_DIR/error.log" \
			--pid "$TIER_DIR/nginx.pid" --user root "$@" >"$TIER_DIR/nginx.conf" || return 1
		if "$ORIGIN_NGINX" -p "$TIER_DIR" -c "$TIER_DIR/nginx.conf" -e "$TIER_DIR/error.log" \
			>"$TIER_DIR/start.out" 2>&1; then
			break
		fi
		tries=$((tries + 1))
		if ! grep -q "Address already in use" "$TIER_DIR/start.out" "$TIER_DIR/error.log" \
			2>/dev/null || [ "$tries" -ge 8 ]; then
			echo "tier_start: nginx failed to start:" >&2
			cat "$TIER_DIR/start.out" >&2
			return 1
		fi
		sleep 0.25
	done
	TIER_PORT=$port
	TIER_URL=http://127.0.0.1:$port
	local i
	for i in $(seq 50); do
		[ -s "$TIER_DIR/nginx.pid" ] && curl -s -o /dev/null "$TIER_URL/" && return 0
		sleep 0.1
	done
	echo "tier_start: the tier does not answer on $TIER_URL" >&2
	return 1
}

tier_stop() {
	local pid
	[ -n "${TIER_DIR:-}" ] && [ -s "$TIER_DIR/nginx.pid" ] || return 0
	pid=$(cat "$TIER_DIR/nginx.pid")
	kill "$pid" 2>/dev/null
	local i
	for i in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	rm -f "$TIER_DIR/nginx.pid"
	return 0
}

tier_count() {
	awk -v want="$1" '{ if ($(NF - 1) == want) n++ } END { print n + 0 }' "$TIER_LOG"
}

tier_log_reset() {
	: >"$TIER_LOG"
}
