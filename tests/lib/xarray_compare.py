#!/usr/bin/python3
"""xarray_compare.py STACK MNT LOCAL FILE...: the Python array stack a data
scientist reaches for, reading FILEs (paths relative to MNT and LOCAL)
through a tilefs mount and from local disk: every array must be equal.

STACK is one of
  rioxarray  rioxarray.open_rasterio(chunks=256x256, lock=False), random
             windows (.isel) and the whole array computed by dask's
             threaded scheduler (4 threads), and the first overview
  zarr       tifffile.imread(aszarr=True) opened with zarr and wrapped with
             dask.array.from_zarr: the same windows and the whole array, at
             every level (overviews)
  memmap     numpy.memmap(mode="r") of the whole file as bytes (a MAP_SHARED
             mapping), random slices and all of it; and, for a TIFF whose
             pixels lie in one piece (uncompressed, striped), the pixels
             as tifffile.memmap maps them
  all        the three, in that order

Exit status 0 and "ok N arrays" on stdout; else a message naming the
stack, the file and the window that differed (or the error it raised).
No timing is measured.
"""
import random
import sys

import dask
import dask.array
import numpy as np
import rioxarray
import tifffile
import zarr

WINDOWS = 6
THREADS = 4


class Mismatch(Exception):
    pass


def same(a, b, what):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        raise Mismatch("%s: %s %s through the mount, %s %s locally"
                       % (what, a.shape, a.dtype, b.shape, b.dtype))
    nan = a.dtype.kind in "fc"
    if not np.array_equal(a, b, equal_nan=nan):
        raise Mismatch("%s: the arrays differ" % what)


def windows(shape, seed):
    """WINDOWS (row slice, col slice) pairs inside a (..., H, W) shape."""
    rng = random.Random(seed)
    h, w = shape[-2], shape[-1]
    out = []
    for _ in range(WINDOWS):
        wh, ww = rng.randint(1, min(h, 300)), rng.randint(1, min(w, 300))
        y, x = rng.randrange(h - wh + 1), rng.randrange(w - ww + 1)
        out.append((slice(y, y + wh), slice(x, x + ww)))
    return out


def stack_rioxarray(mnt, local, name):
    n = 0
    with dask.config.set(scheduler="threads", num_workers=THREADS):
        a = rioxarray.open_rasterio(mnt, chunks={"x": 256, "y": 256}, lock=False)
        b = rioxarray.open_rasterio(local, chunks={"x": 256, "y": 256}, lock=False)
        for ys, xs in windows(a.shape, name):
            same(a.isel(y=ys, x=xs).values, b.isel(y=ys, x=xs).values,
                 "rioxarray %s window y=%d:%d x=%d:%d" % (name, ys.start, ys.stop, xs.start, xs.stop))
            n += 1
        same(a.values, b.values, "rioxarray %s whole" % name)
        n += 1
        a.close()
        b.close()
        try:
            b = rioxarray.open_rasterio(local, overview_level=0)
        except Exception:  # no overview: nothing to compare
            return n
        a = rioxarray.open_rasterio(mnt, overview_level=0)
        same(a.values, b.values, "rioxarray %s overview 0" % name)
        a.close()
        b.close()
        return n + 1


def levels(store):
    z = zarr.open(store, mode="r")
    if isinstance(z, zarr.Array):
        return [z]
    return [z[k] for k in sorted(z.array_keys(), key=int)]


def stack_zarr(mnt, local, name):
    n = 0
    sa, sb = tifffile.imread(mnt, aszarr=True), tifffile.imread(local, aszarr=True)
    try:
        with dask.config.set(scheduler="threads", num_workers=THREADS):
            for level, (za, zb) in enumerate(zip(levels(sa), levels(sb))):
                a, b = dask.array.from_zarr(za), dask.array.from_zarr(zb)
                for ys, xs in windows(a.shape, "%s/%d" % (name, level)):
                    # tifffile's axes: (Y, X) or (Y, X, S)
                    same(a[ys, xs].compute(), b[ys, xs].compute(),
                         "zarr %s level %d window %d:%d,%d:%d"
                         % (name, level, ys.start, ys.stop, xs.start, xs.stop))
                    n += 1
                same(a.compute(), b.compute(), "zarr %s level %d whole" % (name, level))
                n += 1
    finally:
        sa.close()
        sb.close()
    return n


def stack_memmap(mnt, local, name):
    a = np.memmap(mnt, dtype=np.uint8, mode="r")
    b = np.fromfile(local, dtype=np.uint8)
    rng = random.Random(name)
    for _ in range(WINDOWS):
        off = rng.randrange(len(b))
        ln = rng.randint(1, 1 << 16)
        same(a[off:off + ln], b[off:off + ln], "memmap %s bytes %d+%d" % (name, off, ln))
    same(a, b, "memmap %s whole" % name)
    n = WINDOWS + 1
    del a
    try:
        with tifffile.TiffFile(local) as tf:
            contiguous = tf.pages[0].is_contiguous is not None and tf.pages[0].is_memmappable
    except tifffile.TiffFileError:  # not a TIFF: its bytes were the array
        contiguous = False
    if contiguous:
        a = tifffile.memmap(mnt, mode="r")
        same(a, tifffile.imread(local), "tifffile.memmap %s pixels" % name)
        n += 1
        del a
    return n


STACKS = {"rioxarray": [stack_rioxarray], "zarr": [stack_zarr], "memmap": [stack_memmap],
          "all": [stack_rioxarray, stack_zarr, stack_memmap]}


def main(argv):
    if len(argv) < 5 or argv[1] not in STACKS:
        sys.exit(__doc__)
    stack, mnt, local, files = argv[1], argv[2], argv[3], argv[4:]
    n = 0
    for run in STACKS[stack]:
        for f in files:
            try:
                n += run("%s/%s" % (mnt, f), "%s/%s" % (local, f), f)
            except Mismatch as e:
                sys.exit(str(e))
            except Exception as e:  # an error through the mount: name it
                sys.exit("%s on %s: %s: %s" % (run.__name__[6:], f, type(e).__name__, e))
    print("ok %d arrays" % n)


if __name__ == "__main__":
    main(sys.argv)
