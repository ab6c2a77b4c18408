#!/usr/bin/env bats
# The Debian package, as a user meets it: `make deb` builds it, lintian
# finds no error, apt-get installs it, `mount -t tilefs` and an fstab line
# (mount --fstab) mount through mount.tilefs and read bytes identical to the
# origin, umount ends the daemon, the systemd units verify, the man page
# lists every option --help lists, the README and docs/ are in it, a user
# other than root mounts, and dpkg -r leaves nothing behind. The package is
# built and installed once for the file, and removed at the end even when a
# test fails.

bats_require_minimum_version 1.5.0
load ../lib/tilefs

setup_file() {
	command -v dpkg-buildpackage >/dev/null ||
		skip "dpkg-buildpackage is not installed (packaging/install-deps installs it)"
	if dpkg-query -W -f='${Status}' tilefs 2>/dev/null | grep -q 'install ok installed'; then
		skip "a tilefs package is installed already; this test installs and removes its own"
	fi
	PKG=$BATS_FILE_TMPDIR/pkg
	export PKG
	make -C "$REPO_ROOT" --no-print-directory BUILD="$PKG" deb >"$BATS_FILE_TMPDIR/deb.log" 2>&1 || {
		tail -n 40 "$BATS_FILE_TMPDIR/deb.log" >&2
		return 1
	}
	DEB=$(echo "$PKG"/tilefs_*.deb)
	export DEB
	dpkg-deb -x "$DEB" "$BATS_FILE_TMPDIR/tree"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$DEB" >"$BATS_FILE_TMPDIR/install.log" 2>&1 || {
		cat "$BATS_FILE_TMPDIR/install.log" >&2
		return 1
	}
}

teardown_file() {
	if dpkg-query -W -f='${Status}' tilefs 2>/dev/null | grep -q 'install ok installed'; then
		dpkg -r tilefs >/dev/null 2>&1 || true
	fi
}

setup() {
	tilefs_setup
	MNT=$T/mnt
	USER_DIR=""
}

teardown() {
	if [ -n "$USER_DIR" ]; then
		is_mounted "$USER_DIR/mnt" && fusermount3 -uz "$USER_DIR/mnt"
		# a daemon left in the test's mount namespace
		for pid in $(pgrep -f -- "tilefs mount .* $USER_DIR/mnt\$"); do
			kill -KILL "$pid"
		done
		rm -rf "$USER_DIR"
	fi
	tilefs_teardown
}

# wait_gone MNT: the daemon serving MNT has exited.
daemon_gone() {
	! pgrep -f -- "tilefs mount .* $1\$" >/dev/null
}
wait_gone() {
	wait_until "the exit of the daemon for $1 after umount" daemon_gone "$1"
}

@test "make deb: tilefs_VERSION_ARCH.deb with the runtime libraries as dependencies and every file" {
	version=$(sed -n 's/^VERSION := //p' "$REPO_ROOT/Makefile")
	assert_eq "$(basename "$DEB")" "tilefs_${version}_$(dpkg --print-architecture).deb" "package file"
	depends=$(dpkg-deb -f "$DEB" Depends)
	echo "Depends: $depends"
	for lib in fuse3 libfuse3-3 libcurl4 libtiff6 libsqlite3-0 libssl3; do
		[[ ", $depends" == *", $lib"[\ ,]* || ", $depends" == *", $lib" ]] ||
			fail "Depends lacks $lib: $depends"
	done
	for f in usr/bin/tilefs sbin/mount.tilefs usr/share/man/man1/tilefs.1.gz \
		usr/share/man/man8/mount.tilefs.8.gz lib/systemd/system/tilefs-warm@.service \
		usr/share/tilefs/example.conf usr/share/bash-completion/completions/tilefs \
		usr/share/doc/tilefs/examples/mnt-eo.mount usr/share/doc/tilefs/copyright; do
		[ -f "$BATS_FILE_TMPDIR/tree/$f" ] || fail "the package lacks /$f"
	done
	[ -x /usr/bin/tilefs ] && [ -x /sbin/mount.tilefs ] || fail "not installed"
	[ -f /etc/tilefs/example.conf ] || fail "no /etc/tilefs/example.conf after install"
	run -0 /usr/bin/tilefs --version
	assert_eq "$output" "tilefs $version" "tilefs --version"
}

