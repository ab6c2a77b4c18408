"""The tilebytes workload (issue 45 items 2 and 3): the bytes a mount fetches
from the origin for the bytes of the tiles read, reading tile by tile.

Three sets: the S2-like COGs (1024x1024 tiles, DEFLATE) and the Landsat-like
ones (512x512, ZSTD) of the bench data set, and gen_data.py's small-tile LZW
COGs (128x128, about 23 KB a tile). Every full-resolution tile of every file
of a set is read once, in a shuffled order, by 4 reader processes, each read
a rasterio window of exactly one tile (a fresh open each, as workload.py
does), through a cold mount (a fresh cache dir) with --prefetch none (reads
go tile by tile) and with the default policy (auto: on this small a set, the
whole file in the background, overviews included). The baseline is the sum
of the tiles' sizes (their TIFF byte counts): origin bytes are the body
bytes of the data GETs in nginx's access log ($body_bytes_sent of GETs of a
file answered 200 or 206: headers at open included, listings not).
"Fetched twice": bytes of a data GET that an earlier GET of the phase had
fetched. Every tile read is checked against the local read.

The origin is its own nginx (the run's --scheme and --profile) serving the
three sets. Written to results/<ts>/tilebytes.{txt,json}.
"""
import json
import os
import random
import shutil

import bench
from origin import Origin

SETS = (("s2", "S2-like"), ("landsat", "Landsat-like"), ("lzw", "small-tile LZW"))
POLICIES = (("none", ["--prefetch", "none"]), ("default", []))


