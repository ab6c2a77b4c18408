# tests/lib/origin.bash: a private nginx origin for the tilefs tests and demo.
#
# Source this file, then:
#   origin_start ROOTDIR [--tls]   serve ROOTDIR on 127.0.0.1:<free port>
#                                  sets ORIGIN_URL, ORIGIN_LOG, ORIGIN_DIR,
#                                  ORIGIN_PORT (and ORIGIN_CA with --tls)
#   origin_stop                    stop it (safe to call twice)
#   origin_log_reset               forget the requests logged so far
#   origin_lines                   print the logged data requests
#   origin_gets [URI]              number of GETs with a Range header
#   origin_count METHOD [URI]      number of METHOD requests (any Range)
#   origin_dup_ranges              print "uri range" pairs GET more than once
#   origin_fault PATH?QUERY        drive fault injection (see below)
#   make_sample_cogs DIR           fill DIR with small deterministic COGs
#
# Access log lines are exactly
#   $request_method $uri "$http_range" $status $body_bytes_sent
# ("$http_range" shows as "-" when the request had no Range header).
# ORIGIN_LOG_FULL has the same lines with $request_uri (query string
# included) instead of $uri, plus the User-Agent.
#
# Fault injection (lua, state in a lua_shared_dict, so it holds across
# connections). Control requests live under /_fault/ and are not logged.
#   /_fault/status?code=503&count=3[&retry_after=1][&path=/a.tif][&method=GET]
#        the next COUNT data requests (files, not directory listings, unless
#        path= names one) answer CODE; count=-1 means until cleared
#   /_fault/truncate?bytes=1000&count=2[&path=...][&method=GET]
#        the next COUNT data responses keep their Content-Length but send
#        only BYTES body bytes, then the connection is closed
#   /_fault/norange?count=2[&path=...]
#        the next COUNT data requests are answered as if they had no Range
#        header (200 and the whole file; logged with "-" as the range)
#   /_fault/shiftrange?count=2[&path=...]
#        the next COUNT ranged requests get as many bytes as they asked
#        for, but from offset 0 (a broken server: 206, wrong Content-Range)
#   /_fault/novalidators?count=2[&path=...]
#        the next COUNT data requests have their If-Match and
#        If-Unmodified-Since ignored and are answered without an ETag (a
#        server or proxy that drops validators)
#   /_fault/rate?bps=2000000     limit every data response to BPS bytes/s
#   /_fault/delay?ms=500&count=2 hold the next COUNT data requests MS ms
#   /_fault/clear                back to normal
#   /_fault/state                print the current settings
# Set ORIGIN_WANT_PORT before origin_start to reuse a port (e.g. restart after
# origin_stop); otherwise a free one is picked.

ORIGIN_NGINX=${ORIGIN_NGINX:-/usr/sbin/nginx}
ORIGIN_MODDIR=${ORIGIN_MODDIR:-/usr/lib/nginx/modules}
# Where generated sample data is kept between runs (gitignored).
ORIGIN_CACHE_DIR=${ORIGIN_CACHE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.cache}
# The python with rasterio/numpy (a pyenv python3 on PATH may lack them).
PY=${PY:-/usr/bin/python3}

_origin_tmpbase() {
	if [ -n "${BATS_TEST_TMPDIR:-}" ]; then
		echo "$BATS_TEST_TMPDIR"
	else
		echo "${TMPDIR:-/tmp}"
	fi
}

# _origin_make_tls DIR: a throwaway CA and a server cert for 127.0.0.1.
_origin_make_tls() {
	local d=$1
	mkdir -p "$d" || return 1
	(
		cd "$d" || exit 1
		openssl req -x509 -newkey rsa:2048 -nodes -days 2 \
			-subj "/CN=tilefs test CA" \
			-addext "basicConstraints=critical,CA:TRUE" \
			-addext "keyUsage=critical,keyCertSign,cRLSign" \
			-keyout ca.key -out ca.pem &&
			openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
				-keyout server.key -out server.csr &&
			printf '%s\n' "subjectAltName=IP:127.0.0.1" \
				"basicConstraints=CA:FALSE" \
				"keyUsage=digitalSignature,keyEncipherment" \
				"extendedKeyUsage=serverAuth" >server.ext &&
			openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key \
				-CAcreateserial -days 2 -extfile server.ext -out server.pem
	) >"$d/openssl.out" 2>&1 || {
		cat "$d/openssl.out" >&2
		return 1
	}
}

