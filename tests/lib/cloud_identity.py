#!/usr/bin/python3
"""cloud_identity.py: stand-ins, on 127.0.0.1, for the identity endpoints
that hand bearer tokens to a VM or a pod, and for a Google Cloud Storage
XML-API data plane that accepts only the tokens they handed out and only
while those hold, and lets each token do what its principal may. For
tests: no real server here plays these parts.

  Azure IMDS     GET /metadata/identity/oauth2/token?api-version=2018-02-01
                 &resource=https://storage.azure.com/[&client_id=ID]
                 with "Metadata: true" (else 400, as IMDS answers); with
                 --client-id given, ID must be one of them (else 400
                 "Identity not found"), and without client_id the VM's
                 own identity, "system", answers. The token is an
                 unsigned JWT (alg "none") with the aud, iss, iat, nbf and
                 exp Azurite's --oauth basic checks, and the principal's
                 claims: tid (a fixed test tenant, also in iss), oid (a
                 uuid5 of the client id, or of "system": the same at every
                 token; --oid-of prints it), appid (the client id, or
                 "system"), uti (random, so no two tokens are alike); the
                 answer's expires_in and expires_on are strings of digits,
                 as IMDS gives them, and client_id is ID or "system".
  App Service    GET /msi/token?api-version=2019-08-01&resource=...
                 with "X-IDENTITY-HEADER: --identity-header" (else 401);
                 the client_id and the token as IMDS's.
  Azure Arc      GET /arc/token?api-version=2019-11-01&resource=... with
                 "Metadata: true" (else 400): without Authorization, 401
                 with "WWW-Authenticate: Basic realm=--arc-key-file", a
                 new random key written to that file (0600) first, as the
                 agent does at each challenge; with "Authorization: Basic
                 KEY", the last key written, the token (IMDS's shape, the
                 principal "system"; else 401 again).
  Entra ID       POST /TENANT/oauth2/v2.0/token, a form of client_id (must
                 be one of the --client-id when given), scope
                 https://storage.azure.com/.default, grant_type
                 client_credentials and client_secret (must be the
                 --client-secret paired with that --client-id, the i-th with
                 the i-th; the first --client-secret without --client-id) or
                 client_assertion_type ...jwt-bearer and
                 client_assertion (must be what --assertion-file holds at
                 that moment, read at each request); else 400/401 with an
                 Entra-shaped error. expires_in a number. The token's
                 claims as IMDS's, but tid is TENANT (as in the path) and
                 the principal the form's client_id.
  Google OAuth2  POST /token, a form of grant_type refresh_token with
                 client_id, client_secret, refresh_token (client_id one of
                 the --client-id, client_secret the --client-secret paired
                 with it, refresh_token --refresh-token): a token of the
                 principal client_id; or grant_type
                 urn:ietf:params:oauth:grant-type:jwt-bearer with an
                 assertion: a JWT signed RS256 whose iss is one of the
                 --sa-email, checked with openssl against the
                 --sa-public-key paired with it (the i-th with the i-th),
                 aud this endpoint's URL, scope devstorage.read_only,
                 lifetime at most an hour: a token of the principal iss;
                 else 400 invalid_grant. Answers a GCE-style token (the
                 data plane takes it).
  GCE metadata   GET /computeMetadata/v1/instance/service-accounts/default/token
                 with "Metadata-Flavor: Google" (else 403); answers
                 {"access_token", "expires_in" (a number), "token_type"},
                 a token of the default account: the first --sa-email, or
                 123456789012-compute@developer.gserviceaccount.com.
                 GET .../service-accounts/default/email, the same header
                 (else 403): that account's email, plain text (Content-Type
                 application/text, no newline), as GCE answers.
  GCS data plane GET and HEAD /BUCKET/KEY (Range honoured) and GET
                 /BUCKET?prefix=&delimiter=/&marker=&max-keys= (ListBucketResult:
                 any prefix; without the delimiter every key below it;
                 pages of max-keys, NextMarker when more follow),
                 serving the files under --gcs-root DIR/BUCKET/; any other
                 Authorization than a current token of ours: 401
                 AuthenticationRequired (an XML error body, as GCS does).
                 A token whose principal is a --list-only one may list, but
                 a GET or HEAD of /BUCKET/KEY answers 403 AccessDenied (the
                 XML error GCS gives for a missing storage.objects.get,
                 whether KEY exists or not).

GCE tokens are "ya29.NONCE.EXP.PRINCIPAL.MAC", PRINCIPAL the base64url
of the email or client id the token was handed to, MAC an HMAC of
NONCE.EXP.PRINCIPAL under --secret: two instances with the same secret (a
metadata server over http and a data plane over https, --tls-cert and
--tls-key) accept each other's, and the data plane knows whose they are.
Tokens are announced to live --lifetime seconds (expires_in) but hold at
the data plane (and in the JWT's exp) only --valid seconds (default: the
same): a shorter --valid plays a token revoked or expired early.
Left out: every other metadata path (service-accounts/ACCOUNT/ other
than default, ?recursive=true, aliases), scopes, audiences other than
storage, Azure Arc's client_id (Arc refuses it), IMDS's object_id and
msi_res_id selectors (400), the JSON API, pagination of listings, IAM
conditions and any permission but "may read" and "may only list" (a
--list-only authorized user is every user of that client id).

Usage: cloud_identity.py --port-file F [--port P] [--lifetime S] [--valid S]
        [--client-id ID [--client-secret S]]... [--identity-header H]
        [--arc-key-file F] [--gcs-root DIR] [--secret S]
        [--tls-cert PEM --tls-key PEM] [--assertion-file F]
        [--refresh-token T] [--sa-email E [--sa-public-key PEM]]...
        [--list-only EMAIL_OR_CLIENT_ID]...
       cloud_identity.py --oid-of NAME    (the oid of Azure principal NAME)
Writes the port it listens on into F once it listens. One line per
request on stdout: "METHOD PATH STATUS", then " PRINCIPAL" for a data
plane request that carried a current token ("TOKEN KIND N" for
each token handed out, N counting from 1; "PRESENTED assertion sha256:HEX"
for each client assertion received, HEX the first 16 hex digits of its
SHA-256, so a test can tell which content of a rotated token file was sent);
never a token.
"""
import argparse
import base64
import email.utils
import hashlib
import http.server
import json
import os
import hmac
import secrets
import shutil
import subprocess
import tempfile
import ssl
import sys
import threading
import time
import urllib.parse
import uuid
from xml.sax.saxutils import escape

