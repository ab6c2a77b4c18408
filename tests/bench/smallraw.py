"""The smallraw workload (issue 56, items 8 and 9): what a small file costs
the daemon, read raw. 20,000 files of about 24 KB (the smallfiles set's
band files, five copies of its quick set; generated once into
tests/.cache/bench), served by an nginx of its own over the run's scheme
with no delay and no rate limit, read whole by 8 `cat` processes (xargs,
a share of the files each), the page cache dropped before every phase:

  local      the files on local disk (the baseline of the ratios)
  cold       a fresh mount on an empty cache dir, default options
  warm       the same mount once every file is sealed (passthrough)
  remount    a new mount over that cache: over plain HTTP every file is
             checked with a HEAD (no listing carries a version)
  remount-2  the same mount again

For each: files/s, the ratio to local, the CPU seconds of the readers and
of the daemon, and the requests the origin answered. 200 files of each
mount are compared with local disk afterwards: a difference is a failure.
BENCH_SMALLRAW_COPIES=N sets another number of copies (4,000 files each).
Written to results/<ts>/smallraw.{txt,json}; nothing is timed against a
limit.
"""
import os
import random
import shutil
import sqlite3
import subprocess
import time

import bench
from origin import Origin
from procfs import children_cpu, proc_stats
from smallfiles import ensure_set

READERS = 8
CHECKED = 200
SEAL_WAIT_S = 600


def ensure_copies(copies):
    """COPIES copies of the smallfiles quick set, as real files; the root."""
    src = ensure_set("quick")
    dest = os.path.join(bench.REPO, "tests", ".cache", "bench", "smallraw-x%d-v1" % copies)
    if os.path.isdir(dest):
        return dest
    tmp = dest + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    for c in range(copies):
        for d in sorted(os.listdir(src)):
            shutil.copytree(os.path.join(src, d), os.path.join(tmp, "c%d_%s" % (c, d)))
    os.rename(tmp, dest)
    return dest


def cpu_of(pid):
    """The CPU seconds of process PID so far (0 once it is gone)."""
    stats = proc_stats(pid)
    return stats[0] if stats else 0.0


def cats(root, files):
    """READERS xargs cat over FILES under ROOT; (seconds, readers' CPU s)."""
    t0, c0 = time.monotonic(), children_cpu()
    procs = [subprocess.Popen(["xargs", "-0", "cat"], stdin=subprocess.PIPE,
                              stdout=subprocess.DEVNULL, cwd=root) for _ in range(READERS)]
    for i, p in enumerate(procs):
        p.stdin.write(b"\0".join(x.encode() for x in files[i::READERS]))
        p.stdin.close()
    bad = [rc for rc in (p.wait() for p in procs) if rc != 0]
    if bad:
        raise RuntimeError("cat failed under %s (exit %s)" % (root, bad[0]))
    return time.monotonic() - t0, children_cpu() - c0


class Mount:
    def __init__(self, ctx, origin, cache, mnt, logf):
        self.cmd = [ctx.tilefs, "mount", "-f", "--cache-dir", cache, "--log-file", logf] + \
            origin.tilefs_args() + [origin.url, mnt]
        self.cache, self.mnt, self.proc = cache, mnt, None

    def start(self):
        os.makedirs(self.mnt, exist_ok=True)
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t0 = time.monotonic()
        while not bench.is_mounted(self.mnt):
            if self.proc.poll() is not None or time.monotonic() - t0 > 120:
                raise RuntimeError("tilefs mount did not start (%s)" % " ".join(self.cmd))
            time.sleep(0.01)

    def sealed(self):
        db = sqlite3.connect("file:%s?mode=ro" % os.path.join(self.cache, "index.db"),
                             uri=True, timeout=30)
        try:
            return db.execute("SELECT count(*) FROM seals").fetchone()[0]
        finally:
            db.close()

    def stop(self):
        subprocess.run(["fusermount3", "-u", self.mnt], capture_output=True)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            subprocess.run(["fusermount3", "-uz", self.mnt], capture_output=True)


def differs(mnt, root, files):
    """The first of FILES whose bytes under MNT are not those under ROOT."""
    for name in files:
        with open(os.path.join(mnt, name), "rb") as a, open(os.path.join(root, name), "rb") as b:
            if a.read() != b.read():
                return name
    return None


