#!/usr/bin/python3
"""The xarray workload (issue 45 item 3): the Python array stack a data
scientist reaches for, through a mount, cold and warm, against local disk.

Four stacks, each a phase of its own (rows xr-<stack> in the table):

  rioxarray  rioxarray.open_rasterio(chunks=1024x1024, lock=False) of the
             S2-like files; random 512x512 windows (.isel) computed by dask's
             threaded scheduler (4 threads)
  zarr       tifffile.imread(aszarr=True) opened with zarr, wrapped with
             dask.array.from_zarr: the same windows, the same scheduler
  memmap     numpy.memmap(mode="r") of the striped uncompressed GeoTIFFs'
             pixels (a MAP_SHARED mapping; tifffile gives the offset): random
             512x512 windows
  mmap-tiled numpy.memmap(mode="r") of the tiled S2-like files as bytes:
             the raw bytes of random tiles (a MAP_SHARED mapping of a tiled
             TIFF, which a cold mount refused with ENODEV when this was
             written: issue 45 item 1)

Contestants: local (the reference), tilefs-cold (a fresh cache dir for each
stack, so one stack does not warm the next) and tilefs-warm (that cache
after an unmount and a new mount), over the bench origin (--scheme,
--profile), the page cache dropped before every phase. Each window's bytes
are hashed and compared with local's: a row says ok only when every array
equals local's. The rate is MB/s of the arrays delivered.

Run by bench.py (--workloads xarray); run alone as a reader:
    xstack.py --stack STACK --root DIR --items ITEMS.json --out OUT.json
"""
import argparse
import hashlib
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import time
import traceback

STACKS = ("rioxarray", "zarr", "memmap", "mmap-tiled")
LABELS = ["xr-" + s for s in STACKS]
DESCRIBED = {
    "rioxarray": "rioxarray.open_rasterio(chunks=1024) of the S2-like files, 512x512 windows "
                 "computed by dask (4 threads)",
    "zarr": "tifffile aszarr + zarr + dask.array.from_zarr, the same windows",
    "memmap": "numpy.memmap(mode='r') of the striped files' pixels, 512x512 windows",
    "mmap-tiled": "numpy.memmap(mode='r') of the tiled S2-like files, raw bytes of tiles",
}
WINDOW = 512
THREADS = 4
SIZES = {"quick": 48, "full": 240}   # windows (or tiles) per stack


def _digest(b):
    return hashlib.blake2b(b, digest_size=12).hexdigest()


# ---------------------------------------------------------------- reader

def read_rioxarray(root, items):
    import dask
    import rioxarray
    t0 = time.perf_counter()
    arrays = {}
    for it in items:
        if it["path"] not in arrays:
            arrays[it["path"]] = rioxarray.open_rasterio(
                os.path.join(root, it["path"]), chunks={"band": 1, "x": 1024, "y": 1024},
                lock=False, cache=False)
    sel = []
    for it in items:
        x, y, w, h = it["window"]
        sel.append(arrays[it["path"]].isel(x=slice(x, x + w), y=slice(y, y + h)).data)
    with dask.config.set(scheduler="threads", num_workers=THREADS):
        out = dask.compute(*sel)
    wall = time.perf_counter() - t0
    for a in arrays.values():
        a.close()
    return [o[0] for o in out], wall


def read_zarr(root, items):
    import dask
    import dask.array as da
    import tifffile
    import zarr
    t0 = time.perf_counter()
    arrays, stores = {}, []
    for it in items:
        if it["path"] not in arrays:
            store = tifffile.imread(os.path.join(root, it["path"]), aszarr=True)
            stores.append(store)
            z = zarr.open(store, mode="r")
            if isinstance(z, zarr.hierarchy.Group):
                z = z[0]       # the full-resolution level of a multiscale store
            arrays[it["path"]] = da.from_zarr(z)
    sel = []
    for it in items:
        x, y, w, h = it["window"]
        sel.append(arrays[it["path"]][y:y + h, x:x + w])
    with dask.config.set(scheduler="threads", num_workers=THREADS):
        out = dask.compute(*sel)
    wall = time.perf_counter() - t0
    for s in stores:
        s.close()
    return list(out), wall


