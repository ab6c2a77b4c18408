#!/usr/bin/python3
"""A stand-in for the EC2 instance metadata service (IMDSv2) on 127.0.0.1,
for the one corner no real server here can play: role credentials.
Usage: imds_fake.py PORT [KEY]: the role tilefs-test's keys are KEY/KEY
(default S3RVER/S3RVER; another KEY is another hour's keys of the role).
Logs each request; prints "ready" when listening."""
import http.server
import json
import sys

TOKEN = "imds-session-token"
KEY = sys.argv[2] if len(sys.argv) > 2 else "S3RVER"


class Handler(http.server.BaseHTTPRequestHandler):
    def _reply(self, status, body):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_PUT(self):
        print(f"PUT {self.path}", flush=True)
        if self.path == "/latest/api/token" and self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
            self._reply(200, TOKEN.encode())
        else:
            self._reply(400, b"")

    def do_GET(self):
        print(f"GET {self.path}", flush=True)
        if self.headers.get("X-aws-ec2-metadata-token") != TOKEN:
            self._reply(401, b"")
        elif self.path == "/latest/meta-data/iam/security-credentials/":
            self._reply(200, b"tilefs-test")
        elif self.path == "/latest/meta-data/iam/info":
            self._reply(200, json.dumps({
                "Code": "Success", "InstanceProfileId": "AIPAEXAMPLE",
                "InstanceProfileArn": "arn:aws:iam::123456789012:instance-profile/tilefs-test"
            }).encode())
        elif self.path == "/latest/meta-data/iam/security-credentials/tilefs-test":
            self._reply(200, json.dumps({
                "Code": "Success", "AccessKeyId": KEY, "SecretAccessKey": KEY,
                "Token": "role-session-token", "Expiration": "2099-01-01T00:00:00Z"}).encode())
        else:
            self._reply(404, b"")

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
print("ready", flush=True)
server.serve_forever()
