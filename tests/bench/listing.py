"""The listing workload (issue 56, item 4): `find` over a tree shaped as
BigEarthNet is (a folder a patch, four small band files in each: 5,000
folders and 20,000 files in full mode, 1,000 and 4,000 in quick), served
by an nginx of its own with the run's profile (its first-byte delay on
every listing), through a fresh mount of each contestant:

  local        find over the tree on local disk (the baseline of the ratios)
  tilefs       a tilefs mount, default options, on an empty cache dir
  rclone       rclone mount (--vfs-cache-mode full), if rclone is installed
  tilefs-s3    a tilefs mount of the same tree served as an S3 bucket by
               tests/lib/sigv4_store.py (ListObjectsV2 pages of 1,000 keys,
               Signature V4 checked), with the same delay on every answer

For each: seconds, names found (checked against the local tree's), and
the listing requests the origin answered. BENCH_LISTING_FOLDERS=N sets
another number of folders. One listing at a time would
take the folders times the delay at least; that floor is printed beside.
Written to results/<ts>/listing.{txt,json}; nothing is timed against a
limit, a wrong or missing name is a failure.
"""
import os
import shutil
import subprocess
import time

import bench
from origin import Origin, S3Store

FOLDERS = {"quick": 1000, "full": 5000}
BANDS = ("B02", "B03", "B04", "B08")


def make_tree(root, folders):
    """FOLDERS patch folders of four one-line band files under ROOT."""
    for i in range(folders):
        d = os.path.join(root, "S2A_patch_%05d" % i)
        os.makedirs(d)
        for b in BANDS:
            with open(os.path.join(d, "%s.tif" % b), "w") as f:
                f.write("%d %s\n" % (i, b))


def find(top):
    """(seconds, sorted names relative to TOP) of `find TOP`."""
    start = time.monotonic()
    r = subprocess.run(["find", top], capture_output=True, text=True)
    s = time.monotonic() - start
    if r.returncode != 0:
        raise bench.Failure("find %s exited %d: %s" % (top, r.returncode, r.stderr[-300:]))
    names = sorted(os.path.relpath(p, top) for p in r.stdout.splitlines())
    return s, names


def run(ctx, notes):
    """The workload, from bench.py (--workloads listing)."""
    where = os.path.join(ctx.scratch, "listing")
    root = os.path.join(where, "root")
    folders = int(os.environ.get("BENCH_LISTING_FOLDERS", FOLDERS[ctx.mode]))
    make_tree(root, folders)
    delay_ms, rate = ctx.profile
    origin = Origin(root, delay_ms, rate, ctx.scratch, tls=(ctx.scheme == "https"),
                    name="nginx-listing")
    res = {"scheme": ctx.scheme, "delay_ms": delay_ms, "folders": folders,
           "files": folders * len(BANDS), "timestamp": os.path.basename(ctx.results),
           "rows": []}
    failed = []
    bench.drop_caches(ctx.dropstate)
    local_s, want = find(root)
    res["rows"].append({"contestant": "local", "seconds": local_s, "names": len(want),
                        "listings": 0, "check": "ok", "note": ""})
    bench.log("[56] listing: find over %d folders of %d files, %d ms to the first byte, "
              "over %s" % (folders, len(BANDS), delay_ms, ctx.scheme))
    bench.log("  %-8s %8.2f s  %d names" % ("local", local_s, len(want)))
    store = S3Store(root, delay_ms, ctx.scratch)
    contestants = [(bench.Tilefs("tilefs", ctx.tilefs_extra), origin)]
    if shutil.which("rclone"):
        contestants.append((bench.Rclone("rclone", "rclone"), origin))
    contestants.append((bench.Tilefs("tilefs-s3", ctx.tilefs_extra), store))
    main_origin = ctx.origin
    saved_env = dict(os.environ)
    os.environ.update(store.environment())
    origin.start()
    store.start()
    ctx.wl = "listing"
    ctx.cache_size = ctx.default_cache_size
    try:
        for c, served in contestants:
            ctx.origin = served
            r = {"contestant": c.name, "check": "ok", "note": ""}
            off = served.offset()
            try:
                mnt = c.prepare("listing", ctx)
                try:
                    r["seconds"], got = find(mnt)
                    r["names"] = len(got)
                    if got != want:
                        r["check"] = "WRONG"
                        r["note"] = "%d names, %d expected" % (len(got), len(want))
                finally:
                    note = c.finish(ctx)
                if note:
                    r["check"], r["note"] = "ERROR", note
            except (bench.Skip, bench.Failure) as e:
                r["check"], r["note"] = "ERROR", str(e).splitlines()[0]
            t = served.since(off, save=os.path.join(ctx.raw, "listing-%s.access.log" % c.name))
            r["listings"] = t["methods"].get("GET", 0) - t["data_gets"]
            r["requests"] = t["requests"]
            res["rows"].append(r)
            bench.log("  %-8s %8.2f s  %s names, %d listings, %d requests  [%s] %s" % (
                c.name, r.get("seconds", float("nan")), r.get("names", "?"), r["listings"],
                r["requests"], r["check"], r["note"][:200]))
            if r["check"] != "ok":
                failed.append("%s: %s %s" % (c.name, r["check"], r["note"]))
        for (w, name), d in list(ctx.caches.items()):
            if w == "listing":
                shutil.rmtree(d, ignore_errors=True)
                del ctx.caches[(w, name)]
    finally:
        ctx.origin = main_origin
        os.environ.clear()
        os.environ.update(saved_env)
        store.stop()
        origin.stop()
        shutil.rmtree(where, ignore_errors=True)
    bench.write_section(ctx, notes, "listing", res, table(res), failed)


def table(res):
    """The workload's table, as text."""
    floor = res["folders"] * res["delay_ms"] / 1000.0
    lines = ["listing (issue 56 item 4): find over %d folders, %d files, %d ms to the first "
             "byte, %s" % (res["folders"], res["files"], res["delay_ms"], res["scheme"]),
             "%-8s %9s %10s %9s %9s  %s" % ("", "seconds", "names/s", "listings", "x serial",
                                            "check")]
    for r in res["rows"]:
        s = r.get("seconds")
        lines.append("%-8s %9s %10s %9d %9s  %s %s" % (
            r["contestant"], "%.2f" % s if s else "-",
            "%.0f" % (r["names"] / s) if s else "-", r["listings"],
            "%.2f" % (floor / s) if s and r["contestant"] != "local" else "-",
            r["check"], r["note"][:120]))
    lines += ["", "x serial: one listing at a time (folders x delay = %.1f s) over the "
              "contestant's seconds." % floor]
    return "\n".join(lines) + "\n"
