# tests/lib/azurite.bash: a private Azurite (Azure Blob emulator) for the
# tilefs tests, and a client for it in stdlib Python (Shared Key signing,
# SAS generation), so that nothing but Azurite itself is needed.
#
# Source this file (after origin.bash, which sets PY and pid_alive), then:
#   azurite_start [--oauth]        Azurite blob service on 127.0.0.1:<free port>
#                                  sets AZURITE_PORT, AZURITE_ENDPOINT
#                                  (http://127.0.0.1:PORT/devstoreaccount1),
#                                  AZURITE_DIR, AZURITE_LOG (access log);
#                                  --oauth: over HTTPS with a throwaway CA
#                                  (AZURITE_CA) and --oauth basic, so that it
#                                  takes bearer tokens too (checking their
#                                  aud, iss, nbf and exp, not a signature)
#   azurite_stop                   stop it (safe to call twice)
#   azurite_container NAME [--public]
#                                  create a container (--public: anonymous read
#                                  and list)
#   azurite_put CONTAINER BLOB FILE
#                                  upload FILE as block blob BLOB
#   azurite_put_tree CONTAINER PREFIX DIR
#                                  upload every file under DIR as PREFIX/RELPATH
#                                  (PREFIX may be "")
#   azurite_sas CONTAINER [PERMS]  print a container SAS token (default
#                                  PERMS rl, valid until 2099)
#   azurite_log_reset              forget the requests logged so far
#   azurite_count METHOD [STATUS] [URIPATTERN]
#                                  requests logged with that method (and HTTP
#                                  status, and a request URI matching the awk
#                                  regex URIPATTERN)
#   azurite_data_gets              GETs of blobs (not listings): count
#   azure_authz_start [--list-only OID]...
#                                  azure_authz.py in front of an --oauth
#                                  Azurite, on 127.0.0.1:<free port>, with
#                                  Azurite's certificate: a bearer token whose
#                                  oid is a --list-only one may list but not
#                                  GET or HEAD a blob (403
#                                  AuthorizationPermissionMismatch). Sets
#                                  AUTHZ_ENDPOINT (https://127.0.0.1:PORT/
#                                  devstoreaccount1; AZURITE_CA verifies it),
#                                  AUTHZ_DIR, AUTHZ_LOG (one line a request:
#                                  METHOD PATH STATUS OID)
#   azure_authz_stop               stop it (safe to call twice)
#   azure_authz_count METHOD STATUS [PATHPATTERN [OID]]
#                                  its requests with that method and status
#                                  (and a path matching the awk regex
#                                  PATHPATTERN, and that oid)
#
# AZURITE_ACCOUNT and AZURITE_KEY are Azurite's well-known dev account.
# The access log is Azurite's console log, one line per request:
#   127.0.0.1 - - [date] "GET /devstoreaccount1/c/a.tif HTTP/1.1" 206 -
# (checked by azurite_start: a request it makes must show up; the log is
# then emptied).

AZURITE_ACCOUNT=devstoreaccount1
AZURITE_KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='
AZURITE_BIN=${AZURITE_BIN:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.cache/node/node_modules/.bin/azurite-blob}
PY=${PY:-/usr/bin/python3}

# The client: python3 -c "$_AZURITE_PY" COMMAND ARGS (stdlib only).
_AZURITE_PY=$(
	cat <<'PYEOF'
import base64, email.utils, hashlib, hmac, os, ssl, sys, urllib.error, urllib.parse, urllib.request

ACCOUNT = os.environ["AZURITE_ACCOUNT"]
KEY = base64.b64decode(os.environ["AZURITE_KEY"])
ENDPOINT = os.environ["AZURITE_ENDPOINT"]
CONTEXT = ssl.create_default_context(cafile=os.environ["AZURITE_CA"]) \
    if os.environ.get("AZURITE_CA") else None
VERSION = "2021-08-06"
STANDARD = ["Content-Encoding", "Content-Language", "Content-Length", "Content-MD5",
            "Content-Type", "Date", "If-Modified-Since", "If-Match", "If-None-Match",
            "If-Unmodified-Since", "Range"]


def sign(method, url, query, headers):
    """Shared Key, as in Azure's "Authorize with Shared Key" page."""
    def value(name):
        v = headers.get(name, "")
        return "" if name == "Content-Length" and v == "0" else v
    xms = sorted((k.lower(), v) for k, v in headers.items() if k.lower().startswith("x-ms-"))
    resource = "/" + ACCOUNT + urllib.parse.urlsplit(url).path
    for k, v in sorted((k.lower(), v) for k, v in query):
        resource += "\n%s:%s" % (k, v)
    text = (method + "\n" + "\n".join(value(n) for n in STANDARD) + "\n" +
            "".join("%s:%s\n" % kv for kv in xms) + resource)
    mac = hmac.new(KEY, text.encode(), hashlib.sha256).digest()
    return "SharedKey %s:%s" % (ACCOUNT, base64.b64encode(mac).decode())


def request(method, path, query=(), headers=None, body=None):
    headers = dict(headers or {})
    headers["x-ms-date"] = email.utils.formatdate(usegmt=True)
    headers["x-ms-version"] = VERSION
    url = ENDPOINT + urllib.parse.quote(path)
    if query:
        url += "?" + urllib.parse.urlencode(query, quote_via=urllib.parse.quote)
    if body is not None:
        headers["Content-Length"] = str(len(body))
        headers.setdefault("Content-Type", "application/octet-stream")
    headers["Authorization"] = sign(method, url, query, headers)
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30, context=CONTEXT) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        sys.exit("azurite: %s %s: HTTP %d %s" % (method, path, e.code, e.read()[:300]))


