#!/usr/bin/python3
"""tiff_blocks.py: reference tile/strip maps for the tile-aware cache tests.

Subcommands (every one exits 0 when all is well, 1 on a mismatch, printing
the file name and the first difference, 2 on bad usage):

  ref FILE
      The reference map of FILE from `tiffdump` (main IFD chain, then the
      SubIFDs in the order found, each read with `tiffdump -o`), printed as
        file SIZE TIFF|BigTIFF little-endian|big-endian NIFDS NBLOCKS NEMPTY COG
        ifd K WxH tiles|strips BWxBH ACROSSxDOWN N PLANES SUBFILETYPE main|subifd COMPRESSION
        block K INDEX OFFSET LENGTH
      COG is "yes" (GDAL ghost header with BLOCK_LEADER=SIZE_AS_UINT4 and
      BLOCK_TRAILER=LAST_4_BYTES_REPEATED), "no", or "either" (such a ghost
      header, but KNOWN_INCOMPATIBLE_EDITION=YES).

  gdal FILE
      Every block GDAL reports for FILE (BLOCK_OFFSET_x_y / BLOCK_SIZE_x_y in
      the TIFF metadata domain): every band of the main dataset and of each
      GTIFF_DIR subdataset, of every overview, and of the mask bands GDAL
      exposes (also those of overviews), as
        gdal WHAT BAND X Y OFFSET SIZE

  check-local DIR OUTDIR
      For every file NAME in DIR, OUTDIR/NAME.out and OUTDIR/NAME.rc hold
      the stdout and exit status of `tilefs inspect --blocks DIR/NAME`.
      Checks them against `ref` (exact: IFD lines and block lines) and
      `gdal` (every block GDAL reports is in the listing, same offset and
      size, at the strile index INDEX = plane*across*down + y*across + x).

  check-same DIR OUTDIR_A OUTDIR_B
      For every NAME in DIR: the IFD and block lines of OUTDIR_A/NAME.out
      and OUTDIR_B/NAME.out are identical, both exited 0, and the first
      lines agree but for the name. OUTDIR_B may have `cached:` lines.

  check-plain DIR OUTDIR
      For every NAME in DIR (corpus/bad): exit 0, and a first line that is
      either `NAME: SIZE bytes, plain bytes (WHY)` or a TIFF summary line,
      with the right SIZE.

  touched FILE COL ROW W H
      The tiles of the full-resolution IFD a window touches, as
        tile X Y INDEX OFFSET LENGTH
      (band 1; offsets and sizes from GDAL).

  windows MNTDIR LOCALDIR [--seed S] [--n N] [NAME...]
      Random windows (every band at once) at full resolution and, where
      present, in an overview, read with rasterio from both trees: same
      arrays, or the same failure on both sides.

  cost MNTFILE LOCALFILE URI HEADER_SIZE [--seed S] [--n N]
      Request accounting on a freshly mounted COG (--prefetch none), from
      $ORIGIN_LOG (truncated as it goes, as is $ORIGIN_LOG_FULL):
        * rasterio.open, nothing read: at most 1 GET for URI when the header
          [0, first tile unit) fits in HEADER_SIZE bytes, 2 otherwise, the
          first one starting at byte 0, none reaching past both HEADER_SIZE
          and the header region;
        * opening again: no request at all;
        * N random 256x256 windows: at most one GET per tile touched, every
          byte fetched inside [off-4, off+len+4) of a touched tile, the
          bytes equal the local file's; reading the same window again in a
          fresh dataset (page cache dropped with fadvise): no request.

  cached-line TEXT_FILE SIZE
      Parse `cached: U units, C of SIZE bytes (P%)` in TEXT_FILE; print
      "U C P". Fails if there is no such line or SIZE is wrong.
"""
import os
import random
import re
import subprocess
import sys
import time

# Readers read in aligned buffers (GDAL through a tilefs mount: 8 KiB), so
# reading one tile also asks for the bytes it shares with its neighbours'
# buffers; tilefs fetches those with the tile, up to the next 16 KiB
# boundary, and ends the header unit on one. No byte outside a touched
# tile's extent rounded out to 16 KiB may be fetched.
ALIGN = 16384

TIFFDUMP = os.environ.get("TIFFDUMP", "tiffdump")

T_SUBFILE = 254
T_WIDTH, T_LENGTH = 256, 257
T_COMPRESSION = 259
T_STRIPOFFSETS, T_STRIPBYTECOUNTS = 273, 279
T_SPP, T_RPS = 277, 278
T_PLANAR = 284
T_TILEW, T_TILEL, T_TILEOFFSETS, T_TILEBYTECOUNTS = 322, 323, 324, 325
T_SUBIFD = 330

_DIR_RE = re.compile(r"^Directory (\d+): offset (\d+) \(0x[0-9a-fA-F]+\) next (\d+) ")
_TAG_RE = re.compile(r"^(.*?) \((\d+)\) (\S+) \((\d+)\) (\d+)<(.*)>$")


class Mismatch(Exception):
    pass


