#!/usr/bin/python3
"""sigv4_store.py ROOT LOG: a minimal S3-like store on 127.0.0.1 that
verifies every request's Signature V4 with botocore (region us-east-1)
before answering: 403 SignatureDoesNotMatch otherwise. Serves HEAD and
(ranged) GET of the files under ROOT at /BUCKET/PATH (any bucket name),
with ETag and Content-Range, and ListObjectsV2 pages of one directory
(?list-type=2&prefix=P&delimiter=/; without the delimiter, every key
below P, as S3 lists them), in pages of max-keys (1000 by default) that
a continuation-token continues.

Keys and what each may do (a policy per key, as IAM would have it):
  S3RVER/S3RVER      GET (and HEAD) objects, and LIST
  LISTONLY/LISTONLY  LIST only: GET and HEAD of an object get 403
                     AccessDenied (after its signature checks out)
  ROLEKEY1/ROLEKEY1, ROLEKEY2/ROLEKEY2
                     GET and LIST: two hours' keys of one role
                     (tests/lib/imds_fake.py PORT ROLEKEY1)

Prints the port on stdout once listening. Appends one line per request to
LOG: METHOD PATH "RANGE" STATUS BYTES HOST KEY
(s3rver does not check signatures; this one does, through a tier too.)

With SIGV4_KEYS=FILE in its environment, the keys are instead those an
identity emulator (tests/lib/aws_identity.py) issued and lists in FILE
(JSON: {"keys": [{"AccessKeyId", "SecretAccessKey", "Token",
"ExpiresEpoch"}]}), read at each request: a request must carry one of
them with its session token, or it gets 403 InvalidAccessKeyId or
InvalidToken; it may take the "Actions" listed with it (GET and LIST when
none are); one whose keys are past ExpiresEpoch gets 400 ExpiredToken,
as S3 answers. With SIGV4_CLOCK_AHEAD_S=N too, the store's clock runs N
seconds ahead of the machine's: it finds keys expired that much sooner.

With SIGV4_DELAY_MS=N, every answer waits N ms before it is sent (a
store's first-byte time).

With SIGV4_SLOW_DOWN_ONE_LEVEL=1, every listing of one level (with the
delimiter) gets 503 SlowDown, as S3 answers a prefix it throttles: only
listings of every key below a prefix are answered. With
SIGV4_HOLD_ONE_LEVEL=FILE, a listing of one level waits unanswered while
FILE exists.

With SIGV4_REGION=R, the bucket is in region R (us-east-1 otherwise): a
request signed for another region gets, as S3 answers it, 400
AuthorizationHeaderMalformed naming the region expected in its message
and in <Region>.

With SIGV4_SYNTH=GROUPS,PATCHES,SIZE, ROOT is not read: the bucket holds
a tree made up as it is asked for, GROUPS folders gNNN/ of PATCHES patch
folders S2A_patch_NNNNNNN/ of four band files (B02.tif, B03.tif, B04.tif,
B08.tif) of SIZE bytes each (synth_data(): the key, repeated), so that a
million keys cost no disk (tests/bench/names.py).
"""
import bisect
import datetime
import hashlib
import http.server
import json
import os
import re
import time
import sys
import threading
import urllib.parse

import botocore.auth
import botocore.awsrequest
import botocore.credentials

from botocore_sigv4 import authorization_at

ROOT, LOG = sys.argv[1], sys.argv[2]
# access key id -> (secret, the actions it may take)
KEYS = {"S3RVER": ("S3RVER", {"GET", "LIST"}), "LISTONLY": ("LISTONLY", {"LIST"}),
        "ROLEKEY1": ("ROLEKEY1", {"GET", "LIST"}), "ROLEKEY2": ("ROLEKEY2", {"GET", "LIST"})}
lock = threading.Lock()


def access_key(authorization):
    """The access key id an Authorization header names ("-": none)."""
    _, _, rest = authorization.partition("Credential=")
    return rest.split("/", 1)[0] or "-"