def put(container, blob, path):
    with open(path, "rb") as f:
        data = f.read()
    request("PUT", "/%s/%s" % (container, blob), headers={"x-ms-blob-type": "BlockBlob"},
            body=data)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "container":
        headers = {"x-ms-blob-public-access": "container"} if "--public" in args[1:] else {}
        request("PUT", "/" + args[0], [("restype", "container")], headers, b"")
    elif cmd == "put":
        put(*args)
    elif cmd == "put-tree":
        container, prefix, top = args
        for d, dirs, files in os.walk(top):
            dirs.sort()
            for name in sorted(files):
                rel = os.path.relpath(os.path.join(d, name), top)
                put(container, (prefix.strip("/") + "/" if prefix.strip("/") else "") + rel,
                    os.path.join(d, name))
    elif cmd == "sas":
        container, perms = args[0], args[1] if len(args) > 1 else "rl"
        expiry = "2099-01-01T00:00:00Z"
        # service SAS for a container, string to sign of versions 2020-12-06+
        text = "\n".join([perms, "", expiry, "/blob/%s/%s" % (ACCOUNT, container), "", "", "",
                          VERSION, "c", "", "", "", "", "", "", ""])
        sig = base64.b64encode(hmac.new(KEY, text.encode(), hashlib.sha256).digest()).decode()
        print(urllib.parse.urlencode([("sv", VERSION), ("sr", "c"), ("sp", perms),
                                      ("se", expiry), ("sig", sig)],
                                     quote_via=urllib.parse.quote))
    elif cmd == "list":
        status, body = request("GET", "/" + args[0], [("restype", "container"), ("comp", "list")])
        sys.stdout.write(body.decode())
    else:
        sys.exit("azurite: unknown command " + cmd)


main()
PYEOF
)

_azurite_tmpbase() {
	if [ -n "${BATS_TEST_TMPDIR:-}" ]; then
		echo "$BATS_TEST_TMPDIR"
	else
		echo "${TMPDIR:-/tmp}"
	fi
}

_azurite_py() {
	AZURITE_ACCOUNT=$AZURITE_ACCOUNT AZURITE_KEY=$AZURITE_KEY AZURITE_ENDPOINT=$AZURITE_ENDPOINT \
		AZURITE_CA=${AZURITE_CA:-} \
		"$PY" -c "$_AZURITE_PY" "$@"
}

azurite_start() {
	local d port i tries scheme=http tls=() cacert=()
	if [ ! -x "$AZURITE_BIN" ]; then
		"$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/packaging/install-test-servers" >&2 ||
			return 1
	fi
	[ -x "$AZURITE_BIN" ] || {
		echo "azurite_start: $AZURITE_BIN missing (packaging/install-test-servers)" >&2
		return 1
	}
	d=$(mktemp -d "$(_azurite_tmpbase)/azurite.XXXXXX") || return 1
	AZURITE_CA=
	if [ "${1:-}" = --oauth ]; then
		_origin_make_tls "$d/tls" || return 1
		scheme=https
		tls=(--cert "$d/tls/server.pem" --key "$d/tls/server.key" --oauth basic)
		AZURITE_CA=$d/tls/ca.pem
		cacert=(--cacert "$AZURITE_CA")
	fi
	export AZURITE_CA
	for ((tries = 0; tries < 5; tries++)); do
		port=$("$PY" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])') || return 1
		# setsid: its own process group, so a stop takes node's children too;
		# O_APPEND (>>), so that azurite_log_reset can truncate the log
		: >"$d/access.log"
		setsid "$AZURITE_BIN" --blobHost 127.0.0.1 --blobPort "$port" \
			--location "$d/data" --debug "$d/debug.log" --loose --skipApiVersionCheck \
			--disableTelemetry "${tls[@]}" </dev/null >>"$d/access.log" 2>"$d/stderr" 3>&- &
		echo $! >"$d/azurite.pid"
		for ((i = 0; i < 200; i++)); do
			grep -q "successfully listens" "$d/access.log" 2>/dev/null && break
			pid_alive "$(cat "$d/azurite.pid")" || break
			sleep 0.05
		done
		grep -q "successfully listens" "$d/access.log" 2>/dev/null && break
		kill -TERM -- "-$(cat "$d/azurite.pid")" 2>/dev/null
		grep -q EADDRINUSE "$d/stderr" "$d/access.log" 2>/dev/null || break
	done
	AZURITE_DIR=$d
	AZURITE_PORT=$port
	AZURITE_ENDPOINT=$scheme://127.0.0.1:$port/$AZURITE_ACCOUNT
	AZURITE_LOG=$d/access.log
	export AZURITE_DIR AZURITE_PORT AZURITE_ENDPOINT AZURITE_LOG
	if ! grep -q "successfully listens" "$d/access.log" 2>/dev/null; then
		echo "azurite_start: Azurite did not start:" >&2
		cat "$d/access.log" "$d/stderr" >&2
		return 1
	fi
	# It answers, and its access log shows the request (the tests count on it).
	for ((i = 0; i < 100; i++)); do
		curl -s "${cacert[@]}" -o /dev/null "$scheme://127.0.0.1:$port/$AZURITE_ACCOUNT/probe?restype=container" &&
			grep -q '"GET /devstoreaccount1/probe?restype=container ' "$AZURITE_LOG" &&
			azurite_log_reset && return 0
		sleep 0.05
	done
	echo "azurite_start: Azurite does not answer on $AZURITE_ENDPOINT, or logs no requests" >&2
	cat "$d/access.log" >&2
	return 1
}

