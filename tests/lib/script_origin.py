#!/usr/bin/python3
"""tests/lib/script_origin.py: a scripted HTTP origin for the claim tests.

    script_origin.py --root DIR --ctl CTLDIR --port-file FILE --log LOG

Serves the files under DIR on 127.0.0.1:<a free port> (written to FILE,
atomically, once it listens): GET with one Range (206) or none (200),
HEAD, an ETag and Last-Modified as nginx makes them ("MTIME-SIZE" in hex),
If-Match honoured (412 when it names another ETag); a GET of a path ending
in '/' answers nginx's autoindex page of that directory (the format
tilefs's http provider reads: link, date, exact size). Python 3 stdlib
only; a thread per connection, HTTP/1.1 keep-alive.

LOG gets one line per request once it has ended, in the format of
tests/lib/origin.bash's access log (so its awk helpers work on it):

    METHOD URI "RANGE" STATUS BODY_BYTES_SENT

("-" for no Range; BODY_BYTES_SENT is what was written before the end, so
a cut GET shows fewer bytes than its range). CTLDIR/events gets a line per
step: "begin ID METHOD URI RANGE", "hold ID RULE RANGE", "cut ID RULE",
"end ID STATUS BYTES", "gone ID" (the client went away).

Scripting: a rule is a file CTLDIR/NAME.rule of key=value lines, written
atomically (write elsewhere, rename). It applies to the GETs that match
all of its keys, in the order they come, COUNT of them (then it is spent):

    path=/big.bin     the URI (required)
    start=N           the Range starts at byte N
    covers=N          the Range (or the whole file, without one) holds byte N
    count=N           how many matching GETs it takes (default 1; -1: all of
                      them, each held while NAME.hold exists)
    send=N            the body bytes before file offset N go out at once
                      (default: none of them; headers always go first)
    drip_ms=N         while held, one more body byte every N ms (default
                      250: above curl's 1 byte/s stall check; 0: none)

A GET it takes appends its Range to CTLDIR/NAME.hits (one line each: wait
for that file to learn the GET is held), sends the bytes before `send`,
then holds while CTLDIR/NAME.hold exists (create it before the rule; the
rule is armed by its .rule file). Once NAME.hold is gone: if CTLDIR/NAME.cut
exists, the connection is cut there (the client sees a short body: its
Content-Length announced the whole range), else the rest of the body goes
out. Either way a line goes to CTLDIR/NAME.done ("sent RANGE", "cut RANGE",
or "gone" when the client went away first). A rule file's taken count
is kept in memory by the file's identity (inode and mtime): rewriting it
re-arms it.
"""

import argparse
import email.utils
import html
import http.server
import os
import re
import socket
import sys
import threading
import time
import urllib.parse

LOCK = threading.Lock()
TAKEN = {}          # rule name -> (identity, taken)
NEXT_ID = [0]


def append(path, line):
    with LOCK, open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")


def read_rule(path):
    rule = {}
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line or line.startswith("#") or "=" not in line:
                    continue
                k, v = line.split("=", 1)
                rule[k.strip()] = v.strip()
    except OSError:
        return None
    return rule


def take_rule(ctl, uri, first, last):
    """The name and rule of the first armed rule that takes this GET (its
    count consumed), or (None, None)."""
    try:
        names = sorted(n[:-5] for n in os.listdir(ctl) if n.endswith(".rule"))
    except OSError:
        return None, None
    for name in names:
        path = os.path.join(ctl, name + ".rule")
        try:
            st = os.stat(path)
        except OSError:
            continue
        rule = read_rule(path)
        if not rule or rule.get("path") != uri:
            continue
        if "start" in rule and int(rule["start"]) != first:
            continue
        if "covers" in rule and not first <= int(rule["covers"]) <= last:
            continue
        count = int(rule.get("count", "1"))
        ident = (st.st_ino, st.st_mtime_ns)
        with LOCK:
            old_ident, taken = TAKEN.get(name, (None, 0))
            if old_ident != ident:
                taken = 0
            if count >= 0 and taken >= count:
                continue
            TAKEN[name] = (ident, taken + 1)
        return name, rule
    return None, None


def listing(dirpath, uri):
    lines = ['<html>\r\n<head><title>Index of %s</title></head>\r\n<body>\r\n'
             '<h1>Index of %s</h1><hr><pre><a href="../">../</a>\r\n'
             % (html.escape(uri), html.escape(uri))]
    for name in sorted(os.listdir(dirpath)):
        full = os.path.join(dirpath, name)
        st = os.stat(full)
        when = time.strftime("%d-%b-%Y %H:%M", time.gmtime(st.st_mtime))
        if os.path.isdir(full):
            name += "/"
            size = "-"
        else:
            size = str(st.st_size)
        href = urllib.parse.quote(name)
        lines.append('<a href="%s">%s</a>%s %s %20s\r\n'
                     % (href, html.escape(name), " " * max(1, 51 - len(name)), when, size))
    lines.append("</pre><hr></body>\r\n</html>\r\n")
    return "".join(lines).encode()


