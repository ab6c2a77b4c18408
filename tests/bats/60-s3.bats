#!/usr/bin/env bats
# S3 (s3rver on 127.0.0.1) and GCS's XML API (the same server, anonymous):
# listings, pagination, bytes, the persistent cache, credentials and their
# messages, secrets kept out of logs, and signing checked against botocore.

bats_require_minimum_version 1.5.0
load ../lib/tilefs
load ../lib/s3rver

setup() {
	tilefs_setup
	S3_BUCKET=eo
	s3rver_start "$S3_BUCKET"
	s3_upload "$SAMPLES" data
	MNT=$T/mnt
	mkdir -p "$MNT"
	export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_EC2_METADATA_DISABLED=true
	export HOME=$T/home
}

teardown() {
	tilefs_teardown
	s3rver_stop
	sigv4_store_stop
}

@test "s3: listing shows exactly the objects and prefixes; every file reads identical" {
	tilefs_mount "s3://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT"
	assert_eq "$(cd "$MNT" && find . | sort)" "$(cd "$SAMPLES" && find . | sort)" "tree"
	cmp_tree "$SAMPLES" "$MNT"
	for f in $(cd "$SAMPLES" && find . -type f); do
		assert_eq "$(stat -c %s "$MNT/$f")" "$(stat -c %s "$SAMPLES/$f")" "size of $f"
	done
}

@test "s3: a file's mtime is its Last-Modified before it is ever opened (from the listing)" {
	sleep 2		# the mount's start time is not the upload's
	tilefs_mount "s3://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT"
	local listed lm
	listed=$(stat -c %Y "$MNT/t256.tif")
	lm=$(/usr/bin/python3 - "$S3_ENDPOINT" "$S3_BUCKET" data/t256.tif <<'PY'
import sys, boto3
s3 = boto3.client("s3", endpoint_url=sys.argv[1], aws_access_key_id="S3RVER",
                  aws_secret_access_key="S3RVER", region_name="us-east-1")
print(int(s3.head_object(Bucket=sys.argv[2], Key=sys.argv[3])["LastModified"].timestamp()))
PY
)
	assert_eq "$listed" "$lm" "mtime of t256.tif, not yet opened"
}

@test "s3: rasterio reads the same window through the mount" {
	tilefs_mount "s3://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT"
	local tif
	tif=$(cd "$SAMPLES" && find . -name '*.tif' | head -1)
	/usr/bin/python3 - "$SAMPLES/$tif" "$MNT/$tif" <<'PY'
import sys, rasterio, numpy
a, b = (rasterio.open(p) for p in sys.argv[1:3])
w = ((0, min(256, a.height)), (0, min(256, a.width)))
assert numpy.array_equal(a.read(window=w), b.read(window=w)), "windows differ"
PY
}

@test "s3: a remount on the same cache dir reads everything without a data GET or a HEAD" {
	tilefs_mount "s3://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT"
	cmp_tree "$SAMPLES" "$MNT"
	tilefs_umount "$MNT"
	local before heads
	before=$(s3_data_gets)
	heads=$(s3_object_200s)
	[ "$before" -gt 0 ]
	tilefs_mount "s3://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT"
	cmp_tree "$SAMPLES" "$MNT"
	assert_eq "$(s3_data_gets)" "$before" "ranged GETs after the remount"
	# the listing's ETags say the cached versions are current
	assert_eq "$(s3_object_200s)" "$heads" "HEADs after the remount"
}

@test "s3: an object rewritten at the same size while unmounted: the remount reads the new bytes" {
	tilefs_mount "s3://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT"
	cmp_tree "$SAMPLES" "$MNT"
	tilefs_umount "$MNT"
	mkdir -p "$T/new"
	same_size_rewrite "$SAMPLES/t512.tif" "$T/new/t512.tif"
	s3_upload "$T/new" data
	local heads
	heads=$(s3_object_200s)
	tilefs_mount "s3://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT"
	cmp "$T/new/t512.tif" "$MNT/t512.tif" || fail "the remount served the old version"
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	# the changed ETag costs t512.tif a HEAD (which also shows the log counts them)
	assert_eq "$(s3_object_200s)" "$((heads + 1))" "HEADs after the remount"
}

