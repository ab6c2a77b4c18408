#!/usr/bin/python3
"""rio_compare.py [--means] MOUNTED_TIF LOCAL_TIF

Reads the same windows (corners, edges, a window straddling tile borders,
the whole image) and every overview level with rasterio from both files and
checks that the arrays are identical. With --means, prints each window's
mean from both sides (for the demo). Exit 0 when all arrays matched.
"""
import sys

import numpy as np
import rasterio
from rasterio.windows import Window


def windows(w, h):
    s = 256
    return [
        ("top-left 256x256", Window(0, 0, min(s, w), min(s, h))),
        ("across tile borders", Window(max(0, w // 2 - 150), max(0, h // 2 - 130),
                                       min(300, w), min(260, h))),
        ("bottom-right edge", Window(max(0, w - 100), max(0, h - 77), min(100, w), min(77, h))),
        ("one row", Window(0, h // 3, w, 1)),
        ("whole image", Window(0, 0, w, h)),
    ]


def main():
    args = sys.argv[1:]
    means = False
    if args and args[0] == "--means":
        means = True
        args = args[1:]
    mnt, local = args
    bad = 0
    with rasterio.open(mnt) as a, rasterio.open(local) as b:
        if (a.width, a.height, a.count, a.dtypes, a.crs, a.transform) != \
           (b.width, b.height, b.count, b.dtypes, b.crs, b.transform):
            print("metadata differs: %r vs %r" % (a.profile, b.profile), file=sys.stderr)
            bad += 1
        for name, win in windows(b.width, b.height):
            x, y = a.read(window=win), b.read(window=win)
            ok = np.array_equal(x, y, equal_nan=True)
            if means:
                print("  %-22s mount mean %10.4f   local mean %10.4f   %s" % (
                    name, float(x.mean()), float(y.mean()), "same" if ok else "DIFFERENT"))
            if not ok:
                print("%s: window %s differs" % (mnt, name), file=sys.stderr)
                bad += 1
        nov = len(b.overviews(1))
        if len(a.overviews(1)) != nov:
            print("%s: %d overviews, local has %d" % (mnt, len(a.overviews(1)), nov),
                  file=sys.stderr)
            bad += 1
    for lvl in range(nov):
        with rasterio.open(mnt, overview_level=lvl) as a, \
                rasterio.open(local, overview_level=lvl) as b:
            for name, win in windows(b.width, b.height)[1:3] + [("whole", Window(0, 0, b.width, b.height))]:
                x, y = a.read(window=win), b.read(window=win)
                if not np.array_equal(x, y, equal_nan=True):
                    print("%s: overview %d window %s differs" % (mnt, lvl, name), file=sys.stderr)
                    bad += 1
            if means:
                print("  overview %d (%dx%d)     mount mean %10.4f   local mean %10.4f" % (
                    lvl, b.width, b.height, float(a.read().mean()), float(b.read().mean())))
    if not means:
        print("%s: %d windows, %d overview levels identical" % (mnt, 5, nov) if not bad else
              "%s: %d differences" % (mnt, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
