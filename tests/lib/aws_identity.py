#!/usr/bin/python3
"""aws_identity.py DIR: the AWS identity endpoints tilefs asks for
short-lived credentials, on 127.0.0.1, issuing keys that
tests/lib/sigv4_store.py (run with SIGV4_KEYS=DIR/keys.json) accepts until
they expire.

Endpoints, as documented by AWS (request and response shapes):
  - the instance metadata service, IMDSv2: PUT /latest/api/token with
    X-aws-ec2-metadata-token-ttl-seconds, then GET
    /latest/meta-data/iam/security-credentials/ and .../ROLE with
    X-aws-ec2-metadata-token; answers {"Code", "LastUpdated", "Type",
    "AccessKeyId", "SecretAccessKey", "Token", "Expiration"}; and
    /latest/meta-data/iam/info: {"Code", "LastUpdated",
    "InstanceProfileArn" (of a profile named as the role),
    "InstanceProfileId"}.
  - container credentials (ECS, EKS Pod Identity): GET /v2/credentials/ID
    with "Authorization: TOKEN" when DIR/auth-token exists (read at each
    request, so a test can rotate it; 401 on a mismatch); answers
    {"AccessKeyId", "Expiration", "RoleArn", "SecretAccessKey", "Token"}.
  - STS AssumeRoleWithWebIdentity: the Query API, GET with the
    parameters in the query or POST with them form-encoded, at any path
    but the two above: Action=AssumeRoleWithWebIdentity,
    Version=2011-06-15, RoleArn, RoleSessionName, WebIdentityToken
    (which must equal DIR/web-token, read at each request, so a test can
    rotate it), DurationSeconds optional; answers the documented
    <AssumeRoleWithWebIdentityResponse> (Credentials: SessionToken,
    SecretAccessKey, Expiration, AccessKeyId; SubjectFromWebIdentityToken,
    AssumedRoleUser, Provider, Audience; ResponseMetadata), or an
    <ErrorResponse> with 400 InvalidIdentityToken, MissingParameter or
    InvalidAction.
  - credential_process: "aws_identity.py DIR --process [ROLE]" prints the AWS
    CLI's Version 1 document (Version, AccessKeyId, SecretAccessKey,
    SessionToken, Expiration) of a freshly issued key, and exits 0.
  - STS AssumeRole: the same Query API, Action=AssumeRole, Version,
    RoleArn, RoleSessionName, DurationSeconds and ExternalId optional,
    signed with Signature V4 (service sts) by the keys in DIR/source-keys
    ("ID SECRET"), or by a key this emulator issued that has not expired
    (with its session token: a role_arn whose credential_source is the
    metadata service, or whose source_profile signs in with SSO): the
    signature is checked with botocore over the headers the request
    names in SignedHeaders (403 SignatureDoesNotMatch otherwise); answers
    the documented <AssumeRoleResponse> (Credentials, AssumedRoleUser),
    and logs "sts assume-role session=NAME signed-by ROLE" (ROLE: the role
    of the issued key that signed, or "source-keys").
  - the SSO portal's GetRoleCredentials (IAM Identity Center): GET
    /federation/credentials?role_name=R&account_id=A with the header
    x-amz-sso_bearer_token, which must equal DIR/sso-token (read at each
    request, so a test can "log in" again); answers
    {"roleCredentials": {"accessKeyId", "secretAccessKey", "sessionToken",
    "expiration" (milliseconds since the epoch)}} for a key issued to the
    role "sso:A:R"; 401 UnauthorizedException for another token or none,
    403 ForbiddenException for a pair not in DIR/sso-roles (lines
    "ACCOUNT ROLE") when that file exists, 400 InvalidRequestException
    without role_name or account_id. Logs "sso presented sha256:HEX
    role=R account=A" (HEX: the first 16 hex digits of the token's
    SHA-256; never the token).
Left out: IMDSv1, the instance identity documents and every other
metadata path; the container endpoint's error bodies beyond a status;
STS's other actions, policies, tags, source identity, and any check of
the token beyond equality (no JWT is verified); the SSO portal's other
operations (ListAccounts, ListAccountRoles, Logout), SSO OIDC (device
authorization, CreateToken: the test writes the CLI's token cache
itself), and its throttling (429).

Principals: every key is issued to a role, and keys.json says what it
may do ("Actions": GET and LIST, or LIST alone for a role named in
DIR/listonly-roles, one role name or ARN a line, read at each issue), so
the store can hold two principals apart. The instance's role is
DIR/imds-role (default tilefs-test); a web identity's and AssumeRole's,
the RoleArn asked for; a credential_process's, the ROLE of "--process
ROLE" (default tilefs-test). The container endpoint, with
DIR/container-roles (lines "TOKEN ROLE_ARN"), issues to the role of the
Authorization token presented (401 for another), answering RoleArn as ECS
does, or without it, as EKS Pod Identity does, while DIR/container-eks
exists.

Every credential issued lives LIFETIME seconds (DIR/lifetime, default
60, read at each issue) and is a fresh AccessKeyId, a secret holding '/'
and '+' as real ones do, and a session token. JSON answers write '/' as
the escape "\\/" (valid JSON, which some servers emit), so that a reader
that does not unescape signs with the wrong secret.
While DIR/down exists every endpoint answers 503 (an outage).

Files in DIR: port (written once listening), keys.json (every key
issued: AccessKeyId, SecretAccessKey, Token, ExpiresEpoch), log (one line
per request: ENDPOINT METHOD PATH STATUS [issued AKID]; no secret; and for
each AssumeRoleWithWebIdentity "sts presented sha256:HEX", the first 16
hex digits of the SHA-256 of the WebIdentityToken it carried, so a test
can tell which content of a rotated token file was sent without the log
holding a token).

"aws_identity.py DIR [--port P] [--host ADDR]" listens on port P instead
of any free one (a restart after an outage, on the address the client
holds; 80 for the address the SDKs fix for
AWS_CONTAINER_CREDENTIALS_RELATIVE_URI), and on ADDR instead of 127.0.0.1
(169.254.170.2, in a network namespace of the test's own); keys.json and
log are kept across restarts.
"""
import base64
import datetime
import hashlib
import re
import http.server
import json
import os
import secrets
import sys
import threading
import time
import urllib.parse
from xml.sax.saxutils import escape

