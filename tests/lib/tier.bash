# tests/lib/tier.bash: a tilefs cache tier (nginx configured by
# `tilefs tier-config`) on 127.0.0.1, in front of a store the test started.
#
#   tier_start STORE [TIER-CONFIG ARGS...]
#                         tier for STORE (a SOURCE or --endpoint URL) on a
#                         free port; sets TIER_URL, TIER_DIR, TIER_LOG,
#                         TIER_PORT (TIER_WANT_PORT reuses a port); with
#                         TIER_TLS=1 it listens with TLS (a certificate for
#                         127.0.0.1 from a test CA, TIER_CA) and TIER_URL is
#                         https://
#   tier_stop             stop it (safe to call twice)
#   tier_count STATUS     requests the tier logged with upstream cache
#                         status STATUS (HIT, MISS, BYPASS, ...)
#   tier_log_reset        forget the requests logged so far
#   tier_store_start ROOT [--tls]
#                         a store that logs the headers a tier must never
#                         pass on, and honours x-ms-range as Azure does
#                         (nginx with lua): STORE_URL (https://localhost:P/
#                         with --tls, its CA in STORE_CA), STORE_PORT,
#                         STORE_LOG; and STORE_REDIRECT_URL, a server that
#                         answers every request with a 302 to the same path
#                         at STORE_URL (its requests in STORE_REDIRECT_LOG)
#   tier_store_stop       stop it (safe to call twice)
#
# tier_store_start's log lines (both servers):
#   $request_method $uri "$http_range" $status "$http_host"
#   "$http_x_tilefs_tier_secret" "$http_x_ms_range" "$http_authorization"
#
# Access log lines (tier-config's format):
#   $remote_addr $request_method $uri "$http_range" $status $body_bytes_sent
#   $upstream_cache_status "$upstream_addr"

tier_start() {
	local store=$1 port tries=0
	shift
	TIER_DIR=$(mktemp -d "${BATS_TEST_TMPDIR:-${TMPDIR:-/tmp}}/tier.XXXXXX") || return 1
	TIER_LOG=$TIER_DIR/access.log
	local tls=() scheme=http curl_ca=()
	if [ "${TIER_TLS:-0}" = 1 ]; then
		_tier_make_tls "$TIER_DIR/tls" "IP:127.0.0.1" || return 1
		tls=(--tls-cert "$TIER_DIR/tls/server.pem" --tls-key "$TIER_DIR/tls/server.key")
		scheme=https
		TIER_CA=$TIER_DIR/tls/ca.pem
		curl_ca=(--cacert "$TIER_CA")
	fi
	while :; do
		port=${TIER_WANT_PORT:-$(_origin_free_port)}
		"$TILEFS" tier-config "$store" --listen "127.0.0.1:$port" --cache-dir "$TIER_DIR/cache" \
			--access-log "$TIER_LOG" --error-log "$TIER_DIR/error.log" \
			--pid "$TIER_DIR/nginx.pid" --user root "${tls[@]}" "$@" \
			>"$TIER_DIR/nginx.conf" 2>"$TIER_DIR/config.err" || return 1
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
	TIER_URL=$scheme://127.0.0.1:$port
	local i
	for i in $(seq $((${TILEFS_WAIT_S:-90} * 10))); do
		[ -s "$TIER_DIR/nginx.pid" ] && curl -s "${curl_ca[@]}" -o /dev/null "$TIER_URL/" &&
			{ _tier_wait_logged "$TIER_LOG"; return; }
		sleep 0.1
	done
	echo "tier_start: the tier does not answer on $TIER_URL" >&2
	return 1
}

