#!/usr/bin/python3
"""hint_ranks.py MNT LOCAL WORLD STATE: WORLD ranks of a distributed job,
a process each, hint and read a 4096x4096 COG of 256x256 tiles (MNT/cog.tif,
LOCAL/cog.tif the same bytes), one chip a tile, each rank its share as
torch's DistributedSampler draws it, through tilefs.torch.HintedSampler.

Each rank forks from this process (torch imported once), draws its epoch's
order (which hints it: the hint is the rank process's own), writes it to
STATE/order.RANK, then waits for the file STATE/go before it reads its
chips through the mount and compares each with LOCAL's bytes. Exit 0 when
every rank read right; the ranks' hints end with their processes.
"""
import os
import sys
import time

import numpy as np
import rasterio
from rasterio.windows import Window
from torch.utils.data.distributed import DistributedSampler

from tilefs.torch import HintedSampler

mnt, local, world, state = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
TILE, N = 256, 16
chips = [(c, r) for r in range(N) for c in range(N)]


def describe(i):
    c, r = chips[i]
    return "cog.tif", (c * TILE, r * TILE, TILE, TILE)


def rank_main(rank):
    sampler = HintedSampler(DistributedSampler(range(len(chips)), num_replicas=world, rank=rank,
                                               shuffle=True, seed=37),
                            describe, mnt)
    sampler.set_epoch(1)
    order = list(iter(sampler))
    if sampler.warned:
        return 1
    with open(os.path.join(state, "order.%d" % rank), "w") as f:
        f.write("".join("%d\n" % i for i in order))
    go = os.path.join(state, "go")
    for _ in range(6000):
        if os.path.exists(go):
            break
        time.sleep(0.05)
    else:
        print("rank %d: no go" % rank, file=sys.stderr)
        return 1
    with rasterio.open(os.path.join(mnt, "cog.tif")) as m, \
            rasterio.open(os.path.join(local, "cog.tif")) as l:
        for i in order:
            c, r = chips[i]
            w = Window(c * TILE, r * TILE, TILE, TILE)
            if not np.array_equal(m.read(window=w), l.read(window=w)):
                print("rank %d: chip %d,%d differs" % (rank, c, r), file=sys.stderr)
                return 1
    return 0


pids = []
for rank in range(world):
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = rank_main(rank)
        finally:
            os._exit(code)
    pids.append(pid)
failed = sum(os.waitpid(p, 0)[1] != 0 for p in pids)
sys.exit(1 if failed else 0)
