#!/usr/bin/env bats
# Deep listings (s3rver on 127.0.0.1): a bucket's tree of many folders is
# listed as every key below its root, a page a few hundred names, not a
# request a folder; its ETags vouch for what is cached, so a remount reads
# cached files with no request; past the pages one deep listing may take,
# what it saw whole counts as listed and the rest is listed folder by
# folder. The names and bytes are the origin's either way.

bats_require_minimum_version 1.5.0
load ../lib/tilefs
load ../lib/s3rver

FOLDERS=120

setup() {
	tilefs_setup
	S3_BUCKET=eo
	s3rver_start "$S3_BUCKET"
	TREE=$T/tree
	# patch folders of three small files each, and one file beside them
	# (one level: s3rver's one-level listings miss folders two deep)
	"$PY" - "$TREE" "$FOLDERS" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
r = random.Random(23)
for i in range(n):
    d = os.path.join(root, f"p{i:04d}")
    os.makedirs(d)
    for band in ("B02", "B03", "B04"):
        with open(os.path.join(d, f"{band}.bin"), "wb") as f:
            f.write(r.randbytes(r.randrange(100, 3000)))
with open(os.path.join(root, "index.txt"), "w") as f:
    f.write("patches\n")
PY
	s3_upload "$TREE" data
	MNT=$T/mnt
	mkdir -p "$MNT"
	export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_EC2_METADATA_DISABLED=true
	export HOME=$T/home
}

teardown() {
	tilefs_teardown
	s3rver_stop
}

# listings [deep|one]: the listing requests s3rver answered so far (its
# log lines lose the start of the URL): all, those of every key below a
# folder, or those of one level
listings() {
	case ${1:-} in
	deep) grep -a 'st-type=' "$S3_LOG" | grep -avc 'delimiter=' || true ;;
	one) grep -a 'st-type=' "$S3_LOG" | grep -ac 'delimiter=' || true ;;
	*) grep -ac 'st-type=' "$S3_LOG" || true ;;
	esac
}

# names_match: find over the mount names what the tree holds, no more
names_match() {
	diff <(cd "$TREE" && find . | sort) <(cd "$MNT" && find . | sort) >&2 ||
		fail "the mount's names differ from the origin's"
}

@test "deep listing: find over $FOLDERS folders asks a listing a page (--page-size 100), not one a folder; the bytes are the origin's" {
	tilefs_mount "s3://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT" --page-size 100
	names_match
	# 361 keys: 4 pages of 100, and no listing of a folder
	assert_eq "$(listings)" 4 "listing requests"
	assert_eq "$(listings one)" 0 "one-level listings"
	cmp_tree "$TREE" "$MNT"
}

@test "deep listing: a remount over a cached tree reads every file with no request but the listing pages" {
	tilefs_mount "s3://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT" --page-size 1000 \
		--cache-dir "$T/cache"
	cmp_tree "$TREE" "$MNT"
	tilefs_umount "$MNT"
	: >"$S3_LOG"
	tilefs_mount "s3://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT" --page-size 1000 \
		--cache-dir "$T/cache"
	cmp_tree "$TREE" "$MNT"
	assert_eq "$(listings)" 1 "listing requests after the remount"
	assert_eq "$(s3_object_200s)" 0 "HEADs and whole GETs after the remount"
	assert_eq "$(s3_data_gets)" 0 "ranged GETs after the remount"
}

@test "deep listing: past the pages one listing may take (--page-size 10), the folders it saw whole are listed, the rest one by one; every name and byte right" {
	tilefs_mount "s3://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT" --page-size 10
	names_match
	cmp_tree "$TREE" "$MNT"
	echo "deep pages: $(listings deep), one-level pages: $(listings one)" >&2
	# 32 deep pages of 10 keys: index.txt and p0000-p0105 whole, never
	# listed again; the root, p0106 (seen in part) and the folders after
	# it listed on their own, a page each
	local i
	for ((i = 0; i < 106; i++)); do
		! grep -aq "prefix=data%2Fp$(printf %04d "$i")%2F" "$S3_LOG" ||
			fail "p$(printf %04d "$i"), listed whole, was listed again"
	done
	assert_eq "$(listings deep)" $((32 + FOLDERS - 107)) "deep listing pages"
	assert_eq "$(listings one)" 2 "one-level listings (the root, p0106)"
}

# all_listed FROM TO: every folder pFROM..pTO has had a listing asked
all_listed() {
	local i
	for ((i = $1; i <= $2; i++)); do
		grep -aq "prefix=data%2Fp$(printf %04d "$i")%2F" "$S3_LOG" || return 1
	done
}

@test "deep listing: folders listed ahead of a reader take eight deep pages each at most (--page-size 1), then one level; every name right" {
	# a folder of 12 files beside the patches, after them in key order
	mkdir -p "$TREE/wide"
	local i deep
	for ((i = 0; i < 12; i++)); do
		echo "wide $i" >"$TREE/wide/f$(printf %02d "$i").txt"
	done
	s3_upload "$TREE/wide" data/wide
	tilefs_mount "s3://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT" --page-size 1
	# the root's 32 pages of one key: index.txt and p0000-p0009 whole;
	# a reader entering p0100 has the folders beside it listed ahead
	ls "$MNT/p0100" >/dev/null
	wait_until "every folder beside p0100 listed ahead" all_listed 11 119
	wait_until "wide/ listed ahead" grep -aq "prefix=data%2Fwide%2F" "$S3_LOG"
	for ((i = 11; i < FOLDERS; i++)); do
		[ "$i" = 100 ] && continue
		deep=$(grep -a "prefix=data%2Fp$(printf %04d "$i")%2F" "$S3_LOG" | grep -avc 'delimiter=' || true)
		[ "$deep" -le 3 ] || fail "p$(printf %04d "$i") (3 keys), listed ahead, took $deep deep pages"
	done
	names_match
	# its 12 keys: 8 deep pages, then a listing of its own level
	deep=$(grep -a "prefix=data%2Fwide%2F" "$S3_LOG" | grep -avc 'delimiter=' || true)
	assert_eq "$deep" 8 "deep pages of wide/, listed ahead"
	cmp_tree "$TREE" "$MNT"
}
