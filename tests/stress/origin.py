#!/usr/bin/python3
"""tests/stress/origin.py: a fault-injecting HTTP origin for the stress test.

    origin.py --root DIR --port-file FILE --stats FILE [--seed S]
              [--fault-rate P] [--corrupt]

Serves DIR on 127.0.0.1 (a free port, written to FILE once listening):
directory listings in nginx's autoindex format (a GET of a path ending in
'/'), and files by HEAD and GET with one `Range: bytes=a-b`, with an ETag
(honouring If-Match: 412 on a mismatch) and Last-Modified. HTTP/1.1 with
keep-alive. Python stdlib only.

Each file request (listings are never faulted, so a mount always starts)
draws, with probability P (default 0.2), one fault from a generator seeded
by S and the request's number:

    503       503 Service Unavailable with a short body
    429       429 Too Many Requests with Retry-After: 0 or 1
    cut       the headers (full Content-Length), part of the body, then the
              connection is closed
    stall     the headers and part of the body, then 1 to 3 s of silence,
              then the rest
    hold      1 to 2 s of silence before the status line, then the answer
    slow      the body in about 50 small pieces, 20 ms apart

--corrupt (a self-check of the stress test, which must then fail) flips
the byte in the middle of every file in every answer that holds it.

SIGUSR1 stops injecting faults, SIGUSR2 starts again. On SIGTERM the counts
(requests, faults by kind, bytes sent) are written to the stats file as
JSON, and the server exits 0. The stats file is also rewritten every 2 s.
"""

import argparse
import email.utils
import html
import http.server
import json
import os
import random
import re
import signal
import socket
import struct
import sys
import threading
import time
import urllib.parse

LOCK = threading.Lock()
STATS = {"requests": 0, "file_requests": 0, "listings": 0, "bytes": 0, "status_412": 0,
         "faults": {"503": 0, "429": 0, "cut": 0, "stall": 0, "hold": 0, "slow": 0},
         "client_gone": 0}
STATE = {"faults_on": True, "n": 0}
KINDS = ["503", "429", "cut", "stall", "hold", "slow"]
# the quick faults more often than the slow ones (a stall or a hold costs
# every reader waiting for that unit seconds)
WEIGHTS = [3, 2, 3, 1, 1, 2]


def count(key, sub=None, n=1):
    with LOCK:
        if sub is None:
            STATS[key] += n
        else:
            STATS[key][sub] += n


def etag_of(st):
    return '"%x-%x"' % (int(st.st_mtime), st.st_size)