ARGS = None
LOCK = threading.Lock()
ISSUED = {}          # token -> (time it stops holding, principal)
# Azure: the tenant of managed identities' tokens, and the namespace of
# the oids (uuid5) of principals
TEST_TENANT = "7e5a11e5-0000-4000-8000-00000000a2e0"
OID_NAMESPACE = uuid.UUID("0d5e6a1f-7b3c-4e2a-9f1d-7111ef5a2e01")
# GCE: the metadata server's default account when --sa-email is not given
DEFAULT_SA = "123456789012-compute@developer.gserviceaccount.com"
COUNT = {"n": 0}


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def principal_oid(name):
    """The object id of the Azure principal NAME (a client id, or "system"
    for the VM's own identity): the same name, the same oid, at every
    token, in every instance."""
    return str(uuid.uuid5(OID_NAMESPACE, name))


def mint(kind, principal, tenant=TEST_TENANT):
    """A token for PRINCIPAL (a GCS token: a service account's email or an
    OAuth client id; an Azure token: a client id, or "system")."""
    now = int(time.time())
    valid = ARGS.valid if ARGS.valid is not None else ARGS.lifetime
    if kind.startswith("g"):    # gce, google-*: GCE-style tokens
        text = "%s.%d.%s" % (secrets.token_hex(16), now + valid, b64url(principal.encode()))
        mac = hmac.new(ARGS.secret.encode(), text.encode(), hashlib.sha256).hexdigest()
        token = "ya29.%s.%s" % (text, mac)
    else:
        head = b64url(json.dumps({"typ": "JWT", "alg": "none"}).encode())
        body = b64url(json.dumps({
            "aud": "https://storage.azure.com", "iss": "https://sts.windows.net/%s/" % tenant,
            "iat": now, "nbf": now - 1, "exp": now + valid,
            "tid": tenant, "oid": principal_oid(principal), "appid": principal,
            "uti": secrets.token_hex(8)}).encode())
        token = head + "." + body + "."
    with LOCK:
        ISSUED[token] = (now + valid, principal)
        COUNT["n"] += 1
        n = COUNT["n"]
    print("TOKEN %s %d" % (kind, n), flush=True)
    return token, now