def read_memmap(root, items):
    import numpy as np
    import tifffile
    t0 = time.perf_counter()
    maps = {}
    for it in items:
        if it["path"] in maps:
            continue
        path = os.path.join(root, it["path"])
        with tifffile.TiffFile(path) as tf:
            page = tf.pages[0]
            if page.compression != 1 or not page.is_contiguous:
                raise ValueError("%s: not uncompressed and contiguous" % it["path"])
            offset, shape, dtype = page.dataoffsets[0], page.shape, page.dtype
        maps[it["path"]] = np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape)
    out = []
    for it in items:
        x, y, w, h = it["window"]
        out.append(np.array(maps[it["path"]][y:y + h, x:x + w]))
    wall = time.perf_counter() - t0
    return out, wall


def read_memmap_tiled(root, items):
    import numpy as np
    t0 = time.perf_counter()
    maps = {}
    out = []
    for it in items:
        if it["path"] not in maps:
            maps[it["path"]] = np.memmap(os.path.join(root, it["path"]), dtype=np.uint8,
                                         mode="r")
        off, n = it["offset"], it["length"]
        out.append(np.array(maps[it["path"]][off:off + n]))
    wall = time.perf_counter() - t0
    return out, wall


# what each stack imports (checked before its phases: a missing package
# skips its rows, it does not fail the bench)
IMPORTS = {"rioxarray": ("rioxarray", "dask"), "zarr": ("tifffile", "zarr", "dask.array"),
           "memmap": ("numpy", "tifffile"), "mmap-tiled": ("numpy",)}
READERS = {"rioxarray": read_rioxarray, "zarr": read_zarr, "memmap": read_memmap,
           "mmap-tiled": read_memmap_tiled}