def key_secret(key, token):
    """(secret, actions, error) for access key id KEY: a static key of KEYS,
    or, with SIGV4_KEYS, one the identity emulator issued (GET and LIST);
    error is (status, code) when the key is refused."""
    keys_file = os.environ.get("SIGV4_KEYS")
    if not keys_file:
        if key not in KEYS:
            return None, set(), (403, "InvalidAccessKeyId")
        return KEYS[key][0], KEYS[key][1], None
    with open(keys_file) as f:
        issued = json.load(f)["keys"]
    for k in issued:
        if k["AccessKeyId"] == key:
            if k.get("Token") != token:
                return None, set(), (403, "InvalidToken")
            if time.time() + CLOCK_AHEAD_S >= k["ExpiresEpoch"]:
                return None, set(), (400, "ExpiredToken")
            return k["SecretAccessKey"], set(k.get("Actions", ["GET", "LIST"])), None
    return None, set(), (403, "InvalidAccessKeyId")


def expected_authorization(method, host, raw_path, amz_date, token, key, secret):
    creds = botocore.credentials.Credentials(key, secret, token)
    req = botocore.awsrequest.AWSRequest(method=method, url=f"http://{host}{raw_path}")
    return authorization_at(botocore.auth.S3SigV4Auth(creds, "s3", REGION), req, amz_date)


REGION = os.environ.get("SIGV4_REGION", "us-east-1")
DELAY_S = int(os.environ.get("SIGV4_DELAY_MS", "0")) / 1000.0
CLOCK_AHEAD_S = int(os.environ.get("SIGV4_CLOCK_AHEAD_S", "0"))
SLOW_DOWN_ONE_LEVEL = os.environ.get("SIGV4_SLOW_DOWN_ONE_LEVEL") == "1"
HOLD_ONE_LEVEL = os.environ.get("SIGV4_HOLD_ONE_LEVEL")


SYNTH = tuple(int(v) for v in os.environ["SIGV4_SYNTH"].split(",")) \
    if os.environ.get("SIGV4_SYNTH") else None
BANDS = ("B02.tif", "B03.tif", "B04.tif", "B08.tif")


