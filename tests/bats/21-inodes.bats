#!/usr/bin/env bats
# Inode numbers: small numbers counted up (never an address of the
# daemon's), one per path, and a path's number stays the same within a
# mount: after the kernel forgets it, and when its object changes (no
# passthrough open of it beside: see 33-passthrough.bats for that case).

bats_require_minimum_version 1.5.0
load ../lib/tilefs

setup() {
	tilefs_setup
	origin_start "$SAMPLES"
	MNT=$T/mnt
}

teardown() {
	tilefs_teardown
}

# numbers: "NUMBER PATH" for the mount root, every directory and every
# file under it, by stat (each a lookup)
numbers() {
	local f
	stat -c '%i .' "$MNT"
	while IFS= read -r f; do
		stat -c "%i $f" "$MNT/$f" || return 1
	done < <(cd "$SAMPLES" && find . -mindepth 1 ! -name '.*' | sed 's|^\./||' | LC_ALL=C sort)
}

@test "inodes: small numbers, one per path, the same after the kernel forgets them and after a file changes" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --ttl 0
	local before after n
	before=$(numbers) || fail "stat failed: $before"
	n=$(wc -l <<<"$before")
	[ "$n" -ge 5 ] || fail "too few paths: $before"
	assert_eq "$(head -1 <<<"$before")" "1 ." "the root's number"
	assert_eq "$(cut -d' ' -f1 <<<"$before" | sort -u | wc -l)" "$n" "distinct numbers for $n paths"
	# numbers counted from 2 up: none exceeds the number of paths looked up
	# (an address of the daemon's would be far above, and tell its layout)
	local big
	big=$(awk -v n="$n" '$1 > n' <<<"$before")
	[ -z "$big" ] || fail "numbers beyond the $n paths looked up: $big"

	# the kernel forgets every inode it need not keep; the paths looked up
	# again get their numbers back
	cd /
	sync
	echo 2 >/proc/sys/vm/drop_caches
	sleep 1	# the kernel sends its forgets asynchronously
	after=$(numbers) || fail "stat failed: $after"
	assert_eq "$after" "$before" "numbers after the kernel forgot them"

	# a file changed at the origin: a new version, the same number
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	same_size_rewrite "$SAMPLES/t256.tif" "$T/t256.new"
	touch -d '2025-03-04 05:06:07 UTC' "$T/t256.new"
	mv "$T/t256.new" "$SAMPLES/t256.tif"
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	after=$(numbers) || fail "stat failed: $after"
	assert_eq "$after" "$before" "numbers after t256.tif changed"
	tilefs_umount "$MNT"
}