def make_handler(opts):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            pass

        def event(self, text):
            append(os.path.join(opts.ctl, "events"), text)

        def finish_log(self, code, sent):
            rng = self.headers.get("Range") or "-"
            append(opts.log, '%s %s "%s" %d %d' % (self.command, self.uri, rng, code, sent))
            self.event("end %d %d %d" % (self.id, code, sent))

        def send_simple(self, code, body, extra=()):
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            for k, v in extra:
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
            self.finish_log(code, 0 if self.command == "HEAD" else len(body))

        def serve(self):
            with LOCK:
                NEXT_ID[0] += 1
                self.id = NEXT_ID[0]
            self.uri = urllib.parse.unquote(self.path.split("?", 1)[0])
            self.event("begin %d %s %s %s" % (self.id, self.command, self.uri,
                                              self.headers.get("Range") or "-"))
            local = os.path.normpath(os.path.join(opts.root, self.uri.lstrip("/")))
            if local != opts.root and not local.startswith(opts.root + os.sep):
                self.send_simple(404, b"not found\n")
                return
            if self.uri.endswith("/"):
                if not os.path.isdir(local):
                    self.send_simple(404, b"not found\n")
                    return
                self.send_simple(200, listing(local, self.uri),
                                 [("Content-Type", "text/html")])
                return
            if not os.path.isfile(local):
                self.send_simple(404, b"not found\n")
                return
            st = os.stat(local)
            size = st.st_size
            etag = '"%x-%x"' % (int(st.st_mtime), size)
            modified = email.utils.formatdate(st.st_mtime, usegmt=True)
            base = [("ETag", etag), ("Last-Modified", modified), ("Accept-Ranges", "bytes")]
            match = self.headers.get("If-Match")
            if match and match.strip() != "*" and etag not in [m.strip() for m in match.split(",")]:
                self.send_simple(412, b"precondition failed\n")
                return
            first, last, code = 0, size - 1, 200
            m = re.match(r"bytes=(\d+)-(\d*)$", self.headers.get("Range", ""))
            if m:
                first = int(m.group(1))
                last = min(int(m.group(2) or size - 1), size - 1)
                if first >= size or last < first:
                    self.send_simple(416, b"", [("Content-Range", "bytes */%d" % size)])
                    return
                code = 206
                base.append(("Content-Range", "bytes %d-%d/%d" % (first, last, size)))
            self.send_response(code)
            self.send_header("Content-Length", str(last - first + 1))
            self.send_header("Content-Type", "application/octet-stream")
            for k, v in base:
                self.send_header(k, v)
            self.end_headers()
            if self.command == "HEAD":
                self.finish_log(code, 0)
                return
            name, rule = take_rule(opts.ctl, self.uri, first, last) if self.command == "GET" \
                else (None, None)
            sent = 0
            with open(local, "rb") as f:
                try:
                    pos = first
                    if name:
                        send = int(rule.get("send", str(first)))
                        send = max(first, min(send, last + 1))
                        pos = self.copy(f, pos, send)
                        sent = pos - first
                        rng = self.headers.get("Range") or "-"
                        append(os.path.join(opts.ctl, name + ".hits"), rng)
                        self.event("hold %d %s %s" % (self.id, name, rng))
                        drip = int(rule.get("drip_ms", "250")) / 1000.0
                        hold = os.path.join(opts.ctl, name + ".hold")
                        next_drip = time.monotonic() + drip
                        while os.path.exists(hold):
                            time.sleep(0.05)
                            if drip > 0 and pos <= last and time.monotonic() >= next_drip:
                                pos = self.copy(f, pos, pos + 1)
                                sent = pos - first
                                next_drip = time.monotonic() + drip
                        if os.path.exists(os.path.join(opts.ctl, name + ".cut")):
                            self.event("cut %d %s" % (self.id, name))
                            append(os.path.join(opts.ctl, name + ".done"), "cut %s" % rng)
                            self.finish_log(code, sent)
                            self.cut()
                            return
                        append(os.path.join(opts.ctl, name + ".done"), "sent %s" % rng)
                    pos = self.copy(f, pos, last + 1)
                    sent = pos - first
                except (BrokenPipeError, ConnectionResetError, socket.timeout, OSError):
                    self.event("gone %d" % self.id)
                    if name:
                        append(os.path.join(opts.ctl, name + ".done"), "gone")
                    self.finish_log(code, sent)
                    self.close_connection = True
                    return
            self.finish_log(code, sent)

        def copy(self, f, pos, end):
            """Write the file's bytes [pos, end) to the client; returns end."""
            f.seek(pos)
            while pos < end:
                chunk = f.read(min(65536, end - pos))
                if not chunk:
                    break
                self.wfile.write(chunk)
                pos += len(chunk)
            self.wfile.flush()
            return pos

        def cut(self):
            self.close_connection = True
            try:
                self.wfile.flush()
            except OSError:
                pass
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

        do_GET = do_HEAD = serve

    return Handler


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--root", required=True)
    p.add_argument("--ctl", required=True)
    p.add_argument("--port-file", required=True)
    p.add_argument("--log", required=True)
    opts = p.parse_args()
    opts.root = os.path.abspath(opts.root)
    os.makedirs(opts.ctl, exist_ok=True)
    open(opts.log, "a").close()
    srv = Server(("127.0.0.1", 0), make_handler(opts))
    tmp = opts.port_file + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(tmp, opts.port_file)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
