#!/usr/bin/env python3
"""mmap_check.py: maps files through a tilefs mount, as np.memmap,
Python's mmap(ACCESS_READ) and torch.from_file do, and checks the bytes.

  mmap_check.py map FILE LOCAL FLAG...
      For each FLAG (MAP_SHARED or MAP_PRIVATE), opens FILE, maps it whole
      with that flag and PROT_READ, and checks random slices and the whole
      map against LOCAL (a copy of the origin's file).

  mmap_check.py versions FILE ORIGIN NEW FLAG WAIT
      FILE is ORIGIN's file under the mount (a mount with --ttl WAIT, or 0).
      Maps FILE (the version ORIGIN holds now) with FLAG and reads it all;
      replaces ORIGIN with NEW (renamed over it, as a publisher would);
      after WAIT seconds opens and maps FILE again: the new version. Then
      reads the first map again, and checks that the second map holds NEW's
      bytes and the first the old ones (a new version never shows pages of
      an older one, nor the older one pages of the new). Closes both, opens
      and maps FILE once more: NEW's bytes.

Exit status 0 and "ok" on stdout; else a message naming what differed or
the error (errno name), e.g. "MAP_SHARED of FILE: ENODEV ...".
"""
import errno
import mmap
import os
import random
import shutil
import sys
import time


def die(msg):
    sys.exit(msg)


def map_file(path, flag):
    """(fd, map) of PATH mapped whole with FLAG; dies naming the errno."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        die("open %s: %s (%s)" % (path, errno.errorcode.get(e.errno, e.errno), e.strerror))
    try:
        m = mmap.mmap(fd, 0, flags=getattr(mmap, flag), prot=mmap.PROT_READ)
    except OSError as e:
        os.close(fd)
        die("%s of %s: %s (%s)" % (flag, path, errno.errorcode.get(e.errno, e.errno), e.strerror))
    return fd, m


def check_map(m, want, what):
    if len(m) != len(want):
        die("%s: %d bytes mapped, %d wanted" % (what, len(m), len(want)))
    rng = random.Random(len(want))
    for _ in range(100):
        off = rng.randrange(len(want))
        n = rng.randint(1, 65536)
        if m[off:off + n] != want[off:off + n]:
            die("%s: slice %d+%d differs" % (what, off, n))
    if m[:] != want:
        die("%s: the whole map differs" % what)


def describe(got, old, new):
    if got == new:
        return "the new version's bytes"
    if got == old:
        return "the old version's bytes"
    return "a mix of bytes"


def cmd_map(path, local, flags):
    want = open(local, "rb").read()
    for flag in flags:
        fd, m = map_file(path, flag)
        try:
            check_map(m, want, "%s of %s" % (flag, path))
        finally:
            m.close()
            os.close(fd)


def cmd_versions(path, origin, new, flag, wait):
    old_b = open(origin, "rb").read()
    new_b = open(new, "rb").read()
    fd1, m1 = map_file(path, flag)
    check_map(m1, old_b, "%s of the old version" % flag)
    shutil.copy2(new, origin + ".tmp")
    os.rename(origin + ".tmp", origin)
    time.sleep(wait)
    fd2, m2 = map_file(path, flag)
    # the second map first, then the first map read again, then the second:
    # pages the old file brings in must never be the new map's
    got1 = m1[:]
    got2 = m2[:]
    if got2 != new_b:
        die("%s of the new version, beside a map of the old one, reads %s"
            % (flag, describe(got2, old_b, new_b)))
    if got1 != old_b:
        die("%s of the old version, beside a map of the new one, reads %s"
            % (flag, describe(got1, old_b, new_b)))
    if m2[:] != new_b:
        die("%s of the new version, after the old map was read again, reads %s"
            % (flag, describe(m2[:], old_b, new_b)))
    m1.close()
    m2.close()
    os.close(fd1)
    os.close(fd2)
    time.sleep(0.5)     # the kernel sends releases asynchronously
    fd3, m3 = map_file(path, flag)
    got3 = m3[:]
    m3.close()
    os.close(fd3)
    if got3 != new_b:
        die("%s of the new version, once the old was closed, reads %s"
            % (flag, describe(got3, old_b, new_b)))


def main(argv):
    if len(argv) >= 4 and argv[1] == "map":
        cmd_map(argv[2], argv[3], argv[4:])
    elif len(argv) == 7 and argv[1] == "versions":
        cmd_versions(argv[2], argv[3], argv[4], argv[5], float(argv[6]))
    else:
        die(__doc__)
    print("ok")


if __name__ == "__main__":
    main(sys.argv)
