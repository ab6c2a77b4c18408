"""The bench's origin: nginx on 127.0.0.1 with a first-byte delay and a
rate limit per request, over http or https (a CA made at start), and what
its access log says of a phase. Used by bench.py, warm.py, million.py and
the workloads in their own modules (throughput.py, tilebytes.py)."""
import os
import re
import signal
import subprocess
import sys
import time

from procfs import pid_alive, proc_stats

NGINX = "/usr/sbin/nginx"
MODDIR = "/usr/lib/nginx/modules"


def make_tls(d):
    """A throwaway CA and a server certificate for 127.0.0.1 in directory D
    (as tests/lib/origin.bash's _origin_make_tls): returns the CA's PEM."""
    os.makedirs(d, exist_ok=True)
    ext = os.path.join(d, "server.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
                "keyUsage=digitalSignature,keyEncipherment\n"
                "extendedKeyUsage=serverAuth\n")
    steps = [
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-subj", "/CN=tilefs bench CA",
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign",
         "-keyout", "ca.key", "-out", "ca.pem"],
        ["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
         "-keyout", "server.key", "-out", "server.csr"],
        ["openssl", "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
         "-CAcreateserial", "-days", "2", "-extfile", "server.ext", "-out", "server.pem"],
    ]
    for cmd in steps:
        r = subprocess.run(cmd, cwd=d, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("%s failed:\n%s" % (" ".join(cmd[:3]), r.stderr))
    return os.path.join(d, "ca.pem")


class Origin:
    """nginx serving ROOT on 127.0.0.1: DELAY_MS before the first byte of
    every request (0: none) and RATE per request (nginx's limit_rate; "0":
    none). With tls, https with a certificate for 127.0.0.1 from a CA made
    at start (self.ca, PEM), as tests/lib/origin.bash --tls makes its own;
    clients are given the CA, never told to skip verification. Its files
    (nginx.conf, logs, tls/) go to SCRATCH/NAME."""

    def __init__(self, root, delay_ms, rate, scratch, tls=False, name="nginx"):
        self.root, self.delay_ms, self.rate, self.tls = root, delay_ms, rate, tls
        self.dir = os.path.join(scratch, name)
        self.pid = None
        self.ca = None
        self.scheme = "https" if tls else "http"

    def curl_config(self):
        """What curl needs to trust this origin, as a line of a curl -K
        file: every block between two "next" lines needs its own, since
        `next` resets it (--cacert on the command line reaches only the
        first transfer)."""
        return 'cacert = "%s"\n' % self.ca if self.ca else ""

    def tilefs_args(self):
        """What tilefs mount and tilefs warm need to trust this origin."""
        return ["--ca-file", self.ca] if self.ca else []

    def rclone_args(self):
        return ["--ca-cert", self.ca] if self.ca else []

    def gdal_env(self):
        """What GDAL's /vsicurl/ needs to trust this origin. GDAL 3.6 takes the
        CA bundle from GDAL_CURL_CA_BUNDLE, CURL_CA_BUNDLE and SSL_CERT_FILE,
        but the last of them that is set wins (CPLHTTPGetOptionsFromEnv() in
        port/cpl_http.cpp), so an SSL_CERT_FILE in the environment would
        override the first: all three are set."""
        if not self.ca:
            return {}
        return {k: self.ca for k in ("GDAL_CURL_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE")}

    def start(self):
        d = self.dir
        os.makedirs(os.path.join(d, "tmp"), exist_ok=True)
        ssl = ""
        if self.tls:
            self.ca = make_tls(os.path.join(d, "tls"))
            ssl = ("ssl_certificate %(t)s/server.pem;\n        ssl_certificate_key "
                   "%(t)s/server.key;" % {"t": os.path.join(d, "tls")})
        # the first-byte delay of every request, listings included
        delay = ("access_by_lua_block { ngx.sleep(%.3f) }" % (self.delay_ms / 1000.0)
                 if self.delay_ms else "")
        for attempt in range(8):
            port = free_port()
            conf = NGINX_CONF % dict(mod=MODDIR, d=d, port=port, root=self.root,
                                     rate=self.rate, delay=delay, ssl=ssl,
                                     listen_ssl=" ssl" if self.tls else "")
            with open(os.path.join(d, "nginx.conf"), "w") as f:
                f.write(conf)
            open(os.path.join(d, "access.log"), "w").close()
            r = subprocess.run([NGINX, "-p", d, "-c", os.path.join(d, "nginx.conf"),
                                "-e", os.path.join(d, "error.log")],
                               capture_output=True, text=True)
            if r.returncode == 0:
                break
            if "Address already in use" not in r.stderr or attempt == 7:
                raise RuntimeError("nginx failed to start:\n" + r.stderr)
        self.url = "%s://127.0.0.1:%d/" % (self.scheme, port)
        self.log = os.path.join(d, "access.log")
        import ssl as ssl_mod
        import urllib.request
        tls = ssl_mod.create_default_context(cafile=self.ca) if self.ca else None
        for _ in range(100):
            try:
                urllib.request.urlopen(self.url, timeout=5, context=tls).read()
                with open(os.path.join(d, "nginx.pid")) as f:
                    self.pid = int(f.read().strip())
                # nginx logs after the response: wait for that line, so it
                # does not land in the first phase
                for _ in range(100):
                    if self.offset() > 0:
                        break
                    time.sleep(0.02)
                return
            except Exception:
                time.sleep(0.1)
        raise RuntimeError("nginx does not answer on " + self.url)

    def offset(self):
        return os.path.getsize(self.log)

    def since(self, off, save=None):
        """The requests logged since offset, as {"requests": count, "bytes":
        body bytes, "methods": {method: count}, "data_gets": count,
        "data_bytes": their body bytes, "again": bytes of data GETs that an
        earlier one of the same file since offset had fetched}. A data GET
        is a GET of a file (not a listing)
        answered 200 or 206; the rest are listings, HEADs and probes for
        names that do not exist. With save, those log lines are also copied
        to that file."""
        t = {"requests": 0, "bytes": 0, "methods": {}, "data_gets": 0, "data_bytes": 0,
             "again": 0}
        got = {}    # uri: [[start, end), ...], merged and sorted
        with open(self.log, "rb") as f:
            f.seek(off)
            lines = f.readlines()
        if save:
            with open(save, "wb") as out:
                out.writelines(lines)
        for line in lines:
            # $request_method $uri "$http_range" $status $body_bytes_sent
            parts = line.decode("latin-1").split()
            if len(parts) < 5:
                continue
            method, uri, status = parts[0], parts[1], parts[-2]
            t["requests"] += 1
            t["methods"][method] = t["methods"].get(method, 0) + 1
            try:
                n = int(parts[-1])
            except ValueError:
                n = 0
            t["bytes"] += n
            if method == "GET" and not uri.endswith("/") and status in ("200", "206"):
                t["data_gets"] += 1
                t["data_bytes"] += n
                m = re.search(r'"bytes=(\d+)-', line.decode("latin-1"))
                start = int(m.group(1)) if m and status == "206" else 0
                t["again"] += covered(got.setdefault(uri, []), start, start + n)
        return t

    def cpu(self):
        """CPU seconds of nginx's master and workers so far."""
        if not self.pid:
            return 0.0
        pids = [self.pid]
        try:
            with open("/proc/%d/task/%d/children" % (self.pid, self.pid)) as f:
                pids += [int(x) for x in f.read().split()]
        except OSError:
            pass
        return sum((proc_stats(p) or (0.0, 0))[0] for p in pids)

    def stop(self):
        if not self.pid:
            return
        try:
            os.kill(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            self.pid = None
            return
        for _ in range(100):
            if not pid_alive(self.pid):
                break
            time.sleep(0.05)
        else:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.pid = None


NGINX_CONF = r"""load_module %(mod)s/ndk_http_module.so;
load_module %(mod)s/ngx_http_lua_module.so;
user root root;
worker_processes 1;
pid %(d)s/nginx.pid;
error_log %(d)s/error.log warn;
events { worker_connections 4096; }
http {
    client_body_temp_path %(d)s/tmp/body;
    proxy_temp_path %(d)s/tmp/proxy;
    fastcgi_temp_path %(d)s/tmp/fastcgi;
    uwsgi_temp_path %(d)s/tmp/uwsgi;
    scgi_temp_path %(d)s/tmp/scgi;
    default_type application/octet-stream;
    types { text/html html; image/tiff tif tiff; }
    log_format bench '$request_method $uri "$http_range" $status $body_bytes_sent';
    access_log %(d)s/access.log bench;
    keepalive_timeout 120;
    keepalive_requests 1000000;
    sendfile off;
    server {
        listen 127.0.0.1:%(port)d%(listen_ssl)s backlog=4096;
        %(ssl)s
        server_name localhost;
        root %(root)s;
        autoindex on;
        autoindex_exact_size on;
        autoindex_format html;
        # per request, which on a keep-alive connection is per connection
        limit_rate %(rate)s;
        location / {
            %(delay)s
        }
    }
}
"""


def covered(spans, a, b):
    """How much of [a, b) SPANS (merged, sorted [start, end) pairs) holds;
    then adds [a, b) to SPANS."""
    held = sum(max(0, min(b, e) - max(a, s)) for s, e in spans)
    keep = [(s, e) for s, e in spans if e < a or s > b]
    joined = [(s, e) for s, e in spans if not (e < a or s > b)]
    lo = min([a] + [s for s, _ in joined])
    hi = max([b] + [e for _, e in joined])
    spans[:] = sorted(keep + [(lo, hi)])
    return held


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class S3Store:
    """tests/lib/sigv4_store.py serving ROOT as bucket eo on 127.0.0.1 (an S3
    store that checks Signature V4, ListObjectsV2 pages of 1,000 keys),
    DELAY_MS before each answer; as Origin for a contestant: url,
    tilefs_args(), offset(), since(). Its keys are environment()'s. With
    SYNTH ("GROUPS,PATCHES,SIZE"), ROOT is not read: the store makes up its
    tree (sigv4_store.py's SIGV4_SYNTH)."""

    def __init__(self, root, delay_ms, scratch, synth=None):
        self.root, self.delay_ms, self.synth = root, delay_ms, synth
        self.log = os.path.join(scratch, "sigv4_store.log")
        self.url = "s3://eo"
        self.proc = None
        self.port = 0

    def start(self):
        open(self.log, "w").close()
        env = dict(os.environ, SIGV4_DELAY_MS=str(self.delay_ms))
        if self.synth:
            env["SIGV4_SYNTH"] = self.synth
        lib = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib")
        self.proc = subprocess.Popen([sys.executable, os.path.join(lib, "sigv4_store.py"),
                                      self.root, self.log], stdout=subprocess.PIPE, env=env,
                                     text=True)
        self.port = int(self.proc.stdout.readline())

    def stop(self):
        if self.proc:
            self.proc.terminate()
            self.proc.wait()
            self.proc = None

    @staticmethod
    def environment():
        """The variables a client of the store needs: its keys, and no
        instance metadata asked for."""
        return {"AWS_ACCESS_KEY_ID": "S3RVER", "AWS_SECRET_ACCESS_KEY": "S3RVER",
                "AWS_EC2_METADATA_DISABLED": "true"}

    def tilefs_args(self):
        return ["--endpoint", "http://127.0.0.1:%d" % self.port]

    def cpu(self):
        """CPU seconds of the store so far."""
        return (proc_stats(self.proc.pid) or (0.0, 0))[0] if self.proc else 0.0

    def offset(self):
        return os.path.getsize(self.log)

    def since(self, off, save=None):
        """As Origin.since(), from the store's log (METHOD PATH "RANGE"
        STATUS BYTES HOST KEY): listings are GETs of the bucket itself."""
        t = {"requests": 0, "bytes": 0, "methods": {}, "data_gets": 0, "data_bytes": 0,
             "again": 0, "listings": 0}
        with open(self.log) as f:
            f.seek(off)
            lines = f.read().splitlines()
        if save:
            with open(save, "w") as out:
                out.write("\n".join(lines) + "\n")
        for line in lines:
            parts = line.split()
            if len(parts) < 7:
                continue
            method, path, status, n = parts[0], parts[1], parts[-4], int(parts[-3])
            t["requests"] += 1
            t["methods"][method] = t["methods"].get(method, 0) + 1
            t["bytes"] += n
            if method == "GET" and path in ("/eo", "/eo/"):
                t["listings"] += 1
            elif method == "GET" and status in ("200", "206"):
                t["data_gets"] += 1
                t["data_bytes"] += n
        return t
