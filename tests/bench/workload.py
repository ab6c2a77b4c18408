#!/usr/bin/python3
"""Run one benchmark phase: read every item of a plan through one access path.

    workload.py --items ITEMS.json --root ROOT --out OUT.json
                [--workers N] [--loader pool|torch] [--threads N] [--prefetch-factor N]
                [--vsi] [--shuffle SEED]

ROOT is a directory (local files, a FUSE mount) or, with --vsi, a GDAL
virtual path prefix such as /vsicurl/http://127.0.0.1:8080 (GDAL's
configuration, e.g. GDAL_DISABLE_READDIR_ON_OPEN, comes from the
environment). Every item is done by a worker process with a fresh open, as a
DataLoader worker would: rasterio.open, read, close. The parent never opens
a data set, so the workers inherit no GDAL state.

ITEMS.json is a list of items, each {"op": ..., "path": relative path, ...}:
  chip      "window": [col, row, w, h]      read all bands of the window
  full      -                               read all bands at full resolution
  overview  "level": L                      read all of overview level L
  open      -                               open, read the metadata, probe
                                            the sidecars GDAL looks for, close
  pread     "offset", "length"              raw bytes, no decoding (os.pread
                                            or VSIFReadL)
  patch     "files": [relative paths]       read each file whole, all bands
                                            at full resolution (a sample of
                                            a file a band; "path" its folder)

OUT.json: {"n", "wall_s", "bytes", "lat": [s per item, in item order],
"hash": [hex per item], "errors": [[index, message], ...]}. "bytes" is what
was delivered to the caller: decoded pixels, or raw bytes for pread.
"""
import argparse
import hashlib
import importlib
import json
import multiprocessing as mp
import os
import random
import resource
import sys
import time
import traceback

ROOT = None
VSI = False
SIDECARS = (".aux.xml", ".ovr", ".msk", ".tfw", ".TFW", ".wld", ".xml")


def _digest(b):
    return hashlib.blake2b(b, digest_size=12).hexdigest()


def _exists(path):
    if VSI:
        from osgeo import gdal
        return gdal.VSIStatL(path) is not None
    return os.path.exists(path)


def do_item(arg):
    idx, it = arg
    import rasterio
    from rasterio.windows import Window
    path = ROOT + "/" + it["path"]
    t0 = time.perf_counter()
    try:
        op = it["op"]
        if op == "chip":
            c, r, w, h = it["window"]
            with rasterio.open(path) as ds:
                a = ds.read(window=Window(c, r, w, h))
            data = a.tobytes()
        elif op == "full":
            with rasterio.open(path) as ds:
                a = ds.read()
            data = a.tobytes()
        elif op == "overview":
            with rasterio.open(path, overview_level=it["level"]) as ds:
                a = ds.read()
            data = a.tobytes()
        elif op == "open":
            with rasterio.open(path) as ds:
                meta = [ds.width, ds.height, ds.count, list(ds.dtypes), list(ds.transform),
                        str(ds.crs), ds.block_shapes, ds.overviews(1)]
            seen = [_exists(path + s) for s in SIDECARS]
            data = json.dumps([meta, seen]).encode()
            a = None
        elif op == "patch":
            parts = []
            for f in it["files"]:
                with rasterio.open(ROOT + "/" + f) as ds:
                    parts.append(ds.read().tobytes())
            data = b"".join(parts)
        elif op == "pread":
            off, n = it["offset"], it["length"]
            if VSI:
                from osgeo import gdal
                f = gdal.VSIFOpenL(path, "rb")
                if f is None:
                    raise OSError("VSIFOpenL failed: " + path)
                try:
                    gdal.VSIFSeekL(f, off, 0)
                    data = gdal.VSIFReadL(1, n, f)
                finally:
                    gdal.VSIFCloseL(f)
            else:
                fd = os.open(path, os.O_RDONLY)
                try:
                    data = b""
                    while len(data) < n:
                        got = os.pread(fd, n - len(data), off + len(data))
                        if not got:
                            break
                        data += got
                finally:
                    os.close(fd)
        else:
            raise ValueError("unknown op " + op)
        dt = time.perf_counter() - t0
        nbytes = len(data) if op != "open" else 0
        return idx, dt, _digest(data), nbytes, None
    except Exception as e:  # reported, never hidden
        dt = time.perf_counter() - t0
        msg = "%s: %s" % (type(e).__name__, e)
        return idx, dt, None, 0, msg[:500]


