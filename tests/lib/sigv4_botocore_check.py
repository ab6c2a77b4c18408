#!/usr/bin/python3
"""Cross-check tilefs's S3 Signature V4 against botocore's signer.

Generates requests for keys with odd characters (spaces, unicode, '+',
'%', '=', '~'), listing URLs, ranges and session tokens; has tilefs sign
them (build/test_provider_s3 --sign ENDPOINT) and signs the same requests
with botocore at the same timestamp. Prints one line per mismatch and a
summary; exits 1 on any mismatch.

Usage: sigv4_botocore_check.py SIGNER_BINARY [COUNT]
"""
import os
import random
import subprocess
import sys
import urllib.parse

import botocore.auth
import botocore.awsrequest
import botocore.credentials

from botocore_sigv4 import authorization_at

ENDPOINT = "http://127.0.0.1:9000"
ALPHABET = "abcXYZ019 -_.~+%=&?#!$'()*,;:@[]/é中ሴ"


def random_key(rng):
    n = rng.randint(1, 24)
    key = "".join(rng.choice(ALPHABET) for _ in range(n)).strip("/")
    return key or "k"


def requests(rng, count):
    for i in range(count):
        key = random_key(rng)
        path = "/bucket/" + urllib.parse.quote(key, safe="/-_.~")
        if i % 5 == 4:
            prefix = urllib.parse.quote(key, safe="-_.~")
            query = f"list-type=2&delimiter=%2F&encoding-type=url&prefix={prefix}"
            if i % 2:
                query += "&continuation-token=" + urllib.parse.quote("tok/+=" + key, safe="-_.~")
            yield "GET", ENDPOINT + "/bucket?" + query, None
        elif i % 5 == 3:
            yield "HEAD", ENDPOINT + path, None
        else:
            first = rng.randint(0, 1 << 40)
            yield "GET", ENDPOINT + path, (first, first + rng.randint(0, 1 << 24))


def main():
    signer = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    rng = random.Random(20261122)
    failures = 0
    total = 0
    for token in (None, "FQoGZXIvYXdzE//////////wEaDEXAMPLE+token/with=odd+chars"):
        env = dict(os.environ, AWS_ACCESS_KEY_ID="AKIDEXAMPLE",
                   AWS_SECRET_ACCESS_KEY="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                   AWS_REGION="us-east-1", AWS_EC2_METADATA_DISABLED="true")
        env.pop("AWS_SESSION_TOKEN", None)
        if token:
            env["AWS_SESSION_TOKEN"] = token
        reqs = list(requests(rng, count))
        lines = "".join(f"{m}\t{u}\t{r[0] if r else ''}\t{r[1] if r else ''}\n"
                        for m, u, r in reqs)
        out = subprocess.run([signer, "--sign", ENDPOINT], input=lines.encode(),
                             capture_output=True, env=env, check=True).stdout.decode()
        blocks = out.split("\n\n")
        creds = botocore.credentials.Credentials(env["AWS_ACCESS_KEY_ID"],
                                                 env["AWS_SECRET_ACCESS_KEY"], token)
        for (method, url, rng_), block in zip(reqs, blocks):
            total += 1
            ours = {}
            for line in block.splitlines():
                name, _, value = line.partition(": ")
                ours[name.lower()] = value
            req = botocore.awsrequest.AWSRequest(method=method, url=url)
            theirs = authorization_at(botocore.auth.S3SigV4Auth(creds, "s3", "us-east-1"), req,
                                      ours["x-amz-date"])
            if ours.get("authorization") != theirs:
                failures += 1
                print(f"MISMATCH {method} {url}\n  tilefs:   {ours.get('authorization')}\n"
                      f"  botocore: {theirs}")
            if token and ours.get("x-amz-security-token") != token:
                failures += 1
                print(f"MISSING TOKEN {method} {url}")
    print(f"{total} requests signed, {failures} differ from botocore")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