# store_lines WHAT: the lines of the Signature V4 store's log for the object
# at PATH (not listings)
store_lines() {
	grep -a "^[A-Z]* /eo/$1 " "$SIGV4_LOG" || true
}

@test "s3: a mount whose key may only LIST serves no byte of an object another key read; it asks with its own key, refused" {
	sigv4_store_start "$SAMPLES"
	# mount A: its key may GET; it reads t512.tif whole
	tilefs_mount s3://eo "$MNT" --endpoint "$SIGV4_ENDPOINT"
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif" || fail "mount A read other bytes"
	tilefs_umount "$MNT"
	[ -n "$(store_lines t512.tif | awk '$7 == "S3RVER" && $4 ~ /^20/')" ] ||
		fail "mount A fetched nothing of t512.tif"
	# mount B on the same cache dir: its key may only LIST
	local before
	before=$(store_lines t512.tif | wc -l)
	AWS_ACCESS_KEY_ID=LISTONLY AWS_SECRET_ACCESS_KEY=LISTONLY \
		tilefs_mount s3://eo "$MNT" --endpoint "$SIGV4_ENDPOINT"
	ls "$MNT" | grep -qx t512.tif || fail "mount B does not list t512.tif"
	run -1 cat "$MNT/t512.tif"
	[[ "$output" == *"Permission denied"* ]] || fail "cat says: $output"
	/usr/bin/python3 - "$MNT/t512.tif" <<'PY' || fail "mount B served bytes of t512.tif"
import sys
try:
    with open(sys.argv[1], "rb") as f:
        data = f.read()
except OSError as e:
    print("refused:", e)
    sys.exit(0)
print(len(data), "bytes served")
sys.exit(1)
PY
	store_lines t512.tif
	[ -n "$(store_lines t512.tif | tail -n +"$((before + 1))" | awk '$7 == "LISTONLY" && $4 == 403')" ] ||
		fail "the store saw no request of mount B's for t512.tif"
	assert_eq "$(store_lines t512.tif | tail -n +"$((before + 1))" | awk '$4 !~ /^403/' | wc -l)" 0 \
		"requests for t512.tif the store answered to mount B"
	tilefs_umount "$MNT"
}

@test "s3: a remount by the key that read an object sends no request for it, a listing's ETag vouching, however long after" {
	sigv4_store_start "$SAMPLES"
	# --ttl 1 and a pause of 2 s: the remount comes after the ttl, as a
	# remount with the default 60 s usually does; the proof stands as long
	# as the version
	tilefs_mount s3://eo "$MNT" --endpoint "$SIGV4_ENDPOINT" --ttl 1
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif"
	tilefs_umount "$MNT"
	local before
	before=$(store_lines t512.tif | wc -l)
	[ "$before" -gt 0 ] || fail "the first mount fetched nothing"
	sleep 2
	tilefs_mount s3://eo "$MNT" --endpoint "$SIGV4_ENDPOINT" --ttl 1
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif" || fail "the remount read other bytes"
	tilefs_umount "$MNT"
	store_lines t512.tif
	assert_eq "$(store_lines t512.tif | wc -l)" "$before" "requests for t512.tif after the remount"
}

@test "s3: a warm with a key that may GET proves only itself: a LIST-only mount after it is refused, the warm's key's mount asks nothing" {
	sigv4_store_start "$SAMPLES"
	tilefs_run warm --cache-dir "$T/cache" --endpoint "$SIGV4_ENDPOINT" s3://eo t512.tif
	assert_eq "$status" 0 "exit status of the warm"
	local before
	before=$(store_lines t512.tif | wc -l)
	[ "$before" -gt 0 ] || fail "the warm fetched nothing of t512.tif"
	AWS_ACCESS_KEY_ID=LISTONLY AWS_SECRET_ACCESS_KEY=LISTONLY \
		tilefs_mount s3://eo "$MNT" --endpoint "$SIGV4_ENDPOINT"
	run -1 cat "$MNT/t512.tif"
	[[ "$output" == *"Permission denied"* ]] || fail "cat says: $output"
	tilefs_umount "$MNT"
	store_lines t512.tif
	assert_eq "$(store_lines t512.tif | tail -n +"$((before + 1))" | awk '$7 != "LISTONLY" || $4 != 403' | wc -l)" 0 \
		"requests for t512.tif after the warm other than the LIST-only key's refused ones"
	[ "$(store_lines t512.tif | wc -l)" -gt "$before" ] || fail "the LIST-only mount asked nothing"
	before=$(store_lines t512.tif | wc -l)
	tilefs_mount s3://eo "$MNT" --endpoint "$SIGV4_ENDPOINT"
	cmp "$SAMPLES/t512.tif" "$MNT/t512.tif" || fail "the warm key's mount read other bytes"
	tilefs_umount "$MNT"
	assert_eq "$(store_lines t512.tif | wc -l)" "$before" "requests for t512.tif by the warm key's mount"
}