def _init(root, vsi):
    """Worker start: import GDAL here, so no item pays for it."""
    global ROOT, VSI
    ROOT, VSI = root, vsi
    for mod in ("rasterio", "rasterio.windows", "osgeo.gdal"):
        importlib.import_module(mod)


def run_pool(items, order, workers):
    ctx = mp.get_context("fork")
    with ctx.Pool(workers, initializer=_init, initargs=(ROOT, VSI)) as pool:
        # make sure every worker is up before the clock starts
        pool.map(time.sleep, [0.05] * workers, chunksize=1)
        t0 = time.perf_counter()
        res = list(pool.imap_unordered(do_item, [(i, items[i]) for i in order], chunksize=1))
        wall = time.perf_counter() - t0
    return res, wall


def run_torch(items, order, workers, threads=1, prefetch_factor=None):
    """The items through torch.utils.data.DataLoader, one item per index, in
    `workers` worker processes. As in run_pool, the workers are started
    (and import GDAL) before the clock starts: a first pass gives each one a
    no-op index, then the timed pass reads the items in the same workers
    (persistent_workers, as a training loop that cares about speed sets).

    threads > 1 is a loader tuned for remote reading: each worker is handed
    batches of `threads` indices and reads them with as many threads, and
    keeps prefetch_factor batches queued, so workers x threads reads are in
    flight. threads == 1 is the loader nobody tuned: one read at a time in
    each worker."""
    from concurrent.futures import ThreadPoolExecutor
    from torch.utils.data import DataLoader, Dataset, Sampler

    pool = None

    def read_batch(batch):
        nonlocal pool
        if pool is None:
            pool = ThreadPoolExecutor(threads)
        return list(pool.map(do_item, [(i, items[i]) for i in batch]))

    class Items(Dataset):
        def __len__(self):
            return len(items)

        def __getitem__(self, i):
            batch = i if isinstance(i, list) else [i]
            if batch[0] < 0:
                time.sleep(0.05)
                return []
            if threads == 1:
                return [do_item((j, items[j])) for j in batch]
            return read_batch(batch)

    class Pass(Sampler):
        """The indices of the current pass (sampled in the parent), in
        batches of `threads`."""
        indices = [[-1]] * workers

        def __iter__(self):
            return iter(self.indices)

    def batches(seq):
        return [seq[k:k + threads] for k in range(0, len(seq), threads)]

    sampler = Pass(None)
    kw = {"prefetch_factor": prefetch_factor} if prefetch_factor else {}
    dl = DataLoader(Items(), batch_size=None, sampler=sampler, num_workers=workers,
                    worker_init_fn=lambda _: _init(ROOT, VSI), persistent_workers=True, **kw)
    for _ in dl:
        pass
    sampler.indices = batches(order)
    t0 = time.perf_counter()
    res = [tuple(x) for batch in dl for x in batch]
    wall = time.perf_counter() - t0
    return res, wall


def main():
    global ROOT, VSI
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--loader", choices=("pool", "torch"), default="pool")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch loader: reads in flight in each worker [1]")
    ap.add_argument("--prefetch-factor", type=int, default=None,
                    help="torch loader: batches each worker keeps queued [torch's]")
    ap.add_argument("--vsi", action="store_true")
    ap.add_argument("--shuffle", type=int, default=None,
                    help="visit the items in an order shuffled with this seed")
    a = ap.parse_args()
    ROOT, VSI = a.root.rstrip("/"), a.vsi
    with open(a.items) as f:
        items = json.load(f)
    order = list(range(len(items)))
    if a.shuffle is not None:
        random.Random(a.shuffle).shuffle(order)
    if a.loader == "torch":
        res, wall = run_torch(items, order, a.workers, a.threads, a.prefetch_factor)
    else:
        res, wall = run_pool(items, order, a.workers)
    n = len(items)
    lat, hashes, errors, total = [None] * n, [None] * n, [], 0
    for idx, dt, h, nb, err in res:
        idx = int(idx)
        lat[idx], hashes[idx] = float(dt), h
        total += int(nb)
        if err:
            errors.append([idx, err])
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = {"n": n, "wall_s": wall, "bytes": total, "lat": lat, "hash": hashes,
           "errors": errors, "client_cpu_s": ru.ru_utime + ru.ru_stime}
    with open(a.out + ".tmp", "w") as f:
        json.dump(out, f)
    os.replace(a.out + ".tmp", a.out)


if __name__ == "__main__":
    try:
        main()
    except Exception:
        traceback.print_exc()
        sys.exit(2)