# _origin_write_conf DIR ROOT PORT TLS
_origin_write_conf() {
	local d=$1 root=$2 port=$3 tls=$4 listen ssl=""
	listen="listen 127.0.0.1:$port;"
	if [ "$tls" = 1 ]; then
		listen="listen 127.0.0.1:$port ssl;"
		ssl="ssl_certificate $d/tls/server.pem;
        ssl_certificate_key $d/tls/server.key;"
	fi
	cat >"$d/nginx.conf" <<EOF
load_module $ORIGIN_MODDIR/ndk_http_module.so;
load_module $ORIGIN_MODDIR/ngx_http_lua_module.so;
user root root;
worker_processes 1;
pid $d/nginx.pid;
error_log $d/error.log info;
events { worker_connections 1024; }
http {
    client_body_temp_path $d/tmp/body;
    proxy_temp_path $d/tmp/proxy;
    fastcgi_temp_path $d/tmp/fastcgi;
    uwsgi_temp_path $d/tmp/uwsgi;
    scgi_temp_path $d/tmp/scgi;
    default_type application/octet-stream;
    types { text/html html; image/tiff tif tiff; text/plain txt; }
    log_format tilefs '\$request_method \$uri "\$http_range" \$status \$body_bytes_sent';
    access_log $d/access.log tilefs;
    # the same with the query string and the client's User-Agent
    log_format tilefs_full '\$request_method \$request_uri "\$http_range" \$status \$body_bytes_sent "\$http_user_agent"';
    access_log $d/access_full.log tilefs_full;
    keepalive_timeout 65;
    keepalive_requests 100000;
    sendfile off;
    lua_shared_dict faults 1m;

    # Returns the fault table entry that applies to this request, consuming
    # one count, or nil.
    init_by_lua_block {
        function tilefs_take(kind)
            local f = ngx.shared.faults
            local cnt = f:get(kind .. ".count")
            if not cnt or cnt == 0 then return nil end
            local want = f:get(kind .. ".path")
            local uri = ngx.var.uri
            if want then
                if uri ~= want then return nil end
            elseif uri:sub(-1) == "/" then
                return nil
            end
            local m = f:get(kind .. ".method")
            if m and m ~= ngx.req.get_method() then return nil end
            if cnt > 0 then
                local left = f:incr(kind .. ".count", -1, 0)
                if not left or left < 0 then
                    f:incr(kind .. ".count", 1)
                    return nil
                end
            end
            return true
        end
    }

    server {
        $listen
        $ssl
        server_name localhost;
        root $root;
        autoindex on;
        autoindex_exact_size on;
        autoindex_format html;

        location / {
            access_by_lua_block {
                local f = ngx.shared.faults
                local bps = f:get("rate.bps")
                if bps and bps > 0 then ngx.var.limit_rate = bps end
                if tilefs_take("delay") then
                    ngx.sleep((f:get("delay.ms") or 0) / 1000)
                end
                if tilefs_take("status") then
                    local ra = f:get("status.retry_after")
                    if ra then ngx.header["Retry-After"] = ra end
                    return ngx.exit(f:get("status.code"))
                end
                if tilefs_take("norange") then
                    ngx.req.clear_header("Range")
                end
                if tilefs_take("shiftrange") then
                    -- serve as many bytes as asked, but from offset 0
                    local first, last = (ngx.var.http_range or ""):match("bytes=(%d+)-(%d+)")
                    if first then
                        ngx.req.set_header("Range", "bytes=0-" .. (tonumber(last) - tonumber(first)))
                    end
                end
                if tilefs_take("novalidators") then
                    ngx.req.clear_header("If-Match")
                    ngx.req.clear_header("If-Unmodified-Since")
                    ngx.ctx.noetag = true
                end
                if tilefs_take("truncate") then
                    return ngx.exec("@truncate")
                end
            }
            header_filter_by_lua_block {
                if ngx.ctx.noetag then ngx.header["ETag"] = nil end
            }
        }

        # Same files, but the body is cut after truncate.bytes bytes while
        # Content-Length still announces the whole length, and keep-alive is
        # off so nginx closes the connection: the client sees a short body.
        location @truncate {
            keepalive_timeout 0;
            header_filter_by_lua_block {
                ngx.ctx.left = ngx.shared.faults:get("truncate.bytes") or 0
            }
            body_filter_by_lua_block {
                local left = ngx.ctx.left or 0
                local chunk = ngx.arg[1]
                if #chunk > left then
                    ngx.arg[1] = chunk:sub(1, left)
                    left = 0
                else
                    left = left - #chunk
                end
                ngx.ctx.left = left
            }
        }

        location /_fault/ {
            access_log off;
            content_by_lua_block {
                local f = ngx.shared.faults
                local a = ngx.req.get_uri_args()
                local what = ngx.var.uri:match("^/_fault/(.*)$")
                local function num(v, d)
                    if v == nil then return d end
                    return tonumber(v)
                end
                local function arm(kind)
                    f:set(kind .. ".count", num(a.count, 1))
                    f:set(kind .. ".path", a.path)
                    f:set(kind .. ".method", a.method)
                end
                if what == "status" then
                    f:set("status.code", num(a.code, 503))
                    f:set("status.retry_after", a.retry_after)
                    arm("status")
                elseif what == "truncate" then
                    f:set("truncate.bytes", num(a.bytes, 0))
                    arm("truncate")
                elseif what == "norange" then
                    arm("norange")
                elseif what == "shiftrange" then
                    arm("shiftrange")
                elseif what == "novalidators" then
                    arm("novalidators")
                elseif what == "delay" then
                    f:set("delay.ms", num(a.ms, 1000))
                    arm("delay")
                elseif what == "rate" then
                    f:set("rate.bps", num(a.bps, 0))
                elseif what == "clear" then
                    f:flush_all()
                elseif what ~= "state" then
                    ngx.status = 404
                    ngx.say("unknown fault ", what)
                    return ngx.exit(404)
                end
                for _, k in ipairs(f:get_keys(0)) do
                    ngx.say(k, "=", tostring(f:get(k)))
                end
                ngx.say("ok")
            }
        }
    }
}
EOF
}

