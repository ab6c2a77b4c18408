#!/usr/bin/env bats
# Listings ahead of a walk (issue 56, item 4): when a reader enters a
# folder listed the first time, the folders beside it that were never
# listed are listed in the background, many at once, so that find,
# os.walk or a DataLoader over a folder per sample does not wait a round
# trip per folder. What the origin's access log shows: each folder listed
# once, before any reader asked for it; a listing of the root alone lists
# nothing ahead.

bats_require_minimum_version 1.5.0
load ../lib/tilefs

setup() {
	tilefs_setup
	MNT=$T/mnt
}

teardown() {
	tilefs_teardown
}

# tree DIR N: N folders p000.. of four band files each, and a folder of two
# levels, deep/x/y.txt
tree() {
	local i b d
	for ((i = 0; i < $2; i++)); do
		d=$(printf '%s/p%03d' "$1" "$i")
		mkdir -p "$d"
		for b in B02 B03 B04 B08; do
			echo "$i $b" >"$d/$b.txt"
		done
	done
}

# folder_listings: "URI COUNT" of each listing of a folder p*/ the origin
# answered, in name order
folder_listings() {
	origin_select 'm == "GET" && u ~ /^\/p[0-9]+\/$/' | awk '{ print $2 }' | sort | uniq -c |
		awk '{ print $2, $1 }'
}

@test "list ahead: a reader entering one folder has the 59 folders beside it listed ahead, each once; find then asks the origin nothing" {
	tree "$T/web" 60
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT"
	ls "$MNT" >/dev/null
	assert_eq "$(folder_listings | wc -l)" 0 "folders listed after a listing of the root alone"
	cat "$MNT/p007/B04.txt" >/dev/null
	all_listed() {
		[ "$(folder_listings | wc -l)" = 60 ]
	}
	wait_until "every folder listed" all_listed
	local before
	before=$(origin_count GET)
	find "$MNT" >"$T/found"
	assert_eq "$(wc -l <"$T/found")" $((1 + 60 + 240)) "names find found"
	assert_eq "$(origin_count GET)" "$before" "requests find made"
	assert_eq "$(folder_listings | awk '$2 != 1')" "" "folders listed more than once"
	diff <(cd "$T/web" && find . | sed 's|^\.||' | sort) <(sed "s|^$MNT||" "$T/found" | sort) ||
		fail "find through the mount differs from the origin's tree"
	tilefs_umount "$MNT"
}

@test "list ahead: only a level ahead of the walk: the folders inside a folder listed ahead are not listed until a reader enters one of its neighbours" {
	mkdir -p "$T/web/a/x" "$T/web/a/w" "$T/web/b/y" "$T/web/c/z"
	echo 1 >"$T/web/a/x/f.txt"
	echo 2 >"$T/web/b/y/g.txt"
	echo 3 >"$T/web/c/z/h.txt"
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT"
	ls "$MNT/a" >/dev/null
	listed() {
		[ "$(origin_select 'm == "GET" && u == "'"$1"'"' | wc -l)" -ge 1 ]
	}
	wait_until "b/ listed ahead" listed /b/
	wait_until "c/ listed ahead" listed /c/
	# a reader enters a/x/: a/w/ beside it is queued after anything the
	# listings of b/ and c/ could have queued, and listed ahead
	ls "$MNT/a/x" >/dev/null
	wait_until "a/w/ listed ahead" listed /a/w/
	# y/ and z/ lie a level below what was listed ahead: not listed
	# unless a reader goes there
	for u in /b/y/ /c/z/; do
		! listed "$u" || fail "$u was listed ahead"
	done
	assert_eq "$(cat "$MNT/b/y/g.txt")" 2 "b/y/g.txt through the mount"
	tilefs_umount "$MNT"
}

# file_gets URI: how many GETs of URI the origin answered
file_gets() {
	origin_select 'm == "GET" && u == "'"$1"'" && st < 300' | wc -l
}

