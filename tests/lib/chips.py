#!/usr/bin/python3
"""chips.py [--seed N] [--chips N] MNTDIR LOCALDIR

Reads N random 256x256 chips (seeded: every run reads the same ones, in
the same order) from the TIFFs under LOCALDIR, with rasterio, through
MNTDIR and from LOCALDIR, one after the other on one thread, and checks
that every array is identical. Prints "N chips identical" and exits 0, or
prints the first mismatch and exits 1.
"""
import argparse
import os
import random
import sys

import numpy as np
import rasterio
from rasterio.windows import Window


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--chips", type=int, default=40)
    ap.add_argument("mnt")
    ap.add_argument("local")
    a = ap.parse_args()
    tifs = sorted(os.path.relpath(os.path.join(d, n), a.local)
                  for d, _, names in os.walk(a.local) for n in names if n.endswith(".tif"))
    rng = random.Random(a.seed)
    sizes = {}
    for rel in tifs:
        with rasterio.open(os.path.join(a.local, rel)) as ds:
            sizes[rel] = (ds.width, ds.height)
    for i in range(a.chips):
        rel = rng.choice(tifs)
        w, h = sizes[rel]
        cw, ch = min(256, w), min(256, h)
        win = Window(rng.randrange(w - cw + 1), rng.randrange(h - ch + 1), cw, ch)
        with rasterio.open(os.path.join(a.mnt, rel)) as m, \
                rasterio.open(os.path.join(a.local, rel)) as l:
            if not np.array_equal(m.read(window=win), l.read(window=win)):
                print(f"chip {i}: {rel} {win} differs")
                return 1
    print(f"{a.chips} chips identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