@test "s3: role keys from the metadata service that rotate are one identity: a remount with the next hour's keys asks nothing" {
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_EC2_METADATA_DISABLED
	sigv4_store_start "$SAMPLES"
	local port key imds i before
	for key in ROLEKEY1 ROLEKEY2; do
		port=$(_free_port)
		/usr/bin/python3 "$BATS_TEST_DIRNAME/../lib/imds_fake.py" "$port" "$key" >"$T/imds.log" 2>&1 &
		imds=$!
		for i in $(seq 50); do grep -q ready "$T/imds.log" && break; sleep 0.1; done
		AWS_EC2_METADATA_SERVICE_ENDPOINT=http://127.0.0.1:$port \
			tilefs_mount s3://eo "$MNT" --endpoint "$SIGV4_ENDPOINT"
		kill "$imds"
		[ "$key" = ROLEKEY2 ] && before=$(store_lines t512.tif | wc -l)
		cmp "$SAMPLES/t512.tif" "$MNT/t512.tif" || fail "the mount with $key read other bytes"
		tilefs_umount "$MNT"
	done
	awk '$7 == "ROLEKEY2"' "$SIGV4_LOG" | grep -q . || fail "the remount did not use the new keys"
	store_lines t512.tif
	assert_eq "$(store_lines t512.tif | wc -l)" "$before" "requests for t512.tif with the next hour's keys"
}

@test "s3: warm twice: the second run asks for nothing but listings (their ETags vouch)" {
	local c=$T/cache heads gets
	tilefs_run warm --cache-dir "$c" --endpoint "$S3_ENDPOINT" "s3://$S3_BUCKET/data"
	assert_eq "$status" 0 "exit status of the first warm"
	gets=$(s3_data_gets)
	heads=$(s3_object_200s)
	[ "$gets" -gt 0 ] || fail "the first warm fetched nothing"
	tilefs_run warm --cache-dir "$c" --endpoint "$S3_ENDPOINT" "s3://$S3_BUCKET/data"
	assert_eq "$status" 0 "exit status of the second warm"
	[[ $out == *"0 failed"* ]] || fail "the second warm says: $out"
	assert_eq "$(s3_data_gets)" "$gets" "ranged GETs of the second warm"
	assert_eq "$(s3_object_200s)" "$heads" "HEADs of the second warm"
	tilefs_mount "s3://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT" --cache-dir "$c"
	cmp_tree "$SAMPLES" "$MNT"
	assert_eq "$(s3_data_gets)" "$gets" "ranged GETs through the mount"
	assert_eq "$(s3_object_200s)" "$heads" "HEADs through the mount"
}

@test "s3: --page-size 2 lists a directory of more objects than a page holds" {
	mkdir -p "$T/many"
	for i in $(seq 1 7); do echo "object $i" > "$T/many/o$i.txt"; done
	s3_upload "$T/many" many
	tilefs_mount "s3://$S3_BUCKET/many" "$MNT" --endpoint "$S3_ENDPOINT" --page-size 2
	assert_eq "$(ls "$MNT" | tr '\n' ' ')" "o1.txt o2.txt o3.txt o4.txt o5.txt o6.txt o7.txt " "listing"
	grep -aq 'max-keys' "$S3_LOG" || grep -aq 'maxKeys":2' "$S3_LOG"
	cmp "$T/many/o7.txt" "$MNT/o7.txt"
}