def tiles_of(root, rel):
    """(info, [(window, offset, length)]) of every full-resolution tile of
    the file ROOT/REL."""
    from osgeo import gdal
    gdal.UseExceptions()
    ds = gdal.Open(os.path.join(root, rel))
    b = ds.GetRasterBand(1)
    bx, by = b.GetBlockSize()
    w, h = ds.RasterXSize, ds.RasterYSize
    out = []
    for ty in range((h + by - 1) // by):
        for tx in range((w + bx - 1) // bx):
            off = b.GetMetadataItem("BLOCK_OFFSET_%d_%d" % (tx, ty), "TIFF")
            n = b.GetMetadataItem("BLOCK_SIZE_%d_%d" % (tx, ty), "TIFF")
            if off and n and int(n) > 0:
                x, y = tx * bx, ty * by
                out.append(([x, y, min(bx, w - x), min(by, h - y)], int(off), int(n)))
    info = {"block": [bx, by], "bands": ds.RasterCount,
            "compression": ds.GetMetadataItem("COMPRESSION", "IMAGE_STRUCTURE") or "NONE",
            "size": os.path.getsize(os.path.join(root, rel))}
    ds = None
    return info, out


def set_plan(root, kind, seed=20261202):
    """The items of one set (every tile of its files, shuffled), with what
    the table needs about them."""
    d = os.path.join(root, kind)
    rels = [kind + "/" + n for n in sorted(os.listdir(d)) if n.endswith(".tif")]
    items, tile_bytes, file_bytes, info = [], 0, 0, None
    for rel in rels:
        info, tiles = tiles_of(root, rel)
        if info["bands"] != 1:
            raise RuntimeError("%s: tilebytes wants one band (one tile a window)" % rel)
        file_bytes += info["size"]
        for window, _, n in tiles:
            items.append({"op": "chip", "path": rel, "window": window})
            tile_bytes += n
    random.Random(seed).shuffle(items)
    return {"items": items, "tile_bytes": tile_bytes, "file_bytes": file_bytes,
            "files": len(rels), "block": info["block"], "compression": info["compression"]}


def _f(v, fmt, width):
    return ("-" if v is None else fmt % v).rjust(width)


def table(res):
    lines = ["tilebytes (issue 45): origin bytes for the bytes of the tiles read; every "
             "full-resolution tile of each file read once, shuffled, one rasterio window a "
             "tile, 4 readers, cold mounts; origin over %s, %d ms first byte, %sB/s a "
             "connection; %s" % (res["scheme"], res["delay_ms"], res["rate"].upper(),
                                 res["timestamp"]), ""]
    hdr = "%-34s %6s %9s %-9s %6s %9s %8s %9s %9s  %s" % (
        "set", "tiles", "tiles MB", "policy", "GETs", "origin MB", "x tiles", "twice MB",
        "files MB", "check")
    lines += [hdr, "-" * len(hdr)]
    for s in res["sets"]:
        what = "%s (%s/: %d files, %dx%d, %s, %.0f KB a tile)" % (
            s["like"], s["kind"], s["files"], s["block"][0], s["block"][1], s["compression"],
            s["tile_bytes"] / 1024.0 / max(1, s["tiles"]))
        lines.append(what)
        for r in s["rows"]:
            lines.append("%-34s %6d %9.1f %-9s %s %s %s %s %9.1f  %s" % (
                "", s["tiles"], s["tile_bytes"] / 1e6, r["policy"],
                _f(r.get("data_gets"), "%d", 6), _f(r.get("data_bytes", 0) / 1e6, "%.1f", 9),
                _f(r.get("x_tiles"), "%.3f", 8), _f(r.get("again", 0) / 1e6, "%.1f", 9),
                s["file_bytes"] / 1e6,
                r["check"] + ((" " + r["note"][:160]) if r.get("note") else "")))
    lines += ["", "x tiles: origin bytes (data GETs' bodies, headers at open included) / the "
              "tiles' bytes (issue 45 wants it within 1.02 for tiles of 16 KB and up); twice: "
              "bytes fetched again in the phase; default: no --prefetch (auto)."]
    return "\n".join(lines) + "\n"


def run(ctx, notes):
    """The workload, from bench.py (--workloads tilebytes)."""
    extra = bench.ensure_extra(ctx.mode)
    where = os.path.join(ctx.scratch, "tilebytes")
    root = os.path.join(where, "root")
    os.makedirs(root)
    for kind, _ in SETS:
        src = os.path.join(extra if kind == "lzw" else ctx.data, kind)
        os.symlink(src, os.path.join(root, kind))
    delay_ms, rate = ctx.profile
    origin = Origin(root, delay_ms, rate, ctx.scratch, tls=(ctx.scheme == "https"),
                    name="nginx-tilebytes")
    res = {"scheme": ctx.scheme, "delay_ms": delay_ms, "rate": rate,
           "timestamp": os.path.basename(ctx.results), "sets": []}
    failed = []
    main_origin = ctx.origin
    origin.start()
    ctx.origin = origin        # the contestants mount, and run_phase meters, this one
    try:
        for kind, like in SETS:
            p = set_plan(root, kind)
            label = "tilebytes-" + kind
            bench.log("[45] %s: %s, every tile of %d files: %d tiles, %.1f MB" % (
                label, like, p["files"], len(p["items"]), p["tile_bytes"] / 1e6))
            items_file = os.path.join(ctx.raw, "items-%s.json" % label)
            with open(items_file, "w") as f:
                json.dump(p["items"], f)
            s = {"kind": kind, "like": like, "tiles": len(p["items"]), "rows": []}
            s.update((k, p[k]) for k in ("tile_bytes", "file_bytes", "files", "block",
                                          "compression"))
            bench.drop_caches(ctx.dropstate)
            ref = bench.run_phase(ctx, "tilebytes", bench.Local(), root, items_file, label)
            ref_hash = ref.pop("_hash", None)
            if ref["check"] != "ok":
                failed.append("%s local: %s" % (label, ref.get("note")))
            ctx.wl = label
            ctx.cache_size = ctx.default_cache_size
            for policy, args in POLICIES:
                c = bench.Tilefs("tilefs-cold/" + policy, ctx.tilefs_extra + args)
                r = {"policy": policy, "check": "ok", "note": ""}
                off = origin.offset()
                try:
                    mnt = c.prepare(label, ctx)
                except (bench.Skip, bench.Failure) as e:
                    r["check"], r["note"] = "ERROR", str(e).splitlines()[0]
                else:
                    try:
                        bench.drop_caches(ctx.dropstate)
                        row = bench.run_phase(ctx, "tilebytes", c, mnt, items_file, label)
                        bench.compare(row, ref_hash)
                        r["check"] = row["check"]
                        r["note"] = row.get("note", "")
                        r["tiles_per_s"] = row.get("rate")
                    finally:
                        note = c.finish(ctx)
                    if note:
                        r["note"] = (note + "; " + r["note"]).strip("; ")
                        r["check"] = "ERROR" if r["check"] == "ok" else r["check"]
                t = origin.since(off, save=os.path.join(
                    ctx.raw, "%s-%s.access.log" % (label, bench.fname(c.name))))
                r.update(data_gets=t["data_gets"], data_bytes=t["data_bytes"],
                         again=t["again"], x_tiles=t["data_bytes"] / p["tile_bytes"])
                s["rows"].append(r)
                bench.log("  %-20s %d GETs, %.1f MB for %.1f MB of tiles: %.3fx, %.1f MB "
                          "fetched twice  [%s] %s" % (
                              c.name, t["data_gets"], t["data_bytes"] / 1e6,
                              p["tile_bytes"] / 1e6, r["x_tiles"], t["again"] / 1e6,
                              r["check"], r["note"][:200]))
                if r["check"] != "ok":
                    failed.append("%s %s: %s %s" % (label, c.name, r["check"], r["note"]))
            for (w, name), d in list(ctx.caches.items()):
                if w == label:
                    shutil.rmtree(d, ignore_errors=True)
                    del ctx.caches[(w, name)]
            res["sets"].append(s)
    finally:
        ctx.origin = main_origin
        origin.stop()
    bench.write_section(ctx, notes, "tilebytes", res, table(res), failed)
