#!/usr/bin/python3
"""tests/stress/gen_data.py DIR: the stress test's data set, with GDAL.

Writes DIR.tmp, then renames it to DIR (a half-written set is never used).
Deterministic (fixed seeds, fixed mtimes), about 15 MB:

  cog_u16.tif        COG, 1536x1536 uint16, 128x128 tiles, DEFLATE +
                     predictor, overviews (GDAL's leader and trailer)
  cog_rgb.tif        COG, 1024x1024 3 x uint8, 256x256 tiles, no compression,
                     overviews
  tiled_lzw.tif      plain tiled GeoTIFF, 1536x1024 uint16, 128x128 tiles, LZW
  big_f32.tif        BigTIFF, 768x768 float32, 256x256 tiles, no compression
  sub/striped.tif    striped GeoTIFF, 1024x1024 uint8, no compression
  blob.bin           3 MiB of pseudo-random bytes (not a TIFF)

Pixels are noise, so every tile differs from its neighbours and a run of
zeros where data should be shows.
"""
import os
import shutil
import sys

import numpy as np
from osgeo import gdal

gdal.UseExceptions()
MTIME = 1704164645  # 2024-01-02 03:04:05 UTC


def mem(rng, w, h, bands, dtype, gdt):
    ds = gdal.GetDriverByName("MEM").Create("", w, h, bands, gdt)
    ds.SetGeoTransform([500000, 10, 0, 4600000, 0, -10])
    for b in range(bands):
        if dtype == np.float32:
            a = rng.standard_normal((h, w)).astype(np.float32) * 1000 + 5000
        else:
            info = np.iinfo(dtype)
            a = rng.integers(1, info.max, size=(h, w), dtype=dtype)
        ds.GetRasterBand(b + 1).WriteArray(a)
    return ds


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_data.py DIR")
    dest = sys.argv[1]
    tmp = dest + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, "sub"))
    rng = np.random.default_rng(20250601)

    src = mem(rng, 1536, 1536, 1, np.uint16, gdal.GDT_UInt16)
    gdal.Translate(os.path.join(tmp, "cog_u16.tif"), src, format="COG",
                   creationOptions=["BLOCKSIZE=128", "COMPRESS=DEFLATE", "PREDICTOR=2",
                                    "OVERVIEWS=AUTO"])
    src = mem(rng, 1024, 1024, 3, np.uint8, gdal.GDT_Byte)
    gdal.Translate(os.path.join(tmp, "cog_rgb.tif"), src, format="COG",
                   creationOptions=["BLOCKSIZE=256", "COMPRESS=NONE", "OVERVIEWS=AUTO"])
    src = mem(rng, 1536, 1024, 1, np.uint16, gdal.GDT_UInt16)
    gdal.Translate(os.path.join(tmp, "tiled_lzw.tif"), src, format="GTiff",
                   creationOptions=["TILED=YES", "BLOCKXSIZE=128", "BLOCKYSIZE=128",
                                    "COMPRESS=LZW"])
    src = mem(rng, 768, 768, 1, np.float32, gdal.GDT_Float32)
    gdal.Translate(os.path.join(tmp, "big_f32.tif"), src, format="GTiff",
                   creationOptions=["BIGTIFF=YES", "TILED=YES", "BLOCKXSIZE=256",
                                    "BLOCKYSIZE=256"])
    src = mem(rng, 1024, 1024, 1, np.uint8, gdal.GDT_Byte)
    gdal.Translate(os.path.join(tmp, "sub", "striped.tif"), src, format="GTiff",
                   creationOptions=["TILED=NO", "BLOCKYSIZE=16"])
    with open(os.path.join(tmp, "blob.bin"), "wb") as fh:
        fh.write(rng.integers(0, 256, size=3 << 20, dtype=np.uint8).tobytes())
    src = None
    for base, _dirs, files in os.walk(tmp):
        for name in files:
            p = os.path.join(base, name)
            if name.endswith(".aux.xml"):
                os.unlink(p)
            else:
                os.utime(p, (MTIME, MTIME))
    shutil.rmtree(dest, ignore_errors=True)
    os.rename(tmp, dest)


if __name__ == "__main__":
    main()
