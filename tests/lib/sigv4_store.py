#!/usr/bin/python3
"""sigv4_store.py ROOT LOG: a minimal S3-like store on 127.0.0.1 that
verifies every request's Signature V4 with botocore (the key S3RVER/S3RVER,
region us-east-1) before answering: 403 SignatureDoesNotMatch otherwise.
Serves HEAD and (ranged) GET of the files under ROOT at /BUCKET/PATH (any
bucket name), with ETag and Content-Range; no listings (mount with --list).

Prints the port on stdout once listening. Appends one line per request to
LOG: METHOD PATH "RANGE" STATUS BYTES HOST
(s3rver does not check signatures; this one does, through a tier too.)

With SIGV4_KEYS=FILE in its environment, the keys are instead those an
identity emulator (tests/lib/aws_identity.py) issued and lists in FILE
(JSON: {"keys": [{"AccessKeyId", "SecretAccessKey", "Token",
"ExpiresEpoch"}]}), read at each request: a request must carry one of
them with its session token, or it gets 403 InvalidAccessKeyId or
InvalidToken; one whose keys are past ExpiresEpoch gets 400 ExpiredToken,
as S3 answers.
"""
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
from unittest import mock

import botocore.auth
import botocore.awsrequest
import botocore.credentials

ROOT, LOG = sys.argv[1], sys.argv[2]
CREDS = botocore.credentials.Credentials("S3RVER", "S3RVER")
lock = threading.Lock()


def issued_keys(authorization, token):
    """(secret, error) for the request's key id: the static S3RVER key, or
    one SIGV4_KEYS lists; error is (status, code) when it is refused."""
    keys_file = os.environ.get("SIGV4_KEYS")
    if not keys_file:
        return "S3RVER", None
    m = re.search(r"Credential=([^/]+)/", authorization)
    with open(keys_file) as f:
        keys = json.load(f)["keys"]
    for k in keys:
        if m and k["AccessKeyId"] == m.group(1):
            if k.get("Token") != token:
                return None, (403, "InvalidToken")
            if time.time() >= k["ExpiresEpoch"]:
                return None, (400, "ExpiredToken")
            return k["SecretAccessKey"], None
    return None, (403, "InvalidAccessKeyId")


def expected_authorization(method, host, raw_path, amz_date, token, key_id="S3RVER",
                           secret="S3RVER"):
    creds = botocore.credentials.Credentials(key_id, secret, token)
    req = botocore.awsrequest.AWSRequest(method=method, url=f"http://{host}{raw_path}")
    stamp = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ")
    with mock.patch("botocore.auth.datetime") as fake:
        fake.datetime.utcnow.return_value = stamp
        botocore.auth.S3SigV4Auth(creds, "s3", "us-east-1").add_auth(req)
    return req.headers["Authorization"]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def log_line(self, status, nbytes):
        with lock, open(LOG, "a") as f:
            f.write(f'{self.command} {self.path.split("?")[0]} "{self.headers.get("Range", "-")}" '
                    f'{status} {nbytes} {self.headers.get("Host", "-")}\n')

    def answer(self, status, headers, body=b""):
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.log_line(status, len(body) if self.command != "HEAD" else 0)

    def serve(self):
        try:
            ours = self.headers.get("Authorization", "")
            token = self.headers.get("x-amz-security-token")
            secret, refused = issued_keys(ours, token)
            if refused:
                return self.answer(refused[0], {}, b"<Error><Code>%s</Code></Error>"
                                   % refused[1].encode())
            m = re.search(r"Credential=([^/]+)/", ours)
            theirs = expected_authorization(self.command, self.headers.get("Host", ""),
                                            self.path, self.headers.get("x-amz-date", ""),
                                            token, m.group(1) if m else "S3RVER", secret)
        except Exception as e:  # a malformed request: not signed right
            ours, theirs = "", repr(e)
        if not ours or ours != theirs:
            return self.answer(403, {}, b"<Error><Code>SignatureDoesNotMatch</Code></Error>")
        parts = urllib.parse.unquote(self.path.split("?")[0]).lstrip("/").split("/", 1)
        path = os.path.join(ROOT, parts[1] if len(parts) > 1 else "")
        if not os.path.isfile(path):
            return self.answer(404, {}, b"<Error><Code>NoSuchKey</Code></Error>")
        data = open(path, "rb").read()
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

    do_GET = serve
    do_HEAD = serve


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
