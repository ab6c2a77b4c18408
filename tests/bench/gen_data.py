#!/usr/bin/python3
"""Generate the benchmark data set once: gen_data.py quick|full DIR; and the
extra sets of some workloads: gen_data.py extra-quick|extra-full DIR.

Writes DIR.tmp, then renames it to DIR, so a half-written set is never used.
Everything is deterministic (fixed seeds, fixed mtimes), so a regenerated
set has the same bytes and nginx gives it the same ETags.

  s2/       Sentinel-2-like: 1 band uint16, 1024x1024 tiles, DEFLATE +
            horizontal predictor, internal overviews (COG)
  landsat/  Landsat-like: 1 band uint16, 512x512 tiles, ZSTD + horizontal
            predictor (as USGS Collection 2 cloud products), overviews
  naip/     NAIP-like: 4 bands uint8 (pixel interleaved), 512x512 tiles,
            DEFLATE
  striped/  plain GeoTIFF, 1 band uint16, strips, no compression, no
            overviews, IFD wherever GDAL puts it
  chipset/  a training set of chips: 1,500 files of 256x256, 1 band uint16,
            one tile each, DEFLATE, all in one directory (GDAL reads the
            directory at every open, up to 1,000 names)

Pixels are smooth fields plus noise, so DEFLATE and ZSTD compress them about
as much as real imagery (2-3x), not the 100x of a constant image.

The extra sets, apart so that the main set and every workload's items stay
as they were (EXTRA_VERSION is in their directory's name):

  lzw/      small-tile LZW COGs: 1 band uint16, 128x128 tiles (about 23 KB
            each), LZW + horizontal predictor, overviews (tilebytes)
  large/    one large non-TIFF file of random bytes, as a WebDataset shard
            or a checkpoint is to tilefs (cached in blocks): 1 GiB, 128 MiB
            in quick (throughput's one-reader row)

A change here changes the data: bump DATA_VERSION (bench.ensure_data puts
it in the cache directory's name, so the old set is not reused), or
EXTRA_VERSION for the extra sets.
"""
import os
import shutil
import sys
import time

import numpy as np
from osgeo import gdal

gdal.UseExceptions()

DATA_VERSION = 3  # 1: every COG DEFLATE; 2: landsat ZSTD; 3: chipset/

SETS = {
    # name: (count, width, height, bands, dtype, block or None, COG compression
    # or None for a striped uncompressed GeoTIFF)
    "quick": {
        "s2": (2, 3072, 3072, 1, "uint16", 1024, "DEFLATE"),
        "landsat": (2, 2048, 2048, 1, "uint16", 512, "ZSTD"),
        "naip": (2, 2048, 2048, 4, "uint8", 512, "DEFLATE"),
        "striped": (1, 2048, 2048, 1, "uint16", None, None),
        "chipset": (1500, 256, 256, 1, "uint16", 256, "DEFLATE"),
    },
    "full": {
        "s2": (4, 10980, 10980, 1, "uint16", 1024, "DEFLATE"),
        "landsat": (4, 7680, 7680, 1, "uint16", 512, "ZSTD"),
        "naip": (4, 6144, 6144, 4, "uint8", 512, "DEFLATE"),
        "striped": (2, 6144, 6144, 1, "uint16", None, None),
        "chipset": (1500, 256, 256, 1, "uint16", 256, "DEFLATE"),
    },
}

EXTRA_VERSION = 1  # 1: lzw/ and large/

EXTRA_SETS = {
    "extra-quick": {"lzw": (2, 1536, 1536, 1, "uint16", 128, "LZW")},
    "extra-full": {"lzw": (4, 3072, 3072, 1, "uint16", 128, "LZW")},
}
LARGE_BYTES = {"extra-quick": 128 << 20, "extra-full": 1 << 30}

GDT = {"uint16": gdal.GDT_UInt16, "uint8": gdal.GDT_Byte}
MTIME = 1704164645  # 2024-01-02 03:04:05 UTC


