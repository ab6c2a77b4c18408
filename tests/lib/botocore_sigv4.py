"""botocore_sigv4.py: botocore's Signature V4 of a request at a given
X-Amz-Date, for the test servers that verify what tilefs signed.

botocore stamps a request with the clock (datetime.utcnow() in older
botocore, get_current_datetime() in newer ones); signing at the request's
own date means patching those module globals, so every signature is made
under one lock: the servers that call this are threaded, and two patches
at once leave one signature stamped with the clock.
"""
import datetime
import threading
from unittest import mock

import botocore.auth

_lock = threading.Lock()


def authorization_at(auth, request, amz_date):
    """Sign REQUEST (a botocore AWSRequest) with AUTH (a botocore SigV4Auth,
    e.g. S3SigV4Auth(creds, "s3", region)) as if at AMZ_DATE
    ("YYYYMMDDTHHMMSSZ"); returns its Authorization header."""
    stamp = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ")
    with _lock, mock.patch("botocore.auth.datetime") as fake, \
            mock.patch.object(botocore.auth, "get_current_datetime", lambda *a, **k: stamp,
                              create=True):
        fake.datetime.utcnow.return_value = stamp
        auth.add_auth(request)
    return request.headers["Authorization"]