def run(ctx, notes):
    """The workload, from bench.py (--workloads smallraw)."""
    copies = int(os.environ.get("BENCH_SMALLRAW_COPIES", "5"))
    root = ensure_copies(copies)
    files = sorted(os.path.relpath(os.path.join(d, f), root)
                   for d, _, fs in os.walk(root) for f in fs)
    checked = random.Random(56).sample(files, min(CHECKED, len(files)))
    where = os.path.join(ctx.scratch, "smallraw")
    shutil.rmtree(where, ignore_errors=True)
    os.makedirs(where)
    origin = Origin(root, 0, "0", ctx.scratch, tls=(ctx.scheme == "https"),
                    name="nginx-smallraw")
    res = {"scheme": ctx.scheme, "files": len(files), "readers": READERS,
           "timestamp": os.path.basename(ctx.results), "rows": []}
    failed = []
    bench.log("[56] smallraw: %d files of about 24 KB, %d cat readers, over %s, no delay"
              % (len(files), READERS, ctx.scheme))
    origin.start()
    mount = None
    try:
        def phase(name, base, pid=None):
            bench.drop_caches(ctx.dropstate)
            off, d0 = origin.offset(), cpu_of(pid) if pid else 0.0
            secs, readers_cpu = cats(base, files)
            t = origin.since(off, save=os.path.join(ctx.raw, "smallraw-%s.access.log" % name))
            row = {"contestant": name, "files_per_s": len(files) / secs,
                   "readers_cpu_s": readers_cpu,
                   "daemon_cpu_s": cpu_of(pid) - d0 if pid else 0.0,
                   "requests": t.get("requests", 0), "methods": t.get("methods", {}),
                   "check": "ok"}
            res["rows"].append(row)
            bench.log("  %-10s %8.0f files/s  readers %.1f s, daemon %.1f s of CPU, %d requests"
                      % (name, row["files_per_s"], readers_cpu, row["daemon_cpu_s"],
                         row["requests"]))
            return row

        phase("local", root)
        cache, mnt = os.path.join(where, "cache"), os.path.join(where, "mnt")
        logf = os.path.join(ctx.logs, "smallraw-%s.log" % ctx.scheme)
        for names in (("cold", "warm"), ("remount", "remount-2")):
            mount = Mount(ctx, origin, cache, mnt, logf)
            mount.start()
            first = phase(names[0], mnt, mount.proc.pid)
            t0 = time.monotonic()
            while mount.sealed() < len(files) and time.monotonic() - t0 < SEAL_WAIT_S:
                time.sleep(1)
            second = phase(names[1], mnt, mount.proc.pid)
            bad = differs(mnt, root, checked)
            mount.stop()
            mount = None
            if bad:
                first["check"] = second["check"] = "WRONG"
                failed.append("%s: %s differs from local" % (names[0], bad))
    except (RuntimeError, OSError) as e:
        failed.append(str(e))
    finally:
        if mount:
            mount.stop()
        origin.stop()
        shutil.rmtree(where, ignore_errors=True)
    local = next((r for r in res["rows"] if r["contestant"] == "local"), None)
    for r in res["rows"]:
        r["x_local"] = r["files_per_s"] / local["files_per_s"] if local else None
    bench.write_section(ctx, notes, "smallraw", res, table(res), failed)


def table(res):
    lines = ["smallraw (issue 56, items 8 and 9): %d files of about 24 KB, %d cat readers, "
             "%s, no delay, page cache dropped before each phase (%s)"
             % (res["files"], res["readers"], res["scheme"], res["timestamp"]), "",
             "| contestant | files/s | x local | readers CPU s | daemon CPU s | requests (by method) |",
             "|---|---|---|---|---|---|"]
    for r in res["rows"]:
        methods = ", ".join("%s %d" % kv for kv in sorted(r["methods"].items()))
        lines.append("| %s | %.0f | %s | %.1f | %.1f | %d%s |%s" % (
            r["contestant"], r["files_per_s"],
            "%.2f" % r["x_local"] if r.get("x_local") else "",
            r["readers_cpu_s"], r["daemon_cpu_s"], r["requests"],
            " (%s)" % methods if methods else "",
            "" if r["check"] == "ok" else " " + r["check"]))
    return "\n".join(lines) + "\n"
