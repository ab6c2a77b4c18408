#!/usr/bin/python3
"""tilefs benchmark: tilefs beside local disk, GDAL /vsicurl/ and rclone.

Run through tests/bench/run (make bench, make bench-quick); see
tests/bench/README.md. In short: generate (once) a data set of COGs and a
striped GeoTIFF, serve it with nginx on 127.0.0.1 with injected latency and a
rate limit, run each workload through each contestant with caches dropped in
between, check every result against the local read, and write
results/<timestamp>/{results.csv,chart.png,table.txt,meta.json,logs/}.

The exit status is 1 only if a contestant returned wrong data, tilefs failed
a read, hung or crashed, or the harness itself broke; never because
something was slow.
"""
import argparse
import datetime
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True   # no __pycache__ in the source tree
if __name__ == "__main__":
    # the workloads in modules of their own import bench: let them have
    # this one, not a second copy
    sys.modules.setdefault("bench", sys.modules[__name__])
import report  # noqa: E402
from origin import NGINX, Origin  # noqa: E402 (Origin: warm.py, million.py too)
from procfs import children_cpu, machine_busy, pid_alive, proc_stats  # noqa: E402

PY = "/usr/bin/python3"

# profile: (first-byte delay in ms, per-request rate limit for nginx)
PROFILES = {"near": (10, "100m"), "region": (30, "50m"), "far": (80, "25m")}

# name: (issue number, unit, what it does)
WORKLOADS = {
    "chips": (1, "chips/s", "random 256x256 chips, fresh open per chip, worker pool"),
    "chips-s2": (1, "chips/s", "the same, in the S2-like files only"),
    "chips-landsat": (1, "chips/s", "the same, in the Landsat-like files only"),
    "chips-torch": (1, "chips/s", "the same chips as chips, through a torch DataLoader"),
    "aligned": (2, "chips/s", "256x256 chips inside one tile each"),
    "full": (3, "MB/s", "every band of every file at full resolution (decoded MB)"),
    "overview": (4, "MB/s", "every overview level of every COG (decoded MB)"),
    "epochs": (5, "chips/s", "three epochs over the same chips, one mount"),
    "opens": (6, "opens/s", "1,000 opens + metadata + sidecar probes (GDAL readdir on)"),
    "preads": (7, "tiles/s", "raw preads of whole tiles, no decoding"),
    "chipset": (1, "chips/s", "random whole files of a chip set: 1,500 256x256 files in one "
                "directory (chipset/)"),
    "loader": (30, "chips/s", "256x256 chips inside one tile each of the S2-like files, through "
               "a torch DataLoader nobody tuned (4 workers, one read at a time each); "
               "vsicurl through one tuned for remote reading (8 threads per worker, "
               "prefetch factor 8)"),
    "hinted": (30, "chips/s", "random 256x256 chips (a set of their own), cold with their order "
               "handed to the mount first (tilefs hint), beside the same epoch warm"),
    "epochs-half": (30, "chips/s", "three epochs over chips, no tile shared, whose tiles "
                    "weigh twice the tilefs --cache-size, one mount"),
    "epochs-half-hinted": (30, "chips/s", "the same, each epoch's order handed to the cold "
                           "mount first (tilefs hint)"),
    "million": (30, "MB RSS", "a cache of 1,048,576 16-px tiles: RSS before and after reads, "
                "hits vs local, ready after kill -9, cache stat, 100,000 names listed "
                "(million.py: its own data and origin)"),
    "throughput": (44, "GB/s", "GB/s and CPU per GB of curl to /dev/null and to files, tilefs "
                   "warm, a cold and a warm mount (8 readers cat every file), over https and "
                   "http, origin unthrottled; one large file through a cold mount against 32 "
                   "parallel ranges (throughput.py: its own origins)"),
    "tilebytes": (45, "tiles/s", "origin bytes over the bytes of the tiles read, every tile "
                  "read once, --prefetch none and default, S2-like, Landsat-like and "
                  "small-tile LZW sets (tilebytes.py: its own origin)"),
    "xarray": (45, "MB/s", "rioxarray+dask windows, tifffile+zarr, numpy.memmap of striped and "
               "of tiled files; cold and warm, every array checked against local's "
               "(xstack.py)"),
    "listing": (56, "s", "find over a tree of a folder per patch, four small files in each, "
                "through a fresh mount, beside local disk and rclone (listing.py: its own "
                "origin)"),
    "smallfiles": (56, "patches/s", "random patches of a folder each, four small band files, "
                   "through a torch DataLoader: cold, warm, remounted and hinted mounts "
                   "(smallfiles.py: its own data and origin)"),
    "names": (56, "s", "find over a million objects of a synthesized S3 bucket (250 folders "
              "of 1,000 patch folders of four band files), then random files read and "
              "warmed, with the daemon's RSS (names.py: its own store)"),
    "smallraw": (56, "files/s", "20,000 small files read whole by 8 cat readers, no delay: "
                 "cold, warm, remounted, beside local disk, with the daemon's CPU "
                 "(smallraw.py: its own data and origin)"),
}
QUICK_WORKLOADS = ["chips", "chips-s2", "chips-landsat", "chips-torch", "full", "epochs",
                   "opens", "preads", "chipset", "loader", "throughput", "tilebytes",
                   "xarray", "listing", "smallfiles", "smallraw"]
# gen_data.py's directory of chip files: the chipset workload's alone, kept
# out of every other workload's files
CHIPSET = "chipset"
# chips in one data set of gen_data.py: workload name -> (its directory, what
# its files are like)
CHIP_SETS = {"chips-s2": ("s2", "S2-like"), "chips-landsat": ("landsat", "Landsat-like")}
FULL_WORKLOADS = list(WORKLOADS)

SIZES = {
    "quick": {"chips": 200, "aligned": 200, "epochs": 100, "opens": 1000, "preads": 300,
              "chipset": 600, "loader": 300},
    "full": {"chips": 2000, "aligned": 1000, "epochs": 600, "opens": 1000, "preads": 2000,
             "chipset": 2000, "loader": 1500},
}

VSI_TUNED = {"GDAL_DISABLE_READDIR_ON_OPEN": "EMPTY_DIR",
             "CPL_VSIL_CURL_CACHE_SIZE": str(256 << 20)}


def log(msg):
    print(msg, flush=True)


def now():
    return time.monotonic()


# ---------------------------------------------------------------- data set

def ensure_data(mode):
    from gen_data import DATA_VERSION
    base = os.path.join(REPO, "tests", ".cache", "bench")
    dest = os.path.join(base, "%s-v%d" % (mode, DATA_VERSION))
    if not os.path.isdir(dest):
        os.makedirs(base, exist_ok=True)
        log("generating the %s data set in %s (once; kept for later runs)" % (mode, dest))
        subprocess.run([PY, os.path.join(HERE, "gen_data.py"), mode, dest], check=True)
    return dest