def token_principal(header):
    """The principal of a current token of ours in the Authorization
    HEADER, else None."""
    if not header or not header.startswith("Bearer "):
        return None
    parts = header[7:].split(".")
    if len(parts) == 5 and parts[0] == "ya29":
        text = ".".join(parts[1:4])
        mac = hmac.new(ARGS.secret.encode(), text.encode(), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(mac, parts[4]) or time.time() >= int(parts[2]):
            return None
        try:
            return base64.urlsafe_b64decode(parts[3] + "=" * (-len(parts[3]) % 4)).decode()
        except ValueError:
            return None
    with LOCK:
        until, principal = ISSUED.get(header[7:], (None, None))
    return principal if until is not None and time.time() < until else None


def paired(names, values, name):
    """The value of --VALUES paired with NAME in --NAMES (the i-th with the
    i-th); None when NAME is not there or has none."""
    if name not in (names or []):
        return None
    i = names.index(name)
    return values[i] if i < len(values or []) else None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def reply(self, status, body=b"", headers=(), ctype="application/json"):
        # logged before it is sent: a client acting on the answer (a
        # challenge's key file, say) finds its line written already
        path = urllib.parse.urlsplit(self.path).path
        who = getattr(self, "who", None)
        print("%s %s %d%s" % (self.command, path, status, " " + who if who else ""),
              flush=True)
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def azure_token(self, q, kind):
        if q.get("resource") != ["https://storage.azure.com/"]:
            return self.reply(400, b'{"error":"invalid_resource"}')
        client = q.get("client_id", [None])[0]
        if ARGS.client_id and client not in ARGS.client_id:
            return self.reply(400, b'{"error":"invalid_request","error_description":'
                              b'"Identity not found"}')
        token, now = mint(kind, client or "system")
        self.reply(200, json.dumps({
            "access_token": token, "client_id": client or "system",
            "expires_in": str(ARGS.lifetime), "expires_on": str(now + ARGS.lifetime),
            "ext_expires_in": str(ARGS.lifetime), "not_before": str(now),
            "resource": "https://storage.azure.com/", "token_type": "Bearer"}).encode())

    def arc_token(self, q):
        global ARC_KEY
        if self.headers.get("Metadata") != "true" or q.get("api-version") != ["2019-11-01"]:
            return self.reply(400, b'{"error":"invalid_request"}')
        given = self.headers.get("Authorization")
        if ARC_KEY and given == "Basic " + ARC_KEY:
            ARC_KEY = None     # a key answers one challenge
            return self.azure_token(q, "arc")
        ARC_KEY = secrets.token_hex(32)
        fd = os.open(ARGS.arc_key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, ARC_KEY.encode())
        os.close(fd)
        return self.reply(401, b'{"error":"unauthorized"}',
                          headers=[("WWW-Authenticate", "Basic realm=" + ARGS.arc_key_file)])

    def do_GET(self):
        self.who = None
        url = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(url.query)
        if url.path == "/metadata/identity/oauth2/token":
            if self.headers.get("Metadata") != "true":
                return self.reply(400, b'{"error":"invalid_request","error_description":'
                                  b'"Required metadata header not specified"}')
            return self.azure_token(q, "azure")
        if url.path == "/msi/token":
            if not ARGS.identity_header or \
                    self.headers.get("X-IDENTITY-HEADER") != ARGS.identity_header:
                return self.reply(401, b'{"error":"unauthorized"}')
            return self.azure_token(q, "appservice")
        if url.path == "/arc/token":
            return self.arc_token(q)
        if url.path == "/computeMetadata/v1/instance/service-accounts/default/token":
            if self.headers.get("Metadata-Flavor") != "Google":
                return self.reply(403, b"Missing Metadata-Flavor:Google header.",
                                  ctype="text/html")
            token, _ = mint("gce", default_sa())
            return self.reply(200, json.dumps({"access_token": token,
                                               "expires_in": ARGS.lifetime,
                                               "token_type": "Bearer"}).encode())
        if url.path == "/computeMetadata/v1/instance/service-accounts/default/email":
            if self.headers.get("Metadata-Flavor") != "Google":
                return self.reply(403, b"Missing Metadata-Flavor:Google header.",
                                  ctype="text/html")
            return self.reply(200, default_sa().encode(), ctype="application/text")
        if ARGS.gcs_root:
            return self.gcs(url, q)
        self.reply(404)

    do_HEAD = do_GET

    def do_POST(self):
        self.who = None
        url = urllib.parse.urlsplit(self.path)
        parts = url.path.strip("/").split("/")
        n = int(self.headers.get("Content-Length", "0"))
        form = urllib.parse.parse_qs(self.rfile.read(n).decode()) if 0 < n < 65536 else {}
        one = lambda k: form.get(k, [None])[0]
        if url.path == "/token":
            return self.google_token(one)
        if len(parts) != 4 or parts[1:] != ["oauth2", "v2.0", "token"]:
            return self.reply(404)
        bad = lambda code, why: self.reply(code, json.dumps(
            {"error": why, "error_description": "AADSTS: " + why}).encode())
        if one("grant_type") != "client_credentials" or \
                one("scope") != "https://storage.azure.com/.default":
            return bad(400, "invalid_request")
        if ARGS.client_id and one("client_id") not in ARGS.client_id:
            return bad(400, "unauthorized_client")
        if one("client_secret") is not None:
            want = paired(ARGS.client_id, ARGS.client_secret, one("client_id")) \
                if ARGS.client_id else (ARGS.client_secret or [None])[0]
            if not want or one("client_secret") != want:
                return bad(401, "invalid_client")
            kind = "entra-secret"
        elif one("client_assertion_type") == \
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer":
            print("PRESENTED assertion sha256:%s" % hashlib.sha256(
                (one("client_assertion") or "").encode()).hexdigest()[:16], flush=True)
            try:
                with open(ARGS.assertion_file) as f:
                    current = f.read().strip()
            except (OSError, TypeError):
                current = None
            if not current or one("client_assertion") != current:
                return bad(401, "invalid_client")
            kind = "entra-workload"
        else:
            return bad(400, "invalid_request")
        token, _ = mint(kind, one("client_id") or "", tenant=parts[0])
        self.reply(200, json.dumps({"token_type": "Bearer", "expires_in": ARGS.lifetime,
                                    "ext_expires_in": ARGS.lifetime,
                                    "access_token": token}).encode())

    def google_token(self, one):
        bad = lambda: self.reply(400, b'{"error":"invalid_grant"}')
        if one("grant_type") == "refresh_token":
            want = paired(ARGS.client_id, ARGS.client_secret, one("client_id"))
            if not ARGS.refresh_token or one("refresh_token") != ARGS.refresh_token or \
                    not want or one("client_secret") != want:
                return bad()
            kind, principal = "google-refresh", one("client_id")
        elif one("grant_type") == "urn:ietf:params:oauth:grant-type:jwt-bearer":
            principal = self.jwt_signer(one("assertion") or "")
            if not principal:
                return bad()
            kind = "google-jwt"
        else:
            return bad()
        token, _ = mint(kind, principal)
        self.reply(200, json.dumps({"access_token": token, "expires_in": ARGS.lifetime,
                                    "token_type": "Bearer"}).encode())

    def jwt_signer(self, jwt):
        """The service account (an --sa-email) whose key (its --sa-public-key)
        signed the assertion JWT, the claims valid; else None."""
        parts = jwt.split(".")
        if len(parts) != 3:
            return None
        unb64 = lambda t: base64.urlsafe_b64decode(t + "=" * (-len(t) % 4))
        try:
            head, claims, sig = json.loads(unb64(parts[0])), json.loads(unb64(parts[1])), \
                unb64(parts[2])
        except ValueError:
            return None
        if not isinstance(claims, dict) or not isinstance(head, dict):
            return None
        email_ = claims.get("iss")
        key = paired(ARGS.sa_email, ARGS.sa_public_key, email_)
        if not key:
            return None
        d = tempfile.mkdtemp()
        try:
            with open(d + "/data", "w") as f:
                f.write(parts[0] + "." + parts[1])
            with open(d + "/sig", "wb") as f:
                f.write(sig)
            ok = subprocess.run(["openssl", "dgst", "-sha256", "-verify", key,
                                 "-signature", d + "/sig", d + "/data"],
                                capture_output=True).returncode == 0
        finally:
            shutil.rmtree(d)
        me = "http://%s/token" % self.headers.get("Host")
        valid = ok and head.get("alg") == "RS256" and claims.get("aud") == me and \
            claims.get("scope") == "https://www.googleapis.com/auth/devstorage.read_only" and \
            0 < claims.get("exp", 0) - claims.get("iat", 0) <= 3600
        return email_ if valid else None

    def gcs(self, url, q):
        self.who = token_principal(self.headers.get("Authorization"))
        if not self.who:
            return self.reply(401, b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>"
                              b"AuthenticationRequired</Code><Message>Authentication "
                              b"required.</Message></Error>", ctype="application/xml")
        parts = urllib.parse.unquote(url.path).lstrip("/").split("/", 1)
        bucket = parts[0]
        top = os.path.join(ARGS.gcs_root, bucket)
        if not bucket or "/" in bucket or bucket.startswith(".") or not os.path.isdir(top):
            return self.reply(404, b"<Error><Code>NoSuchBucket</Code></Error>",
                              ctype="application/xml")
        if len(parts) == 1 or parts[1] == "":
            return self.listing(top, bucket, q)
        key = parts[1]
        if self.who in (ARGS.list_only or []):
            return self.reply(403, ("<?xml version='1.0' encoding='UTF-8'?><Error><Code>"
                                    "AccessDenied</Code><Message>Access denied.</Message>"
                                    "<Details>%s does not have storage.objects.get access to "
                                    "the Google Cloud Storage object. Permission "
                                    "'storage.objects.get' denied on resource (or it may not "
                                    "exist).</Details></Error>" % escape(self.who)).encode(),
                              ctype="application/xml")
        path = os.path.realpath(os.path.join(top, key))
        if not path.startswith(os.path.realpath(top) + "/") or not os.path.isfile(path):
            return self.reply(404, b"<Error><Code>NoSuchKey</Code></Error>",
                              ctype="application/xml")
        with open(path, "rb") as f:
            data = f.read()
        st = os.stat(path)
        etag = '"%s"' % hashlib.md5(data).hexdigest()
        headers = [("ETag", etag), ("Accept-Ranges", "bytes"),
                   ("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True))]
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes="):
            first, _, last = rng[6:].partition("-")
            first = int(first)
            last = min(int(last) if last else len(data) - 1, len(data) - 1)
            if first >= len(data):
                return self.reply(416, headers=[("Content-Range", "bytes */%d" % len(data))])
            headers.append(("Content-Range", "bytes %d-%d/%d" % (first, last, len(data))))
            return self.reply(206, data[first:last + 1], headers, "application/octet-stream")
        self.reply(200, data, headers, "application/octet-stream")

    def listing(self, top, bucket, q):
        """The keys that start with prefix=, in key order: with
        delimiter=/, those up to the next "/" rolled up into
        CommonPrefixes; at most max-keys (1000) keys and prefixes after
        marker=, with NextMarker when more follow, as the XML API pages."""
        prefix = q.get("prefix", [""])[0]
        delimited = q.get("delimiter", [""])[0] == "/"
        marker = q.get("marker", [""])[0]
        page = max(1, int(q.get("max-keys", ["1000"])[0] or 1000))
        names = set()
        for d, _, files in os.walk(top):
            for name in files:
                key = os.path.relpath(os.path.join(d, name), top)
                if not key.startswith(prefix):
                    continue
                rest = key[len(prefix):]
                if delimited and "/" in rest:
                    key = prefix + rest.split("/", 1)[0] + "/"
                if key > marker:
                    names.add(key)
        names = sorted(names)
        truncated = len(names) > page
        names = names[:page]
        entries = [k for k in names if not k.endswith("/")]
        dirs = [k for k in names if k.endswith("/")]
        out = ["<?xml version='1.0' encoding='UTF-8'?><ListBucketResult>"
               "<Name>%s</Name><Prefix>%s</Prefix><IsTruncated>%s</IsTruncated>%s"
               % (escape(bucket), escape(prefix), "true" if truncated else "false",
                  "<NextMarker>%s</NextMarker>" % escape(names[-1]) if truncated else "")]
        for key in entries:
            path = os.path.join(top, key)
            with open(path, "rb") as f:
                etag = hashlib.md5(f.read()).hexdigest()
            out.append("<Contents><Key>%s</Key><Size>%d</Size><ETag>\"%s\"</ETag>"
                       "<LastModified>%s</LastModified></Contents>"
                       % (escape(key), os.path.getsize(path), etag,
                          time.strftime("%Y-%m-%dT%H:%M:%S.000Z",
                                        time.gmtime(os.path.getmtime(path)))))
        for p in dirs:
            out.append("<CommonPrefixes><Prefix>%s</Prefix></CommonPrefixes>" % escape(p))
        out.append("</ListBucketResult>")
        self.reply(200, "".join(out).encode(), ctype="application/xml")

    def log_message(self, *args):
        pass


ARC_KEY = None     # the key the last Arc challenge wrote


def default_sa():
    """The metadata server's default service account: the first --sa-email."""
    return ARGS.sa_email[0] if ARGS.sa_email else DEFAULT_SA


def main():
    global ARGS
    if sys.argv[1:2] == ["--oid-of"] and len(sys.argv) == 3:
        print(principal_oid(sys.argv[2]))
        return
    p = argparse.ArgumentParser()
    p.add_argument("--port-file", required=True)
    p.add_argument("--port", type=int, default=0)	# 0: any free port
    p.add_argument("--lifetime", type=int, default=60)
    p.add_argument("--valid", type=int)
    p.add_argument("--client-id", action="append")
    p.add_argument("--identity-header")
    p.add_argument("--arc-key-file")
    p.add_argument("--gcs-root")
    p.add_argument("--secret", default=secrets.token_hex(16))
    p.add_argument("--client-secret", action="append")
    p.add_argument("--assertion-file")
    p.add_argument("--refresh-token")
    p.add_argument("--sa-email", action="append")
    p.add_argument("--sa-public-key", action="append")
    p.add_argument("--list-only", action="append")
    p.add_argument("--tls-cert")
    p.add_argument("--tls-key")
    ARGS = p.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    if ARGS.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(ARGS.tls_cert, ARGS.tls_key)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    with open(ARGS.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(ARGS.port_file + ".tmp", ARGS.port_file)
    sys.stdout.flush()
    server.serve_forever()


main()
