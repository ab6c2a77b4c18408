#!/usr/bin/python3
"""chips.py [--seed N] [--chips N] [--procs P] MNTDIR LOCALDIR

Reads N random 256x256 chips (seeded: every run reads the same ones, in
the same order) from the TIFFs under LOCALDIR, with rasterio, through
MNTDIR and from LOCALDIR, and checks that every array is identical. With
--procs P, P processes read chips i, i+P, ... each. Prints "N chips
identical in S s" (S: the time spent reading through MNTDIR, the slowest
process's) and exits 0, or prints the first mismatch and exits 1.
"""
import argparse
import multiprocessing
import os
import random
import sys
import time

import numpy as np
import rasterio
from rasterio.windows import Window


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--chips", type=int, default=40)
    ap.add_argument("--procs", type=int, default=1)
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
    chips = []
    for i in range(a.chips):
        rel = rng.choice(tifs)
        w, h = sizes[rel]
        cw, ch = min(256, w), min(256, h)
        chips.append((i, rel, Window(rng.randrange(w - cw + 1), rng.randrange(h - ch + 1), cw, ch)))
    if a.procs <= 1:
        results = [read(a.mnt, a.local, chips)]
    else:
        with multiprocessing.Pool(a.procs) as pool:
            results = pool.starmap(read, [(a.mnt, a.local, chips[p::a.procs])
                                          for p in range(a.procs)])
    for bad, _ in results:
        if bad:
            print(bad)
            return 1
    print(f"{a.chips} chips identical in {max(t for _, t in results):.3f} s")
    return 0


def read(mnt, local, chips):
    """(first mismatch or None, seconds spent reading through MNT)"""
    spent = 0.0
    for i, rel, win in chips:
        start = time.monotonic()
        with rasterio.open(os.path.join(mnt, rel)) as m:
            got = m.read(window=win)
        spent += time.monotonic() - start
        with rasterio.open(os.path.join(local, rel)) as l:
            if not np.array_equal(got, l.read(window=win)):
                return f"chip {i}: {rel} {win} differs", spent
    return None, spent


if __name__ == "__main__":
    sys.exit(main())