# _tier_wait_logged LOG: wait until nginx has logged the probe just
# answered. It logs after it sends the answer, so a log truncated as soon
# as curl returns could still get the probe's line afterwards.
_tier_wait_logged() {
	local i
	for i in $(seq $((${TILEFS_WAIT_S:-90} * 10))); do
		[ -s "$1" ] && return 0
		sleep 0.1
	done
	echo "tier: nginx logged no line for its probe in $1" >&2
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

# _tier_make_tls DIR SAN: a throwaway CA (DIR/ca.pem) and a server
# certificate for SAN (e.g. "DNS:localhost,IP:127.0.0.1"), as origin.bash
# makes its own.
_tier_make_tls() {
	local d=$1 san=$2
	mkdir -p "$d" || return 1
	(
		cd "$d" || exit 1
		openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=tilefs tier test CA" \
			-addext "basicConstraints=critical,CA:TRUE" \
			-addext "keyUsage=critical,keyCertSign,cRLSign" \
			-keyout ca.key -out ca.pem &&
			openssl req -newkey rsa:2048 -nodes -subj "/CN=tilefs test server" \
				-keyout server.key -out server.csr &&
			printf '%s\n' "subjectAltName=$san" "basicConstraints=CA:FALSE" \
				"keyUsage=digitalSignature,keyEncipherment" \
				"extendedKeyUsage=serverAuth" >server.ext &&
			openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key \
				-CAcreateserial -days 2 -extfile server.ext -out server.pem
	) >"$d/openssl.out" 2>&1 || {
		cat "$d/openssl.out" >&2
		return 1
	}
}

tier_store_start() {
	local root=$1 tls=0 d port rport tries=0 listen scheme=http host=127.0.0.1 ssl=""
	[ "${2:-}" = "--tls" ] && tls=1
	root=$(cd "$root" && pwd) || return 1
	d=$(mktemp -d "${BATS_TEST_TMPDIR:-${TMPDIR:-/tmp}}/store.XXXXXX") || return 1
	mkdir -p "$d/tmp" || return 1
	if [ "$tls" = 1 ]; then
		# a name nginx can verify as a tier's upstream (it checks DNS names)
		_tier_make_tls "$d/tls" "DNS:localhost,IP:127.0.0.1" || return 1
		scheme=https
		host=localhost
		ssl="ssl_certificate $d/tls/server.pem; ssl_certificate_key $d/tls/server.key;"
	fi
	while :; do
		port=$(_origin_free_port) && rport=$(_origin_free_port) || return 1
		listen="listen 127.0.0.1:$port;"
		[ "$tls" = 1 ] && listen="listen 127.0.0.1:$port ssl;"
		cat >"$d/nginx.conf" <<EOF
load_module $ORIGIN_MODDIR/ndk_http_module.so;
load_module $ORIGIN_MODDIR/ngx_http_lua_module.so;
user root root;
worker_processes 1;
pid $d/nginx.pid;
error_log $d/error.log info;
events { worker_connections 256; }
http {
    client_body_temp_path $d/tmp/body;
    proxy_temp_path $d/tmp/proxy;
    fastcgi_temp_path $d/tmp/fastcgi;
    uwsgi_temp_path $d/tmp/uwsgi;
    scgi_temp_path $d/tmp/scgi;
    default_type application/octet-stream;
    log_format tier_store '\$request_method \$uri "\$http_range" \$status "\$http_host" '
        '"\$http_x_tilefs_tier_secret" "\$http_x_ms_range" "\$http_authorization"';
    server {
        $listen
        $ssl
        access_log $d/access.log tier_store;
        root $root;
        autoindex on;
        autoindex_exact_size on;
        location / {
            # as Azure Blob does: x-ms-range wins over Range
            access_by_lua_block {
                local r = ngx.var.http_x_ms_range
                if r then ngx.req.set_header("Range", r) end
            }
        }
    }
    server {
        listen 127.0.0.1:$rport;
        access_log $d/redirect.log tier_store;
        return 302 $scheme://$host:$port\$request_uri;
    }
}
EOF
		: >"$d/access.log"
		: >"$d/redirect.log"
		"$ORIGIN_NGINX" -p "$d" -c "$d/nginx.conf" -e "$d/error.log" >"$d/start.out" 2>&1 && break
		tries=$((tries + 1))
		if ! grep -q "Address already in use" "$d/start.out" "$d/error.log" 2>/dev/null ||
			[ "$tries" -ge 8 ]; then
			echo "tier_store_start: nginx failed to start:" >&2
			cat "$d/start.out" >&2
			return 1
		fi
	done
	STORE_DIR=$d
	STORE_PORT=$port
	STORE_URL=$scheme://$host:$port/
	STORE_LOG=$d/access.log
	STORE_REDIRECT_URL=http://127.0.0.1:$rport/
	STORE_REDIRECT_LOG=$d/redirect.log
	STORE_CA=
	[ "$tls" = 1 ] && STORE_CA=$d/tls/ca.pem
	local i ca=()
	[ -n "$STORE_CA" ] && ca=(--cacert "$STORE_CA")
	for i in $(seq $((${TILEFS_WAIT_S:-90} * 10))); do
		if curl -s "${ca[@]}" -o /dev/null "$STORE_URL"; then
			_tier_wait_logged "$STORE_LOG" && : >"$STORE_LOG"
			return
		fi
		sleep 0.1
	done
	echo "tier_store_start: the store does not answer on $STORE_URL" >&2
	return 1
}

tier_store_stop() {
	local pid i
	[ -n "${STORE_DIR:-}" ] && [ -s "$STORE_DIR/nginx.pid" ] || return 0
	pid=$(cat "$STORE_DIR/nginx.pid")
	kill "$pid" 2>/dev/null
	for i in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	rm -f "$STORE_DIR/nginx.pid"
	return 0
}