DIR = sys.argv[1]
lock = threading.Lock()
IMDS_TOKEN = "imds-session-" + secrets.token_hex(8)
ROLE = "tilefs-test"


def read(name, default=None):
    try:
        with open(os.path.join(DIR, name)) as f:
            return f.read().strip()
    except FileNotFoundError:
        return default


def log(line):
    with lock, open(os.path.join(DIR, "log"), "a") as f:
        f.write(line + "\n")


def issue(role="tilefs-test"):
    """A fresh credential of ROLE, recorded in keys.json for the data plane."""
    lifetime = int(read("lifetime", "60"))
    now = time.time()
    listonly = (read("listonly-roles") or "").split()
    key = {
        "Role": role,
        "Actions": ["LIST"] if role in listonly else ["GET", "LIST"],
        "AccessKeyId": "ASIA" + secrets.token_hex(8).upper(),
        "SecretAccessKey": base64.b64encode(secrets.token_bytes(30)).decode()[:38] + "/+",
        "Token": "FwoG/" + base64.b64encode(secrets.token_bytes(120)).decode(),
        "ExpiresEpoch": int(now) + lifetime,
    }
    with lock:
        path = os.path.join(DIR, "keys.json")
        try:
            with open(path) as f:
                keys = json.load(f)["keys"]
        except FileNotFoundError:
            keys = []
        keys.append(key)
        with open(path + ".tmp", "w") as f:
            json.dump({"keys": keys}, f)
        os.replace(path + ".tmp", path)
    return key


