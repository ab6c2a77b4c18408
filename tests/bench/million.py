#!/usr/bin/python3
"""A cache of a million tiles: what a mount costs when its cache is large.

Run alone (tests/bench/million.py --help) or through bench.py's `million`
workload. Generates (once, under tests/.cache/bench/million-v1/) FILES COGs
of SIZE x SIZE pixels, uint8, 1 band, 16x16 tiles, DEFLATE, no overviews
(4 files of 8192 x 8192: 1,048,576 tiles of about 12 bytes, 27 MB), and a
directory `many/` of NAMES empty files. nginx serves them on 127.0.0.1 with
no added latency. Then, each step timed:

  warm      `tilefs warm` of the first 1k, 100k and all units (three cache
            dirs), so a hit's cost can be read at each size
  rss       a fresh mount of the full cache: the daemon's RSS (VmRSS, and
            smaps_rollup's anonymous and file-backed parts) every 0.5 s for
            5 s before any read, then after reading READS random tiles
  hits      READS random warm tiles by pread through each mount and from
            local disk, one process, in the same order, once to fill the
            page cache and again timed: rate ratio to local
  ready     kill -9 of the daemon, then a new mount: seconds until it serves
  stat      `tilefs cache stat` of the full cache
  list      `many/` through the mount: os.scandir (names), then os.lstat of
            each (ls -l), first listing and again

Prints one JSON object on stdout (and --json FILE); progress on stderr. The
exit status is 1 if a read returned bytes other than the local file's, a
listing missed or repeated a name, or a step failed; never for a slow step.
"""
import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
import bench  # noqa: E402

DATA_VERSION = "million-v1"
TILE = 16


def log(msg):
    sys.stderr.write("million: %s\n" % msg)
    sys.stderr.flush()


def generate(root, files, size, names):
    """FILES COGs t0.tif.. and many/ with NAMES empty files, under ROOT."""
    tmp = root + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, "many"))
    first = os.path.join(tmp, "t0.tif")
    code = r"""
import sys
import numpy as np
from osgeo import gdal
gdal.UseExceptions()
n = int(sys.argv[2])
ds = gdal.GetDriverByName("MEM").Create("", n, n, 1, gdal.GDT_Byte)
y, x = np.mgrid[0:n, 0:n]
ds.GetRasterBand(1).WriteArray(((x // 16 + (y // 16) * 3 + x % 7) % 251).astype(np.uint8))
gdal.Translate(sys.argv[1], ds, format="COG",
               creationOptions=["BLOCKSIZE=16", "OVERVIEWS=NONE", "COMPRESS=DEFLATE"])
"""
    log("generating %d COGs of %dx%d, 16-px tiles" % (files, size, size))
    subprocess.run([bench.PY, "-c", code, first, str(size)], check=True,
                   stderr=subprocess.DEVNULL)
    for i in range(1, files):
        shutil.copyfile(first, os.path.join(tmp, "t%d.tif" % i))
    for i in range(names):
        open(os.path.join(tmp, "many", "n%06d" % i), "w").close()
    for d, _, fs in os.walk(tmp):
        for f in fs:
            os.utime(os.path.join(d, f), (1700000000, 1700000000))
    os.rename(tmp, root)


def tiles_of(tilefs, path):
    """[(offset, length)] of the tiles of PATH, in tile order."""
    out = subprocess.run([tilefs, "inspect", "--blocks", path], check=True,
                         capture_output=True, text=True).stdout
    v = []
    for line in out.splitlines():
        p = line.split()
        if p and p[0] == "block" and int(p[4]) > 0:
            v.append((int(p[3]), int(p[4])))
    return v


def memory(pid):
    """{rss, anon, file} in MB from /proc/PID, or None once it is gone."""
    m = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    m["rss"] = int(line.split()[1]) / 1024.0
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                k, _, rest = line.partition(":")
                if k in ("Anonymous", "Rss"):
                    m[k] = int(rest.split()[0]) / 1024.0
    except (FileNotFoundError, ProcessLookupError, ValueError):
        return None
    m["anon"] = round(m.pop("Anonymous", 0.0), 1)
    m["file"] = round(m.pop("Rss", 0.0) - m["anon"], 1)
    m["rss"] = round(m["rss"], 1)
    return m


class Mount:
    def __init__(self, tilefs, url, cache, mnt, logf):
        self.cmd = [tilefs, "mount", "-f", "--cache-dir", cache, "--cache-size", "4G",
                    "--log-file", logf, url, mnt]
        self.mnt, self.proc = mnt, None

    def start(self):
        """Start the daemon; seconds until the mount answers a stat."""
        os.makedirs(self.mnt, exist_ok=True)
        t0 = time.monotonic()
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while time.monotonic() - t0 < 120:
            if bench.is_mounted(self.mnt):
                try:
                    os.stat(os.path.join(self.mnt, "t0.tif"))
                    return time.monotonic() - t0
                except OSError:
                    pass
            if self.proc.poll() is not None:
                raise RuntimeError("mount exited %d" % self.proc.returncode)
            time.sleep(0.005)
        raise RuntimeError("mount not ready in 120 s")

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        subprocess.run(["fusermount3", "-uz", self.mnt], capture_output=True)

    def stop(self):
        if not self.proc:
            return
        subprocess.run(["fusermount3", "-u", self.mnt], capture_output=True)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.kill9()
        self.proc = None


def pread_all(root, reads):
    """Read every (file, off, len) of READS under ROOT; (seconds, bytes read)."""
    fds = {}
    out = []
    t0 = time.monotonic()
    for name, off, ln in reads:
        fd = fds.get(name)
        if fd is None:
            fd = fds[name] = os.open(os.path.join(root, name), os.O_RDONLY)
        out.append(os.pread(fd, ln, off))
    dt = time.monotonic() - t0
    for fd in fds.values():
        os.close(fd)
    return dt, out


