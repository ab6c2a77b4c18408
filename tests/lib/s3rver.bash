# tests/lib/s3rver.bash: a real S3 server (s3rver, from npm) on 127.0.0.1.
#
#   s3rver_start BUCKET      start it with BUCKET; sets S3_ENDPOINT, S3_LOG
#   s3rver_stop
#   s3_upload DIR PREFIX     put every file under DIR at PREFIX/<relative path>
#   s3_data_gets             ranged GETs served so far (206 lines of its log)
#   s3_object_200s           answers 200 to object requests (not listings,
#                            not uploads) so far: HEADs, and GETs without a
#                            range (s3rver's log line loses the method)
#   sigv4_store_start ROOT   start tests/lib/sigv4_store.py serving ROOT (it
#                            checks signatures, and knows a key S3RVER that
#                            may GET and LIST and a key LISTONLY that may
#                            only LIST); sets SIGV4_ENDPOINT, SIGV4_LOG
#                            (METHOD PATH "RANGE" STATUS BYTES HOST KEY)
#   sigv4_store_stop
#
# s3rver checks the access key id (S3RVER) but not the signature; tilefs's
# signatures are checked against the AWS vectors and botocore instead.

S3RVER_BIN=${S3RVER_BIN:-$BATS_TEST_DIRNAME/../.cache/node/node_modules/.bin/s3rver}

_free_port() {
	/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

s3rver_start() {
	local bucket=$1
	[ -x "$S3RVER_BIN" ] || "$BATS_TEST_DIRNAME/../../packaging/install-test-servers" >&2
	S3_DIR=$T/s3rver
	S3_LOG=$T/s3rver.log
	mkdir -p "$S3_DIR"
	local try
	for try in 1 2 3; do
		S3_PORT=$(_free_port)
		# s3rver's continuation tokens use a cipher that Node's OpenSSL 3
		# only offers through its legacy provider
		NODE_OPTIONS=--openssl-legacy-provider \
			"$S3RVER_BIN" -d "$S3_DIR" -a 127.0.0.1 -p "$S3_PORT" --configure-bucket "$bucket" \
			>"$S3_LOG" 2>&1 3>&- &
		S3_PID=$!
		local i
		for i in $(seq $((${TILEFS_WAIT_S:-90} * 10))); do
			grep -q "listening" "$S3_LOG" 2>/dev/null && break
			kill -0 "$S3_PID" 2>/dev/null || break
			sleep 0.1
		done
		if grep -q "listening" "$S3_LOG"; then
			S3_ENDPOINT=http://127.0.0.1:$S3_PORT
			export S3_ENDPOINT
			return 0
		fi
		kill "$S3_PID" 2>/dev/null || true
	done
	echo "s3rver did not start:" >&2
	cat "$S3_LOG" >&2
	return 1
}

s3rver_stop() {
	[ -n "${S3_PID:-}" ] && kill "$S3_PID" 2>/dev/null
	S3_PID=
	return 0
}

s3_upload() {
	/usr/bin/python3 - "$1" "$2" "$S3_ENDPOINT" "$S3_BUCKET" <<'PY'
import os, sys, boto3
root, prefix, endpoint, bucket = sys.argv[1:5]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="S3RVER",
                  aws_secret_access_key="S3RVER", region_name="us-east-1")
for d, _, files in os.walk(root):
    for f in files:
        path = os.path.join(d, f)
        key = prefix + "/" + os.path.relpath(path, root)
        s3.upload_file(path, bucket, key)
PY
}

s3_data_gets() {
	grep -ac ' 206 ' "$S3_LOG" || true
}

s3_object_200s() {
	grep -a ' 200 ' "$S3_LOG" | grep -av 'delimiter=\|st-type=' | grep -avc ' 0b$' || true
}

sigv4_store_start() {
	SIGV4_LOG=$T/sigv4_store.log
	: >"$SIGV4_LOG"
	/usr/bin/python3 "$BATS_TEST_DIRNAME/../lib/sigv4_store.py" "$1" "$SIGV4_LOG" \
		>"$T/sigv4_store.port" 2>"$T/sigv4_store.err" 3>&- &
	SIGV4_PID=$!
	local i
	for i in $(seq $((${TILEFS_WAIT_S:-90} * 10))); do
		[ -s "$T/sigv4_store.port" ] && break
		sleep 0.1
	done
	[ -s "$T/sigv4_store.port" ] || { cat "$T/sigv4_store.err" >&2; return 1; }
	SIGV4_ENDPOINT=http://127.0.0.1:$(cat "$T/sigv4_store.port")
}

sigv4_store_stop() {
	[ -n "${SIGV4_PID:-}" ] && kill "$SIGV4_PID" 2>/dev/null
	SIGV4_PID=
	return 0
}