# origin_start ROOTDIR [--tls]
origin_start() {
	local root=$1 tls=0 d port tries=0
	shift || true
	[ "${1:-}" = "--tls" ] && tls=1
	if [ -z "$root" ] || [ ! -d "$root" ]; then
		echo "origin_start: no such directory: $root" >&2
		return 1
	fi
	root=$(cd "$root" && pwd)
	d=$(mktemp -d "$(_origin_tmpbase)/origin.XXXXXX") || return 1
	mkdir -p "$d/tmp" || return 1
	if [ "$tls" = 1 ]; then
		_origin_make_tls "$d/tls" || return 1
	fi
	# A wanted port (a restart) is retried for a few seconds, since the old
	# listener may take a moment to go; otherwise try random ports.
	while :; do
		if [ -n "${ORIGIN_WANT_PORT:-}" ]; then
			port=$ORIGIN_WANT_PORT
		else
			port=$(_origin_free_port) || return 1
		fi
		_origin_write_conf "$d" "$root" "$port" "$tls"
		: >"$d/access.log"
		if "$ORIGIN_NGINX" -p "$d" -c "$d/nginx.conf" -e "$d/error.log" \
			>"$d/start.out" 2>&1; then
			break
		fi
		tries=$((tries + 1))
		if ! grep -q "Address already in use" "$d/start.out" "$d/error.log" 2>/dev/null ||
			[ "$tries" -ge 8 ]; then
			echo "origin_start: nginx failed to start:" >&2
			cat "$d/start.out" >&2
			tail -n 20 "$d/error.log" >&2 2>/dev/null
			return 1
		fi
		[ -n "${ORIGIN_WANT_PORT:-}" ] && sleep 0.25
	done
	ORIGIN_DIR=$d
	ORIGIN_ROOT=$root
	ORIGIN_PORT=$port
	ORIGIN_LOG=$d/access.log
	ORIGIN_LOG_FULL=$d/access_full.log
	ORIGIN_TLS=$tls
	if [ "$tls" = 1 ]; then
		ORIGIN_URL="https://127.0.0.1:$port/"
		ORIGIN_CA=$d/tls/ca.pem
	else
		ORIGIN_URL="http://127.0.0.1:$port/"
		unset ORIGIN_CA
	fi
	export ORIGIN_DIR ORIGIN_ROOT ORIGIN_PORT ORIGIN_LOG ORIGIN_LOG_FULL ORIGIN_URL ORIGIN_TLS
	[ -n "${ORIGIN_CA:-}" ] && export ORIGIN_CA
	# Wait until it answers.
	local i
	for i in $(seq 1 50); do
		if _origin_curl -o /dev/null "${ORIGIN_URL}_fault/state"; then
			return 0
		fi
		sleep 0.1
	done
	echo "origin_start: nginx does not answer on $ORIGIN_URL" >&2
	tail -n 20 "$d/error.log" >&2
	return 1
}