@test "the package ships the README and every page of docs/, as in the tree, uncompressed" {
	local doc=$BATS_FILE_TMPDIR/tree/usr/share/doc/tilefs md missing="" n=0
	cmp "$REPO_ROOT/README.md" "$doc/README.md" || fail "no /usr/share/doc/tilefs/README.md as in the tree"
	for md in "$REPO_ROOT"/docs/*.md; do
		n=$((n + 1))
		cmp -s "$md" "$doc/docs/$(basename "$md")" || missing="$missing docs/$(basename "$md")"
	done
	[ "$n" -ge 5 ] || fail "only $n pages in docs/"
	[ -z "$missing" ] || fail "the package lacks, or holds another version of:$missing"
	# the README's links to docs/ lead somewhere in the package too
	while IFS= read -r target; do
		[ -e "$doc/${target%%#*}" ] || missing="$missing $target"
	done < <(grep -oE '\]\(docs/[^)]+\)' "$REPO_ROOT/README.md" | sed -E 's/^\]\((.*)\)$/\1/')
	[ -z "$missing" ] || fail "the installed README links to what the package lacks:$missing"
	grep -q '^<!-- BEGIN credentials table' "$doc/docs/CONFIGURATION.md" ||
		fail "the installed CONFIGURATION.md has no credentials table"
}

@test "lintian reports no error on the package" {
	command -v lintian >/dev/null || fail "lintian is not installed (packaging/install-deps)"
	run lintian --fail-on error "$DEB"
	echo "$output"
	assert_eq "$status" 0 "lintian exit status"
	! grep -q '^E: ' <<<"$output" || fail "lintian errors"
}

@test "mount -t tilefs with name=value options: bytes identical, util-linux's options ignored, umount ends it" {
	origin_start "$SAMPLES"
	mkdir -p "$MNT"
	TILEFS_EXTRA_MOUNTS+=("$MNT")
	run -0 mount -t tilefs "$ORIGIN_URL" "$MNT" \
		-o cache_dir="$T/cache",cache-size=100M,ttl=30,_netdev,nofail,defaults,x-systemd.automount,rw
	is_mounted "$MNT" || fail "$MNT not mounted"
	grep " $MNT fuse.tilefs ro," /proc/mounts || fail "not a read-only tilefs mount"
	cmp_tree "$SAMPLES" "$MNT"
	[ -f "$T/cache/index.db" ] || fail "cache_dir= was not used"
	[ "$(origin_gets)" -gt 0 ] || fail "no ranged GET reached the origin"
	run -0 umount "$MNT"
	! is_mounted "$MNT" || fail "still mounted after umount"
	wait_gone "$MNT"
}

@test "an fstab line (mount --fstab FILE MOUNTPOINT) mounts with allow_other; umount" {
	origin_start "$SAMPLES"
	mkdir -p "$MNT"
	TILEFS_EXTRA_MOUNTS+=("$MNT")
	printf '%s %s tilefs cache_dir=%s,cache_size=200M,_netdev,allow_other 0 0\n' \
		"$ORIGIN_URL" "$MNT" "$T/cache" >"$T/fstab"
	run -0 mount --fstab "$T/fstab" "$MNT"
	grep " $MNT fuse.tilefs .*allow_other" /proc/mounts || fail "not mounted with allow_other"
	cmp_tree "$SAMPLES" "$MNT"
	run -0 umount "$MNT"
	! is_mounted "$MNT" || fail "still mounted after umount"
	wait_gone "$MNT"
}

@test "mount.tilefs: a bad option value fails with tilefs's message; -f -v shows the command without the query" {
	origin_start "$SAMPLES"
	mkdir -p "$MNT"
	TILEFS_EXTRA_MOUNTS+=("$MNT")
	run mount -t tilefs "$ORIGIN_URL" "$MNT" -o cache_dir="$T/cache",ttl=banana
	echo "$output"
	[ "$status" != 0 ] || fail "mount with ttl=banana succeeded"
	[[ $output == *"--ttl: 'banana' is not a number"* ]] || fail "no message about ttl"
	! is_mounted "$MNT" || fail "mounted anyway"

	run -0 /sbin/mount.tilefs "${ORIGIN_URL}?sig=SEKRIT" "$MNT" -f -v -o noauto,cache_dir=/c,nodev
	echo "$output"
	assert_eq "$output" "mount.tilefs: /usr/bin/tilefs mount -o cache_dir=/c,nodev $ORIGIN_URL $MNT" \
		"mount.tilefs -v"
	! is_mounted "$MNT" || fail "-f (fake) mounted"
}

@test "mount.tilefs: option words are never globbed against the files of the current directory" {
	mkdir -p "$T/here" "$MNT"
	touch "$T/here/allow_other" "$T/here/log_file=x.log"
	cd "$T/here"
	run -0 /sbin/mount.tilefs "http://127.0.0.1:1/" "$MNT" -f -v -o 'ro,*'
	echo "$output"
	assert_eq "$output" "mount.tilefs: /usr/bin/tilefs mount -o * http://127.0.0.1:1/ $MNT" \
		"mount.tilefs -v with -o 'ro,*'"
	run -0 /sbin/mount.tilefs "http://127.0.0.1:1/" "$MNT" -f -v -o 'allow_*'
	echo "$output"
	assert_eq "$output" "mount.tilefs: /usr/bin/tilefs mount -o allow_* http://127.0.0.1:1/ $MNT" \
		"mount.tilefs -v with -o 'allow_*'"
}

@test "tilefs(1) lists every option of --help, and only those; mount.tilefs(8) points to it" {
	man1=$(zcat "$BATS_FILE_TMPDIR/tree/usr/share/man/man1/tilefs.1.gz")
	help_opts=$( (/usr/bin/tilefs mount --help; /usr/bin/tilefs warm --help) |
		grep -o -- '--[a-z][a-z-]*' | sort -u)
	man_opts=$(sed -n 's/^\\fB\\-\\-\([a-z\\-]*\)\\fR.*/\1/p; s/^\\fB\\-.\\fR, \\fB\\-\\-\([a-z\\-]*\)\\fR.*/\1/p' \
		<<<"$man1" | sed 's/\\-/-/g; s/^/--/' | sort -u)
	[ -n "$man_opts" ] || fail "no option found in tilefs(1)"
	diff <(echo "$help_opts") <(echo "$man_opts") || fail "--help and tilefs(1) disagree"
	grep -q 'tilefs \\- ' <<<"$man1" || fail "tilefs(1) has no NAME line"
	zcat "$BATS_FILE_TMPDIR/tree/usr/share/man/man8/mount.tilefs.8.gz" | grep -q 'fBtilefs\\fR(1)' ||
		fail "mount.tilefs(8) does not point to tilefs(1)"
}