def iso(epoch):
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def json_slashes(doc):
    return json.dumps(doc).replace("/", "\\/").encode()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, endpoint, status, body=b"", issued=None, ctype="application/json"):
        # logged before it is sent: a client acting on the answer finds
        # its line written already
        log(f"{endpoint} {self.command} {self.path.split('?')[0]} {status}"
            + (f" issued {issued}" if issued else ""))
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def endpoint(self):
        if self.path.startswith("/latest/"):
            return "imds"
        if self.path.startswith("/federation/"):
            return "sso"
        if self.path.startswith("/v2/credentials"):
            return "container"
        return "sts"

    def do_PUT(self):
        ep = self.endpoint()
        if os.path.exists(os.path.join(DIR, "down")):
            return self.reply(ep, 503)
        if self.path == "/latest/api/token" and \
                self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
            return self.reply(ep, 200, IMDS_TOKEN.encode(), ctype="text/plain")
        self.reply(ep, 400)

    def do_GET(self):
        ep = self.endpoint()
        if os.path.exists(os.path.join(DIR, "down")):
            return self.reply(ep, 503)
        if ep == "imds":
            return self.imds()
        if ep == "container":
            return self.container()
        if ep == "sso":
            return self.sso()
        self.sts(urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query))

    def do_POST(self):
        if os.path.exists(os.path.join(DIR, "down")):
            return self.reply("sts", 503)
        n = int(self.headers.get("Content-Length", "0"))
        form = self.rfile.read(n).decode() if 0 < n < 65536 else ""
        self.sts(urllib.parse.parse_qs(form))

    def sts_error(self, status, code, message):
        body = (f'<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">'
                f'<Error><Type>Sender</Type><Code>{code}</Code><Message>{escape(message)}'
                f'</Message></Error><RequestId>{secrets.token_hex(16)}</RequestId>'
                f'</ErrorResponse>').encode()
        self.reply("sts", status, body, ctype="text/xml")

    def signature_ok(self):
        """The name of what signed this request (SigV4, sts): "source-keys"
        (DIR/source-keys) or the role of a key issued here that still
        holds; None when the signature does not match."""
        import botocore.auth
        import botocore.awsrequest
        import botocore.credentials
        from botocore_sigv4 import authorization_at
        ours = self.headers.get("Authorization", "")
        m = re.match(r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/sts/aws4_request, "
                     r"SignedHeaders=([^,]+), Signature=[0-9a-f]{64}$", ours)
        if not m:
            return None
        keys = (read("source-keys") or "").split()
        signer = "source-keys"
        if len(keys) == 2 and m.group(1) == keys[0]:
            creds = botocore.credentials.Credentials(keys[0], keys[1])
        else:
            with lock:
                try:
                    with open(os.path.join(DIR, "keys.json")) as f:
                        issued = json.load(f)["keys"]
                except FileNotFoundError:
                    issued = []
            k = next((k for k in issued if k["AccessKeyId"] == m.group(1)
                      and k["ExpiresEpoch"] > time.time()), None)
            if k is None:
                return None
            signer = k["Role"]
            creds = botocore.credentials.Credentials(k["AccessKeyId"], k["SecretAccessKey"],
                                                     k["Token"])
        signed = m.group(4).split(";")
        headers = {h: self.headers.get(h, "") for h in signed if h != "host"}
        req = botocore.awsrequest.AWSRequest(
            method=self.command, url=f"http://{self.headers.get('Host')}{self.path}",
            headers={k: v for k, v in headers.items() if k != "x-amz-date"})
        if authorization_at(botocore.auth.SigV4Auth(creds, "sts", m.group(3)), req,
                            self.headers.get("x-amz-date", "")) != ours:
            return None
        return signer

    def sts(self, q):
        one = {k: v[0] for k, v in q.items()}
        if one.get("Action") == "AssumeRole":
            return self.assume_role(one)
        if one.get("Action") != "AssumeRoleWithWebIdentity":
            return self.sts_error(400, "InvalidAction", "only AssumeRole(WithWebIdentity)")
        for p in ("Version", "RoleArn", "RoleSessionName", "WebIdentityToken"):
            if p not in one:
                return self.sts_error(400, "MissingParameter", f"{p} is missing")
        if one["Version"] != "2011-06-15":
            return self.sts_error(400, "InvalidAction", "Version must be 2011-06-15")
        log("sts presented sha256:"
            + hashlib.sha256(one["WebIdentityToken"].encode()).hexdigest()[:16])
        if one["WebIdentityToken"] != read("web-token"):
            return self.sts_error(400, "InvalidIdentityToken", "the token is not valid")
        role, session = one["RoleArn"], one["RoleSessionName"]
        k = issue(role)
        role_name = role.rsplit("/", 1)[-1]
        body = f"""<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <SubjectFromWebIdentityToken>system:serviceaccount:tilefs:reader</SubjectFromWebIdentityToken>
    <Audience>sts.amazonaws.com</Audience>
    <AssumedRoleUser>
      <Arn>arn:aws:sts::123456789012:assumed-role/{escape(role_name)}/{escape(session)}</Arn>
      <AssumedRoleId>AROACLKWSDQRAOEXAMPLE:{escape(session)}</AssumedRoleId>
    </AssumedRoleUser>
    <Credentials>
      <SessionToken>{escape(k["Token"])}</SessionToken>
      <SecretAccessKey>{escape(k["SecretAccessKey"])}</SecretAccessKey>
      <Expiration>{iso(k["ExpiresEpoch"])}</Expiration>
      <AccessKeyId>{k["AccessKeyId"]}</AccessKeyId>
    </Credentials>
    <Provider>oidc.tilefs.test</Provider>
  </AssumeRoleWithWebIdentityResult>
  <ResponseMetadata>
    <RequestId>{secrets.token_hex(16)}</RequestId>
  </ResponseMetadata>
</AssumeRoleWithWebIdentityResponse>
""".encode()
        log(f"sts session={session}")
        self.reply("sts", 200, body, k["AccessKeyId"], ctype="text/xml")

    def imds(self):
        base = "/latest/meta-data/iam/security-credentials/"
        if self.headers.get("X-aws-ec2-metadata-token") != IMDS_TOKEN:
            return self.reply("imds", 401)
        role = read("imds-role", ROLE)
        if self.path == base:
            return self.reply("imds", 200, role.encode(), ctype="text/plain")
        if self.path == "/latest/meta-data/iam/info":
            return self.reply("imds", 200, json_slashes({
                "Code": "Success", "LastUpdated": iso(time.time()),
                "InstanceProfileArn": "arn:aws:iam::123456789012:instance-profile/" + role,
                "InstanceProfileId": "AIPAEXAMPLE" + hashlib.sha256(role.encode()).hexdigest()[:8]}))
        if self.path == base + role:
            k = issue(role)
            return self.reply("imds", 200, json_slashes({
                "Code": "Success", "LastUpdated": iso(time.time()), "Type": "AWS-HMAC",
                "AccessKeyId": k["AccessKeyId"], "SecretAccessKey": k["SecretAccessKey"],
                "Token": k["Token"], "Expiration": iso(k["ExpiresEpoch"])}),
                k["AccessKeyId"])
        self.reply("imds", 404)

    def container(self):
        want = read("auth-token")
        if want is not None and self.headers.get("Authorization") != want:
            return self.reply("container", 401)
        role = "arn:aws:iam::123456789012:role/tilefs-test"
        roles = read("container-roles")
        if roles is not None:
            by_token = dict(line.split(None, 1) for line in roles.splitlines() if line.strip())
            role = by_token.get(self.headers.get("Authorization", ""))
            if role is None:
                return self.reply("container", 401)
        k = issue(role)
        doc = {"AccessKeyId": k["AccessKeyId"], "Expiration": iso(k["ExpiresEpoch"]),
               "RoleArn": role, "SecretAccessKey": k["SecretAccessKey"], "Token": k["Token"]}
        if os.path.exists(os.path.join(DIR, "container-eks")):
            del doc["RoleArn"]
            doc["AccountId"] = "123456789012"
        self.reply("container", 200, json_slashes(doc), k["AccessKeyId"])


    def assume_role(self, one):
        for p in ("Version", "RoleArn", "RoleSessionName"):
            if p not in one:
                return self.sts_error(400, "MissingParameter", f"{p} is missing")
        signer = self.signature_ok()
        if signer is None:
            return self.sts_error(403, "SignatureDoesNotMatch", "the signature does not match")
        k = issue(one["RoleArn"])
        session = one["RoleSessionName"]
        body = f"""<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleResult>
    <AssumedRoleUser>
      <Arn>arn:aws:sts::123456789012:assumed-role/{escape(one["RoleArn"].rsplit("/", 1)[-1])}/{escape(session)}</Arn>
      <AssumedRoleId>ARO123EXAMPLE123:{escape(session)}</AssumedRoleId>
    </AssumedRoleUser>
    <Credentials>
      <AccessKeyId>{k["AccessKeyId"]}</AccessKeyId>
      <SecretAccessKey>{escape(k["SecretAccessKey"])}</SecretAccessKey>
      <SessionToken>{escape(k["Token"])}</SessionToken>
      <Expiration>{iso(k["ExpiresEpoch"])}</Expiration>
    </Credentials>
    <PackedPolicySize>6</PackedPolicySize>
  </AssumeRoleResult>
  <ResponseMetadata>
    <RequestId>{secrets.token_hex(16)}</RequestId>
  </ResponseMetadata>
</AssumeRoleResponse>
""".encode()
        log(f"sts assume-role session={session} signed-by {signer}"
            + (f" external-id={one['ExternalId']}" if "ExternalId" in one else ""))
        self.reply("sts", 200, body, k["AccessKeyId"], ctype="text/xml")


    def sso_error(self, status, kind, message):
        body = json.dumps({"message": message}).encode()
        log(f"sso error {kind}")
        self.reply("sso", status, body)

    def sso(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path != "/federation/credentials":
            return self.reply("sso", 404)
        q = {k: v[0] for k, v in urllib.parse.parse_qs(url.query).items()}
        token = self.headers.get("x-amz-sso_bearer_token", "")
        role, account = q.get("role_name"), q.get("account_id")
        log("sso presented sha256:" + hashlib.sha256(token.encode()).hexdigest()[:16]
            + f" role={role} account={account}")
        if not token or token != read("sso-token"):
            return self.sso_error(401, "UnauthorizedException",
                                  "Session token not found or invalid")
        if not role or not account:
            return self.sso_error(400, "InvalidRequestException",
                                  "role_name and account_id are required")
        allowed = read("sso-roles")
        if allowed is not None and f"{account} {role}" not in allowed.splitlines():
            return self.sso_error(403, "ForbiddenException", "No access")
        k = issue(f"sso:{account}:{role}")
        self.reply("sso", 200, json_slashes({"roleCredentials": {
            "accessKeyId": k["AccessKeyId"], "secretAccessKey": k["SecretAccessKey"],
            "sessionToken": k["Token"], "expiration": k["ExpiresEpoch"] * 1000}}),
            k["AccessKeyId"])


def process(role="tilefs-test"):
    k = issue(role)
    log(f"process issued {k['AccessKeyId']}")
    print(json.dumps({"Version": 1, "AccessKeyId": k["AccessKeyId"],
                      "SecretAccessKey": k["SecretAccessKey"], "SessionToken": k["Token"],
                      "Expiration": iso(k["ExpiresEpoch"])}, indent=2))


def main():
    if sys.argv[2:3] == ["--process"]:
        return process(*sys.argv[3:4])
    opts = dict(zip(sys.argv[2::2], sys.argv[3::2]))
    server = http.server.ThreadingHTTPServer(
        (opts.get("--host", "127.0.0.1"), int(opts.get("--port", "0"))), Handler)
    with open(os.path.join(DIR, "port.tmp"), "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(os.path.join(DIR, "port.tmp"), os.path.join(DIR, "port"))
    server.serve_forever()


if __name__ == "__main__":
    main()