def make_handler(opts):
    root = os.path.abspath(opts.root)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # a quiet client (a killed mount) must not hold a thread for ever
        timeout = 120

        def log_message(self, fmt, *args):
            pass

        def simple(self, code, body=b"", extra=()):
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            for k, v in extra:
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD" and body:
                self.wfile.write(body)

        def listing(self, local, path):
            names = []
            for name in sorted(os.listdir(local)):
                full = os.path.join(local, name)
                st = os.stat(full)
                when = time.strftime("%d-%b-%Y %H:%M", time.gmtime(st.st_mtime))
                if os.path.isdir(full):
                    names.append('<a href="%s/">%s/</a>  %s  -\n'
                                 % (urllib.parse.quote(name), html.escape(name), when))
                else:
                    names.append('<a href="%s">%s</a>  %s  %d\n'
                                 % (urllib.parse.quote(name), html.escape(name), when, st.st_size))
            body = ("<html><head><title>Index of %s</title></head><body>\n"
                    "<h1>Index of %s</h1><hr><pre><a href=\"../\">../</a>\n%s</pre><hr>"
                    "</body></html>\n" % (html.escape(path), html.escape(path),
                                          "".join(names))).encode()
            count("listings")
            self.simple(200, body, [("Content-Type", "text/html")])

        def serve(self):
            count("requests")
            path = urllib.parse.unquote(self.path.split("?", 1)[0])
            local = os.path.normpath(os.path.join(root, path.lstrip("/")))
            if local != root and not local.startswith(root + "/"):
                self.simple(404, b"not found\n")
                return
            if path.endswith("/"):
                if os.path.isdir(local):
                    self.listing(local, path)
                else:
                    self.simple(404, b"not found\n")
                return
            if not os.path.isfile(local):
                self.simple(404, b"not found\n")
                return
            count("file_requests")
            st = os.stat(local)
            etag = etag_of(st)
            size = st.st_size
            with LOCK:
                STATE["n"] += 1
                n = STATE["n"]
                on = STATE["faults_on"]
            rng = random.Random("%d:%d" % (opts.seed, n))
            fault = None
            if on and rng.random() < opts.fault_rate:
                if self.command == "GET":
                    fault = rng.choices(KINDS, weights=WEIGHTS)[0]
                else:
                    fault = rng.choice(["503", "429", "hold"])
                count("faults", fault)
            if fault == "503":
                self.simple(503, b"<Error>SlowDown</Error>\n")
                return
            if fault == "429":
                self.simple(429, b"too many requests\n", [("Retry-After", str(rng.choice([0, 1])))])
                return
            if fault == "hold":
                time.sleep(rng.uniform(1, 2))
            im = self.headers.get("If-Match")
            if im and im.strip() != "*" and etag not in [t.strip() for t in im.split(",")]:
                count("status_412")
                self.simple(412, b"precondition failed\n")
                return
            extra = [("ETag", etag), ("Accept-Ranges", "bytes"),
                     ("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True)),
                     ("Content-Type", "image/tiff" if local.endswith(".tif") else
                      "application/octet-stream")]
            first, last, code = 0, size - 1, 200
            rh = self.headers.get("Range")
            if rh:
                m = re.fullmatch(r"bytes=(\d+)-(\d*)", rh.strip())
                if not m:
                    self.simple(416, b"", [("Content-Range", "bytes */%d" % size)])
                    return
                first = int(m.group(1))
                last = min(int(m.group(2)) if m.group(2) else size - 1, size - 1)
                if first >= size or last < first:
                    self.simple(416, b"", [("Content-Range", "bytes */%d" % size)])
                    return
                code = 206
                extra.append(("Content-Range", "bytes %d-%d/%d" % (first, last, size)))
            length = last - first + 1
            self.send_response(code)
            self.send_header("Content-Length", str(length))
            for k, v in extra:
                self.send_header(k, v)
            self.end_headers()
            if self.command == "HEAD":
                return
            with open(local, "rb") as fh:
                fh.seek(first)
                data = fh.read(length)
            if opts.corrupt and first <= size // 2 <= last:
                # the test's self-check: one wrong byte, mid-file, every time
                i = size // 2 - first
                data = data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1:]
            if fault == "cut":
                keep = rng.randrange(0, max(1, length))
                self.wfile.write(data[:keep])
                self.wfile.flush()
                count("bytes", n=keep)
                self.close_connection = True
                try:
                    if rng.random() < 0.5:  # a reset rather than a FIN
                        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                                   struct.pack("ii", 1, 0))
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return
            if fault == "stall":
                keep = rng.randrange(0, max(1, length))
                self.wfile.write(data[:keep])
                self.wfile.flush()
                time.sleep(rng.uniform(1, 3))
                self.wfile.write(data[keep:])
            elif fault == "slow":
                piece = max(1024, length // 50)
                for i in range(0, length, piece):
                    self.wfile.write(data[i:i + piece])
                    self.wfile.flush()
                    time.sleep(0.02)
            else:
                self.wfile.write(data)
            count("bytes", n=length)

        def handle_one_request(self):
            try:
                super().handle_one_request()
            except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
                count("client_gone")
                self.close_connection = True
            except socket.timeout:
                self.close_connection = True

        do_GET = do_HEAD = serve

    return Handler


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


def write_stats(path):
    with LOCK:
        text = json.dumps(STATS)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text + "\n")
    os.rename(tmp, path)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--root", required=True)
    p.add_argument("--port-file", required=True)
    p.add_argument("--stats", required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--fault-rate", type=float, default=0.2)
    p.add_argument("--corrupt", action="store_true")
    opts = p.parse_args()

    srv = Server(("127.0.0.1", 0), make_handler(opts))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    tmp = opts.port_file + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write("%d\n" % srv.server_address[1])
    os.rename(tmp, opts.port_file)

    def faults(on):
        with LOCK:
            STATE["faults_on"] = on

    def stop(*_):
        write_stats(opts.stats)
        os._exit(0)

    signal.signal(signal.SIGUSR1, lambda *_: faults(False))
    signal.signal(signal.SIGUSR2, lambda *_: faults(True))
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while True:
        write_stats(opts.stats)
        time.sleep(2)


if __name__ == "__main__":
    sys.exit(main())