def ensure_extra(mode):
    """The extra sets (gen_data.py: lzw/, large/) of MODE, generated once."""
    from gen_data import EXTRA_VERSION
    base = os.path.join(REPO, "tests", ".cache", "bench")
    dest = os.path.join(base, "extra-%s-v%d" % (mode, EXTRA_VERSION))
    if not os.path.isdir(dest):
        os.makedirs(base, exist_ok=True)
        log("generating the extra %s sets in %s (once; kept for later runs)" % (mode, dest))
        subprocess.run([PY, os.path.join(HERE, "gen_data.py"), "extra-" + mode, dest],
                       check=True)
    return dest


def scan_data(root):
    """Every .tif under root with what the planner needs (from the local copy)."""
    from osgeo import gdal
    gdal.UseExceptions()
    files = []
    for kind in sorted(os.listdir(root)):
        d = os.path.join(root, kind)
        if not os.path.isdir(d) or kind == CHIPSET:
            continue
        for name in sorted(os.listdir(d)):
            if not name.endswith(".tif"):
                continue
            p = os.path.join(d, name)
            ds = gdal.Open(p)
            b = ds.GetRasterBand(1)
            bx, by = b.GetBlockSize()
            tiled = bx < ds.RasterXSize
            info = {"path": kind + "/" + name, "kind": kind, "w": ds.RasterXSize,
                    "h": ds.RasterYSize, "bands": ds.RasterCount, "block": [bx, by],
                    "tiled": tiled, "overviews": b.GetOverviewCount(),
                    "compression": ds.GetMetadataItem("COMPRESSION", "IMAGE_STRUCTURE")
                    or "NONE",
                    "size": os.path.getsize(p), "tiles": []}
            if tiled:
                for ty in range((ds.RasterYSize + by - 1) // by):
                    for tx in range((ds.RasterXSize + bx - 1) // bx):
                        off = b.GetMetadataItem("BLOCK_OFFSET_%d_%d" % (tx, ty), "TIFF")
                        n = b.GetMetadataItem("BLOCK_SIZE_%d_%d" % (tx, ty), "TIFF")
                        if off and n and int(n) > 0:
                            info["tiles"].append([int(off), int(n)])
            files.append(info)
            ds = None
    return files


def chipset_paths(root):
    """The chip files of the chipset workload, relative to root."""
    d = os.path.join(root, CHIPSET)
    names = sorted(os.listdir(d)) if os.path.isdir(d) else []
    return [CHIPSET + "/" + n for n in names if n.endswith(".tif")]


def plan(files, mode, sizes, chipset=(), seed=20240601):
    """The items of every workload: identical for every contestant."""
    rng = random.Random(seed)
    tiled = [f for f in files if f["tiled"]]
    cogs = [f for f in files if f["overviews"] > 0]

    def chips(n, aligned=False, kind=None):
        out = []
        pool = [f for f in (tiled if aligned else files) if kind in (None, f["kind"])]
        for _ in range(n):
            f = rng.choice(pool)
            if aligned:
                bx, by = f["block"]
                tx = rng.randrange(f["w"] // bx)
                ty = rng.randrange(f["h"] // by)
                c = tx * bx + 256 * rng.randrange(bx // 256)
                r = ty * by + 256 * rng.randrange(by // 256)
            else:
                c = rng.randrange(f["w"] - 256 + 1)
                r = rng.randrange(f["h"] - 256 + 1)
            out.append({"op": "chip", "path": f["path"], "window": [c, r, 256, 256]})
        return out

    items = {}
    items["chips"] = chips(sizes["chips"])
    items["chips-torch"] = items["chips"]
    items["aligned"] = chips(sizes["aligned"], aligned=True)
    items["full"] = [{"op": "full", "path": f["path"]} for f in files]
    items["overview"] = [{"op": "overview", "path": f["path"], "level": lv}
                         for f in cogs for lv in range(f["overviews"])]
    items["epochs"] = chips(sizes["epochs"])
    items["opens"] = [{"op": "open", "path": files[i % len(files)]["path"]}
                      for i in range(sizes["opens"])]
    rng.shuffle(items["opens"])
    pr = []
    for _ in range(sizes["preads"]):
        f = rng.choice(tiled)
        off, n = rng.choice(f["tiles"])
        pr.append({"op": "pread", "path": f["path"], "offset": off, "length": n})
    items["preads"] = pr
    # last, so the items above stay what they were before these existed
    for wl, (kind, _) in CHIP_SETS.items():
        items[wl] = chips(sizes["chips"], kind=kind)
    items["chipset"] = [{"op": "full", "path": rng.choice(chipset)}
                        for _ in range(sizes["chipset"])] if chipset else []
    items["loader"] = chips(sizes["loader"], aligned=True, kind="s2")
    items["hinted"] = chips(sizes["chips"])
    return items


def describe(wl, files):
    """What a workload does; for a per-set chips workload, with what its files
    are, read from the files themselves (e.g. 'random 256x256 chips, S2-like
    (s2/: 2 files, 1024x1024 tiles, DEFLATE)')."""
    if wl not in CHIP_SETS:
        return WORKLOADS[wl][2]
    kind, like = CHIP_SETS[wl]
    fs = [f for f in files if f["kind"] == kind]
    if not fs:
        return "random 256x256 chips, %s (%s/: no such files)" % (like, kind)
    return "random 256x256 chips, %s (%s/: %d files, %dx%d tiles, %s)" % (
        like, kind, len(fs), fs[0]["block"][0], fs[0]["block"][1], fs[0]["compression"])


# ---------------------------------------------------------------- names

def run_names(ctx, notes):
    """The names workload (issue 56): tests/bench/names.py with this run's
    tilefs; its figures to results/<ts>/names.json and a line of notes.
    BENCH_NAMES_GROUPS=N lists N folders of 1,000 patches (250)."""
    out = os.path.join(ctx.results, "names.json")
    log("[56] names: %s" % WORKLOADS["names"][2])
    groups = os.environ.get("BENCH_NAMES_GROUPS", "250")
    r = subprocess.run([PY, os.path.join(HERE, "names.py"), "--tilefs", ctx.tilefs,
                        "--groups", groups, "--json", out], stdout=subprocess.DEVNULL,
                       stderr=open(os.path.join(ctx.logs, "names.log"), "w"))
    try:
        with open(out) as f:
            res = json.load(f)
        note = ("names (%d objects): find %.1f s%s, %d listings, RSS %.0f MB after it; %d "
                "random files read at %.0f/s; %d warmed at %.0f/s" % (
                    res["objects"], res["list_s"], "" if res["found"] else " (stopped)",
                    res["list_requests"][0], res["rss_listed_mb"]["VmRSS"], res["reads"],
                    res["read_files_per_s"], res["warms"], res["warm_files_per_s"]))
    except (OSError, ValueError, KeyError, TypeError):
        note = "names: failed (exit %d; logs/names.log)" % r.returncode
    if r.returncode != 0:
        ctx.failed.append("names: names.py exit %d (logs/names.log)" % r.returncode)
    log("  " + note)
    notes.append(note)


# ---------------------------------------------------------------- million

def run_million(ctx, notes):
    """The million workload (issue 30): tests/bench/million.py, run with
    this run's tilefs binary, its own data set and origin; its figures go to
    results/<ts>/million.json and a one-line summary to the notes."""
    out = os.path.join(ctx.results, "million.json")
    log("[30] million: %s" % WORKLOADS["million"][2])
    r = subprocess.run([PY, os.path.join(HERE, "million.py"), "--tilefs", ctx.tilefs,
                        "--json", out], stdout=subprocess.DEVNULL,
                       stderr=open(os.path.join(ctx.logs, "million.log"), "w"))
    try:
        with open(out) as f:
            big = json.load(f)["scales"][-1]
    except (OSError, ValueError, KeyError, IndexError):
        notes.append("million: failed (exit %d; logs/million.log)" % r.returncode)
        return
    before = max(m["rss"] for m in big["rss_before_reads"] if m)
    note = ("million (%d units): RSS %.0f MB before reads, %.0f MB after %d tile preads "
            "(%.2fx local); ready %.3f s after kill -9; cache stat %.3f s; 100,000 names: "
            "scandir %.2f s, lstat each %.2f s" % (
                big["units"], before, big["rss_after_reads"]["rss"], big["hits"],
                big["pread_vs_local"], big["ready_after_kill9_s"], big["cache_stat_s"],
                big["list_first"]["scandir_s"], big["list_first"]["lstat_all_s"]))
    if r.returncode != 0:
        note += " (million.py exit %d: logs/million.log)" % r.returncode
    log("  " + note)
    notes.append(note)


def write_section(ctx, notes, name, res, text, failed):
    """A separate workload's results: RES to results/<ts>/NAME.json, its
    table TEXT to NAME.txt, the log and the end of table.txt; what FAILED
    to ctx.failed and the run's notes."""
    with open(os.path.join(ctx.results, "%s.json" % name), "w") as f:
        json.dump(res, f, indent=1)
    with open(os.path.join(ctx.results, "%s.txt" % name), "w") as f:
        f.write(text)
    log(text)
    ctx.sections.append(text)
    if failed:
        ctx.failed += ["%s: %s" % (name, x) for x in failed]
        notes.append("%s: %d problem(s), first: %s" % (name, len(failed), failed[0][:300]))


def run_throughput(ctx, notes, rows):
    import throughput
    throughput.run(ctx, notes)


def run_tilebytes(ctx, notes, rows):
    import tilebytes
    tilebytes.run(ctx, notes)


def run_xarray(ctx, notes, rows):
    import xstack
    xstack.run(ctx, notes, rows)


def run_listing(ctx, notes, rows):
    import listing
    listing.run(ctx, notes)


def run_smallfiles(ctx, notes, rows):
    import smallfiles
    smallfiles.run(ctx, notes)


def run_smallraw(ctx, notes, rows):
    import smallraw
    smallraw.run(ctx, notes)


# workloads run by a function of their own, not by run_workload(): (ctx,
# notes, rows); rows of the main table, if any, are appended to rows, other
# tables to ctx.sections, and what failed (wrong bytes, a failing tilefs)
# to ctx.failed
SEPARATE = {"million": lambda ctx, notes, rows: run_million(ctx, notes),
            "names": lambda ctx, notes, rows: run_names(ctx, notes),
            "throughput": run_throughput, "tilebytes": run_tilebytes, "xarray": run_xarray,
            "listing": run_listing, "smallfiles": run_smallfiles, "smallraw": run_smallraw}


def is_mounted(mnt):
    with open("/proc/mounts") as f:
        return any(line.split()[1] == mnt for line in f)


def drop_caches(state):
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError as e:
        if not state.get("warned"):
            log("note: cannot drop the page cache (%s); later phases may read RAM" % e)
            state["warned"] = True
            state["note"] = "page cache NOT dropped between phases (%s)" % e


# ---------------------------------------------------------------- contestants

class Failure(Exception):
    pass


class Contestant:
    """Something to read the items through. fs contestants give a directory."""
    name = family = ""
    vsi = False
    env = {}
    daemon = None      # pid of the process serving a mount, for CPU/RSS
    note = ""

    def prepare(self, wl, ctx):
        """Before a workload: return the root path, or raise Failure/Skip."""
        raise NotImplementedError

    def finish(self, ctx):
        """After a workload: unmount. Returns a note ('' if all went well)."""
        return ""


class Skip(Exception):
    pass


class Local(Contestant):
    name = family = "local"

    def prepare(self, wl, ctx):
        return ctx.data


class Vsicurl(Contestant):
    vsi = True
    family = "vsicurl"

    def __init__(self, name, env):
        self.name, self.env = name, env

    def prepare(self, wl, ctx):
        return "/vsicurl/" + ctx.origin.url.rstrip("/")


class Mounted(Contestant):
    """A FUSE mount by a daemon we start in the foreground (so we know its pid).

    cold: a fresh cache dir for each workload. warm: the cache dir its cold
    twin filled in the same workload, after an unmount and a new mount."""

    def __init__(self, name, family, warm_of=None):
        self.name, self.family, self.warm_of = name, family, warm_of
        self.proc = None
        self.mnt = None

    def command(self, ctx, mnt, cache, logf):
        raise NotImplementedError

    def own_warm_cache(self, wl):
        """A warm contestant of a workload whose cold cache holds half of
        what it reads: its cache, of the default size, is filled with the
        items' files first (fill()), so it shows the same epochs all warm."""
        return bool(self.warm_of) and wl in (EPOCHS_HALF, EPOCHS_HALF_HINTED)

    def fill(self, ctx, wl, cache):
        raise Skip("no warm of its own")

    def prepare(self, wl, ctx):
        if self.own_warm_cache(wl):
            cache = os.path.join(ctx.scratch, "cache", "%s-%s" % (wl, fname(self.name)))
            os.makedirs(cache)
            self.fill(ctx, wl, cache)
        elif self.warm_of:
            cache = ctx.caches.get((wl, self.warm_of.name))
            if not cache:
                raise Skip("no cold cache from %s" % self.warm_of.name)
        else:
            cache = os.path.join(ctx.scratch, "cache", "%s-%s" % (wl, fname(self.name)))
            os.makedirs(cache)
        mnt = os.path.join(ctx.scratch, "mnt", "%s-%s" % (wl, fname(self.name)))
        os.makedirs(mnt)
        logf = os.path.join(ctx.logs, "%s-%s.log" % (wl, fname(self.name)))
        cmd, env = self.command(ctx, mnt, cache, logf)
        with open(logf + ".cmd", "w") as f:
            f.write(" ".join(cmd) + "\n")
        out = open(logf + ".out", "w")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out,
                                     stderr=subprocess.STDOUT, env=env)
        out.close()
        self.mnt, self.logf = mnt, logf
        ctx.active.append(self)
        deadline = now() + 60
        while now() < deadline:
            if is_mounted(mnt):
                self.daemon = self.proc.pid
                if not self.warm_of or self.own_warm_cache(wl):
                    ctx.caches[(wl, self.name)] = cache
                return mnt
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        tail = (tail_of(logf + ".out") + tail_of(logf)).strip()
        self._kill()
        why = tail.splitlines()[0] if tail else "no message"
        raise Failure("%s did not mount (exit %s): %s\n%s" % (
            self.name, self.proc.returncode, why, tail))

    def finish(self, ctx):
        """Unmount and wait for the daemon; a hang or bad exit is a note."""
        if not self.proc:
            return ""
        note = ""
        for attempt in range(20):
            r = subprocess.run(["fusermount3", "-u", self.mnt], capture_output=True, text=True)
            if r.returncode == 0 or not is_mounted(self.mnt):
                break
            time.sleep(0.5)
        else:
            note = "unmount failed: %s" % r.stderr.strip()
        try:
            rc = self.proc.wait(timeout=60)
            if rc != 0:
                note = (note + "; " if note else "") + "daemon exited %d after unmount" % rc
        except subprocess.TimeoutExpired:
            note = (note + "; " if note else "") + "daemon still running 60 s after unmount"
            self._kill()
        if note:
            note += " (log: %s)" % os.path.relpath(self.logf, ctx.results)
        if self in ctx.active:
            ctx.active.remove(self)
        self.proc = None
        self.daemon = None
        return note

    def _kill(self):
        if self.proc and self.proc.poll() is None:
            try:
                self.proc.kill()
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        if self.mnt and is_mounted(self.mnt):
            subprocess.run(["fusermount3", "-uz", self.mnt], capture_output=True)
        self.daemon = None

    def abort(self):
        self._kill()
        self.proc = None


class Tilefs(Mounted):
    def __init__(self, name, extra, warm_of=None):
        super().__init__(name, "tilefs", warm_of)
        self.extra = extra

    def command(self, ctx, mnt, cache, logf):
        size = ctx.default_cache_size if self.own_warm_cache(ctx.wl) else ctx.cache_size
        cmd = [ctx.tilefs, "mount", "-f", "--cache-dir", cache, "--cache-size",
               size, "--log-file", logf] + ctx.origin.tilefs_args() + self.extra + [
                   ctx.origin.url, mnt]
        return cmd, os.environ.copy()

    def fill(self, ctx, wl, cache):
        """tilefs warm of the items' files, whole, into CACHE: every read
        is a hit, and no file is left to stream in the background."""
        paths = sorted({it["path"] for it in ctx.items[wl]})
        r = subprocess.run([ctx.tilefs, "warm", "--cache-dir", cache, "--cache-size",
                            ctx.default_cache_size] + ctx.origin.tilefs_args()
                           + [ctx.origin.url] + paths,
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise Failure("tilefs warm failed (exit %d): %s" % (
                r.returncode, r.stderr.strip()[-300:]))


class Rclone(Mounted):
    def command(self, ctx, mnt, cache, logf):
        conf = os.path.join(ctx.scratch, "rclone.conf")
        open(conf, "a").close()
        env = os.environ.copy()
        env["RCLONE_CONFIG"] = conf
        cmd = ["rclone", "mount", ":http:", mnt, "--http-url", ctx.origin.url,
               "--vfs-cache-mode", "full", "--cache-dir", cache, "--read-only",
               "--log-file", logf, "--log-level", "NOTICE"] + ctx.origin.rclone_args()
        return cmd, env


def fname(name):
    """A contestant name as part of a file name (tilefs-cold/tile -> tilefs-cold_tile)."""
    return name.replace("/", "_")


def tail_of(path, n=30):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


# ---------------------------------------------------------------- running

class Ctx:
    pass


# The loader workload's two loaders: (threads per worker, prefetch factor)
UNTUNED_LOADER = (1, None)
TUNED_LOADER = (8, 8)


def run_phase(ctx, wl, c, root, items_file, label, shuffle=None, loader="pool",
              tuning=UNTUNED_LOADER):
    """One timed pass of the workload; returns a row dict (without ratios)."""
    out = os.path.join(ctx.raw, "%s-%s.json" % (label, fname(c.name)))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GDAL_", "CPL_"))}
    env.update(ctx.reader_env)
    env.update(c.env)
    if c.vsi:
        env.update(ctx.origin.gdal_env())
    cmd = [PY, os.path.join(HERE, "workload.py"), "--items", items_file, "--root", root,
           "--out", out, "--workers", str(ctx.workers), "--loader", loader]
    if tuning != UNTUNED_LOADER:
        cmd += ["--threads", str(tuning[0]), "--prefetch-factor", str(tuning[1])]
    if c.vsi:
        cmd.append("--vsi")
    if shuffle is not None:
        cmd += ["--shuffle", str(shuffle)]
    before = proc_stats(c.daemon) if c.daemon else None
    busy0, kids0, nginx0 = machine_busy(), children_cpu(), ctx.origin.cpu()
    t0 = now()
    errf = open(out + ".stderr", "w")
    p = subprocess.Popen(cmd, env=env, stdout=errf, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    errf.close()
    row = {"workload": label, "contestant": c.name, "family": c.family,
           "unit": WORKLOADS[wl][1], "check": "ok", "note": ""}
    try:
        p.wait(timeout=ctx.phase_timeout)
    except BaseException as e:
        stacks = daemon_stacks(c.daemon) if c.daemon and pid_alive(c.daemon) else ""
        # the readers run in their own session: end them (by that group's id)
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
        if not isinstance(e, subprocess.TimeoutExpired):
            raise
        row["check"] = "HANG"
        row["note"] = "no result after %d s" % ctx.phase_timeout
        if stacks:
            row["note"] += "; daemon threads waiting in: " + stacks
        return row
    after = proc_stats(c.daemon) if c.daemon else None
    busy1, kids1, nginx1 = machine_busy(), children_cpu(), ctx.origin.cpu()
    elapsed = now() - t0
    if p.returncode != 0 or not os.path.exists(out):
        row["check"] = "ERROR"
        row["note"] = "workload exited %s: %s" % (p.returncode,
                                                  tail_of(out + ".stderr", 5).strip()[-300:])
        return row
    with open(out) as f:
        res = json.load(f)
    row.update(items=res["n"], wall_s=res["wall_s"], bytes=res["bytes"],
               client_cpu_s=res.get("client_cpu_s"))
    lat = sorted(x for x in res["lat"] if x is not None)
    row["p50_ms"] = 1000 * pct(lat, 50)
    row["p95_ms"] = 1000 * pct(lat, 95)
    row["items_per_s"] = res["n"] / res["wall_s"] if res["wall_s"] > 0 else None
    row["mb_per_s"] = res["bytes"] / 1e6 / res["wall_s"] if res["wall_s"] > 0 else None
    row["rate"] = row["mb_per_s"] if row["unit"] == "MB/s" else row["items_per_s"]
    if before and after:
        row["daemon_cpu_s"] = after[0] - before[0]
        row["daemon_rss_mb"] = after[1]
    # what the rest of the machine did meanwhile: all busy CPU time less
    # the readers', the daemon's and nginx's, as cores kept busy on average
    ours = (kids1 - kids0) + (nginx1 - nginx0) + row.get("daemon_cpu_s", 0)
    if elapsed > 0:
        row["other_cpu"] = max(0.0, (busy1 - busy0) - ours) / elapsed
    row["_hash"] = res["hash"]
    if res["errors"]:
        row["check"] = "ERROR"
        first = res["errors"][0]
        row["note"] = "%d of %d items failed, first: %s: %s" % (
            len(res["errors"]), res["n"], items_path(items_file, first[0]), first[1])
    return row


def phase_labels(wl):
    """The phases of workload WL: one, or one per epoch."""
    if wl == "epochs":
        return ["epoch1", "epoch2", "epoch3"]
    if wl == EPOCHS_HALF:
        return ["half-epoch1", "half-epoch2", "half-epoch3"]
    if wl == EPOCHS_HALF_HINTED:
        return ["hinted-half-epoch1", "hinted-half-epoch2", "hinted-half-epoch3"]
    if wl == "xarray":
        import xstack
        return list(xstack.LABELS)
    return [wl]


# ---------------------------------------------------------------- epochs-half
# Issue 30: epochs over a data set twice the cache, as a training loop reads
# a fixed list of random chips: up to SIZES chips of the tiled files, no two
# of which share a tile (each tile is read once an epoch, as in the issue's
# 500 chips whose tiles weigh 734 MB), in a new order each epoch. The bytes
# of the full-resolution tiles they touch set the tilefs contestants'
# --cache-size to half of them. Each epoch's origin bytes are noted
# relative to epoch 1's and to the tiles' weight: 0.5x is the best a cache
# of half can do, LRU gives about 0.87x.
EPOCHS_HALF = "epochs-half"
EPOCHS_HALF_HINTED = "epochs-half-hinted"  # its chips and cache size, hinted
SIZES["quick"][EPOCHS_HALF] = 150
SIZES["full"][EPOCHS_HALF] = 500


def epochs_half_plan(ctx, files, mode, seed=20261125):
    """ctx.items[EPOCHS_HALF], ctx.cache_sizes[EPOCHS_HALF] and the tiles'
    weight, ctx.epochs_half_weight."""
    from osgeo import gdal
    gdal.UseExceptions()
    rng = random.Random(seed)
    tiled = [f for f in files if f["tiled"]]
    items, tiles = [], set()
    want = SIZES[mode][EPOCHS_HALF]
    for _ in range(50 * want):
        if len(items) == want:
            break
        f = rng.choice(tiled)
        c = rng.randrange(f["w"] - 256 + 1)
        r = rng.randrange(f["h"] - 256 + 1)
        bx, by = f["block"]
        mine = {(f["path"], tx, ty) for ty in range(r // by, (r + 255) // by + 1)
                for tx in range(c // bx, (c + 255) // bx + 1)}
        if mine & tiles:
            continue    # a tile of an earlier chip
        tiles |= mine
        items.append({"op": "chip", "path": f["path"], "window": [c, r, 256, 256]})
    weight = 0
    by_path = {}
    for path, tx, ty in tiles:
        by_path.setdefault(path, []).append((tx, ty))
    for path, xy in by_path.items():
        ds = gdal.Open(os.path.join(ctx.data, path))
        separate = ds.GetMetadataItem("INTERLEAVE", "IMAGE_STRUCTURE") == "BAND"
        bands = range(1, ds.RasterCount + 1) if separate else [1]
        for b in bands:
            band = ds.GetRasterBand(b)
            for tx, ty in xy:
                n = band.GetMetadataItem("BLOCK_SIZE_%d_%d" % (tx, ty), "TIFF")
                weight += int(n or 0)
        ds = None
    ctx.items[EPOCHS_HALF] = ctx.items[EPOCHS_HALF_HINTED] = items
    ctx.epochs_half_weight = weight
    ctx.cache_sizes[EPOCHS_HALF] = ctx.cache_sizes[EPOCHS_HALF_HINTED] = \
        str(max(weight // 2, 1 << 20))
    log("%s: %d chips, no tile shared, touch %.0f MB of tiles; tilefs --cache-size %s" % (
        EPOCHS_HALF, len(items), weight / 1e6, ctx.cache_sizes[EPOCHS_HALF]))


def warm_note(rows, labels, contestants):
    """Note on each cold tilefs row of the phases LABELS its rate relative
    to its warm twin's in the same phase (the issue's goals for hinted
    epochs are stated against the same epoch warm)."""
    by = {(r["workload"], r["contestant"]): r for r in rows}
    for c in contestants:
        if not (isinstance(c, Tilefs) and c.warm_of):
            continue
        for lab in labels:
            cold, warm = by.get((lab, c.warm_of.name)), by.get((lab, c.name))
            if cold and warm and cold.get("rate") and warm.get("rate"):
                said = "%.2fx the same epoch warm" % (cold["rate"] / warm["rate"])
                cold["note"] = (said + "; " + cold.get("note", "")).strip("; ")


def epochs_half_note(ctx, phase_rows):
    """Note on each epoch its origin bytes relative to epoch 1's and to the
    tiles' weight."""
    first = phase_rows[0].get("fetched_bytes") if phase_rows else None
    weight = getattr(ctx, "epochs_half_weight", 0)
    for k, r in enumerate(phase_rows):
        got = r.get("fetched_bytes")
        if got is None or not first or not weight:
            continue
        said = "origin bytes %.2fx the tiles' weight" % (got / weight)
        if k > 0:
            said += ", %.2fx epoch 1's" % (got / first)
        r["note"] = (said + "; " + r.get("note", "")).strip("; ")


def items_path(items_file, idx):
    with open(items_file) as f:
        it = json.load(f)[idx]
    return it["path"] + (" %s" % it.get("window", "") if "window" in it else "")


def daemon_stacks(pid):
    out = []
    try:
        for tid in sorted(os.listdir("/proc/%d/task" % pid))[:8]:
            try:
                with open("/proc/%d/task/%s/wchan" % (pid, tid)) as f:
                    out.append("%s:%s" % (tid, f.read().strip() or "-"))
            except OSError:
                pass
    except OSError:
        pass
    return " ".join(out)


def pct(xs, p):
    if not xs:
        return None
    k = (len(xs) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def compare(row, ref):
    """Mark the row WRONG if any item's bytes differ from the local read."""
    h = row.pop("_hash", None)
    if h is None or row["check"] in ("HANG",):
        return
    if ref is None:
        if row["family"] != "local" and row["check"] == "ok":
            row["check"] = "no-ref"
        return
    bad = [i for i, (a, b) in enumerate(zip(h, ref)) if a is not None and b is not None
           and a != b]
    if bad:
        row["check"] = "WRONG"
        row["mismatches"] = len(bad)
        row["note"] = ("%d of %d items differ from local, first item %d; " % (
            len(bad), len(h), bad[0]) + row.get("note", "")).strip("; ")


def run_workload(ctx, wl, contestants, rows):
    """Every contestant through workload wl; rows are appended to rows as
    they are measured (so an interrupted run keeps them)."""
    items = ctx.items[wl]
    items_file = os.path.join(ctx.raw, "items-%s.json" % wl)
    with open(items_file, "w") as f:
        json.dump(items, f)
    loader = "torch" if wl in ("chips-torch", "loader") else "pool"
    labels = phase_labels(wl)
    epochs = len(labels) > 1
    ctx.cache_size = ctx.cache_sizes.get(wl, ctx.default_cache_size)
    ctx.wl = wl
    refs = {}
    for c in contestants:
        log("  %-22s" % c.name)
        t0 = now()
        try:
            off = ctx.origin.offset()
            try:
                root = c.prepare(wl, ctx)
                if isinstance(c, Mounted) and c.own_warm_cache(wl):
                    off = ctx.origin.offset()   # its fill's GETs are not its reads'
            except Skip as e:
                for lab in labels:
                    rows.append(skip_row(wl, lab, c, str(e)))
                log("    skipped: %s" % e)
                continue
            except Failure as e:
                msg = str(e)
                log("    " + msg.replace("\n", "\n    "))
                first = msg.splitlines()[0]
                for lab in labels:
                    r = skip_row(wl, lab, c, first)
                    if c.family == "tilefs":
                        r["check"] = "ERROR"
                    rows.append(r)
                continue
            phase_rows = []
            for k, lab in enumerate(labels):
                drop_caches(ctx.dropstate)
                if k > 0:
                    off = ctx.origin.offset()
                hint_note = hint_order(ctx, c, root, items, shuffle=(k if epochs else None)) \
                    if wl in ("hinted", EPOCHS_HALF_HINTED) else ""
                tuning = TUNED_LOADER if wl == "loader" and c.family == "vsicurl" \
                    else UNTUNED_LOADER
                row = run_phase(ctx, wl, c, root, items_file, lab,
                                shuffle=(k if epochs else None), loader=loader,
                                tuning=tuning)
                if hint_note:
                    row["note"] = (row.get("note", "") + "; " + hint_note).strip("; ")
                t = ctx.origin.since(off, save=os.path.join(
                    ctx.raw, "%s-%s.access.log" % (lab, fname(c.name))))
                row["requests"], row["fetched_bytes"] = t["requests"], t["bytes"]
                row["data_gets"] = t["data_gets"]
                if t["again"] > t["bytes"] // 100:
                    row["note"] = ("origin bytes fetched again in the phase: %.0f MB "
                                   "(%.0f%%); %s" % (t["again"] / 1e6, 100.0 * t["again"] / t["bytes"],
                                                     row.get("note", ""))).strip("; ")
                row["methods"] = " ".join("%s:%d" % kv for kv in sorted(t["methods"].items()))
                if c.family == "tilefs" and c.warm_of and t["data_gets"]:
                    # after a remount every byte this workload reads is in
                    # the cache: a data GET means the cache was not used
                    row["note"] = ("%d data GETs after the remount (want 0); %s" % (
                        t["data_gets"], row.get("note", ""))).strip("; ")
                if c.family == "local":
                    refs[lab] = row.get("_hash")
                    # every epoch reads the same chips: all compare to epoch 1
                    if epochs and k > 0 and refs.get(labels[0]) is not None:
                        ref = refs[labels[0]]
                    else:
                        ref = None
                    if ref is not None:
                        compare(row, ref)
                    else:
                        row.pop("_hash", None)
                else:
                    ref = refs.get(lab) if not epochs else refs.get(labels[0])
                    compare(row, ref)
                log("    %-8s %s" % (lab, brief(row)))
                phase_rows.append(row)
                rows.append(row)
                if row["check"] == "HANG":
                    break
            if wl in (EPOCHS_HALF, EPOCHS_HALF_HINTED):
                epochs_half_note(ctx, phase_rows)
            note = c.finish(ctx)
            if c.family == "tilefs":
                problems = log_problems(c.logf)
                if problems:
                    log("    " + problems)
                    for r in phase_rows:
                        r["note"] = (r.get("note", "") + "; " + problems).strip("; ")
            if note:
                log("    " + note)
                for r in phase_rows:
                    r["note"] = (r.get("note", "") + "; " + note).strip("; ")
                    if c.family == "tilefs" and r["check"] == "ok":
                        r["check"] = "ERROR"
        finally:
            if isinstance(c, Mounted) and c.proc:
                c.finish(ctx)
        log("    (%.0f s with set-up)" % (now() - t0))
    if wl in ("hinted", EPOCHS_HALF, EPOCHS_HALF_HINTED):
        warm_note(rows, labels, contestants)
    # the cold caches of this workload are no longer needed
    for (w, name), d in list(ctx.caches.items()):
        if w == wl:
            shutil.rmtree(d, ignore_errors=True)
            del ctx.caches[(w, name)]


# ---------------------------------------------------------------- hinted
def hint_order(ctx, c, root, items, shuffle=None):
    """A hinted workload, before each phase: a cold tilefs mount is handed
    the items' order (tilefs hint), as a training loop that knows its sample
    order would; its warm twin and the other contestants read unhinted.
    SHUFFLE: the seed workload.py shuffles this phase's items with.
    Returns a note for the row ('' when the hint was given or not wanted)."""
    if c.family != "tilefs" or c.warm_of:
        return ""
    order = os.path.join(ctx.raw, "hinted-%s.order" % fname(c.name))
    idx = list(range(len(items)))
    if shuffle is not None:
        random.Random(shuffle).shuffle(idx)     # as workload.py --shuffle
    with open(order, "w") as f:
        for it in (items[i] for i in idx):
            x, y, w, h = it["window"]
            f.write("%s\t%d %d %d %d\n" % (it["path"], x, y, w, h))
    r = subprocess.run([ctx.tilefs, "hint", root, order], capture_output=True, text=True)
    if r.returncode != 0:
        return "tilefs hint failed: %s" % r.stderr.strip()[:200]
    return ""


def skip_row(wl, lab, c, why):
    return {"workload": lab, "contestant": c.name, "family": c.family,
            "unit": WORKLOADS[wl][1], "check": "SKIP", "note": why}


def brief(row):
    if row.get("rate") is None:
        return "%s %s" % (row["check"], row.get("note", ""))
    s = "%.1f %s, %d req, %.1f MB fetched" % (
        row["rate"], row["unit"], row.get("requests", 0), row.get("fetched_bytes", 0) / 1e6)
    if row.get("p50_ms") is not None:
        s += ", p50 %.0f ms, p95 %.0f ms" % (row["p50_ms"], row["p95_ms"] or 0)
    if row.get("daemon_cpu_s") is not None:
        s += ", daemon %.1f s CPU %.0f MB" % (row["daemon_cpu_s"], row["daemon_rss_mb"] or 0)
    if row["check"] != "ok":
        s += "  [%s] %s" % (row["check"], row.get("note", ""))
    return s


def sha256(path):
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def log_problems(path):
    """'N warnings/errors in the log, first: ...' for a tilefs log, or ''."""
    try:
        with open(path, errors="replace") as f:
            bad = [line.strip() for line in f if ": warn: " in line or ": error: " in line]
    except OSError:
        return ""
    if not bad:
        return ""
    return "%d warn/error lines in %s, first: %s" % (
        len(bad), os.path.basename(path), bad[0].split(": ", 1)[-1][:200])


def have_torch():
    r = subprocess.run([PY, "-c", "import torch"], capture_output=True)
    return r.returncode == 0


def versions(ctx):
    def out(cmd):
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
            return (r.stdout + r.stderr).strip().splitlines()[0]
        except Exception as e:
            return "unavailable (%s)" % e
    return {
        "tilefs": out([ctx.tilefs, "--version"]),
        "tilefs_sha256": sha256(ctx.tilefs),
        "gdal": out(["gdalinfo", "--version"]),
        "rclone": out(["rclone", "version"]),
        "nginx": out([NGINX, "-v"]),
        "kernel": os.uname().release,
        "cpus": os.cpu_count(),
        "git": out(["git", "-C", REPO, "describe", "--always", "--dirty"]),
    }


def main():
    ap = argparse.ArgumentParser(prog="tests/bench/run", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="small data; workloads " + ",".join(QUICK_WORKLOADS)
                    + " (6-10 minutes)")
    ap.add_argument("--profile", choices=sorted(PROFILES), default="region",
                    help="origin latency/bandwidth: near 10 ms 100 MB/s, region 30 ms "
                    "50 MB/s, far 80 ms 25 MB/s (per connection) [region]")
    ap.add_argument("--scheme", choices=("https", "http"), default="https",
                    help="how the origin serves: https (nginx ssl, a CA made at set-up and "
                    "given to every client) or plain http [https]")
    ap.add_argument("--workloads", help="comma list, from: " + ",".join(WORKLOADS))
    ap.add_argument("--contestants", help="comma list of names to run (local always runs: "
                    "it is the reference)")
    ap.add_argument("--workers", type=int, default=4, help="reader processes [4]")
    ap.add_argument("--prefetch", default="",
                    help="comma list of tilefs --prefetch policies; each adds a "
                    "tilefs-cold/POLICY and tilefs-warm/POLICY pair (needs a tilefs "
                    "that has --prefetch)")
    ap.add_argument("--tilefs-args", default="", metavar="ARGS",
                    help="extra arguments for every tilefs mount, e.g. "
                    "--tilefs-args='--block-size 1M'")
    ap.add_argument("--reader-env", default="", metavar="NAME=VALUE,...",
                    help="environment of every contestant's reader processes (not of the "
                    "daemons), e.g. --reader-env MALLOC_TOP_PAD_=67108864")
    ap.add_argument("--tilefs", default=os.path.join(REPO, "build", "tilefs"),
                    help="the binary to test [build/tilefs]")
    ap.add_argument("--results", help="results directory [results/<timestamp>]")
    ap.add_argument("--keep-scratch", action="store_true",
                    help="keep the caches, mounts dirs and nginx dir")
    a = ap.parse_args()

    mode = "quick" if a.quick else "full"
    ts = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    ctx = Ctx()
    ctx.mode, ctx.workers, ctx.tilefs = mode, a.workers, os.path.abspath(a.tilefs)
    try:
        ctx.reader_env = dict(kv.split("=", 1) for kv in a.reader_env.split(",") if kv)
    except ValueError:
        sys.exit("bench: --reader-env takes NAME=VALUE pairs, comma-separated: %r" % a.reader_env)
    ctx.results = os.path.abspath(a.results or os.path.join(REPO, "results", ts))
    ctx.logs = os.path.join(ctx.results, "logs")
    ctx.raw = os.path.join(ctx.results, "raw")
    ctx.caches, ctx.active, ctx.dropstate = {}, [], {}
    ctx.default_cache_size = ctx.cache_size = "8G" if mode == "quick" else "16G"
    ctx.cache_sizes = {}
    ctx.phase_timeout = 900 if mode == "quick" else 3600
    ctx.sections, ctx.failed = [], []
    delay_ms, rate = PROFILES[a.profile]
    ctx.profile = (delay_ms, rate)
    if not os.access(ctx.tilefs, os.X_OK):
        sys.exit("bench: no tilefs binary at %s (run make)" % ctx.tilefs)

    wls = a.workloads.split(",") if a.workloads else (
        QUICK_WORKLOADS if a.quick else FULL_WORKLOADS)
    for w in wls:
        if w not in WORKLOADS:
            sys.exit("bench: unknown workload %s (known: %s)" % (w, ", ".join(WORKLOADS)))
    notes = []
    if {"chips-torch", "loader"} & set(wls) and not have_torch():
        wls = [w for w in wls if w not in ("chips-torch", "loader")]
        notes.append("chips-torch and loader (a real torch DataLoader) not run: `import torch` fails "
                     "(tests/bench/install-deps installs python3-torch; BENCH_NO_INSTALL=1 "
                     "skips that)")

    contestants = [Local(), Vsicurl("vsicurl", {}), Vsicurl("vsicurl-tuned", VSI_TUNED)]
    if shutil.which("rclone"):
        rc = Rclone("rclone-cold", "rclone")
        contestants += [rc, Rclone("rclone-warm", "rclone", warm_of=rc)]
    else:
        notes.append("rclone not installed: its rows are missing")
    extra = a.tilefs_args.split() if a.tilefs_args else []
    ctx.tilefs_extra = extra
    for pol in ([p for p in a.prefetch.split(",") if p] or [None]):
        sfx = "/" + pol if pol else ""
        args = extra + (["--prefetch", pol] if pol else [])
        cold = Tilefs("tilefs-cold" + sfx, args)
        contestants += [cold, Tilefs("tilefs-warm" + sfx, args, warm_of=cold)]
    if a.contestants:
        want = set(a.contestants.split(",")) | {"local"}
        unknown = want - {c.name for c in contestants}
        if unknown:
            sys.exit("bench: unknown contestant(s) %s" % ", ".join(sorted(unknown)))
        keep = [c for c in contestants if c.name in want]
        # a warm contestant needs its cold twin
        for c in list(keep):
            if isinstance(c, Mounted) and c.warm_of and c.warm_of not in keep:
                keep.insert(keep.index(c), c.warm_of)
        contestants = keep

    os.makedirs(ctx.logs, exist_ok=True)
    os.makedirs(ctx.raw, exist_ok=True)
    log("tilefs bench (%s, %s, profile %s: %d ms first byte, %sB/s per connection, "
        "%d workers)" % (mode, a.scheme, a.profile, delay_ms, rate.upper(), ctx.workers))
    log("results: %s" % os.path.relpath(ctx.results, os.getcwd()))
    ctx.data = ensure_data(mode)
    files = scan_data(ctx.data)
    total = sum(f["size"] for f in files)
    log("data: %d files, %.0f MB in %s" % (len(files), total / 1e6, ctx.data))
    ctx.items = plan(files, mode, SIZES[mode], chipset_paths(ctx.data))
    if EPOCHS_HALF in wls or EPOCHS_HALF_HINTED in wls:
        epochs_half_plan(ctx, files, mode)
    ctx.scratch = tempfile.mkdtemp(prefix="tilefs-bench.")
    os.makedirs(os.path.join(ctx.scratch, "cache"))
    os.makedirs(os.path.join(ctx.scratch, "mnt"))
    # one binary for the whole run: build/tilefs may be rebuilt meanwhile
    # (a new index schema between the cold and the warm mount would empty
    # the cache and make "warm" cold)
    built = ctx.tilefs
    ctx.tilefs = os.path.join(ctx.scratch, "tilefs")
    shutil.copy2(built, ctx.tilefs)
    ctx.scheme = a.scheme
    ctx.origin = Origin(ctx.data, delay_ms, rate, ctx.scratch, tls=(a.scheme == "https"))
    meta = {"timestamp": ts, "mode": mode, "profile": a.profile, "scheme": a.scheme,
            "delay_ms": delay_ms,
            "rate": rate, "workers": ctx.workers, "workloads": wls,
            "described": {wl: describe(wl, files) for wl in wls},
            "contestants": [c.name for c in contestants], "data_files": len(files),
            "data_bytes": total, "versions": versions(ctx), "notes": notes,
            "reader_env": ctx.reader_env,
            "args": sys.argv[1:]}
    rows = []
    status = 0
    t_start = now()

    def on_term(signum, frame):
        raise KeyboardInterrupt()
    signal.signal(signal.SIGTERM, on_term)
    try:
        ctx.origin.start()
        log("origin: %s (nginx pid %d)" % (ctx.origin.url, ctx.origin.pid))
        for wl in wls:
            if wl in SEPARATE:
                SEPARATE[wl](ctx, notes, rows)
                report.write_csv(os.path.join(ctx.results, "results.csv"), rows, meta)
                continue
            log("[%s] %s: %s, %d items" % (WORKLOADS[wl][0], wl, describe(wl, files),
                                           len(ctx.items[wl])))
            run_workload(ctx, wl, contestants, rows)
            report.write_csv(os.path.join(ctx.results, "results.csv"), rows, meta)
    except KeyboardInterrupt:
        log("interrupted: writing what was measured so far")
        status = 130
    except Exception:
        traceback.print_exc()
        log("bench: the harness broke (above); writing what was measured so far")
        status = 2
    finally:
        for c in list(ctx.active):
            c.abort()
        ctx.origin.stop()
        if os.path.exists(os.path.join(ctx.origin.dir, "error.log")):
            shutil.copy(os.path.join(ctx.origin.dir, "error.log"),
                        os.path.join(ctx.logs, "nginx-error.log"))
        if a.keep_scratch:
            log("scratch kept: %s" % ctx.scratch)
        else:
            shutil.rmtree(ctx.scratch, ignore_errors=True)
    if ctx.dropstate.get("note"):
        notes.append(ctx.dropstate["note"])
    meta["elapsed_s"] = now() - t_start
    # table order: workload, phase (epoch1, epoch2, ...), contestant
    phases = [lab for w in wls for lab in phase_labels(w)]
    names = [c.name for c in contestants]
    rows.sort(key=lambda r: (phases.index(r["workload"]), names.index(r["contestant"])
                             if r["contestant"] in names else len(names)))
    report.add_ratios(rows)
    report.write_csv(os.path.join(ctx.results, "results.csv"), rows, meta)
    with open(os.path.join(ctx.results, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    text = report.table(rows, meta)
    chart_note = report.chart(rows, meta, os.path.join(ctx.results, "chart.png"))
    if chart_note:
        notes.append(chart_note)
    text += report.explain(meta, notes)
    # the tables of the workloads that have their own (throughput, tilebytes)
    text += "".join("\n" + t for t in ctx.sections)
    with open(os.path.join(ctx.results, "table.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(ctx.results, "table.md"), "w") as f:
        f.write(report.markdown(rows, meta))
    log("")
    log(text)
    log("written: %s/{results.csv,chart.png,table.txt,table.md,meta.json,logs/,raw/}"
        % os.path.relpath(ctx.results, os.getcwd()))
    bad = [r for r in rows if r["check"] == "WRONG" or
           (r["family"] == "tilefs" and r["check"] in ("ERROR", "HANG"))]
    if bad and status == 0:
        status = 1
        log("FAILED: %d row(s) with wrong data or a failing tilefs: %s" % (
            len(bad), ", ".join("%s/%s %s" % (r["workload"], r["contestant"], r["check"])
                                for r in bad)))
    if ctx.failed and status == 0:
        status = 1
        log("FAILED: %s" % "; ".join(x[:200] for x in ctx.failed))
    return status


if __name__ == "__main__":
    sys.exit(main())