def field(rng, h, w, lo, hi, noise):
    """A smooth random field scaled to [lo, hi] plus Gaussian noise."""
    y = np.linspace(0, 1, h, dtype=np.float32)[:, None]
    x = np.linspace(0, 1, w, dtype=np.float32)[None, :]
    f = np.zeros((h, w), dtype=np.float32)
    for _ in range(6):
        fx, fy = rng.uniform(2, 40, 2)
        px, py = rng.uniform(0, 6.3, 2)
        f += np.sin(x * fx + px) * np.cos(y * fy + py)
    f -= f.min()
    f *= (hi - lo) / max(float(f.max()), 1e-6)
    f += lo
    f += rng.normal(0, noise, (h, w)).astype(np.float32)
    return np.clip(f, 0, None)


def write(path, arr, dtype, block, compress):
    bands, h, w = arr.shape
    mem = gdal.GetDriverByName("MEM").Create("", w, h, bands, GDT[dtype])
    mem.SetGeoTransform((500000, 10, 0, 5000000, 0, -10))
    mem.SetProjection("EPSG:32633")
    for b in range(bands):
        mem.GetRasterBand(b + 1).WriteArray(arr[b])
    if compress:
        opts = ["COMPRESS=" + compress, "PREDICTOR=YES", "BLOCKSIZE=%d" % block,
                "OVERVIEWS=AUTO", "OVERVIEW_RESAMPLING=AVERAGE", "NUM_THREADS=ALL_CPUS",
                "BIGTIFF=IF_SAFER"]
        gdal.GetDriverByName("COG").CreateCopy(path, mem, options=opts)
    else:
        opts = ["TILED=NO", "COMPRESS=NONE", "INTERLEAVE=PIXEL", "BIGTIFF=IF_SAFER"]
        gdal.GetDriverByName("GTiff").CreateCopy(path, mem, options=opts)
    mem = None
    for side in (path + ".aux.xml",):
        if os.path.exists(side):
            os.remove(side)


def write_large(path, size, seed=4242):
    """SIZE bytes of deterministic random bytes (incompressible, as a shard
    of JPEGs or a checkpoint is)."""
    rng = np.random.default_rng(seed)
    with open(path, "wb") as f:
        left = size
        while left > 0:
            n = min(left, 16 << 20)
            f.write(rng.bytes(n))
            left -= n


def generate(mode, dest):
    tmp = dest + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    seed = 1000 if mode in SETS else 5000
    sets = SETS[mode] if mode in SETS else EXTRA_SETS[mode]
    if mode in LARGE_BYTES:
        os.makedirs(os.path.join(tmp, "large"))
        write_large(os.path.join(tmp, "large", "shard-000000.bin"), LARGE_BYTES[mode])
    for kind, (count, w, h, bands, dtype, block, compress) in sets.items():
        os.makedirs(os.path.join(tmp, kind))
        for i in range(count):
            seed += 1
            rng = np.random.default_rng(seed)
            t0 = time.time()
            if dtype == "uint16":
                arr = np.stack([field(rng, h, w, 200, 6000, 25) for _ in range(bands)])
                arr = np.round(arr).astype(np.uint16)
            else:
                arr = np.stack([field(rng, h, w, 20, 230, 6) for _ in range(bands)])
                arr = np.clip(np.round(arr), 0, 255).astype(np.uint8)
            name = "%s_%0*d.tif" % (kind, 4 if count > 100 else 2, i)
            path = os.path.join(tmp, kind, name)
            write(path, arr, dtype, block, compress)
            del arr
            if count <= 100 or i % 500 == 0:
                print("  %s/%s: %.1f MB in %.1f s" % (kind, name, os.path.getsize(path) / 1e6,
                                                     time.time() - t0), flush=True)
    for root, dirs, files in os.walk(tmp):
        for n in dirs + files:
            os.utime(os.path.join(root, n), (MTIME, MTIME))
    os.utime(tmp, (MTIME, MTIME))
    shutil.rmtree(dest, ignore_errors=True)
    os.rename(tmp, dest)


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in list(SETS) + list(EXTRA_SETS):
        sys.exit("usage: gen_data.py quick|full|extra-quick|extra-full DIR")
    generate(sys.argv[1], sys.argv[2].rstrip("/"))


if __name__ == "__main__":
    main()