azurite_stop() {
	[ -n "${AZURITE_DIR:-}" ] && [ -f "$AZURITE_DIR/azurite.pid" ] || return 0
	local pid i
	pid=$(cat "$AZURITE_DIR/azurite.pid")
	rm -f "$AZURITE_DIR/azurite.pid"
	kill -TERM -- "-$pid" 2>/dev/null || return 0
	for ((i = 0; i < 100; i++)); do
		pid_alive "$pid" || return 0
		sleep 0.05
	done
	kill -KILL -- "-$pid" 2>/dev/null
	return 0
}

azurite_container() { _azurite_py container "$@"; }
azurite_put() { _azurite_py put "$@"; }
azurite_put_tree() { _azurite_py put-tree "$@"; }
azurite_sas() { _azurite_py sas "$@"; }

azurite_log_reset() {
	: >"$AZURITE_LOG"
}

# azurite_count METHOD [STATUS] [URIPATTERN]
azurite_count() {
	awk -v meth="$1" -v want_st="${2:-}" -v pat="${3:-}" '
		match($0, /"[A-Z]+ [^"]* HTTP\/[0-9.]+" [0-9]+/) {
			split(substr($0, RSTART + 1, RLENGTH - 1), f, " ")
			st = f[4]; sub(/^[^0-9]*/, "", st)
			if (f[1] == meth && (want_st == "" || st == want_st) && (pat == "" || f[2] ~ pat))
				n++
		}
		END { print n + 0 }' "$AZURITE_LOG"
}

# azurite_data_gets: GETs of blobs (listings carry comp=list).
azurite_data_gets() {
	awk '/"GET / && !/comp=list/ { n++ } END { print n + 0 }' "$AZURITE_LOG"
}

azure_authz_start() {
	[ -n "${AZURITE_CA:-}" ] || {
		echo "azure_authz_start: start Azurite with --oauth first" >&2
		return 1
	}
	local d i
	d=$(mktemp -d "$(_azurite_tmpbase)/authz.XXXXXX") || return 1
	AUTHZ_DIR=$d
	AUTHZ_LOG=$d/requests.log
	"$PY" "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/azure_authz.py" --port-file "$d/port" \
		--upstream "https://127.0.0.1:$AZURITE_PORT" --upstream-ca "$AZURITE_CA" \
		--tls-cert "$AZURITE_DIR/tls/server.pem" --tls-key "$AZURITE_DIR/tls/server.key" "$@" \
		</dev/null >>"$AUTHZ_LOG" 2>>"$d/stderr" 3>&- &
	echo $! >"$d/pid"
	for ((i = 0; i < 600; i++)); do
		[ -s "$d/port" ] && break
		pid_alive "$(cat "$d/pid")" || break
		sleep 0.05
	done
	[ -s "$d/port" ] || {
		echo "azure_authz.py did not start:" >&2
		cat "$d/stderr" >&2
		return 1
	}
	AUTHZ_ENDPOINT=https://127.0.0.1:$(cat "$d/port")/$AZURITE_ACCOUNT
	export AUTHZ_DIR AUTHZ_LOG AUTHZ_ENDPOINT
}

azure_authz_stop() {
	[ -n "${AUTHZ_DIR:-}" ] && [ -f "$AUTHZ_DIR/pid" ] || return 0
	local pid
	pid=$(cat "$AUTHZ_DIR/pid")
	rm -f "$AUTHZ_DIR/pid"
	kill -TERM "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null || true
	return 0
}

# azure_authz_count METHOD STATUS [PATHPATTERN [OID]]
azure_authz_count() {
	awk -v m="$1" -v st="$2" -v pat="${3:-}" -v oid="${4:-}" \
		'$1 == m && $3 == st && (pat == "" || $2 ~ pat) && (oid == "" || $4 == oid) { n++ }
		END { print n + 0 }' "$AUTHZ_LOG"
}