def synth_data(key):
    """The bytes of synthetic key KEY: the key and a newline, repeated to
    the tree's SIZE."""
    unit = (key + "\n").encode()
    return (unit * (SYNTH[2] // len(unit) + 1))[:SYNTH[2]]


def synth_key(i):
    """The synthetic tree's I-th key in key order (zero-padded numbers:
    key order is index order)."""
    p = i // len(BANDS)
    return "g%03d/S2A_patch_%07d/%s" % (p // SYNTH[1], p, BANDS[i % len(BANDS)])


def synth_range(prefix):
    """[lo, hi) of the indexes of the keys that start with PREFIX (keys
    in key order are in index order)."""
    keys = range(SYNTH[0] * SYNTH[1] * len(BANDS))
    lo = bisect.bisect_left(keys, prefix, key=synth_key)
    return lo, bisect.bisect_left(keys, prefix + "\U0010ffff", lo=lo, key=synth_key)


def synth_names(prefix, delimited, after, n):
    """At most N names of keys that start with PREFIX after the key AFTER
    (None: from the first), in order: DELIMITED, up to the next "/" (a
    folder's with it); else every key, relative to PREFIX."""
    lo, hi = synth_range(prefix)
    if lo == hi:
        return []
    keys = range(lo, hi)
    start = bisect.bisect_right(keys, after, key=synth_key) if after is not None else 0
    if not delimited:
        return [synth_key(i)[len(prefix):] for i in keys[start:start + n]]
    out = []
    i = lo + start
    while i < hi and len(out) < n:
        name = synth_key(i)[len(prefix):]
        if "/" in name:
            name = name.split("/", 1)[0] + "/"
            # the next name: past every key below this folder
            i = synth_range(prefix + name)[1]
        else:
            i += 1
        if after is None or prefix + name > after:
            out.append(name)
    return out


def signed_region(authorization):
    """The region of an Authorization header's credential scope, or None."""
    m = re.search(r"Credential=[^/,]+/\d{8}/([^/,]+)/s3/aws4_request", authorization)
    return m.group(1) if m else None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def log_line(self, status, nbytes):
        with lock, open(LOG, "a") as f:
            f.write(f'{self.command} {self.path.split("?")[0]} "{self.headers.get("Range", "-")}" '
                    f'{status} {nbytes} {self.headers.get("Host", "-")} '
                    f'{access_key(self.headers.get("Authorization", ""))}\n')

    def answer(self, status, headers, body=b""):
        time.sleep(DELAY_S)
        # logged before it is sent: a client acting on the answer finds
        # its line written already
        self.log_line(status, len(body) if self.command != "HEAD" else 0)
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def serve(self):
        ours = self.headers.get("Authorization", "")
        key = access_key(ours)
        region = signed_region(ours)
        if region and region != REGION:
            return self.answer(400, {"Content-Type": "application/xml"}, (
                "<Error><Code>AuthorizationHeaderMalformed</Code><Message>The authorization "
                f"header is malformed; the region '{region}' is wrong; expecting '{REGION}'"
                f"</Message><Region>{REGION}</Region></Error>").encode())
        try:
            token = self.headers.get("x-amz-security-token")
            secret, actions, refused = key_secret(key, token)
            if refused:
                return self.answer(refused[0], {}, b"<Error><Code>%s</Code></Error>"
                                   % refused[1].encode())
            theirs = expected_authorization(self.command, self.headers.get("Host", ""),
                                            self.path, self.headers.get("x-amz-date", ""),
                                            token, key, secret)
        except Exception as e:  # a malformed request: not signed right
            ours, theirs = "", repr(e)
        if not ours or ours != theirs:
            return self.answer(403, {}, b"<Error><Code>SignatureDoesNotMatch</Code></Error>")
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        action = "LIST" if query.get("list-type") else "GET"
        if action not in actions:
            return self.answer(403, {}, b"<Error><Code>AccessDenied</Code></Error>")
        one_level = action == "LIST" and "delimiter" in query
        while one_level and HOLD_ONE_LEVEL and os.path.exists(HOLD_ONE_LEVEL):
            time.sleep(0.05)
        if one_level and SLOW_DOWN_ONE_LEVEL:
            return self.answer(503, {"Content-Type": "application/xml"},
                               b"<Error><Code>SlowDown</Code><Message>Please reduce your "
                               b"request rate.</Message></Error>")
        if action == "LIST":
            return self.listing(query.get("prefix", [""])[0], "delimiter" in query,
                                int(query.get("max-keys", ["1000"])[0]),
                                bytes.fromhex(query["continuation-token"][0]).decode()
                                if "continuation-token" in query else None)
        parts = urllib.parse.unquote(self.path.split("?")[0]).lstrip("/").split("/", 1)
        key = parts[1] if len(parts) > 1 else ""
        if SYNTH:
            lo, hi = synth_range(key.rsplit("/", 1)[0] + "/" if "/" in key else "-")
            data = synth_data(key) if key in (synth_key(i) for i in range(lo, hi)) else None
        else:
            path = os.path.join(ROOT, key)
            data = open(path, "rb").read() if os.path.isfile(path) else None
        if data is None:
            return self.answer(404, {}, b"<Error><Code>NoSuchKey</Code></Error>")
        etag = '"' + hashlib.md5(data).hexdigest() + '"'
        match = self.headers.get("If-Match")
        if match and match != etag:
            return self.answer(412, {})
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes="):
            first, _, last = rng[6:].partition("-")
            first, last = int(first), min(int(last), len(data) - 1)
            return self.answer(206, {"ETag": etag, "Content-Range":
                                     f"bytes {first}-{last}/{len(data)}"},
                               data[first:last + 1])
        return self.answer(200, {"ETag": etag}, data)

    def listing(self, prefix, delimited, max_keys, after):
        """ListObjectsV2 of the keys that start with PREFIX ("", "a/b/" or
        "a/b/c", as S3 takes any): DELIMITED, the names up to the next "/"
        (a folder's with it); else every key, in key order; at most
        MAX_KEYS of them, those after the key AFTER (None: from the first),
        names relative to PREFIX ("" for a key that is PREFIX)."""
        if SYNTH:
            return self.synth_listing(prefix, delimited, max_keys, after)
        base = prefix[:prefix.rfind("/") + 1]      # the folder PREFIX is in
        d = os.path.join(ROOT, base)
        if delimited:
            keys = [base + n + ("/" if os.path.isdir(os.path.join(d, n)) else "")
                    for n in (os.listdir(d) if os.path.isdir(d) else [])]
        else:
            keys = [base + os.path.relpath(os.path.join(top, f), d)
                    for top, _, files in os.walk(d) for f in files]
        names = sorted(k[len(prefix):] for k in keys if k.startswith(prefix))
        names = [n for n in names if after is None or prefix + n > after]
        names = names[:max(1, max_keys) + 1]
        truncated = len(names) > max(1, max_keys)
        names = names[:max(1, max_keys)]
        rows = []
        for name in names:
            full = os.path.join(ROOT, prefix + name)
            key = urllib.parse.quote(prefix + name)
            if name.endswith("/"):
                rows.append(f"<CommonPrefixes><Prefix>{key}</Prefix></CommonPrefixes>")
                continue
            data = open(full, "rb").read()
            modified = datetime.datetime.fromtimestamp(os.stat(full).st_mtime,
                                                       datetime.timezone.utc)
            rows.append(f"<Contents><Key>{key}</Key>"
                        f"<LastModified>{modified.strftime('%Y-%m-%dT%H:%M:%S.000Z')}"
                        f"</LastModified><ETag>&quot;{hashlib.md5(data).hexdigest()}&quot;"
                        f"</ETag><Size>{len(data)}</Size></Contents>")
        return self.list_answer(prefix, delimited, names, truncated, rows)

    def synth_listing(self, prefix, delimited, max_keys, after):
        """listing() of the synthetic tree (SIGV4_SYNTH)."""
        names = synth_names(prefix, delimited, after, max(1, max_keys) + 1)
        truncated = len(names) > max(1, max_keys)
        names = names[:max(1, max_keys)]
        rows = []
        for name in names:
            key = urllib.parse.quote(prefix + name)
            if name.endswith("/"):
                rows.append(f"<CommonPrefixes><Prefix>{key}</Prefix></CommonPrefixes>")
                continue
            data = synth_data(prefix + name)
            rows.append(f"<Contents><Key>{key}</Key>"
                        "<LastModified>2026-01-01T00:00:00.000Z</LastModified>"
                        f"<ETag>&quot;{hashlib.md5(data).hexdigest()}&quot;</ETag>"
                        f"<Size>{len(data)}</Size></Contents>")
        return self.list_answer(prefix, delimited, names, truncated, rows)

    def list_answer(self, prefix, delimited, names, truncated, rows):
        """A ListObjectsV2 answer of ROWS, NAMES' last key the next token."""
        body = ('<?xml version="1.0" encoding="UTF-8"?><ListBucketResult>'
                f"<Prefix>{urllib.parse.quote(prefix)}</Prefix>"
                f"{'<Delimiter>/</Delimiter>' if delimited else ''}"
                f"<EncodingType>url</EncodingType>"
                f"<IsTruncated>{'true' if truncated else 'false'}</IsTruncated>"
                + (f"<NextContinuationToken>{(prefix + names[-1]).encode().hex()}"
                   "</NextContinuationToken>" if truncated else "") +
                f"{''.join(rows)}</ListBucketResult>").encode()
        return self.answer(200, {"Content-Type": "application/xml"}, body)

    do_GET = serve
    do_HEAD = serve


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