def _num(s):
    s = s.strip()
    if s.lower().startswith("0x"):
        return int(s, 16)
    try:
        return int(s)
    except ValueError:
        return int(float(s))


def tiffdump_dirs(path, offset=None):
    """Parse `tiffdump [-o OFF] -m BIG PATH`: header info and a list of
    directories, each {'offset', 'next', 'tags': {tag: [values]}}."""
    cmd = [TIFFDUMP, "-m", "100000000"]
    if offset is not None:
        cmd += ["-o", str(offset)]
    cmd.append(path)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    text = p.stdout.decode("latin-1")
    head = {}
    dirs = []
    cur = None
    for line in text.split("\n"):
        if line.startswith("Magic:"):
            head["big_endian"] = "big-endian" in line
            head["bigtiff"] = "BigTIFF" in line
            continue
        m = _DIR_RE.match(line)
        if m:
            cur = {"offset": int(m.group(2)), "next": int(m.group(3)), "tags": {}}
            dirs.append(cur)
            continue
        m = _TAG_RE.match(line)
        if m and cur is not None:
            tag, typ = int(m.group(2)), m.group(3)
            if typ == "ASCII":
                continue
            vals = m.group(6).split()
            if vals and vals[-1] == "...":
                raise Mismatch("tiffdump truncated tag %d of %s" % (tag, path))
            try:
                cur["tags"][tag] = [_num(v) for v in vals]
            except ValueError:
                pass
    return head, dirs


def ghost_cog(path):
    with open(path, "rb") as fh:
        head = fh.read(2048)
    i = head.find(b"GDAL_STRUCTURAL_METADATA_SIZE=")
    if i < 0 or i > 32:
        return "no"
    m = re.match(rb"GDAL_STRUCTURAL_METADATA_SIZE=(\d+) bytes\n", head[i:])
    if not m:
        return "no"
    body = head[i + m.end(): i + m.end() + int(m.group(1))]
    leader = b"BLOCK_LEADER=SIZE_AS_UINT4" in body
    trailer = b"BLOCK_TRAILER=LAST_4_BYTES_REPEATED" in body
    if not (leader and trailer):
        return "no"
    if b"KNOWN_INCOMPATIBLE_EDITION=YES" in body:
        return "either"
    return "yes"


