"""The smallfiles workload (issue 56): a training set of many small files,
shaped as BigEarthNet is: a folder a patch, a GeoTIFF a band (4 bands of
120x120 uint16, DEFLATE, about 24 KB each; 5,000 patches in full mode,
1,000 in quick), served by an nginx of its own with the run's profile.
A torch DataLoader (--workers processes, one patch an item, every band
read whole with rasterio) reads random patches (1,000 in full, 300 in
quick), through:

  local            the set on local disk (the baseline of the ratios)
  tilefs-cold      a fresh mount on an empty cache dir, default options
  tilefs-warm      the same mount, the same patches again
  tilefs-remount   a new mount over that cache (every byte cached: what a
                   later job meets)
  tilefs-hinted    a fresh mount on an empty cache dir, the epoch's files
                   handed to it first (tilefs hint), then read
  rclone           rclone mount --vfs-cache-mode full, if installed
  tilefs-s3-cold, tilefs-s3-remount
                   cold and remounted as above, the set served as an S3
                   bucket (tests/lib/sigv4_store.py, the same delay):
                   listings that carry ETags, listed deep. The store is
                   one Python process that checks every signature under
                   a lock: the cold row measures it more than tilefs
  local-1band      the same patches, one band file of each read (B02)
  tilefs-1band     that, through a fresh mount: what fetching a patch's
                   other bands ahead costs a reader who wants only one

Rates are patches/s; requests are what the origin answered in the phase
(listings, HEADs and GETs), data KB the bodies of its GETs of files. Every patch's bytes are checked against the
local read. The set is generated once into tests/.cache/bench. Written to
results/<ts>/smallfiles.{txt,json}; nothing is timed against a limit.
"""
import json
import os
import random
import shutil
import subprocess

import bench
from origin import Origin, S3Store

PATCHES = {"quick": 1000, "full": 5000}
READS = {"quick": 300, "full": 1000}
BANDS = ("B02", "B03", "B04", "B08")
VERSION = 1


def ensure_set(mode):
    """The set of MODE, generated once; its directory."""
    base = os.path.join(bench.REPO, "tests", ".cache", "bench")
    dest = os.path.join(base, "smallfiles-%s-v%d" % (mode, VERSION))
    if os.path.isdir(dest):
        return dest
    bench.log("generating the smallfiles %s set in %s (once; kept for later runs)"
              % (mode, dest))
    tmp = dest + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    code = """
import os, sys
import numpy as np
import rasterio
from rasterio.transform import from_origin
dest, n, bands = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")
rng = np.random.default_rng(56)
for i in range(n):
    d = os.path.join(dest, "S2A_MSIL2A_patch_%05d" % i)
    os.makedirs(d)
    for b in bands:
        a = (rng.normal(1200, 300, (1, 120, 120))).clip(0, 10000).astype("uint16")
        with rasterio.open(os.path.join(d, "%s.tif" % b), "w", driver="GTiff", width=120,
                           height=120, count=1, dtype="uint16", crs="EPSG:32633",
                           transform=from_origin(500000 + 1200 * i, 5000000, 10, 10),
                           compress="DEFLATE") as ds:
            ds.write(a)
"""
    subprocess.run([bench.PY, "-c", code, tmp, str(PATCHES[mode]), ",".join(BANDS)],
                   check=True)
    os.rename(tmp, dest)
    return dest


def plan(root, mode, bands=BANDS):
    """READS random patches as items of op patch, BANDS of each read."""
    folders = sorted(os.listdir(root))
    rng = random.Random(56)
    return [{"op": "patch", "path": f, "files": ["%s/%s.tif" % (f, b) for b in bands]}
            for f in rng.sample(folders, READS[mode])]


def hint(ctx, mnt, items, name):
    """Hand MNT the items' files in order (tilefs hint); a note if refused."""
    order = os.path.join(ctx.raw, "smallfiles-%s.order" % name)
    with open(order, "w") as f:
        for it in items:
            f.writelines(p + "\n" for p in it["files"])
    r = subprocess.run([ctx.tilefs, "hint", mnt, order], capture_output=True, text=True)
    return "" if r.returncode == 0 else "hint refused: " + r.stderr.strip()[-200:]


