#!/usr/bin/python3
"""tests/lib/hostile_origin.py: a small hostile origin for the security tests.

    hostile_origin.py --log LOG --ports PORTS [--root DIR]
                      [--cert PEM --key KEY] ROLE...

Each ROLE is one listener on 127.0.0.1 on a free port; the ports are
written to PORTS, one a line, in the order given, once all listen.

    files           serve DIR: GET (with one Range) and HEAD; 404 otherwise
    trickle         as files, but the body goes out one byte every 0.25 s
                    (above curl's 1 B/s stall check, far below any sane rate)
    listing=N       a GET of a path ending in '/' answers an index page of N
                    links with no </a> and no newline; files otherwise
    tree=DxN        "/" answers an index page of D directories d0/ .. d<D-1>/
                    and the files of DIR; each "/dK/" one of N files f0.tif ..
                    (nginx's format); files otherwise
    redirect=I      every request answers 302 to the same path on listener I
                    (http://127.0.0.1:PORT_I)
    redirect307=I   the same with 307, which keeps the method and the body
                    (a POST's form goes again to the new place if followed)
    tls-redirect=I  the same over TLS (--cert, --key)

LOG gets one JSON object a line: {"listener": I, "connect": true} for each
connection accepted (before a byte is read, so a gopher:// request shows),
and {"listener": I, "method": M, "path": P, "headers": {name: value},
"body_bytes": N} for each HTTP request (the body itself is never logged),
header names lowercased. GET, HEAD, PUT and POST are taken alike. Python
stdlib only.
"""

import argparse
import http.server
import json
import os
import re
import signal
import ssl
import sys
import threading
import time

LOG_LOCK = threading.Lock()


def log(path, record):
    with LOG_LOCK, open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


def make_handler(index, role, arg, opts, ports):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            pass

        def record(self):
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n) if 0 < n < 1 << 20 else b""
            log(opts.log, {"listener": index, "method": self.command, "path": self.path,
                           "headers": {k.lower(): v for k, v in self.headers.items()},
                           "body_bytes": len(body)})

        def send_body(self, code, body, extra=()):
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            for k, v in extra:
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def serve(self):
            self.record()
            if role in ("redirect", "tls-redirect", "redirect307"):
                target = "http://127.0.0.1:%d%s" % (ports[arg], self.path)
                code = 307 if role == "redirect307" else 302
                self.send_body(code, b"moved\n", [("Location", target)])
                return
            path = self.path.split("?", 1)[0]
            if role == "listing" and path.endswith("/"):
                links = "".join('<a href="f%d.tif">f%d ' % (i, i) for i in range(arg))
                self.send_body(200, ("<html><body><pre>" + links).encode(),
                               [("Content-Type", "text/html")])
                return
            if role == "tree" and path.endswith("/"):
                dirs, files = arg
                if path == "/":
                    names = ["d%d/" % i for i in range(dirs)]
                    names += sorted(os.listdir(opts.root)) if opts.root else []
                elif re.fullmatch(r"/d\d+/", path) and int(path[2:-1]) < dirs:
                    names = ["f%d.tif" % i for i in range(files)]
                else:
                    self.send_body(404, b"not found\n")
                    return
                lines = "".join('<a href="%s">%s</a>  01-Jan-2024 00:00  %s\n'
                                % (n, n, "-" if n.endswith("/") else "1234") for n in names)
                self.send_body(200, ("<html><body><pre>" + lines + "</pre>").encode(),
                               [("Content-Type", "text/html")])
                return
            local = os.path.normpath(os.path.join(opts.root, path.lstrip("/")))
            if not opts.root or not local.startswith(os.path.abspath(opts.root) + "/") \
                    or not os.path.isfile(local):
                self.send_body(404, b"not found\n")
                return
            with open(local, "rb") as f:
                data = f.read()
            code, extra = 200, [("ETag", '"%x"' % len(data)), ("Accept-Ranges", "bytes")]
            m = re.match(r"bytes=(\d+)-(\d*)$", self.headers.get("Range", ""))
            if m:
                first = int(m.group(1))
                last = min(int(m.group(2) or len(data) - 1), len(data) - 1)
                if first >= len(data):
                    self.send_body(416, b"", [("Content-Range", "bytes */%d" % len(data))])
                    return
                extra.append(("Content-Range", "bytes %d-%d/%d" % (first, last, len(data))))
                code, data = 206, data[first:last + 1]
            if role != "trickle":
                self.send_body(code, data, extra)
                return
            self.send_response(code)
            self.send_header("Content-Length", str(len(data)))
            for k, v in extra:
                self.send_header(k, v)
            self.end_headers()
            if self.command == "HEAD":
                return
            for i in range(len(data)):
                self.wfile.write(data[i:i + 1])
                self.wfile.flush()
                time.sleep(0.25)

        do_GET = do_HEAD = do_PUT = do_POST = serve

    return Handler


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, index, opts, *a, **kw):
        self.index, self.opts = index, opts
        super().__init__(*a, **kw)

    def verify_request(self, request, client_address):
        log(self.opts.log, {"listener": self.index, "connect": True})
        return True


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--log", required=True)
    p.add_argument("--ports", required=True)
    p.add_argument("--root", default="")
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("roles", nargs="+")
    opts = p.parse_args()
    if opts.root:
        opts.root = os.path.abspath(opts.root)

    ports = []
    servers = []
    for i, spec in enumerate(opts.roles):
        role, _, arg = spec.partition("=")
        if role not in ("files", "trickle", "listing", "tree", "redirect", "tls-redirect",
                        "redirect307"):
            sys.exit("hostile_origin.py: unknown role '%s'" % spec)
        if role == "tree":
            arg = tuple(int(x) for x in arg.split("x"))
        else:
            arg = int(arg) if arg else 0
        srv = Server(i, opts, ("127.0.0.1", 0), make_handler(i, role, arg, opts, ports))
        if role.startswith("tls-"):
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(opts.cert, opts.key)
            srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
        ports.append(srv.server_address[1])
        servers.append(srv)
    for srv in servers:
        threading.Thread(target=srv.serve_forever, daemon=True).start()
    tmp = opts.ports + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("".join("%d\n" % port for port in ports))
    os.rename(tmp, opts.ports)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
