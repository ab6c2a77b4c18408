#!/usr/bin/env bats
# The cache dir is private to the user running tilefs (issue 13, items 2, 3,
# 5, 11): created 0700 with 0600 files, refused when another user owns it or
# others may write to it, links in it not followed, no token stored in
# index.db or shown by ps, hostile index rows do not crash tools.

bats_require_minimum_version 1.5.0
load ../lib/tilefs

setup() {
	tilefs_setup
	origin_start "$SAMPLES"
	MNT=$T/mnt
	CACHE=$T/cache
	mkdir -p "$MNT"
}

teardown() {
	tilefs_teardown
}

@test "cache dir: created 0700, its files 0600" {
	tilefs_mount "$ORIGIN_URL" "$MNT" --metrics-file "$T/metrics.prom"
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	tilefs_umount "$MNT"
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-dir "$CACHE" --log-level info --log-file "$CACHE/tilefs.log"
	cat "$MNT/notes.txt" > /dev/null
	assert_eq "$(stat -c %a "$CACHE")" 700 "mode of the cache dir"
	local f bad=
	while IFS= read -r f; do
		case $(stat -c %F "$f") in
		directory) [ "$(stat -c %a "$f")" = 700 ] || bad+=" $f:$(stat -c %a "$f")" ;;
		*) [ "$(stat -c %a "$f")" = 600 ] || bad+=" $f:$(stat -c %a "$f")" ;;
		esac
	done < <(find "$CACHE" -mindepth 1)
	find "$CACHE" -name index.db -o -name reserve -o -name '*.prom' | grep -q prom ||
		fail "no mounts/*.prom to check"
	tilefs_umount "$MNT"
	[ -z "$bad" ] || fail "not private:$bad"
}

@test "cache dir: refused when owned by another user or writable by others" {
	mkdir -m 0700 "$CACHE"
	chown nobody "$CACHE"
	tilefs_run mount "$ORIGIN_URL" "$MNT" --cache-dir "$CACHE"
	assert_eq "$status" 1 "exit of mount on a cache dir owned by nobody"
	[[ $err == *"cache dir $CACHE is owned by uid"*"chown"* ]] || fail "message: $err"
	for cmd in "cache stat" "cache ls" "inspect $ORIGIN_URL/t256.tif"; do
		# shellcheck disable=SC2086
		tilefs_run $cmd --cache-dir "$CACHE"
		assert_eq "$status" 1 "exit of $cmd"
		[[ $err == *"is owned by uid"* ]] || fail "$cmd: $err"
	done
	[ ! -e "$CACHE/index.db" ] || fail "index.db made in a dir of another user"
	chown root "$CACHE"
	chmod o+w "$CACHE"
	tilefs_run warm "$ORIGIN_URL" --cache-dir "$CACHE"
	assert_eq "$status" 1 "exit of warm on a cache dir writable by others"
	[[ $err == *"is writable by others"*"chmod go-w"* ]] || fail "message: $err"
	chmod o-w,g+w "$CACHE"
	tilefs_run cache stat --cache-dir "$CACHE"
	[[ $status == 1 && $err == *"writable by its group"* ]] || fail "group-writable: $err"
}

@test "cache dir: an older cache dir readable by others is closed to them" {
	mkdir -m 0755 "$CACHE"
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-dir "$CACHE"
	tilefs_umount "$MNT"
	assert_eq "$(stat -c %a "$CACHE")" 700 "mode after a mount"
}

@test "cache dir: links named reserve and index.lock are not followed" {
	mkdir -m 0700 "$CACHE"
	: > "$T/victim"
	ln -s "$T/victim" "$CACHE/reserve"
	ln -s "$T/created-by-root" "$CACHE/index.lock"
	tilefs_run cache stat --cache-dir "$CACHE"
	assert_eq "$(stat -c %s "$T/victim")" 0 "size of the file reserve linked to"
	[ ! -e "$T/created-by-root" ] || fail "index.lock link followed: file created"
	assert_eq "$status" 1 "exit of cache stat with an index.lock link"
}

@test "inspect: the cache dir in a user.* xattr is believed only on a tilefs mount" {
	mkdir -m 0700 "$CACHE"
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-dir "$CACHE"
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	tilefs_run inspect "$MNT/t256.tif"
	assert_eq "$status" 0 "inspect of a file in the mount"
	[[ $out == *"cached:"* ]] || fail "not reported from the index: $out"
	tilefs_umount "$MNT"
	# a local file whose xattr names the cache dir: parsed, not looked up
	cp "$SAMPLES/t256.tif" "$T/local.tif"
	"$PY" -c 'import os, sys; os.setxattr(sys.argv[1], "user.tilefs.object", sys.argv[2].encode())' \
		"$T/local.tif" "$(printf '1\t%s' "$CACHE")" || skip "no user xattrs in $T"
	tilefs_run inspect "$T/local.tif"
	assert_eq "$status" 0 "inspect of a local file"
	[[ $out != *"cached:"* ]] || fail "the forged xattr was believed: $out"
}

