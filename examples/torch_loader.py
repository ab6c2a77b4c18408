#!/usr/bin/env python3
"""A PyTorch training loader reading GeoTIFF chips from a tilefs mount.

Nothing in it knows about tilefs: the Dataset opens each chip's file with
rasterio, as it would on local disk, and a DataLoader runs it in worker
processes. Through a tilefs mount the first epoch fetches the tiles the
chips touch; later epochs (and later jobs on the same cache dir) read them
from the local cache without a request.

    tilefs mount https://data.example.org/eo/ /mnt/eo --cache-dir /nvme/tilefs
    python3 examples/torch_loader.py /mnt/eo --epochs 3 --workers 4

With --hint, each epoch's shuffled order is handed to the mount first
(tilefs.torch.HintedSampler, from the package the .deb installs; from a
checkout, PYTHONPATH=tools/python), so that it fetches the chips' tiles
ahead of the workers: a cold first epoch then waits far less on the origin.
With --distributed, it runs as one rank of a torch.distributed job
(torchrun sets RANK and WORLD_SIZE): each rank reads and hints its share.

tests/bats/92-torch.bats runs this Dataset over a mount and compares every
tensor with the same chip read from local files.
"""
import argparse
import os
import sys
import time

import numpy as np
import rasterio
import torch
from rasterio.windows import Window
from torch.utils.data import DataLoader, Dataset, RandomSampler
from torch.utils.data.distributed import DistributedSampler


def chip_grid(root, chip, stride):
    """(path under ROOT, column, row) of every CHIP x CHIP window, STRIDE
    pixels apart, of the full-resolution image of every .tif under ROOT."""
    chips = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            if not name.endswith((".tif", ".tiff")):
                continue
            path = os.path.relpath(os.path.join(dirpath, name), root)
            with rasterio.open(os.path.join(root, path)) as ds:
                width, height = ds.width, ds.height
            for row in range(0, height - chip + 1, stride):
                for col in range(0, width - chip + 1, stride):
                    chips.append((path, col, row))
    return chips


class ChipDataset(Dataset):
    """One item per chip: a (bands, chip, chip) tensor. Each item opens its
    file afresh, as a data set of many scenes does."""

    def __init__(self, root, chips, chip):
        self.root = root
        self.chips = chips
        self.chip = chip

    def __len__(self):
        return len(self.chips)

    def describe(self, i):
        """The chip's file under the root and its pixel window (for a hint)."""
        path, col, row = self.chips[i]
        return path, (col, row, self.chip, self.chip)

    def __getitem__(self, i):
        path, col, row = self.chips[i]
        with rasterio.open(os.path.join(self.root, path)) as ds:
            a = ds.read(window=Window(col, row, self.chip, self.chip))
        if a.dtype == np.uint16:  # torch 1.x has no uint16
            a = a.astype(np.int32)
        return torch.from_numpy(a)


def loader(root, chips, chip, workers, batch_size=None, shuffle=False, hint=False, rank=None):
    """A DataLoader over ChipDataset. batch_size None: one chip per step
    (chips of files with different bands or types cannot be stacked).
    HINT: ROOT is a tilefs mount; tell it each epoch's order in advance.
    RANK: (rank, world size) of a distributed job: this rank's share."""
    ds = ChipDataset(root, chips, chip)
    if rank:
        sampler = DistributedSampler(ds, num_replicas=rank[1], rank=rank[0], shuffle=shuffle)
    elif shuffle:
        sampler = RandomSampler(ds)
    else:
        sampler = range(len(ds))
    if hint:
        from tilefs.torch import HintedSampler
        sampler = HintedSampler(sampler, ds.describe, root)
    return DataLoader(ds, batch_size=batch_size, sampler=sampler, num_workers=workers)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("root", help="directory of GeoTIFFs (a tilefs mount)")
    p.add_argument("--chip", type=int, default=256, help="chip size in pixels")
    p.add_argument("--stride", type=int, default=None, help="pixels between chips (default: chip)")
    p.add_argument("--workers", type=int, default=4, help="DataLoader worker processes")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=None,
                   help="stack chips into batches (needs files of one band count and type)")
    p.add_argument("--hint", action="store_true",
                   help="hand each epoch's order to the tilefs mount first (tilefs.torch)")
    p.add_argument("--distributed", action="store_true",
                   help="read this rank's share (RANK and WORLD_SIZE, as torchrun sets)")
    a = p.parse_args()
    rank = (int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])) if a.distributed else None

    chips = chip_grid(a.root, a.chip, a.stride or a.chip)
    if not chips:
        sys.exit("no .tif of at least %dx%d pixels under %s" % (a.chip, a.chip, a.root))
    data = loader(a.root, chips, a.chip, a.workers, a.batch_size, shuffle=True, hint=a.hint,
                  rank=rank)
    for epoch in range(1, a.epochs + 1):
        if hasattr(data.sampler, "set_epoch"):
            data.sampler.set_epoch(epoch)  # a new shuffle each epoch
        start = time.monotonic()
        n = 0
        total = 0.0
        for batch in data:
            n += 1
            total += float(batch.double().mean())  # the training step would go here
        s = time.monotonic() - start
        print("epoch %d: %d steps in %.2f s (%.0f/s), mean of means %.3f"
              % (epoch, n, s, n / s if s else 0, total / n))


if __name__ == "__main__":
    main()