def listing(d, names):
    """Time os.scandir of D, then an lstat of each name; check the names."""
    t0 = time.monotonic()
    got = [e.name for e in os.scandir(d)]
    t1 = time.monotonic()
    for n in got:
        os.lstat(os.path.join(d, n))
    t2 = time.monotonic()
    ok = len(got) == names and len(set(got)) == names
    return {"scandir_s": round(t1 - t0, 3), "lstat_all_s": round(t2 - t1, 3),
            "names": len(got), "ok": ok}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tilefs", default=os.path.join(REPO, "build", "tilefs"))
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--size", type=int, default=8192, help="pixels per side (multiple of 16)")
    ap.add_argument("--names", type=int, default=100000)
    ap.add_argument("--reads", type=int, default=20000, help="random warm tiles read")
    ap.add_argument("--scales", default="1000,100000,all",
                    help="cached units of the caches a hit is timed in")
    ap.add_argument("--data", default=os.path.join(REPO, "tests", ".cache", "bench"))
    ap.add_argument("--scratch", default=None)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()

    root = os.path.join(a.data, "%s-%dx%d-%d" % (DATA_VERSION, a.files, a.size, a.names))
    if not os.path.isdir(root):
        generate(root, a.files, a.size, a.names)
    scratch = a.scratch or tempfile.mkdtemp(prefix="tilefs-million-")
    files = ["t%d.tif" % i for i in range(a.files)]
    tiles = tiles_of(a.tilefs, os.path.join(root, files[0]))
    total = len(tiles) * a.files
    res = {"files": a.files, "size": a.size, "units": total, "names": a.names}
    origin = bench.Origin(root, 0, "0", scratch)
    mounts = []
    failed = False
    try:
        origin.start()
        url = origin.url
        rng = random.Random(20261125)
        res["scales"] = []
        for scale in a.scales.split(","):
            n = total if scale == "all" else min(int(scale), total)
            cache = os.path.join(scratch, "cache-%d" % n)
            # the first N units: whole files, then the first rows of the next
            whole, rest = divmod(n, len(tiles))
            rows = -(-rest // (a.size // TILE))
            args = [a.tilefs, "warm", "--cache-dir", cache, "--cache-size", "4G",
                    "--jobs", "8", url] + files[:whole]
            t0 = time.monotonic()
            if whole:
                subprocess.run(args, check=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
            if rows:
                subprocess.run(args[:-whole or None] + ["--window", "0,0,%d,%d" % (
                    a.size, rows * TILE), files[whole]], check=True,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            warm_s = time.monotonic() - t0
            stat = subprocess.run([a.tilefs, "cache", "stat", "--cache-dir", cache],
                                  capture_output=True, text=True, check=True).stdout
            units = int([line for line in stat.splitlines()
                         if line.startswith("units:")][0].split()[1])
            log("%d units cached (of %d asked) in %.1f s" % (units, n, warm_s))
            # reads: warm tiles only (the first n in file order)
            span = [(files[min(i // len(tiles), a.files - 1)], tiles[i % len(tiles)])
                    for i in rng.sample(range(n), min(a.reads, n))]
            reads = [(f, o, ln) for f, (o, ln) in span]
            mnt = os.path.join(scratch, "mnt-%d" % n)
            m = Mount(a.tilefs, url, cache, mnt, os.path.join(scratch, "mount-%d.log" % n))
            mounts.append(m)
            row = {"units": units, "warm_s": round(warm_s, 2)}
            row["ready_s"] = round(m.start(), 3)
            pid = m.proc.pid
            samples = []
            for _ in range(10):
                samples.append(memory(pid))
                time.sleep(0.5)
            row["rss_before_reads"] = samples
            # a first pass reads both into the page cache: then the same again, timed
            pread_all(root, reads)
            pread_all(mnt, reads)
            local_s, want = pread_all(root, reads)
            mount_s, got = pread_all(mnt, reads)
            if got != want:
                log("%d units: reads through the mount differ from the files" % n)
                failed = True
            row["rss_after_reads"] = memory(pid)
            row["hits"] = len(reads)
            row["hit_us"] = round(mount_s / len(reads) * 1e6, 1)
            row["local_us"] = round(local_s / len(reads) * 1e6, 1)
            row["pread_vs_local"] = round(local_s / mount_s, 3)
            if scale == "all":
                m.kill9()
                row["ready_after_kill9_s"] = round(m.start(), 3)
                t0 = time.monotonic()
                subprocess.run([a.tilefs, "cache", "stat", "--cache-dir", cache],
                               capture_output=True, check=True)
                row["cache_stat_s"] = round(time.monotonic() - t0, 3)
                row["rss_fresh"] = memory(m.proc.pid)
                first = listing(os.path.join(mnt, "many"), a.names)
                again = listing(os.path.join(mnt, "many"), a.names)
                row["list_first"], row["list_again"] = first, again
                row["rss_after_list"] = memory(m.proc.pid)
                if not first["ok"] or not again["ok"]:
                    log("the listing of many/ missed or repeated names")
                    failed = True
            m.stop()
            res["scales"].append(row)
            log(json.dumps(row))
    except Exception as e:  # noqa: BLE001
        log("failed: %s" % e)
        failed = True
    finally:
        for m in mounts:
            if m.proc and m.proc.poll() is None:
                m.kill9()
        origin.stop()
        if not a.scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    out = json.dumps(res, indent=1)
    print(out)
    if a.json:
        with open(a.json, "w") as f:
            f.write(out + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