def run(ctx, notes):
    """The workload, from bench.py (--workloads smallfiles)."""
    root = ensure_set(ctx.mode)
    items = plan(root, ctx.mode)
    items_file = os.path.join(ctx.raw, "items-smallfiles.json")
    with open(items_file, "w") as f:
        json.dump(items, f)
    one_band_file = os.path.join(ctx.raw, "items-smallfiles-1band.json")
    with open(one_band_file, "w") as f:
        json.dump(plan(root, ctx.mode, BANDS[:1]), f)
    delay_ms, rate = ctx.profile
    origin = Origin(root, delay_ms, rate, ctx.scratch, tls=(ctx.scheme == "https"),
                    name="nginx-smallfiles")
    res = {"scheme": ctx.scheme, "delay_ms": delay_ms, "patches": PATCHES[ctx.mode],
           "reads": len(items), "workers": ctx.workers,
           "timestamp": os.path.basename(ctx.results), "rows": []}
    failed = []
    bench.log("[56] smallfiles: %d random patches of %d (%d band files of 120x120 each), "
              "torch DataLoader, %d workers, over %s" % (len(items), PATCHES[ctx.mode],
                                                          len(BANDS), ctx.workers, ctx.scheme))
    store = S3Store(root, delay_ms, ctx.scratch)
    main_origin, main_data = ctx.origin, ctx.data
    saved_env = dict(os.environ)
    os.environ.update(store.environment())
    origin.start()
    store.start()
    ctx.origin, ctx.data = origin, root
    ctx.wl = label = "smallfiles"
    ctx.cache_size = ctx.default_cache_size

    refs = {}   # items file: the local read's hash

    def phase(c, mnt, name, before=None, items_of=items_file):
        r = {"contestant": name, "check": "ok", "note": ""}
        served = ctx.origin
        off = served.offset()
        if before:
            r["note"] = before(mnt) or ""
        bench.drop_caches(ctx.dropstate)
        row = bench.run_phase(ctx, "smallfiles", c, mnt, items_of, label, loader="torch")
        bench.compare(row, refs[items_of])
        t = served.since(off, save=os.path.join(ctx.raw, "smallfiles-%s.access.log" % name))
        r.update(check=row["check"] if r["check"] == "ok" else r["check"],
                 rate=row.get("items_per_s"), requests=t["requests"],
                 data_gets=t["data_gets"], data_bytes=t["data_bytes"], methods=t["methods"])
        if row.get("note"):
            r["note"] = (r["note"] + "; " + row["note"]).strip("; ")
        res["rows"].append(r)
        bench.log("  %-15s %7.1f patches/s  %d requests (%s)  [%s] %s" % (
            name, r["rate"] or 0, r["requests"],
            ", ".join("%s %d" % kv for kv in sorted(r["methods"].items())), r["check"],
            r["note"][:200]))
        if r["check"] != "ok":
            failed.append("%s: %s %s" % (name, r["check"], r["note"]))

    def local(name, items_of):
        bench.drop_caches(ctx.dropstate)
        ref = bench.run_phase(ctx, "smallfiles", bench.Local(), root, items_of, label,
                              loader="torch")
        refs[items_of] = ref.pop("_hash", None)
        res["rows"].append({"contestant": name, "rate": ref.get("items_per_s"),
                            "requests": 0, "check": ref["check"], "note": ref.get("note", "")})
        bench.log("  %-15s %7.1f patches/s" % (name, ref.get("items_per_s") or 0))

    try:
        local("local", items_file)
        cold = bench.Tilefs("tilefs-cold", ctx.tilefs_extra)
        runs = [(cold, ["tilefs-cold", "tilefs-warm"], None, items_file),
                (bench.Tilefs("tilefs-remount", ctx.tilefs_extra, warm_of=cold),
                 ["tilefs-remount"], None, items_file),
                (bench.Tilefs("tilefs-hinted", ctx.tilefs_extra), ["tilefs-hinted"],
                 lambda mnt: hint(ctx, mnt, items, "tilefs-hinted"), items_file)]
        if shutil.which("rclone"):
            runs.append((bench.Rclone("rclone", "rclone"), ["rclone"], None, items_file))
        s3_cold = bench.Tilefs("tilefs-s3-cold", ctx.tilefs_extra)
        runs += [(s3_cold, ["tilefs-s3-cold"], None, items_file),
                 (bench.Tilefs("tilefs-s3-remount", ctx.tilefs_extra, warm_of=s3_cold),
                  ["tilefs-s3-remount"], None, items_file)]
        # (last: the table's rows after local-1band are its ratios)
        runs.append((bench.Tilefs("tilefs-1band", ctx.tilefs_extra), ["tilefs-1band"], None,
                     one_band_file))
        for c, names, before, items_of in runs:
            ctx.origin = store if c.name.startswith("tilefs-s3") else origin
            if items_of not in refs:
                local("local-1band", items_of)
            try:
                mnt = c.prepare(label, ctx)
            except (bench.Skip, bench.Failure) as e:
                failed.append("%s: %s" % (c.name, str(e).splitlines()[0]))
                continue
            try:
                for name in names:
                    phase(c, mnt, name, before, items_of)
            finally:
                note = c.finish(ctx)
                if note:
                    failed.append("%s: %s" % (c.name, note))
        for (w, name), d in list(ctx.caches.items()):
            if w == label:
                shutil.rmtree(d, ignore_errors=True)
                del ctx.caches[(w, name)]
    finally:
        ctx.origin, ctx.data = main_origin, main_data
        os.environ.clear()
        os.environ.update(saved_env)
        store.stop()
        origin.stop()
    bench.write_section(ctx, notes, "smallfiles", res, table(res), failed)


def table(res):
    """The workload's table, as text."""
    local = next((r["rate"] for r in res["rows"] if r["contestant"] == "local"), None)
    lines = ["smallfiles (issue 56): %d random patches of %d, 4 band files each, %d workers, "
             "%d ms to the first byte, %s" % (res["reads"], res["patches"], res["workers"],
                                              res["delay_ms"], res["scheme"]),
             "%-15s %10s %8s %9s %8s  %s" % ("", "patches/s", "x local", "requests", "data KB",
                                              "check")]
    for r in res["rows"]:
        rate = r.get("rate")
        if r["contestant"] == "local-1band":
            local = rate    # the one-band rows' baseline
        lines.append("%-15s %10s %8s %9d %8d  %s %s" % (
            r["contestant"], "%.1f" % rate if rate else "-",
            "%.2f" % (rate / local) if rate and local else "-", r.get("requests", 0),
            r.get("data_bytes", 0) // 1024, r["check"], r.get("note", "")[:120]))
    return "\n".join(lines) + "\n"