@test "systemd-analyze verify accepts tilefs-warm@.service and the example mount unit" {
	command -v systemd-analyze >/dev/null ||
		skip "systemd-analyze is not installed (the systemd package)"
	run -0 systemd-analyze verify /lib/systemd/system/tilefs-warm@.service
	echo "$output"
	[ -z "$output" ] || fail "systemd-analyze verify complains about tilefs-warm@.service"
	grep -q '^EnvironmentFile=/etc/tilefs/%i.conf$' /lib/systemd/system/tilefs-warm@.service ||
		fail "tilefs-warm@.service does not read /etc/tilefs/NAME.conf"
	cp /usr/share/doc/tilefs/examples/mnt-eo.mount "$T/mnt-eo.mount"
	run -0 systemd-analyze verify "$T/mnt-eo.mount"
	echo "$output"
	[ -z "$output" ] || fail "systemd-analyze verify complains about mnt-eo.mount"
}

# user_dir: a directory the user nobody owns, outside the test's private tmp.
user_dir() {
	USER_DIR=$(mktemp -d /tmp/tilefs-user.XXXXXX)
	chmod 755 "$USER_DIR"
	mkdir -p "$USER_DIR/mnt"
	cp "$SAMPLES/t256.tif" "$USER_DIR/t256.tif"
	chown -R nobody "$USER_DIR"
}