def reader_main(argv):
    ap = argparse.ArgumentParser(prog="xstack.py")
    ap.add_argument("--stack", choices=STACKS, required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--items", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    with open(a.items) as f:
        items = json.load(f)
    res = {"n": len(items), "wall_s": 0.0, "bytes": 0, "lat": [], "hash": [None] * len(items),
           "errors": []}
    try:
        arrays, wall = READERS[a.stack](a.root, items)
        res["wall_s"] = wall
        for i, arr in enumerate(arrays):
            b = arr.tobytes()
            res["hash"][i] = _digest(b)
            res["bytes"] += len(b)
    except Exception as e:   # reported, never hidden: the row says ERROR
        res["errors"].append([0, ("%s: %s" % (type(e).__name__, e))[:500]])
        traceback.print_exc()
    ru = resource.getrusage(resource.RUSAGE_SELF)
    res["client_cpu_s"] = ru.ru_utime + ru.ru_stime
    with open(a.out + ".tmp", "w") as f:
        json.dump(res, f)
    os.replace(a.out + ".tmp", a.out)


# ---------------------------------------------------------------- harness

def plan(files, mode, seed=20261201):
    """{stack: items}: windows of the S2-like files (rioxarray, zarr), of the
    striped files (memmap), tiles of the S2-like files (mmap-tiled)."""
    rng = random.Random(seed)
    n = SIZES[mode]
    s2 = [f for f in files if f["kind"] == "s2"]
    striped = [f for f in files if f["kind"] == "striped"]

    def windows(pool):
        out = []
        for _ in range(n):
            f = rng.choice(pool)
            x = rng.randrange(f["w"] - WINDOW + 1)
            y = rng.randrange(f["h"] - WINDOW + 1)
            out.append({"path": f["path"], "window": [x, y, WINDOW, WINDOW]})
        return out
    items = {"rioxarray": windows(s2)}
    items["zarr"] = items["rioxarray"]
    items["memmap"] = windows(striped)
    tiles = []
    for _ in range(n):
        f = rng.choice(s2)
        off, length = rng.choice(f["tiles"])
        tiles.append({"path": f["path"], "offset": off, "length": length})
    items["mmap-tiled"] = tiles
    return items


def run(ctx, notes, rows):
    """The workload, from bench.py (--workloads xarray): rows for the main
    table, one per stack and contestant."""
    import bench
    files = bench.scan_data(ctx.data)
    items = plan(files, ctx.mode)
    missing = {}
    for stack, mods in IMPORTS.items():
        r = subprocess.run([bench.PY, "-c", "import " + ", ".join(mods)], capture_output=True,
                           text=True)
        if r.returncode != 0:
            missing[stack] = (r.stderr.strip().splitlines() or ["import failed"])[-1]
    cold = bench.Tilefs("tilefs-cold", ctx.tilefs_extra)
    contestants = [bench.Local(), cold, bench.Tilefs("tilefs-warm", ctx.tilefs_extra,
                                                     warm_of=cold)]
    ctx.cache_size = ctx.default_cache_size
    for stack, label in zip(STACKS, LABELS):
        log = bench.log
        log("[45] %s: %s, %d items" % (label, DESCRIBED[stack], len(items[stack])))
        items_file = os.path.join(ctx.raw, "items-%s.json" % label)
        with open(items_file, "w") as f:
            json.dump(items[stack], f)
        ctx.wl = label
        ref = None
        if stack in missing:
            why = "not run: %s (tests/bench/install-deps installs it)" % missing[stack]
            log("  " + why)
            rows += [{"workload": label, "contestant": c.name, "family": c.family,
                      "unit": "MB/s", "check": "SKIP", "note": why} for c in contestants]
            continue
        for c in contestants:
            row = {"workload": label, "contestant": c.name, "family": c.family,
                   "unit": "MB/s", "check": "ok", "note": "", "p50_ms": None, "p95_ms": None}
            off = ctx.origin.offset()
            try:
                root = c.prepare(label, ctx)
            except (bench.Skip, bench.Failure) as e:
                row["check"] = "ERROR" if c.family == "tilefs" else "SKIP"
                row["note"] = str(e).splitlines()[0]
                rows.append(row)
                log("  %-12s %s" % (c.name, row["note"]))
                continue
            try:
                bench.drop_caches(ctx.dropstate)
                out = os.path.join(ctx.raw, "%s-%s.json" % (label, bench.fname(c.name)))
                before = bench.proc_stats(c.daemon) if c.daemon else None
                t0 = time.monotonic()
                r = subprocess.run([bench.PY, os.path.abspath(__file__), "--stack", stack,
                                    "--root", root, "--items", items_file, "--out", out],
                                   stdout=subprocess.DEVNULL, stderr=open(out + ".stderr", "w"),
                                   timeout=ctx.phase_timeout)
                after = bench.proc_stats(c.daemon) if c.daemon else None
                if r.returncode != 0 or not os.path.exists(out):
                    row["check"] = "ERROR"
                    row["note"] = "xstack.py exited %d: %s" % (
                        r.returncode, bench.tail_of(out + ".stderr", 3).strip()[-300:])
                else:
                    with open(out) as f:
                        res = json.load(f)
                    wall = res["wall_s"] or (time.monotonic() - t0)
                    row.update(items=res["n"], wall_s=wall, bytes=res["bytes"],
                               client_cpu_s=res.get("client_cpu_s"))
                    if res["errors"]:
                        row["check"] = "ERROR"
                        row["note"] = res["errors"][0][1]
                    else:
                        row["rate"] = row["mb_per_s"] = res["bytes"] / 1e6 / wall
                        row["items_per_s"] = res["n"] / wall
                        if c.family == "local":
                            ref = res["hash"]
                        elif ref is None:
                            row["check"] = "no-ref"
                        else:
                            bad = [i for i, (a, b) in enumerate(zip(res["hash"], ref))
                                   if a != b]
                            if bad:
                                row["check"] = "WRONG"
                                row["mismatches"] = len(bad)
                                row["note"] = "%d of %d arrays differ from local, first %d" % (
                                    len(bad), len(ref), bad[0])
                            else:
                                row["note"] = "every array equal to local's"
                if before and after:
                    row["daemon_cpu_s"] = after[0] - before[0]
                    row["daemon_rss_mb"] = after[1]
            except subprocess.TimeoutExpired:
                row["check"] = "HANG"
                row["note"] = "no result after %d s" % ctx.phase_timeout
            finally:
                note = c.finish(ctx)
            t = ctx.origin.since(off, save=os.path.join(
                ctx.raw, "%s-%s.access.log" % (label, bench.fname(c.name))))
            row["requests"], row["fetched_bytes"] = t["requests"], t["bytes"]
            row["data_gets"] = t["data_gets"]
            if c.family == "tilefs" and c.warm_of and t["data_gets"]:
                row["note"] = ("%d data GETs after the remount (want 0); %s" % (
                    t["data_gets"], row["note"])).strip("; ")
            if note:
                row["note"] = (note + "; " + row["note"]).strip("; ")
                if row["check"] == "ok":
                    row["check"] = "ERROR"
            rows.append(row)
            log("  %-12s %s" % (c.name, bench.brief(row)))
        for (w, name), d in list(ctx.caches.items()):
            if w == label:
                shutil.rmtree(d, ignore_errors=True)
                del ctx.caches[(w, name)]


if __name__ == "__main__":
    sys.exit(reader_main(sys.argv[1:]))