# _origin_free_port: a TCP port on 127.0.0.1 that is free right now.
_origin_free_port() {
	"$PY" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

_origin_curl() {
	local ca=()
	[ -n "${ORIGIN_CA:-}" ] && ca=(--cacert "$ORIGIN_CA")
	curl -sSf --max-time 10 "${ca[@]}" "$@"
}

# pid_alive PID: true while PID runs (a zombie that nobody reaped yet
# counts as gone).
pid_alive() {
	local st
	[[ ${1:-} =~ ^[0-9]+$ ]] || return 1
	st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# origin_stop: stop nginx and wait until its processes are gone.
origin_stop() {
	[ -n "${ORIGIN_DIR:-}" ] || return 0
	local pidf=$ORIGIN_DIR/nginx.pid pid i
	[ -f "$pidf" ] || return 0
	pid=$(cat "$pidf" 2>/dev/null)
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	for i in $(seq 1 100); do
		pid_alive "$pid" || break
		sleep 0.05
	done
	kill -KILL "$pid" 2>/dev/null || true
	rm -f "$pidf"
	return 0
}

# origin_fault WHAT?ARGS, e.g. origin_fault 'status?code=503&count=3'
origin_fault() {
	_origin_curl -o /dev/null "${ORIGIN_URL}_fault/$1"
}

# origin_log_reset: forget everything logged so far (nginx opened the log
# with O_APPEND, so truncating it in place is safe).
origin_log_reset() {
	: >"$ORIGIN_LOG"
	: >"$ORIGIN_LOG_FULL"
}

# origin_lines: the logged requests (control requests are never logged).
origin_lines() {
	cat "$ORIGIN_LOG"
}

# ORIGIN_AWK: awk preamble that splits a log line into m (method), u (uri,
# which may contain spaces), r (Range header, "-" if none), st (status) and
# nb (body bytes). Use as: awk "$ORIGIN_AWK"' { parse() } ...' "$ORIGIN_LOG"
ORIGIN_AWK='function parse() {
	m = $1; nb = $NF; st = $(NF - 1); r = $(NF - 2); gsub(/"/, "", r)
	u = $0; sub(/^[A-Z]+ /, "", u); sub(/ "[^"]*" [0-9]+ [0-9]+$/, "", u)
}'

# origin_gets [URI]: number of GET requests that carried a Range header,
# for URI (as logged, e.g. /a/b.tif) or for any URI.
origin_gets() {
	awk -v want="${1:-}" "$ORIGIN_AWK"'{ parse() }
		m == "GET" && (want == "" || u == want) && r ~ /^bytes=/ { n++ }
		END { print n + 0 }' "$ORIGIN_LOG"
}

# origin_count METHOD [URI]: number of METHOD requests (with or without
# Range) for URI or for any URI.
origin_count() {
	awk -v meth="$1" -v want="${2:-}" "$ORIGIN_AWK"'{ parse() }
		m == meth && (want == "" || u == want) { n++ }
		END { print n + 0 }' "$ORIGIN_LOG"
}

# origin_file_requests: number of requests of any method for files (URIs
# not ending in /).
origin_file_requests() {
	awk "$ORIGIN_AWK"'{ parse() } u !~ /\/$/ { n++ } END { print n + 0 }' "$ORIGIN_LOG"
}

# origin_dup_ranges: print each "uri range" that was GET more than once
# (successful 206 answers only); prints nothing when there are none.
origin_dup_ranges() {
	awk "$ORIGIN_AWK"'{ parse() }
		m == "GET" && r ~ /^bytes=/ && st == 206 { c[u " " r]++ }
		END { for (k in c) if (c[k] > 1) print c[k] "x " k }' "$ORIGIN_LOG"
}

# origin_range_bytes [URI]: sum of the body bytes of 206 answers.
origin_range_bytes() {
	awk -v want="${1:-}" "$ORIGIN_AWK"'{ parse() }
		m == "GET" && (want == "" || u == want) && st == 206 { n += nb }
		END { print n + 0 }' "$ORIGIN_LOG"
}

# origin_select AWK-CONDITION: print the log lines for which the condition
# on m, u, r, st, nb holds, e.g. origin_select 'st == 503 && u == "/a.tif"'
origin_select() {
	awk "$ORIGIN_AWK"'{ parse() } '"$1"' { print }' "$ORIGIN_LOG"
}

# make_sample_cogs DIR: a small deterministic data set (about 4 MB):
#   t256.tif          3-band uint8 COG, 256x256 tiles, DEFLATE, overviews
#   t512.tif          1-band uint16 COG, 512x512 tiles, DEFLATE, overviews
#   nested/f32.tif    1-band float32 COG, 256x256 tiles, predictor 3
#   nested/deeper/small.tif  tiny 1-band COG (one tile)
#   nested/with space.tif    copy of small.tif under a name with a space
#   notes.txt         a non-TIFF file (text)
#   random.bin        a non-TIFF binary file (1 MiB of pseudo-random bytes)
# Built once into $ORIGIN_CACHE_DIR/cogs-v1 and copied from there.
make_sample_cogs() {
	local dest=$1 src=$ORIGIN_CACHE_DIR/cogs-v1
	if [ ! -f "$src/.done" ]; then
		rm -rf "$src.tmp"
		mkdir -p "$src.tmp" || return 1
		if ! _make_sample_cogs_into "$src.tmp" >"$src.tmp/.log" 2>&1; then
			echo "make_sample_cogs: generation failed:" >&2
			cat "$src.tmp/.log" >&2
			return 1
		fi
		rm -f "$src.tmp/.log"
		touch "$src.tmp/.done"
		rm -rf "$src"
		mv "$src.tmp" "$src" || return 1
	fi
	mkdir -p "$dest" || return 1
	# -p keeps the mtimes, so ETags are stable across copies too.
	(cd "$src" && tar cf - --exclude=.done .) | (cd "$dest" && tar xpf -)
}

_make_sample_cogs_into() {
	local d=$1
	mkdir -p "$d/raw" "$d/nested/deeper" || return 1
	"$PY" - "$d/raw" <<'PYEOF' || return 1
import sys, numpy as np, rasterio
from rasterio.transform import from_origin
out = sys.argv[1]
rng = np.random.default_rng(20240601)

def write(path, arr, dtype):
    count, h, w = arr.shape
    prof = dict(driver="GTiff", width=w, height=h, count=count, dtype=dtype,
                crs="EPSG:32633", transform=from_origin(500000, 5000000, 10, 10))
    with rasterio.open(path, "w", **prof) as ds:
        ds.write(arr.astype(dtype))

yy, xx = np.mgrid[0:700, 0:800]
base = (np.sin(xx / 37.0) + np.cos(yy / 23.0)) * 60 + 128
rgb = np.stack([np.round(base) + rng.integers(0, 4, base.shape) for _ in range(3)])
write(f"{out}/t256.tif", np.clip(rgb, 0, 255), "uint8")

yy, xx = np.mgrid[0:1000, 0:900]
u16 = (xx * 13 + yy * 7) % 4000 + rng.integers(0, 4, xx.shape)
write(f"{out}/t512.tif", u16[None], "uint16")

yy, xx = np.mgrid[0:500, 0:600]
f32 = np.sin(xx / 50.0) * np.cos(yy / 70.0) * 1000 + rng.integers(0, 2, xx.shape) / 8.0
write(f"{out}/f32.tif", f32[None], "float32")

small = rng.integers(0, 255, (1, 200, 180))
write(f"{out}/small.tif", small, "uint8")

with open(f"{out}/random.bin", "wb") as fh:
    fh.write(rng.integers(0, 256, 1024 * 1024, dtype=np.uint8).tobytes())
PYEOF
	local cog=(-q -of COG -co COMPRESS=DEFLATE -co OVERVIEWS=AUTO
		-co OVERVIEW_RESAMPLING=AVERAGE -co NUM_THREADS=1)
	gdal_translate "${cog[@]}" -co BLOCKSIZE=256 "$d/raw/t256.tif" "$d/t256.tif" &&
		gdal_translate "${cog[@]}" -co BLOCKSIZE=512 "$d/raw/t512.tif" "$d/t512.tif" &&
		gdal_translate "${cog[@]}" -co BLOCKSIZE=256 -co PREDICTOR=YES \
			"$d/raw/f32.tif" "$d/nested/f32.tif" &&
		gdal_translate "${cog[@]}" -co BLOCKSIZE=256 "$d/raw/small.tif" \
			"$d/nested/deeper/small.tif" || return 1
	cp "$d/nested/deeper/small.tif" "$d/nested/with space.tif"
	mv "$d/raw/random.bin" "$d/random.bin"
	rm -rf "$d/raw" "$d"/*.aux.xml "$d"/nested/*.aux.xml
	{
		echo "tilefs sample data"
		echo "This file is not a TIFF; tilefs serves it as plain bytes."
		seq 1 2000 | sed 's/^/line /'
	} >"$d/notes.txt"
	# Fixed mtimes make the set identical (and nginx ETags stable) each time.
	find "$d" -exec touch -h -d '2024-01-02 03:04:05 UTC' {} +
}
