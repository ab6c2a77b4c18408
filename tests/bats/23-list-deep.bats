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
	sigv4_store_stop
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

# names_match [DIR]: find over the mount (or DIR in it) names what the
# tree holds, no more
names_match() {
	diff <(cd "$TREE" && find . | sort) <(cd "${1:-$MNT}" && find . | sort) >&2 ||
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

# runs_listed PREFIX...: the daemon's log says each run of root folders
# named PREFIX* was listed deep (ahead of the readers; it is in the tree
# once the line is written, or busy: a reader waits for it)
runs_listed() {
	local p
	for p in "$@"; do
		grep -q "listed /$p\* deep: " "$TILEFS_LOG" || return 1
	done
}

# own_listings FROM TO: the deep listings of a single folder pFROM..pTO
# asked (a folder listed on its own, not in a run)
own_listings() {
	local i n=0
	for ((i = $1; i <= $2; i++)); do
		n=$((n + $(grep -ac "prefix=data%2Fp$(printf %04d "$i")%2F" "$S3_LOG" || true)))
	done
	echo "$n"
}

@test "deep listing: past the pages one listing may take (--page-size 10), the folders it saw whole are listed; those after, listed ahead a run of names at a time; every name and byte right" {
	tilefs_mount "s3://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT" --page-size 10 \
		--log-level debug
	# 32 deep pages of 10 keys: index.txt and p0000-p0105 whole, p0106
	# seen in part; a reader entering p0106 lists it one level
	ls "$MNT/p0106" >/dev/null
	# the folders after it, listed ahead: p0107, p0108 and p0109 alone (each
	# shares all but its last digit with the one before), then p0110-p0119
	# in one listing of the names p011*, three pages
	wait_until "the runs after p0106 listed" runs_listed p0107 p0108 p0109 p011
	echo "deep pages: $(listings deep), one-level pages: $(listings one)" >&2
	local i
	for ((i = 0; i < 106; i++)); do
		! grep -aq "prefix=data%2Fp$(printf %04d "$i")" "$S3_LOG" ||
			fail "p$(printf %04d "$i"), listed whole, was listed again"
	done
	assert_eq "$(grep -ac 'prefix=data%2Fp011&' "$S3_LOG")" 3 "pages of the run p011*"
	assert_eq "$(listings deep)" $((32 + 3 + 3)) "deep listing pages"
	assert_eq "$(listings one)" 2 "one-level listings (the root, p0106)"
	names_match
	cmp_tree "$TREE" "$MNT"
	assert_eq "$(listings)" $((32 + 3 + 3 + 2)) "listings after find and reads"
	assert_eq "$(own_listings 107 119)" 0 "folders after p0106 listed on their own"
}

@test "deep listing: the folders beside a reader's, in a folder too wide for one listing (--page-size 4), are listed ahead in runs of eight deep pages at most; every name right" {
	# a folder of 40 files beside the patches, after them in key order
	mkdir -p "$TREE/wide"
	local i
	for ((i = 0; i < 40; i++)); do
		echo "wide $i" >"$TREE/wide/f$(printf %02d "$i").txt"
	done
	s3_upload "$TREE/wide" data/wide
	tilefs_mount "s3://$S3_BUCKET/data" "$MNT" --endpoint "$S3_ENDPOINT" --page-size 4 \
		--log-level debug
	# the root's 32 pages of 4 keys: index.txt and p0000-p0041 whole, p0042
	# in part; a reader entering p0100 has the folders beside it listed
	# ahead: p0043-p0049 and p0101-p0109 alone, p005*-p009* and p011* ten
	# folders a listing, w* (wide/) cut at eight pages and left to its reader
	ls "$MNT/p0100" >/dev/null
	local runs=(p0043 p0044 p0045 p0046 p0047 p0048 p0049 p005 p006 p007 p008 p009
		    p0101 p0102 p0103 p0104 p0105 p0106 p0107 p0108 p0109 p011 w)
	wait_until "every run beside p0100 listed ahead" runs_listed "${runs[@]}"
	wait_until "p0042 listed ahead, one level" grep -aq "delimiter=%2F.*prefix=data%2Fp0042%2F\|prefix=data%2Fp0042%2F.*delimiter=%2F" "$S3_LOG"
	assert_eq "$(grep -ac 'prefix=data%2Fw&' "$S3_LOG")" 8 "deep pages of the run w*, ahead"
	for ((i = 5; i <= 9; i++)); do
		assert_eq "$(grep -ac "prefix=data%2Fp00$i&" "$S3_LOG")" 8 "pages of the run p00$i*"
	done
	assert_eq "$(own_listings 43 119)" 1 "folders listed on their own (p0100, by its reader)"
	local before
	before=$(listings)
	names_match
	cmp_tree "$TREE" "$MNT"
	# wide/, cut, is listed by its reader: its 40 keys, ten pages
	assert_eq "$(grep -ac 'prefix=data%2Fwide%2F' "$S3_LOG")" 10 "pages of wide/, by its reader"
	assert_eq "$(listings)" $((before + 10)) "listings during find"
}

@test "deep listing: a folder the root's deep listing saw in part (the bucket mounted, --page-size 10) is wide too: the folders beside a reader's are listed ahead in runs" {
	tilefs_mount "s3://$S3_BUCKET" "$MNT" --endpoint "$S3_ENDPOINT" --page-size 10 \
		--log-level debug
	# the root's 32 deep pages: data/index.txt and data/p0000-p0105 whole;
	# data/ and data/p0106 seen in part, each listed one level when entered
	ls "$MNT/data/p0106" >/dev/null
	wait_until "the runs after p0106 listed" runs_listed data/p0107 data/p0108 data/p0109 data/p011
	assert_eq "$(grep -ac 'prefix=data%2Fp011&' "$S3_LOG")" 3 "pages of the run data/p011*"
	names_match "$MNT/data"
	assert_eq "$(own_listings 107 119)" 0 "folders after p0106 listed on their own"
	assert_eq "$(listings deep)" $((32 + 3 + 3)) "deep listing pages"
}

@test "deep listing: a lookup in a folder too large for one deep listing (--page-size 10) does not wait for its whole listing: a name past the pages is looked for alone, so a store that refuses every one-level listing still serves every file" {
	# a flat folder of 400 files, first in key order: the root's 32 deep
	# pages see flat/f0000-f0318 and nothing after
	mkdir -p "$TREE/flat"
	local i
	for ((i = 0; i < 400; i++)); do
		echo "flat $i" >"$TREE/flat/f$(printf %04d "$i").txt"
	done
	SIGV4_SLOW_DOWN_ONE_LEVEL=1 sigv4_store_start "$T"
	tilefs_mount "s3://$S3_BUCKET/tree" "$MNT" --endpoint "$SIGV4_ENDPOINT" --page-size 10 \
		--log-level debug
	# each name past the pages: one deep listing of the keys that start
	# with it, a page
	cmp "$TREE/p0119/B03.bin" "$MNT/p0119/B03.bin"
	grep -aq "listed /p0119\* deep: 3 names$" "$TILEFS_LOG" || fail "p0119 not looked for alone"
	cmp "$TREE/flat/f0399.txt" "$MNT/flat/f0399.txt"
	grep -aq "listed /flat/f0399.txt\* deep: 1 names$" "$TILEFS_LOG" ||
		fail "flat/f0399 not looked for alone"
	cmp "$TREE/flat/f0003.txt" "$MNT/flat/f0003.txt"
	cmp "$TREE/index.txt" "$MNT/index.txt"
	run -1 cat "$MNT/p0200/B02.bin"
	[[ $output == *"No such file or directory"* ]] || fail "p0200: $output"
	# what needs every name fails
	run ! ls "$MNT"
	echo "$output" >&2
	# the one-level listings asked were refused: SlowDown, no other answer
	grep -aq ' 503 ' "$SIGV4_LOG" || fail "no one-level listing asked"
}

@test "deep listing: once the listing of a folder too large for one deep listing is older than --ttl, lookups and ls in it take its names while a new one is fetched; files are checked by their opens" {
	SIGV4_HOLD_ONE_LEVEL=$T/hold sigv4_store_start "$T"
	tilefs_mount "s3://$S3_BUCKET/tree" "$MNT" --endpoint "$SIGV4_ENDPOINT" --page-size 10 \
		--ttl 2
	names_match		# the root listed whole, one level
	cmp "$TREE/p0000/B02.bin" "$MNT/p0000/B02.bin"
	assert_eq "$(cat "$MNT/index.txt")" "patches" "index.txt before"
	sleep 3			# the root's listing older than the ttl
	touch "$T/hold"		# the store holds every one-level listing from now on
	echo "changed" >"$TREE/index.txt"
	# index.txt, in the root's last listing, is opened at once and checked
	# by its open (a HEAD): the new bytes, not the cached ones
	run timeout 60 cat "$MNT/index.txt"
	assert_eq "$status" 0 "cat's status while the root's new listing is held"
	assert_eq "$output" "changed" "index.txt"
	# ls shows the last listing meanwhile (the stat shows the kernel a new
	# mtime, so that it reads the entries again)
	stat "$MNT" >/dev/null
	run timeout 60 ls "$MNT"
	assert_eq "$status" 0 "ls's status while the root's new listing is held"
	assert_eq "$(echo "$output" | wc -l)" $((FOLDERS + 1)) "names ls shows"
	# (one that waited for the listing would have given up on it first)
	! grep -a "listing of /: " "$TILEFS_LOG" || fail "ls waited for the root's new listing"
	rm "$T/hold"
	names_match
}