@test "index.db keys objects without the query: no token stored, a renewed one hits" {
	tilefs_mount "${ORIGIN_URL}?sv=1&sig=SEKRIT-idx1" "$MNT" --cache-dir "$CACHE"
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	tilefs_umount "$MNT"
	! grep -rl -e SEKRIT -e 'sig=' "$CACHE" || fail "the query string is in the cache dir"
	[ -z "$(sqlite3 "$CACHE/index.db" "SELECT url FROM objects WHERE url LIKE '%?%'")" ] ||
		fail "a URL with a query in index.db"
	tilefs_mount "${ORIGIN_URL}?sv=2&sig=RENEWED-2" "$MNT" --cache-dir "$CACHE"
	origin_log_reset
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	tilefs_umount "$MNT"
	local gets
	gets=$(origin_select 'm == "GET" && u ~ "^/t256.tif"' | wc -l)
	assert_eq "$gets" 0 "GETs of t256.tif after the SAS was renewed"
}

@test "ps: /proc/PID/cmdline of a mount shows no token" {
	tilefs_mount "${ORIGIN_URL}?sv=1&sig=SEKRIT-ps1" "$MNT" \
		-o "ttl=5,endpoint=http://user:PASSWD-ps@127.0.0.1:1/?token=TOKEN-ps"
	local pid
	pid=$(tilefs_pid "$MNT")
	[ -n "$pid" ] || fail "no daemon"
	tr '\0' ' ' < "/proc/$pid/cmdline" > "$T/cmdline"
	grep -q "$MNT" "$T/cmdline" || fail "cmdline not read: $(cat "$T/cmdline")"
	! grep -e SEKRIT -e 'sig=' -e PASSWD -e TOKEN "$T/cmdline" || fail "ps shows a secret"
	! ps -o args= -p "$pid" | grep -e SEKRIT -e 'sig=' || fail "ps shows the query"
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	tilefs_umount "$MNT"
}

@test "a hostile index row: block_size 0, a huge header_len, a path in meta.instance" {
	tilefs_run warm "$ORIGIN_URL" t256.tif notes.txt --cache-dir "$CACHE"
	assert_eq "$status" 0 "first warm"
	sqlite3 "$CACHE/index.db" "UPDATE objects SET block_size = 0;
		UPDATE tile_maps SET header_len = 1099511627776;"
	tilefs_run warm "$ORIGIN_URL" t256.tif notes.txt --cache-dir "$CACHE"
	[ "$status" -lt 128 ] || fail "warm died of signal $((status - 128)): $err"
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-dir "$CACHE" --log-level warn
	cmp "$SAMPLES/t256.tif" "$MNT/t256.tif"
	cmp "$SAMPLES/notes.txt" "$MNT/notes.txt"
	tilefs_umount "$MNT"
	grep -q "damaged row" "$TILEFS_LOG" || fail "no log line of the damaged row"
	sqlite3 "$CACHE/index.db" "UPDATE meta SET value = '../../../tmp/x' WHERE key = 'instance'"
	tilefs_run cache stat --cache-dir "$CACHE"
	assert_eq "$status" 0 "cache stat on a damaged meta.instance (rebuilt)"
	[ ! -e "$T/../../../tmp/x" ] && ! ls -d "$CACHE"/data-.* 2>/dev/null ||
		fail "a data dir outside the cache"
}

# head_same MNT: the first 1 MiB of t512.tif (its header and first tiles,
# not all of it, so it is never sealed) reads through MNT as at the origin.
head_same() {
	run_to 120 cmp -n 1048576 "$SAMPLES/t512.tif" "$1/t512.tif" ||
		fail "the first MiB of t512.tif differs from the origin's"
}

# punch_count_file_damaged HOW: with t512.tif's first units cached and
# known to the mount, HOW (truncate or replace) damages the shared count of
# punches, another process evicts those units (punching them out), and the
# mount still serves the origin's bytes, fetching them again.
punch_count_file_damaged() {
	tilefs_mount "$ORIGIN_URL" "$MNT" --cache-dir "$CACHE" --log-level info --prefetch none
	head_same "$MNT"
	head_same "$MNT"	# now read without asking the index
	local punches
	punches=$(compgen -G "$CACHE/data-*/punches") || fail "no punches file in $CACHE"
	case $1 in
	truncate)
		truncate -s 0 "$punches"
		head_same "$MNT"	# the mount reads the count before anyone rewrote it
		tilefs_alive "$MNT"
		;;
	replace)
		cp "$punches" "$punches.copy"	# the same counts, another file
		mv "$punches.copy" "$punches"
		;;
	esac
	tilefs_run cache evict --cache-dir "$CACHE" t512.tif
	assert_eq "$status" 0 "exit of cache evict"
	origin_log_reset
	head_same "$MNT"
	[ "$(origin_gets /t512.tif)" -gt 0 ] || fail "the evicted units were not fetched again"
	head_same "$MNT"
	tilefs_alive "$MNT"
	tilefs_umount "$MNT"
}

@test "the punch count file truncated under a mount: no crash, the origin's bytes" {
	punch_count_file_damaged truncate
}

@test "the punch count file replaced under a mount: the origin's bytes after an eviction" {
	punch_count_file_damaged replace
}
