#!/usr/bin/python3
"""azure_authz.py: an authorizing proxy, on 127.0.0.1, in front of Azurite.
Azurite's --oauth basic takes any bearer token whose aud, iss, nbf and exp
it likes and lets it do everything; Azure's RBAC lets a principal do what
its role assignments say. For tests that need a principal that may list a
container but not read its blobs (Storage Blob Data Reader's read without
it, say), this plays Azure's side of that.

Over https (--tls-cert, --tls-key: Azurite's own certificate will do, so a
client trusts both with Azurite's CA), one request at a time per
connection, HTTP/1.1 with keep-alive:
  - a GET or HEAD of a blob, /ACCOUNT/CONTAINER/BLOB (any query), whose
    "Authorization: Bearer TOKEN" is a JWT whose oid claim is one of the
    --list-only OIDs: 403, "x-ms-error-code: AuthorizationPermissionMismatch"
    and Azure's XML error body (<Error><Code>AuthorizationPermissionMismatch
    </Code><Message>This request is not authorized to perform this
    operation using this permission. RequestId:... Time:...</Message>
    </Error>; none for a HEAD), as Azure answers a principal whose roles
    lack Microsoft.Storage/.../blobs/read; Azurite never sees it;
  - everything else (listings, container requests, Shared Key and SAS
    requests, every request of other principals): forwarded to --upstream
    (Azurite's https://127.0.0.1:PORT, verified with --upstream-ca) with
    its method, path, query, headers (Host and Authorization included) and
    body unchanged, but hop-by-hop headers; Azurite's answer goes back with
    its status, headers and body (read whole, then sent with its
    Content-Length; a HEAD's Content-Length is Azurite's), or 502 when
    Azurite cannot be reached.
The token's signature is not checked (Azurite checks what it checks); its
claims are read only for the oid.

Left out: every other permission (writes, deletes, tags, other blob
operations are forwarded whoever asks), container-level and
account-level role assignments, ABAC conditions, SAS and Shared Key
principals (forwarded, as Azurite authorizes them), chunked request
bodies, Expect: 100-continue, HTTP/2.

Usage: azure_authz.py --port-file F --upstream URL --upstream-ca PEM
        --tls-cert PEM --tls-key PEM [--list-only OID]... [--port P]
Writes the port it listens on into F once it listens. One line per
request on stdout: "METHOD PATH STATUS OID" (PATH without its query, OID
"-" when the request carried no bearer token whose claims name one);
never a token.
"""
import argparse
import base64
import email.utils
import http.client
import http.server
import json
import os
import ssl
import sys
import threading
import urllib.parse
import uuid

ARGS = None
UPSTREAM = None      # (host, port, ssl context)
HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
       "trailer", "trailers", "transfer-encoding", "upgrade"}


def bearer_oid(header):
    """The oid claim of the JWT in "Bearer TOKEN", else None."""
    if not header or not header.startswith("Bearer "):
        return None
    parts = header[7:].split(".")
    if len(parts) < 2:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except ValueError:
        return None
    oid = claims.get("oid") if isinstance(claims, dict) else None
    return oid if isinstance(oid, str) and oid else None


def is_blob(path):
    """/ACCOUNT/CONTAINER/BLOB: three or more segments, the last ones the
    blob's name."""
    parts = path.lstrip("/").split("/", 2)
    return len(parts) == 3 and all(parts)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_line(self, status, oid):
        path = urllib.parse.urlsplit(self.path).path
        print("%s %s %d %s" % (self.command, path, status, oid or "-"), flush=True)

    def upstream(self):
        conn = getattr(self, "conn", None)
        if conn is None:
            host, port, ctx = UPSTREAM
            conn = self.conn = http.client.HTTPSConnection(host, port, context=ctx,
                                                           timeout=60)
        return conn

    def refuse(self, oid):
        now = email.utils.formatdate(usegmt=True)
        rid = str(uuid.uuid4())
        body = b"" if self.command == "HEAD" else (
            '<?xml version="1.0" encoding="utf-8"?><Error><Code>'
            'AuthorizationPermissionMismatch</Code><Message>This request is not '
            'authorized to perform this operation using this permission.\nRequestId:%s\n'
            'Time:%s</Message></Error>' % (rid, now)).encode()
        # logged before it is sent: a client acting on the answer finds
        # its line written already
        self.log_line(403, oid)
        self.send_response(403, "This request is not authorized to perform this operation "
                                "using this permission.")
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Server", "Windows-Azure-Blob/1.0 Microsoft-HTTPAPI/2.0")
        self.send_header("x-ms-request-id", rid)
        self.send_header("x-ms-version", self.headers.get("x-ms-version", "2021-08-06"))
        self.send_header("x-ms-error-code", "AuthorizationPermissionMismatch")
        self.send_header("Date", now)
        self.end_headers()
        self.wfile.write(body)

    def forward(self, oid):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n > 0 else None
        headers = [(k, v) for k, v in self.headers.items() if k.lower() not in HOP]
        for attempt in (1, 2):
            conn = self.upstream()
            try:
                conn.putrequest(self.command, self.path, skip_host=True,
                                skip_accept_encoding=True)
                for k, v in headers:
                    conn.putheader(k, v)
                conn.endheaders(body)
                resp = conn.getresponse()
                data = resp.read()
                break
            except (OSError, http.client.HTTPException):
                # a kept-alive connection Azurite closed: once more on a new one
                self.conn = None
                conn.close()
                if attempt == 2:
                    self.log_line(502, oid)
                    self.send_response(502)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
        if resp.will_close:
            self.conn = None
            conn.close()
        self.log_line(resp.status, oid)
        self.send_response(resp.status, resp.reason)
        length = None
        for k, v in resp.getheaders():
            if k.lower() in HOP or k.lower() in ("date", "server"):
                continue
            if k.lower() == "content-length":
                length = v
                continue
            self.send_header(k, v)
        if self.command == "HEAD" or resp.status in (204, 304) or resp.status < 200:
            if length is not None:
                self.send_header("Content-Length", length)
            self.end_headers()
            return
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def handle_any(self):
        oid = bearer_oid(self.headers.get("Authorization"))
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        if self.command in ("GET", "HEAD") and is_blob(path) and oid in ARGS.list_only:
            return self.refuse(oid)
        self.forward(oid)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = do_OPTIONS = do_PATCH = handle_any

    def log_message(self, *args):
        pass


def main():
    global ARGS, UPSTREAM
    p = argparse.ArgumentParser()
    p.add_argument("--port-file", required=True)
    p.add_argument("--port", type=int, default=0)	# 0: any free port
    p.add_argument("--upstream", required=True)
    p.add_argument("--upstream-ca", required=True)
    p.add_argument("--tls-cert", required=True)
    p.add_argument("--tls-key", required=True)
    p.add_argument("--list-only", action="append", default=[])
    ARGS = p.parse_args()
    up = urllib.parse.urlsplit(ARGS.upstream)
    if up.scheme != "https" or not up.hostname:
        sys.exit("azure_authz.py: --upstream must be https://HOST:PORT")
    UPSTREAM = (up.hostname, up.port or 443,
                ssl.create_default_context(cafile=ARGS.upstream_ca))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    server.daemon_threads = True
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(ARGS.tls_cert, ARGS.tls_key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    with open(ARGS.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(ARGS.port_file + ".tmp", ARGS.port_file)
    server.serve_forever()


main()
