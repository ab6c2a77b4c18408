#!/usr/bin/python3
"""warm_expect.py: what `tilefs warm` should fetch, checked against nginx's log.

The reference is GDAL (BLOCK_OFFSET_x_y / BLOCK_SIZE_x_y of the TIFF
metadata domain, every band, mask, overview and overview mask, through
tiff_blocks.gdal_blocks), and tiffdump for the IFD numbering of --ifd N
(the numbering `tilefs inspect` uses). From them, the documented cut of a
file into units (tests/CONTRACT.md, cache/tiff/layout.h):

  * each tile with GDAL's 4-byte leader and trailer (a COG whose ghost
    header says so; no leader elsewhere), overlapping tiles sharing a unit;
  * the header unit [0, H): H is the first tile unit's start rounded up to
    16 KiB, but never past --header-size (what opening fetched) unless the
    first tile starts beyond it; the tile units lose their bytes below H;
  * every other byte in blocks aligned to --block-size, clipped to the gaps;
    a file that is not a TIFF: a header unit of --header-size bytes, then
    blocks.

Opening a file GETs its first --header-size bytes and stores every unit they
cover whole; a warm then GETs the selected units it still misses, in GETs
of whole adjacent units (never a byte outside them), up to 16 MiB each.

Selections (SEL, several add up, as on the command line):
  all              the whole file (warm without a selection option)
  header           --header-only
  overviews        --overviews: the tiles of every reduced-resolution IFD
                   (GDAL's overviews and their masks)
  ifd:N            --ifd N
  window:X,Y,W,H   --window X,Y,W,H: the full-resolution tiles (every band)
                   and mask tiles under the window

Subcommands (exit 0 when all is well, 1 on a mismatch with a report on
stderr, 2 on bad usage):

  units FILE SEL...
      Print the units of FILE the selection wants: `unit OFF END KIND`.

  fetched LOG ROOT SEL... -- FILE...
      FILE (relative to ROOT, nginx's root) was warmed into an empty cache
      with SEL, the requests are in LOG (which may hold several runs, e.g.
      an interrupted warm and its rerun): the file got exactly one GET at
      byte 0 (the open, --header-size bytes); every other GET of it starts
      and ends on unit boundaries, no two of them share a byte, no GET is
      larger than 16 MiB unless it is one unit, and together they cover
      exactly the selected units that the open did not cover whole.

  once LOG ROOT -- FILE...
      A warm and a mount read FILE at the same time, each all of it: one
      GET at byte 0 (the first open is single-flighted across processes),
      every byte of every unit fetched (by one GET or adjacent ones: a
      tile's GET leaves out the bytes kept of it), and no byte fetched by
      two GETs but for the slivers a mount fetches for a reader's aligned
      buffer, at most 16 KiB at an end of a GET that is not a unit boundary
      (see _slack).

  again LOG ROOT SEL... -- FILE...
      FILE was warmed with SEL, then a mount read it (the requests in LOG):
      no GET fetched a warmed unit again, but for the slivers a mount
      fetches for a reader's aligned buffer (as for `once`).

  gets LOG URI
      Print the ranged GETs of URI as `OFF END` (END exclusive).

Options: --header-size N (65536), --block-size N (262144).
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiff_blocks  # noqa: E402

ALIGN = 16384
MAX_GET = 16 << 20
_LOG_RE = re.compile(r'^([A-Z]+) (.*) "([^"]*)" (\d+) (\d+)$')


class Mismatch(Exception):
    pass


# ------------------------------------------------------------ the model

def _gdal(path):
    try:
        return tiff_blocks.gdal_blocks(path)
    except Exception:  # noqa: BLE001 - not something GDAL opens: plain bytes
        return None


def _ceil(x, a):
    return -(-x // a) * a


class Layout:
    def __init__(self, path, header_size, block_size):
        self.path = path
        self.size = os.path.getsize(path)
        self.header_size = header_size
        self.gd = _gdal(path)
        self.plain = not self.gd
        self.lead = 0
        tiles = []
        if not self.plain:
            self.lead = 4 if tiff_blocks.ghost_cog(path) == "yes" else 0
            offs = set()
            for _what, _fixed, _kind, _w, _h, blk, _bs in self.gd:
                for _band, _x, _y, o, s in blk:
                    if s > 0:
                        offs.add((o, s))
            for o, s in sorted(offs):
                tiles.append([max(o - self.lead, 0), min(o + s + self.lead, self.size)])
        # tiles whose bytes overlap share a unit
        merged = []
        for a, b in sorted(tiles):
            if merged and a < merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        if self.plain:
            h = min(header_size, self.size)
        else:
            first = merged[0][0] if merged else self.size
            aligned = _ceil(first, ALIGN)
            h = aligned if aligned < header_size else max(first, header_size)
            h = min(h, self.size)
        self.h = h
        units = [(0, h, "header")] if h > 0 else []
        for a, b in merged:
            if b <= h:
                continue
            units.append((max(a, h), b, "tile"))
        # the gaps: blocks aligned to the block size
        out = []
        pos = 0
        for a, b, kind in units + [(self.size, self.size, "end")]:
            while pos < a:
                e = min(a, (pos // block_size + 1) * block_size)
                out.append((pos, e, "block"))
                pos = e
            if kind != "end":
                out.append((a, b, kind))
                pos = b
        self.units = out
        self.starts = {u[0] for u in out}
        self.ends = {u[1] for u in out}

    def unit_of(self, off):
        for u in self.units:
            if u[0] <= off < u[1]:
                return u
        raise Mismatch("%s: no unit holds byte %d" % (self.path, off))

    def _block_units(self, blocks):
        res = set()
        for o, s in blocks:
            if s <= 0:
                continue
            u = self.unit_of(max(o - self.lead, 0))
            if u[2] == "header":
                # the tile lies (partly) in the header unit; its unit, if
                # any, starts where the header ends
                end = min(o + s + self.lead, self.size)
                if end > self.h:
                    res.add(self.unit_of(self.h))
                continue
            res.add(u)
        return res

    def select(self, sels):
        if "all" in sels:
            return list(self.units)
        want = {u for u in self.units if u[2] == "header"}
        if self.plain:
            return sorted(want)
        ref = None
        for sel in sels:
            if sel == "header":
                continue
            if sel == "overviews":
                for what, _fixed, kind, _w, _h, blk, _bs in self.gd:
                    if "/ovr" in what:
                        want |= self._block_units((o, s) for _b, _x, _y, o, s in blk)
            elif sel.startswith("ifd:"):
                n = int(sel[4:])
                if ref is None:
                    ref = tiff_blocks.reference(self.path)
                if n < len(ref["ifds"]):
                    blocks = ref["ifds"][n]["blocks"]
                    gdal_set = {(o, s) for e in self.gd for _b, _x, _y, o, s in e[5]}
                    stray = [b for b in blocks if b[1] and b not in gdal_set]
                    if stray:
                        raise Mismatch("%s: IFD %d blocks %s are not among GDAL's"
                                       % (self.path, n, stray[:3]))
                    want |= self._block_units(blocks)
            elif sel.startswith("window:"):
                x, y, w, h = (int(v) for v in sel[7:].split(","))
                for what, _fixed, kind, W, H, blk, bs in self.gd:
                    if what not in ("main", "main/mask"):
                        continue
                    bw, bh = bs
                    x1, y1 = min(x + w, W), min(y + h, H)
                    if x >= W or y >= H:
                        continue
                    cols = range(x // bw, (x1 - 1) // bw + 1)
                    rows = range(y // bh, (y1 - 1) // bh + 1)
                    want |= self._block_units(
                        (o, s) for _b, bx, by, o, s in blk if bx in cols and by in rows)
            else:
                raise Mismatch("unknown selection %r" % sel)
        return sorted(want)


# ------------------------------------------------------------ the log

def log_gets(log, uri, size=None):
    """The ranged GETs of URI in LOG as [a, b) (the range asked for, cut at
    SIZE as the server cuts it)."""
    res = []
    with open(log, encoding="utf-8", errors="replace") as fh:
        for ln in fh:
            m = _LOG_RE.match(ln.rstrip("\n"))
            if not m:
                continue
            meth, u, rng, st, nb = m.groups()
            if meth != "GET" or u != uri:
                continue
            r = re.match(r"bytes=(\d+)-(\d+)$", rng)
            if not r:
                raise Mismatch("%s: a GET without a byte range: %s" % (uri, ln.strip()))
            if st != "206":
                raise Mismatch("%s: a GET answered %s: %s" % (uri, st, ln.strip()))
            a, b = int(r.group(1)), int(r.group(2)) + 1
            if size is not None:
                b = min(b, size)
            if int(nb) != b - a:
                raise Mismatch("%s: %d bytes sent for %s" % (uri, int(nb), rng))
            res.append((a, b))
    return res


def _fmt(r):
    return "[%d,%d)" % (r[0], r[1])


def _fmt_units(us, n=6):
    s = " ".join("%s%s" % (_fmt(u), "" if u[2] == "tile" else u[2]) for u in us[:n])
    return s + (" ... (%d in all)" % len(us) if len(us) > n else "")


def _check_open(lay, gets, what):
    """Problems with the GETs at byte 0: exactly one, of the first
    --header-size bytes (WHAT made it)."""
    f = min(lay.header_size, lay.size)
    opens = [g for g in gets if g[0] == 0]
    if len(opens) != 1 or opens[0] != (0, f):
        return ["expected one GET at byte 0, [0,%d) (%s); got %s"
                % (f, what, " ".join(_fmt(g) for g in opens) or "none")]
    return []


def check_fetched(lay, uri, gets, sels):
    """Problems with GETS (of URI) for a warm of SELS into an empty cache."""
    bad = _check_open(lay, gets, "the open")
    f = min(lay.header_size, lay.size)
    rest = sorted(g for g in gets if g[0] != 0)
    for g in rest:
        if g[0] not in lay.starts or g[1] not in lay.ends:
            bad.append("GET %s does not start and end on unit boundaries (it cuts %s)"
                       % (_fmt(g), _fmt_units([u for u in lay.units
                                               if u[0] < g[1] and g[0] < u[1]
                                               and not (g[0] <= u[0] and u[1] <= g[1])])))
        n_units = sum(1 for u in lay.units if g[0] <= u[0] and u[1] <= g[1])
        if g[1] - g[0] > MAX_GET and n_units > 1:
            bad.append("GET %s is over 16 MiB (%d units)" % (_fmt(g), n_units))
    for p, q in zip(rest, rest[1:]):
        if q[0] < p[1]:
            bad.append("GETs %s and %s share bytes" % (_fmt(p), _fmt(q)))
    want = [u for u in lay.select(sels) if not u[1] <= f]
    got = [u for u in lay.units if any(g[0] <= u[0] and u[1] <= g[1] for g in rest)]
    missing = [u for u in want if u not in got]
    extra = [u for u in got if u not in want]
    if missing:
        bad.append("%d selected units never fetched: %s" % (len(missing), _fmt_units(missing)))
    if extra:
        bad.append("%d units fetched that are not selected: %s" % (len(extra), _fmt_units(extra)))
    return bad, len(want), sum(u[1] - u[0] for u in want)


def _slack(lay, g, f):
    """Where GET G may share bytes with another GET: a reader's aligned
    buffer costs the mount the bytes up to the 16 KiB boundaries around a
    tile (a sliver fetched alone, or the rest of a GET's last page), so the
    first 16 KiB of a GET that starts inside a unit or on a 16 KiB boundary
    and the last 16 KiB of one that ends inside a unit, on a 16 KiB
    boundary or at the end of the file. The open's: the bytes past the
    units it covers whole (the tile it ends in is fetched whole later)."""
    a, b = g
    if g == (0, f):
        end = max([u[1] for u in lay.units if u[1] <= f] or [0])
        return [(end, f)]
    zones = []
    if a not in lay.starts or a % ALIGN == 0:
        zones.append((a, min(b, a + ALIGN)))
    if b not in lay.ends or b % ALIGN == 0 or b == lay.size:
        zones.append((max(a, b - ALIGN), b))
    return zones


def _covered(s, e, zones):
    for a, b in sorted(zones):
        if a <= s < b:
            s = b
    return s >= e


def check_once(lay, uri, gets):
    bad = _check_open(lay, gets, "one open for both")
    f = min(lay.header_size, lay.size)
    # a unit's bytes may come in more than one GET (a tile's GET leaves
    # out the bytes kept of it from a neighbour's): every byte of it, once
    never = [u for u in lay.units if not _covered(u[0], u[1], gets)]
    if never:
        bad.append("%d units not fetched whole: %s" % (len(never), _fmt_units(never)))
    gs = sorted(gets)
    for i, g1 in enumerate(gs):
        for g2 in gs[i + 1:]:
            s, e = max(g1[0], g2[0]), min(g1[1], g2[1])
            if s >= e:
                continue
            if _covered(s, e, _slack(lay, g1, f) + _slack(lay, g2, f)):
                continue
            twice = [u for u in lay.units if u[0] < e and s < u[1]]
            bad.append("GETs %s and %s both fetch [%d,%d): more than a reader-alignment "
                       "sliver (units %s)" % (_fmt(g1), _fmt(g2), s, e, _fmt_units(twice, 3)))
    return bad


def check_again(lay, uri, gets, sels):
    """After a warm of SELS, a mount read the file: no GET may fetch a
    warmed unit again, but for reader-alignment slivers."""
    bad = []
    f = min(lay.header_size, lay.size)
    warmed = lay.select(sels)
    for g in gets:
        for u in warmed:
            s, e = max(g[0], u[0]), min(g[1], u[1])
            if s < e and not _covered(s, e, _slack(lay, g, f)):
                bad.append("GET %s fetches [%d,%d) of the warmed unit %s again"
                           % (_fmt(g), s, e, _fmt(u)))
    return bad


# ------------------------------------------------------------ commands

def _split(args):
    if "--" not in args:
        raise Mismatch("usage: missing --")
    i = args.index("--")
    return args[:i], args[i + 1:]


def main(argv):
    opts = {"--header-size": 65536, "--block-size": 262144}
    args = []
    i = 0
    while i < len(argv):
        if argv[i] in opts:
            opts[argv[i]] = int(argv[i + 1])
            i += 2
        else:
            args.append(argv[i])
            i += 1
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, args = args[0], args[1:]
    hs, bs = opts["--header-size"], opts["--block-size"]
    try:
        if cmd == "units" and len(args) >= 2:
            lay = Layout(args[0], hs, bs)
            for a, b, kind in lay.select(args[1:]):
                print("unit %d %d %s" % (a, b, kind))
            return 0
        if cmd == "gets" and len(args) == 2:
            for a, b in log_gets(args[0], args[1]):
                print(a, b)
            return 0
        if cmd in ("fetched", "once", "again") and len(args) >= 3:
            head, files = _split(args)
            log, root, sels = head[0], head[1], head[2:]
            if cmd in ("fetched", "again") and not sels:
                raise Mismatch("usage: fetched needs a selection")
            nbad = 0
            for rel in files:
                lay = Layout(os.path.join(root, rel), hs, bs)
                uri = "/" + rel
                gets = log_gets(log, uri, lay.size)
                if cmd == "fetched":
                    bad, nwant, bwant = check_fetched(lay, uri, gets, sels)
                    print("%s: %d GETs; %d selected units (%d bytes) not covered by the open"
                          % (rel, len(gets), nwant, bwant))
                elif cmd == "again":
                    bad = check_again(lay, uri, gets, sels)
                    print("%s: %d GETs after the warm" % (rel, len(gets)))
                else:
                    bad = check_once(lay, uri, gets)
                    print("%s: %d GETs, %d units" % (rel, len(gets), len(lay.units)))
                for b in bad:
                    print("%s: %s" % (rel, b), file=sys.stderr)
                if bad:
                    nbad += 1
                    print("%s: its GETs: %s" % (rel, " ".join(_fmt(g) for g in gets[:40])),
                          file=sys.stderr)
            return 1 if nbad else 0
    except Mismatch as e:
        print(str(e), file=sys.stderr)
        return 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