as_nobody() {
	run_to 60 runuser -u nobody -- env HOME="$USER_DIR" XDG_CACHE_HOME="$USER_DIR/xdg" "$@"
}

@test "a user other than root mounts, with the cache in XDG_CACHE_HOME, and unmounts" {
	origin_start "$SAMPLES"
	user_dir
	local user_mount="
		set -e
		runuser -u nobody -- env HOME=$USER_DIR XDG_CACHE_HOME=$USER_DIR/xdg \\
			/usr/bin/tilefs mount $ORIGIN_URL $USER_DIR/mnt
		grep ' $USER_DIR/mnt fuse.tilefs .*user_id=65534' /proc/mounts
		runuser -u nobody -- cmp $USER_DIR/t256.tif $USER_DIR/mnt/t256.tif
		test -f $USER_DIR/xdg/tilefs/index.db
		runuser -u nobody -- fusermount3 -u $USER_DIR/mnt
		! grep -q ' $USER_DIR/mnt ' /proc/mounts"
	if runuser -u nobody -- test -r /dev/fuse -a -w /dev/fuse; then
		run -0 run_to 60 sh -c "$user_mount"
	else
		# Here only root may open /dev/fuse: tilefs says so. Then the same
		# in a mount namespace of this test where /dev/fuse is 0666, as
		# Debian makes it.
		run -1 as_nobody /usr/bin/tilefs mount "$ORIGIN_URL" "$USER_DIR/mnt"
		echo "$output"
		[[ $output == *"needs read and write access to /dev/fuse"* ]] ||
			fail "no word of /dev/fuse's mode"
		run -0 run_to 60 unshare -m --propagation private sh -c "
			mknod -m 666 $USER_DIR/fuse c 10 229 && mount --bind $USER_DIR/fuse /dev/fuse
			$user_mount"
	fi
	echo "$output"
	wait_gone "$USER_DIR/mnt"
}

@test "a user other than root asking for allow_other without user_allow_other is told to add it" {
	if grep -qE '^[[:space:]]*user_allow_other[[:space:]]*$' /etc/fuse.conf 2>/dev/null; then
		skip "/etc/fuse.conf has user_allow_other on this machine"
	fi
	origin_start "$SAMPLES"
	user_dir
	run -1 as_nobody /usr/bin/tilefs mount -o allow_other "$ORIGIN_URL" "$USER_DIR/mnt"
	echo "$output"
	[[ $output == *"'user_allow_other' in /etc/fuse.conf"* ]] || fail "no word of user_allow_other"
	! is_mounted "$USER_DIR/mnt" || fail "mounted anyway"
	assert_eq "$(wc -l <"$ORIGIN_LOG")" 0 "requests to the origin before refusing"
}

@test "bash completion offers the commands, the options tilefs mount --help lists, and hint's own" {
	mkdir -p "$T/comp/mnt"
	: >"$T/comp/order.txt"
	run -0 bash -c 'source /usr/share/bash-completion/completions/tilefs
		COMP_WORDS=(tilefs w); COMP_CWORD=1; _tilefs; echo "${COMPREPLY[*]}"
		COMP_WORDS=(tilefs mount --cache-s); COMP_CWORD=2; _tilefs; echo "${COMPREPLY[*]}"
		COMP_WORDS=(tilefs mount --prefetch n); COMP_CWORD=3; _tilefs; echo "${COMPREPLY[*]}"
		COMP_WORDS=(tilefs hint --cl); COMP_CWORD=2; _tilefs; echo "${COMPREPLY[*]}"
		cd "$1"
		COMP_WORDS=(tilefs hint mnt or); COMP_CWORD=3; _tilefs; echo "${COMPREPLY[*]}"' \
		_ "$T/comp"
	echo "$output"
	assert_eq "${lines[0]}" "warm" "tilefs w<TAB>"
	assert_eq "${lines[1]}" "--cache-size" "tilefs mount --cache-s<TAB>"
	assert_eq "${lines[2]}" "none neighbors" "--prefetch n<TAB>"
	assert_eq "${lines[3]}" "--client --clear --clear-all" "tilefs hint --cl<TAB>"
	assert_eq "${lines[4]}" "order.txt" "tilefs hint MOUNTPOINT or<TAB> (the order file)"
}