@test "open ahead: the first band a reader opens of a patch folder has the folder's other small files fetched at once, each once; their opens then ask the origin nothing" {
	local i b
	for ((i = 0; i < 6; i++)); do
		mkdir -p "$T/web/p00$i"
		for b in B02 B03 B04 B08; do
			head -c $((8000 + i * 100)) /dev/urandom >"$T/web/p00$i/$b.tif"
		done
	done
	# beside the bands of p001, a file too big to be fetched whole: not a
	# sample's folder; nor is the root, nor a folder with one inside
	head -c $((300 * 1024)) /dev/urandom >"$T/web/p001/preview.png"
	head -c 3000 /dev/urandom >"$T/web/top.tif"
	mkdir "$T/web/p002/sub"
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT"
	cmp "$MNT/p003/B02.tif" "$T/web/p003/B02.tif"
	bands_fetched() {
		local b
		for b in B03 B04 B08; do
			[ "$(file_gets "/$1/$b.tif")" -ge 1 ] || return 1
		done
	}
	wait_until "the other bands of p003 fetched" bands_fetched p003
	for b in B02 B03 B04 B08; do
		assert_eq "$(file_gets "/p003/$b.tif")" 1 "GETs of p003/$b.tif"
	done
	assert_eq "$(origin_select 'm == "GET" && u ~ /\.tif$/ && u !~ /^\/p003\//' | wc -l)" 0 \
		"GETs of files of the other folders"
	origin_log_reset
	for b in B03 B04 B08; do
		cmp "$MNT/p003/$b.tif" "$T/web/p003/$b.tif" || fail "p003/$b.tif differs"
	done
	assert_eq "$(origin_lines)" "" "requests of the opens and reads of the other bands"
	# no file of p001, p002 or the root fetched ahead: after the reads
	# below, a sample's bands are, after anything those reads queued
	cmp "$MNT/p001/B08.tif" "$T/web/p001/B08.tif"
	cmp "$MNT/p002/B08.tif" "$T/web/p002/B08.tif"
	cmp "$MNT/top.tif" "$T/web/top.tif"
	cmp "$MNT/p005/B08.tif" "$T/web/p005/B08.tif"
	wait_until "the other bands of p005 fetched" bands_fetched p005
	assert_eq "$(origin_select 'm == "GET" && u ~ /^\/(p001|p002)\/|^\/[^\/]*$/' | awk '{ print $2 }' |
		sort | tr '\n' ' ')" "/p001/B08.tif /p002/B08.tif /top.tif " \
		"GETs of files of the root, p001 and p002"
	tilefs_umount "$MNT"
}

bands_fetched_p001() {
	local b
	for b in B02 B03 B04; do
		[ "$(file_gets "/p001/$b.tif")" -ge 1 ] || return 1
	done
}

@test "open ahead: a folder of more small files than a sample has opens nothing ahead" {
	local i b
	mkdir -p "$T/web/class" "$T/web/p001"
	for ((i = 0; i < 40; i++)); do
		head -c 4000 /dev/urandom >"$T/web/class/img$i.tif"
	done
	for b in B02 B03 B04 B08; do
		head -c 8000 /dev/urandom >"$T/web/p001/$b.tif"
	done
	origin_start "$T/web"
	tilefs_mount "$ORIGIN_URL" "$MNT"
	cmp "$MNT/class/img7.tif" "$T/web/class/img7.tif"
	# a sample read after it: its bands are fetched ahead after anything
	# the open in class/ could have queued
	cmp "$MNT/p001/B08.tif" "$T/web/p001/B08.tif"
	wait_until "the other bands of p001 fetched" bands_fetched_p001
	assert_eq "$(origin_select 'm == "GET" && u ~ /^\/class\/.*\.tif$/' | awk '{ print $2 }')" \
		"/class/img7.tif" "files of class/ fetched"
	tilefs_umount "$MNT"
}