def _ifd_from_dir(d, sub):
    t = d["tags"]

    def one(tag, default):
        v = t.get(tag)
        return v[0] if v else default

    w, h = one(T_WIDTH, 0), one(T_LENGTH, 0)
    spp = one(T_SPP, 1)
    planar = one(T_PLANAR, 1)
    planes = spp if planar == 2 else 1
    if T_TILEW in t or T_TILEOFFSETS in t:
        tiled = True
        bw, bh = one(T_TILEW, 0), one(T_TILEL, 0)
        offs, cnts = t.get(T_TILEOFFSETS, []), t.get(T_TILEBYTECOUNTS, [])
        across = -(-w // bw) if bw else 0
        down = -(-h // bh) if bh else 0
    else:
        tiled = False
        rps = one(T_RPS, 0xFFFFFFFF)
        bw, bh = w, rps
        offs, cnts = t.get(T_STRIPOFFSETS, []), t.get(T_STRIPBYTECOUNTS, [])
        across = 1
        down = -(-h // rps) if rps else 0
    n = across * down * planes
    if len(offs) != n or len(cnts) != n:
        raise Mismatch("tiffdump: IFD at %d has %d offsets and %d counts for %d blocks"
                       % (d["offset"], len(offs), len(cnts), n))
    blocks = []
    for o, c in zip(offs, cnts):
        blocks.append((0, 0) if c == 0 else (o, c))
    return {
        "w": w, "h": h, "tiled": tiled, "bw": bw, "bh": bh, "across": across,
        "down": down, "n": n, "planes": planes, "subfile": one(T_SUBFILE, 0),
        "sub": sub, "compression": one(T_COMPRESSION, 1), "blocks": blocks,
        "offset": d["offset"],
    }


def reference(path):
    """The reference map of PATH: dict with 'ifds' (list) and header info."""
    head, dirs = tiffdump_dirs(path)
    if not dirs:
        raise Mismatch("tiffdump found no directory in %s" % path)
    ifds = []
    seen = set()
    for d in dirs:
        seen.add(d["offset"])
        ifds.append(_ifd_from_dir(d, False))
    # SubIFDs in the order found: each main IFD's SubIFDs array in order,
    # then (breadth first) the SubIFDs of those.
    queue = list(dirs)
    qi = 0
    while qi < len(queue):
        d = queue[qi]
        qi += 1
        for off in d["tags"].get(T_SUBIFD, []):
            if off in seen or off == 0:
                continue
            _, sdirs = tiffdump_dirs(path, off)
            if not sdirs:
                raise Mismatch("tiffdump -o %d found no directory in %s" % (off, path))
            seen.add(off)
            ifds.append(_ifd_from_dir(sdirs[0], True))
            queue.append(sdirs[0])
    nblocks = sum(i["n"] for i in ifds)
    empty = sum(1 for i in ifds for b in i["blocks"] if b[1] == 0)
    return {
        "size": os.path.getsize(path), "bigtiff": head.get("bigtiff", False),
        "big_endian": head.get("big_endian", False), "ifds": ifds,
        "nblocks": nblocks, "empty": empty, "cog": ghost_cog(path),
    }


def print_ref(path):
    r = reference(path)
    print("file %d %s %s %d %d %d %s" % (
        r["size"], "BigTIFF" if r["bigtiff"] else "TIFF",
        "big-endian" if r["big_endian"] else "little-endian", len(r["ifds"]),
        r["nblocks"], r["empty"], r["cog"]))
    for k, i in enumerate(r["ifds"]):
        print("ifd %d %dx%d %s %dx%d %dx%d %d %d %d %s %d" % (
            k, i["w"], i["h"], "tiles" if i["tiled"] else "strips", i["bw"], i["bh"],
            i["across"], i["down"], i["n"], i["planes"], i["subfile"],
            "subifd" if i["sub"] else "main", i["compression"]))
    for k, i in enumerate(r["ifds"]):
        for idx, (o, c) in enumerate(i["blocks"]):
            print("block %d %d %d %d" % (k, idx, o, c))


# --------------------------------------------------------------- GDAL side

def gdal_blocks(path):
    """[(what, fixed_ifd_or_None, kind, w, h, [(band, x, y, off, size)])]:
    kind is 'main', 'overview' or 'mask'. Only blocks GDAL reports."""
    from osgeo import gdal
    gdal.UseExceptions()
    gdal.PushErrorHandler("CPLQuietErrorHandler")
    out = []

    def band_blocks(b, bandno):
        bw, bh = b.GetBlockSize()
        res = []
        # Walk GDAL's own block grid and also the TIFF grid GDAL may use
        # internally for split bands; ask for BLOCK_OFFSET_x_y in both.
        nx = -(-b.XSize // bw)
        ny = -(-b.YSize // bh)
        for y in range(ny):
            for x in range(nx):
                o = b.GetMetadataItem("BLOCK_OFFSET_%d_%d" % (x, y), "TIFF")
                if o is None:
                    continue
                s = b.GetMetadataItem("BLOCK_SIZE_%d_%d" % (x, y), "TIFF")
                res.append((bandno, x, y, int(o), int(s) if s is not None else -1))
        return res

    def walk_ds(ds, label, fixed):
        bands = [ds.GetRasterBand(i + 1) for i in range(ds.RasterCount)]
        if not bands:
            return
        blk = []
        for i, b in enumerate(bands):
            blk += band_blocks(b, i + 1)
        out.append((label, fixed, "main", ds.RasterXSize, ds.RasterYSize, blk,
                    bands[0].GetBlockSize()))
        b1 = bands[0]
        if b1.GetMaskFlags() == gdal.GMF_PER_DATASET:
            m = b1.GetMaskBand()
            mb = band_blocks(m, 1)
            if mb:
                out.append((label + "/mask", None, "mask", m.XSize, m.YSize, mb, m.GetBlockSize()))
        for k in range(b1.GetOverviewCount()):
            blk = []
            ov0 = b1.GetOverview(k)
            for i, b in enumerate(bands):
                ov = b.GetOverview(k)
                if ov is not None:
                    blk += band_blocks(ov, i + 1)
            out.append(("%s/ovr%d" % (label, k), None, "overview", ov0.XSize, ov0.YSize, blk,
                        ov0.GetBlockSize()))
            if ov0.GetMaskFlags() == gdal.GMF_PER_DATASET:
                m = ov0.GetMaskBand()
                mb = band_blocks(m, 1)
                if mb:
                    out.append(("%s/ovr%d/mask" % (label, k), None, "mask", m.XSize, m.YSize, mb,
                                m.GetBlockSize()))

    ds = gdal.Open(path)
    walk_ds(ds, "main", 0)
    subs = ds.GetMetadata("SUBDATASETS") or {}
    ds = None
    for key, name in sorted(subs.items()):
        if not key.endswith("_NAME"):
            continue
        m = re.match(r"GTIFF_DIR:(\d+):", name)
        if not m:
            continue
        sds = gdal.Open(name)
        walk_ds(sds, "dir%s" % m.group(1), int(m.group(1)) - 1)
        sds = None
    return out


def print_gdal(path):
    for what, _fixed, _kind, w, h, blk, _bs in gdal_blocks(path):
        for band, x, y, o, s in blk:
            print("gdal %s %d %d %d %d %d" % (what, band, x, y, o, s))


# ----------------------------------------------------------- inspect output

_L1_TIFF = re.compile(
    r"^(?P<name>.*): (?P<size>\d+) bytes, (?P<kind>TIFF|BigTIFF), "
    r"(?P<endian>little-endian|big-endian), (?P<nifd>\d+) IFDs, (?P<nblk>\d+) blocks "
    r"\((?P<empty>\d+) empty\)(?P<cog>, COG leader 4 trailer 4)?$")
_L1_PLAIN = re.compile(r"^(?P<name>.*): (?P<size>\d+) bytes, plain bytes \((?P<why>.+)\)$")
_IFD = re.compile(
    r"^ifd (?P<k>\d+): (?P<w>\d+)x(?P<h>\d+), (?P<tiled>tiles|strips) (?P<bw>\d+)x(?P<bh>\d+), "
    r"(?P<across>\d+)x(?P<down>\d+), (?P<n>\d+) blocks, (?P<comp>[^,]+)(?P<rest>(, [^,]+)*)$")
_BLOCK = re.compile(r"^block (\d+) (\d+) (\d+) (\d+)$")
_CACHED = re.compile(r"cached: (\d+) units, (\d+) of (\d+) bytes \((\d+(?:\.\d+)?)%\)")


def parse_inspect(text):
    lines = text.split("\n")
    while lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise Mismatch("no output")
    res = {"line1": lines[0], "ifds": [], "blocks": [], "cached": [], "other": []}
    m = _L1_TIFF.match(lines[0])
    if m:
        res["l1"] = m.groupdict()
        res["plain"] = False
    else:
        m = _L1_PLAIN.match(lines[0])
        if not m:
            raise Mismatch("first line is neither a TIFF nor a plain-bytes summary: %r" % lines[0])
        res["l1"] = m.groupdict()
        res["plain"] = True
    for ln in lines[1:]:
        if ln.startswith("ifd "):
            m = _IFD.match(ln)
            if not m:
                raise Mismatch("malformed IFD line: %r" % ln)
            res["ifds"].append((ln, m.groupdict()))
        elif ln.startswith("block "):
            m = _BLOCK.match(ln)
            if not m:
                raise Mismatch("malformed block line: %r" % ln)
            res["blocks"].append(tuple(int(g) for g in m.groups()))
        elif _CACHED.search(ln):
            res["cached"].append(ln)
        else:
            res["other"].append(ln)
    return res


def _check_l1(name, ref, ins):
    l1 = ins["l1"]
    if ins["plain"]:
        raise Mismatch("reported as plain bytes: %r" % ins["line1"])
    want = {
        "size": str(ref["size"]), "kind": "BigTIFF" if ref["bigtiff"] else "TIFF",
        "endian": "big-endian" if ref["big_endian"] else "little-endian",
        "nifd": str(len(ref["ifds"])), "nblk": str(ref["nblocks"]), "empty": str(ref["empty"]),
    }
    for k, v in want.items():
        if l1[k] != v:
            raise Mismatch("line 1: %s expected %s, got %s (line: %r)" % (k, v, l1[k], ins["line1"]))
    has_cog = l1["cog"] is not None
    if ref["cog"] == "yes" and not has_cog:
        raise Mismatch("line 1: expected ', COG leader 4 trailer 4' (GDAL ghost header with "
                       "BLOCK_LEADER/BLOCK_TRAILER), got %r" % ins["line1"])
    if ref["cog"] == "no" and has_cog:
        raise Mismatch("line 1: COG leader/trailer claimed without a ghost header: %r" % ins["line1"])
    if os.path.basename(l1["name"]) != name:
        raise Mismatch("line 1: NAME expected %s (or a path ending in it), got %r" % (name, l1["name"]))


def _check_ifd_lines(ref, ins):
    if len(ins["ifds"]) != len(ref["ifds"]):
        raise Mismatch("expected %d IFD lines, got %d" % (len(ref["ifds"]), len(ins["ifds"])))
    for k, (i, (ln, g)) in enumerate(zip(ref["ifds"], ins["ifds"])):
        want = [("k", k), ("w", i["w"]), ("h", i["h"]),
                ("tiled", "tiles" if i["tiled"] else "strips"), ("bw", i["bw"]),
                ("across", i["across"]), ("down", i["down"]), ("n", i["n"])]
        for key, v in want:
            if g[key] != str(v):
                raise Mismatch("ifd %d: %s expected %s, got %s (line: %r)" % (k, key, v, g[key], ln))
        bh = int(g["bh"])
        if i["tiled"] or i["bh"] < i["h"]:
            ok = bh == i["bh"]
        else:  # one strip: RowsPerStrip as given, or clamped to the height
            ok = bh in (i["bh"], i["h"])
        if not ok:
            raise Mismatch("ifd %d: block height expected %d, got %d (line: %r)" % (k, i["bh"], bh, ln))
        flags = [f.strip() for f in g["rest"].split(",") if f.strip()]
        planes = [f for f in flags if f.endswith(" planes")]
        if i["planes"] > 1 and planes != ["%d planes" % i["planes"]]:
            raise Mismatch("ifd %d: expected ', %d planes', got %r" % (k, i["planes"], ln))
        if i["planes"] == 1 and planes not in ([], ["1 planes"]):
            raise Mismatch("ifd %d: expected no planes (or 1), got %r" % (k, ln))
        for flag, want_it in (("overview", bool(i["subfile"] & 1)), ("mask", bool(i["subfile"] & 4)),
                              ("subifd", i["sub"])):
            if (flag in flags) != want_it:
                raise Mismatch("ifd %d: NewSubfileType %d%s: '%s' %s, line %r" % (
                    k, i["subfile"], " (SubIFD)" if i["sub"] else "", flag,
                    "expected" if want_it else "not expected", ln))
        unknown = [f for f in flags if f not in ("overview", "mask", "subifd") and not f.endswith(" planes")]
        if unknown:
            raise Mismatch("ifd %d: unknown attributes %r in %r" % (k, unknown, ln))


def _check_blocks(ref, ins):
    want = [(k, idx, o, c) for k, i in enumerate(ref["ifds"]) for idx, (o, c) in enumerate(i["blocks"])]
    got = ins["blocks"]
    for a, b in zip(want, got):
        if a != b:
            raise Mismatch("first differing block line: expected 'block %d %d %d %d' (tiffdump), "
                           "got 'block %d %d %d %d'" % (a + b))
    if len(want) != len(got):
        extra = (want[len(got)] if len(want) > len(got) else got[len(want)])
        raise Mismatch("expected %d block lines, got %d (first %s: %r)" % (
            len(want), len(got), "missing" if len(want) > len(got) else "extra", extra))


def _check_gdal(path, ref, ins):
    byifd = {}
    for k, idx, o, c in ins["blocks"]:
        byifd.setdefault(k, {})[idx] = (o, c)
    n_checked = 0
    for what, fixed, kind, w, h, blk, (gbw, gbh) in gdal_blocks(path):
        if not blk:
            continue
        cands = range(len(ref["ifds"])) if fixed is None else [fixed]
        errs = []
        matched = None
        for k in cands:
            i = ref["ifds"][k]
            if (i["w"], i["h"]) != (w, h):
                errs.append("ifd %d is %dx%d" % (k, i["w"], i["h"]))
                continue
            if kind == "mask" and not i["subfile"] & 4:
                continue
            first = None
            # libtiff chops one big uncompressed strip into ~8 KiB virtual
            # strips (STRIPCHOP); GDAL then reports those: each must lie
            # inside the file's strip of its plane.
            chopped = not i["tiled"] and gbh != min(i["bh"], i["h"])
            for band, x, y, o, s in blk:
                plane = band - 1 if i["planes"] > 1 else 0
                if chopped:
                    idx = plane * i["across"] * i["down"]
                    got = byifd.get(k, {}).get(idx)
                    if got and got[0] <= o and o + s <= got[0] + got[1]:
                        continue
                    first = ("GDAL %s band %d BLOCK_OFFSET_0_%d=%d BLOCK_SIZE=%d (libtiff's chopped "
                             "strip of %d rows) is not inside strile %d of ifd %d, inspect has %s"
                             % (what, band, y, o, s, gbh, idx, k,
                                "block %d %d %d %d" % ((k, idx) + got) if got else "no such block"))
                    break
                idx = plane * i["across"] * i["down"] + y * i["across"] + x
                got = byifd.get(k, {}).get(idx)
                if got != (o, s):
                    first = ("GDAL %s band %d BLOCK_OFFSET_%d_%d=%d BLOCK_SIZE=%d is strile %d of "
                             "ifd %d, inspect has %s" % (what, band, x, y, o, s, idx, k,
                                                         "block %d %d %d %d" % ((k, idx) + got)
                                                         if got else "no such block"))
                    break
            if first is None:
                matched = k
                break
            errs.append(first)
        if matched is None:
            raise Mismatch("no IFD in the listing holds the blocks GDAL reports for %s (%dx%d): %s"
                           % (what, w, h, "; ".join(errs[:3]) or "no %dx%d IFD" % (w, h)))
        n_checked += len(blk)
    return n_checked


def _read_out(outdir, name):
    with open(os.path.join(outdir, name + ".out"), "rb") as fh:
        text = fh.read().decode("utf-8", "replace")
    with open(os.path.join(outdir, name + ".rc")) as fh:
        rc = fh.read().strip()
    return text, rc


def cmd_check_local(d, outdir):
    bad = 0
    names = sorted(os.listdir(d))
    nblk = ngd = 0
    for name in names:
        path = os.path.join(d, name)
        try:
            text, rc = _read_out(outdir, name)
            if rc != "0":
                raise Mismatch("tilefs inspect --blocks exited %s" % rc)
            ref = reference(path)
            ins = parse_inspect(text)
            _check_l1(name, ref, ins)
            _check_ifd_lines(ref, ins)
            _check_blocks(ref, ins)
            ngd += _check_gdal(path, ref, ins)
            nblk += len(ins["blocks"])
        except Mismatch as e:
            bad += 1
            print("%s: %s" % (name, e), file=sys.stderr)
    print("%d files, %d blocks as tiffdump lists them, %d GDAL blocks found, %d files differ"
          % (len(names), nblk, ngd, bad))
    return 1 if bad else 0


def cmd_check_same(d, out_a, out_b):
    bad = 0
    names = sorted(os.listdir(d))
    for name in names:
        try:
            ta, ra = _read_out(out_a, name)
            tb, rb = _read_out(out_b, name)
            if ra != "0" or rb != "0":
                raise Mismatch("exit status: local %s, mount %s" % (ra, rb))
            a, b = parse_inspect(ta), parse_inspect(tb)
            la = a["line1"][len(a["l1"]["name"]):]
            lb = b["line1"][len(b["l1"]["name"]):]
            if la != lb:
                raise Mismatch("line 1: local %r, mount %r" % (a["line1"], b["line1"]))
            if [x[0] for x in a["ifds"]] != [x[0] for x in b["ifds"]]:
                for x, y in zip(a["ifds"] + [("(none)", 0)], b["ifds"] + [("(none)", 0)]):
                    if x[0] != y[0]:
                        raise Mismatch("IFD line: local %r, mount %r" % (x[0], y[0]))
            if a["blocks"] != b["blocks"]:
                for x, y in zip(a["blocks"] + [None], b["blocks"] + [None]):
                    if x != y:
                        raise Mismatch("block line: local %r, mount %r (%d vs %d block lines)"
                                       % (x, y, len(a["blocks"]), len(b["blocks"])))
            if not b["cached"]:
                raise Mismatch("no 'cached: U units, C of SIZE bytes (P%%)' line through the mount")
        except Mismatch as e:
            bad += 1
            print("%s: %s" % (name, e), file=sys.stderr)
    print("%d files, %d differ" % (len(names), bad))
    return 1 if bad else 0


def cmd_check_plain(d, outdir):
    bad = 0
    names = sorted(os.listdir(d))
    nplain = 0
    for name in names:
        try:
            text, rc = _read_out(outdir, name)
            if rc != "0":
                raise Mismatch("tilefs inspect exited %s (expected 0); stdout %r" % (rc, text[:300]))
            ins = parse_inspect(text)
            size = os.path.getsize(os.path.join(d, name))
            if ins["l1"]["size"] != str(size):
                raise Mismatch("size %s, expected %d: %r" % (ins["l1"]["size"], size, ins["line1"]))
            if os.path.basename(ins["l1"]["name"]) != name:
                raise Mismatch("NAME %r" % ins["l1"]["name"])
            nplain += ins["plain"]
        except Mismatch as e:
            bad += 1
            print("%s: %s" % (name, e), file=sys.stderr)
    print("%d files, %d reported as plain bytes, %d bad reports" % (len(names), nplain, bad))
    return 1 if bad else 0


# --------------------------------------------------------------- windows

def touched(path, col, row, w, h):
    """Tiles of the full-resolution IFD (band 1) a window touches:
    [(x, y, off, size)]."""
    from osgeo import gdal
    gdal.UseExceptions()
    ds = gdal.Open(path)
    b = ds.GetRasterBand(1)
    bw, bh = b.GetBlockSize()
    res = []
    for y in range(row // bh, (row + h - 1) // bh + 1):
        for x in range(col // bw, (col + w - 1) // bw + 1):
            o = b.GetMetadataItem("BLOCK_OFFSET_%d_%d" % (x, y), "TIFF")
            s = b.GetMetadataItem("BLOCK_SIZE_%d_%d" % (x, y), "TIFF")
            res.append((x, y, int(o or 0), int(s or 0)))
    return res


def cmd_touched(path, col, row, w, h):
    from osgeo import gdal
    gdal.UseExceptions()
    ds = gdal.Open(path)
    across = -(-ds.RasterXSize // ds.GetRasterBand(1).GetBlockSize()[0])
    ds = None
    for x, y, o, s in touched(path, col, row, w, h):
        print("tile %d %d %d %d %d" % (x, y, y * across + x, o, s))
    return 0


def _rio_read(path, level, win):
    import rasterio
    kw = {} if level is None else {"overview_level": level}
    try:
        with rasterio.open(path, **kw) as ds:
            return ("ok", ds.read(window=win))
    except Exception as e:  # noqa: BLE001 - compared, not judged
        return ("error", type(e).__name__)


def cmd_windows(mnt, local, seed, n, names):
    import warnings
    import numpy as np
    import rasterio
    from rasterio.windows import Window
    warnings.filterwarnings("ignore")
    rng = random.Random(seed)
    bad = 0
    nwin = 0
    names = names or sorted(os.listdir(local))
    for name in names:
        lp, mp = os.path.join(local, name), os.path.join(mnt, name)
        try:
            with rasterio.open(lp) as ds:
                W, H, nov = ds.width, ds.height, len(ds.overviews(1))
                bh, bw = ds.block_shapes[0]
                blockbytes = bw * bh * np.dtype(ds.dtypes[0]).itemsize * ds.count
            if blockbytes > (64 << 20):
                # e.g. 66000x4096 Int32 strips: GDAL fills a 1 GB block per read
                print("%s: %dx%d blocks of %d MB, windows skipped" % (name, bw, bh, blockbytes >> 20))
                continue
        except Exception as e:  # noqa: BLE001
            # rasterio cannot handle it (e.g. complex int16): both sides must
            # fail, or read, the same
            nwin += 1
            a, b = _rio_read(mp, None, Window(0, 0, 1, 1)), _rio_read(lp, None, Window(0, 0, 1, 1))
            if a[0] != b[0] or (a[0] == "error" and a[1] != b[1]) or \
                    (a[0] == "ok" and not np.array_equal(a[1], b[1], equal_nan=True)):
                bad += 1
                print("%s: local: %s (%s), 1x1 window: mount %s, local %s" % (
                    name, type(e).__name__, e, a[0] if a[0] == "ok" else a, b[0] if b[0] == "ok" else b),
                    file=sys.stderr)
            continue
        plan = []
        for _ in range(n):
            w, h = rng.randint(1, min(W, 512)), rng.randint(1, min(H, 512))
            plan.append((None, Window(rng.randint(0, W - w), rng.randint(0, H - h), w, h)))
        if nov:
            lvl = rng.randrange(nov)
            with rasterio.open(lp, overview_level=lvl) as ds:
                OW, OH = ds.width, ds.height
            w, h = rng.randint(1, min(OW, 512)), rng.randint(1, min(OH, 512))
            plan.append((lvl, Window(rng.randint(0, OW - w), rng.randint(0, OH - h), w, h)))
        for lvl, win in plan:
            nwin += 1
            a, b = _rio_read(mp, lvl, win), _rio_read(lp, lvl, win)
            same = a[0] == b[0] and (a[1] == b[1] if a[0] == "error"
                                     else np.array_equal(a[1], b[1], equal_nan=True))
            if not same:
                bad += 1
                print("%s: overview %s window %s: mount %s, local %s" % (
                    name, lvl, win, a[0] if a[0] == "ok" else a, b[0] if b[0] == "ok" else b),
                    file=sys.stderr)
    print("%d files, %d windows, %d differ" % (len(names), nwin, bad))
    return 1 if bad else 0


# ------------------------------------------------------ request accounting

def _log_reset():
    for k in ("ORIGIN_LOG", "ORIGIN_LOG_FULL"):
        p = os.environ.get(k)
        if p:
            open(p, "w").close()


_LOG_RE = re.compile(r'^([A-Z]+) (.*) "([^"]*)" (\d+) (\d+)$')


def _log_lines(uri=None):
    time.sleep(0.3)  # nginx logs when it finalises the request
    res = []
    with open(os.environ["ORIGIN_LOG"]) as fh:
        for ln in fh:
            m = _LOG_RE.match(ln.rstrip("\n"))
            if not m:
                continue
            meth, u, rng, st, nb = m.groups()
            if uri is not None and u != uri:
                continue
            a = b = None
            r = re.match(r"bytes=(\d+)-(\d+)$", rng)
            if r:
                a, b = int(r.group(1)), int(r.group(2))
            res.append({"m": meth, "u": u, "range": rng, "a": a, "b": b, "st": int(st),
                        "nb": int(nb), "line": ln.rstrip("\n")})
    return res


def _drop_pages(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def cmd_cost(mnt, local, uri, header_size, seed, n):
    import numpy as np
    import rasterio
    from rasterio.windows import Window
    rng = random.Random(seed)
    bad = []

    with rasterio.open(local) as ds:
        W, H = ds.width, ds.height
    # header region [0, first tile unit)
    ref = reference(local)
    first = min(o for i in ref["ifds"] for o, c in i["blocks"] if c)
    lead = 4 if ref["cog"] == "yes" else 0
    fits = first - lead <= header_size
    limit = 1 if fits else 2

    _log_reset()
    with rasterio.open(mnt) as ds:
        pass
    gets = [r for r in _log_lines(uri) if r["m"] == "GET"]
    print("open: %d GETs (header [0, %d), --header-size %d: at most %d): %s" % (
        len(gets), first - lead, header_size, limit, " ".join(r["range"] for r in gets)))
    if len(gets) > limit:
        bad.append("open: %d GETs for %s, expected at most %d (header [0, %d), header size %d): %s"
                   % (len(gets), uri, limit, first - lead, header_size,
                      "; ".join(r["line"] for r in gets)))
    if gets and gets[0]["a"] != 0:
        bad.append("open: the first GET is %r, expected one starting at byte 0" % gets[0]["line"])
    # the first fetch is HEADER_SIZE bytes; when the IFDs lie beyond it the
    # second reads ahead at most 1 MiB (PARSE_CHUNK in cache.c)
    bound = max(header_size, -(-(first - lead) // ALIGN) * ALIGN)
    if len(gets) > 1:
        bound = gets[1]["a"] + (1 << 20)
    for r in gets:
        if r["b"] is None or r["b"] >= bound:
            bad.append("open: %r fetches past byte %d (header region [0, %d), --header-size %d)"
                       % (r["line"], bound, first - lead, header_size))

    _drop_pages(mnt)
    _log_reset()
    with rasterio.open(mnt) as ds:
        pass
    again = _log_lines(uri)
    print("second open: %d requests" % len(again))
    if again:
        bad.append("second open in the same mount: %d requests, expected none: %s"
                   % (len(again), "; ".join(r["line"] for r in again)))

    for _ in range(n):
        col, row = rng.randint(0, W - 256), rng.randint(0, H - 256)
        tiles = touched(local, col, row, 256, 256)
        ext = [((o - 4) // ALIGN * ALIGN, -(-(o + s + 4) // ALIGN) * ALIGN)
               for _x, _y, o, s in tiles]
        _log_reset()
        with rasterio.open(mnt) as ds:
            got = ds.read(window=Window(col, row, 256, 256))
        lines = _log_lines(uri)
        gets = [r for r in lines if r["m"] == "GET"]
        with rasterio.open(local) as ds:
            want = ds.read(window=Window(col, row, 256, 256))
        tag = "window col %d row %d 256x256 (%d tiles touched: %s)" % (
            col, row, len(tiles), " ".join("%d,%d@%d+%d" % t for t in tiles))
        print("%s: %d GETs, %d bytes: %s" % (tag, len(gets), sum(r["nb"] for r in gets),
                                             " ".join(r["range"] for r in gets)))
        if not np.array_equal(got, want):
            bad.append("%s: pixels differ from the local file" % tag)
        if len(gets) > len(tiles):
            bad.append("%s: %d GETs, expected at most %d: %s" % (
                tag, len(gets), len(tiles), "; ".join(r["line"] for r in gets)))
        others = [r for r in lines if r["m"] != "GET"]
        if others:
            bad.append("%s: requests other than GET: %s" % (tag, "; ".join(r["line"] for r in others)))
        for r in gets:
            if r["a"] is None:
                bad.append("%s: GET without a byte range: %r" % (tag, r["line"]))
                continue
            # every byte [a, b] inside the union of the touched extents
            pos = r["a"]
            while pos <= r["b"]:
                e = [e for e in ext if e[0] <= pos < e[1]]
                if not e:
                    bad.append("%s: %r fetches byte %d, outside every touched tile extent %s"
                               % (tag, r["line"], pos, " ".join("[%d,%d)" % x for x in ext)))
                    break
                pos = max(x[1] for x in e)
        _drop_pages(mnt)
        _log_reset()
        with rasterio.open(mnt) as ds:
            got2 = ds.read(window=Window(col, row, 256, 256))
        lines = _log_lines(uri)
        print("  again: %d requests" % len(lines))
        if lines:
            bad.append("%s read again: %d requests, expected none: %s" % (
                tag, len(lines), "; ".join(r["line"] for r in lines)))
        if not np.array_equal(got2, want):
            bad.append("%s read again: pixels differ" % tag)
    for b in bad:
        print("%s: %s" % (os.path.basename(mnt), b), file=sys.stderr)
    return 1 if bad else 0


def cmd_cached_line(path, size):
    with open(path, "rb") as fh:
        text = fh.read().decode("utf-8", "replace")
    m = _CACHED.search(text)
    if not m:
        print("no 'cached: U units, C of SIZE bytes (P%%)' line in: %r" % text[:2000], file=sys.stderr)
        return 1
    u, c, s, p = m.groups()
    if int(s) != size:
        print("cached line %r: SIZE %s, expected %d" % (m.group(0), s, size), file=sys.stderr)
        return 1
    if int(c) > size:
        print("cached line %r: more cached than the size" % m.group(0), file=sys.stderr)
        return 1
    pct = 100.0 * int(c) / size if size else 0.0
    if abs(float(p) - pct) > 1.0:
        print("cached line %r: %s%%, expected about %.1f%%" % (m.group(0), p, pct), file=sys.stderr)
        return 1
    print(u, c, p)
    return 0


def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, args = argv[0], argv[1:]
    opts = {"--seed": 1, "--n": 4}
    rest = []
    i = 0
    while i < len(args):
        if args[i] in opts:
            opts[args[i]] = int(args[i + 1])
            i += 2
        else:
            rest.append(args[i])
            i += 1
    try:
        if cmd == "ref" and len(rest) == 1:
            print_ref(rest[0])
            return 0
        if cmd == "gdal" and len(rest) == 1:
            print_gdal(rest[0])
            return 0
        if cmd == "check-local" and len(rest) == 2:
            return cmd_check_local(*rest)
        if cmd == "check-same" and len(rest) == 3:
            return cmd_check_same(*rest)
        if cmd == "check-plain" and len(rest) == 2:
            return cmd_check_plain(*rest)
        if cmd == "touched" and len(rest) == 5:
            return cmd_touched(rest[0], *map(int, rest[1:]))
        if cmd == "windows" and len(rest) >= 2:
            return cmd_windows(rest[0], rest[1], opts["--seed"], opts["--n"], rest[2:])
        if cmd == "cost" and len(rest) == 4:
            return cmd_cost(rest[0], rest[1], rest[2], int(rest[3]), opts["--seed"], opts["--n"])
        if cmd == "cached-line" and len(rest) == 2:
            return cmd_cached_line(rest[0], int(rest[1]))
    except Mismatch as e:
        print(str(e), file=sys.stderr)
        return 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