@test "the package's Python module: a clean Python imports tilefs.torch from it, and a DataLoader epoch hinted through a mount reads every file right" {
	"$PY" -c 'import torch' 2>/dev/null ||
		fail "python3-torch is not installed (packaging/install-deps installs it)"
	for f in __init__.py torch.py; do
		[ -f "$BATS_FILE_TMPDIR/tree/usr/lib/python3/dist-packages/tilefs/$f" ] ||
			fail "the package lacks tilefs/$f"
	done
	origin_start "$SAMPLES"
	mkdir -p "$MNT"
	TILEFS_EXTRA_MOUNTS+=("$MNT")
	run -0 mount -t tilefs "$ORIGIN_URL" "$MNT" -o cache_dir="$T/cache",prefetch=none
	# -I: no PYTHONPATH, no user site, not the current directory
	run -0 env -i PATH=/usr/bin:/bin /usr/bin/python3 -I - "$MNT" "$SAMPLES" <<'PYEOF'
import os, sys, time
import tilefs
from tilefs.torch import HintedSampler
from torch.utils.data import DataLoader, Dataset, RandomSampler
mnt, local = sys.argv[1], sys.argv[2]
if not tilefs.__file__.startswith("/usr/lib/python3/dist-packages/tilefs/"):
    sys.exit("tilefs imported from " + tilefs.__file__)
files = sorted(os.path.relpath(os.path.join(d, f), local)
               for d, _, names in os.walk(local) for f in names)

class Files(Dataset):
    def __len__(self):
        return len(files)
    def __getitem__(self, i):
        with open(os.path.join(mnt, files[i]), "rb") as m, \
                open(os.path.join(local, files[i]), "rb") as l:
            return int(m.read() == l.read())

sampler = HintedSampler(RandomSampler(range(len(files))), lambda i: files[i], mnt)
right = sum(DataLoader(Files(), sampler=sampler, batch_size=None, num_workers=2))
if sampler.warned or right != len(files):
    sys.exit("%d of %d files read right, hinted: %s" % (right, len(files), not sampler.warned))
for _ in range(600):  # the counters are rewritten every few seconds
    if tilefs.Mount(mnt).counters().get("tilefs_hint_entries") == len(files):
        break
    time.sleep(0.1)
else:
    sys.exit("the mount's counters never showed the hint")
print("read %d files right, hinted" % right)
PYEOF
	echo "$output"
	[[ $output == "read "*" files right, hinted" ]] || fail "unexpected output"
	run -0 umount "$MNT"
	wait_gone "$MNT"
}

@test "dpkg -r tilefs leaves nothing behind but the cache dir the user made" {
	mkdir -p "$T/cache"
	/usr/bin/tilefs cache stat --cache-dir "$T/cache" >/dev/null
	files=$(dpkg -L tilefs | sort)
	run -0 dpkg -r tilefs
	echo "$output"
	left=""
	while IFS= read -r f; do
		[ -e "$f" ] && [ ! -d "$f" ] && left="$left $f"
	done <<<"$files"
	[ -z "$left" ] || fail "left after dpkg -r:$left"
	[ ! -e /etc/tilefs ] || fail "/etc/tilefs is left: $(ls -A /etc/tilefs)"
	[ ! -e /usr/lib/python3/dist-packages/tilefs ] ||
		fail "the Python package's folder is left: $(ls -A /usr/lib/python3/dist-packages/tilefs)"
	run dpkg-query -W -f='${db:Status-Abbrev}' tilefs
	[[ $status != 0 || $output == "un"* || -z $output ]] ||
		fail "dpkg still knows tilefs: '$output'"
	compgen -G "/var/lib/dpkg/info/tilefs.*" >/dev/null && fail "dpkg keeps $(echo /var/lib/dpkg/info/tilefs.*)"
	[ -f "$T/cache/index.db" ] || fail "the user's cache dir went with the package"
}