@test "s3: credentials from a profile in AWS_SHARED_CREDENTIALS_FILE" {
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
	printf '[tiles]\naws_access_key_id = S3RVER\naws_secret_access_key = S3RVER\n' > "$T/creds"
	AWS_SHARED_CREDENTIALS_FILE=$T/creds AWS_PROFILE=tiles \
		tilefs_mount "s3://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT" --log-level info
	cmp_tree "$SAMPLES" "$MNT"
	grep -q "credentials from profile tiles" "$TILEFS_LOG"
}

@test "s3: role credentials from an IMDSv2 metadata service" {
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_EC2_METADATA_DISABLED
	local port
	port=$(_free_port)
	/usr/bin/python3 "$BATS_TEST_DIRNAME/../lib/imds_fake.py" "$port" > "$T/imds.log" 2>&1 &
	local imds=$!
	for i in $(seq 50); do grep -q ready "$T/imds.log" && break; sleep 0.1; done
	AWS_EC2_METADATA_SERVICE_ENDPOINT=http://127.0.0.1:$port \
		tilefs_mount "s3://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT" --log-level info
	kill $imds
	cmp_tree "$SAMPLES" "$MNT"
	grep -q "instance metadata service (role tilefs-test)" "$TILEFS_LOG"
	grep -q "PUT /latest/api/token" "$T/imds.log"
}

@test "s3: an unknown access key fails the mount, naming what to fix" {
	AWS_ACCESS_KEY_ID=NOTAKEY tilefs_run mount "s3://$S3_BUCKET/data" "$MNT" \
		--endpoint "$S3_ENDPOINT" --cache-dir "$T/cache" --log-file "$T/log"
	assert_eq "$status" 1 "exit status"
	[[ "$err1" == *"access denied"*"AWS_ACCESS_KEY_ID"* ]] || fail "message: $err1"
	grep -q "InvalidAccessKeyId" "$T/log"
	! is_mounted "$MNT"
}

@test "s3: no credentials at all fails the mount, naming the variables" {
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
	tilefs_run mount "s3://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT" --cache-dir "$T/cache"
	assert_eq "$status" 1 "exit status"
	[[ "$err1" == *"AWS_ACCESS_KEY_ID"*"--no-sign-request"* ]] || fail "message: $err1"
}

@test "s3: no secret, signature or token in the log, even at debug level" {
	export AWS_SECRET_ACCESS_KEY=S3RVER AWS_SESSION_TOKEN=SessionTokenSecretValue123
	tilefs_mount "s3://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT" --log-level debug
	cmp_tree "$SAMPLES" "$MNT"
	tilefs_umount "$MNT"
	! grep -q "SessionTokenSecretValue123" "$TILEFS_LOG"
	! grep -qi "Signature=" "$TILEFS_LOG"
	! grep -q "X-Amz-Credential\|Authorization" "$TILEFS_LOG"
}

@test "s3: Signature V4 matches botocore on odd keys, ranges and session tokens" {
	run /usr/bin/python3 "$BATS_TEST_DIRNAME/../lib/sigv4_botocore_check.py" \
		"$BATS_TEST_DIRNAME/../../build/test_provider_s3" 150
	echo "$output"
	assert_eq "$status" 0 "exit status"
	[[ "$output" == *"300 requests signed, 0 differ from botocore"* ]]
}

@test "gs: the XML API, anonymous, with marker pagination" {
	tilefs_mount "gs://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT" --no-sign-request \
		--page-size 1
	assert_eq "$(cd "$MNT" && find . | sort)" "$(cd "$SAMPLES" && find . | sort)" "tree"
	cmp_tree "$SAMPLES" "$MNT"
}

@test "gs: no credentials fails the mount, naming the variables" {
	tilefs_run mount "gs://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT" --cache-dir "$T/cache"
	assert_eq "$status" 1 "exit status"
	[[ "$err1" == *"GOOGLE_OAUTH_ACCESS_TOKEN"*"GS_ACCESS_KEY_ID"* ]] || fail "message: $err1"
}
