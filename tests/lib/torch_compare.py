#!/usr/bin/env python3
"""torch_compare.py MOUNT LOCAL [--workers N]: run examples/torch_loader.py's
ChipDataset through DataLoader(num_workers=N) over MOUNT, and check that
every tensor equals the same chip read from LOCAL (in this process, without
a DataLoader). Prints "N chips equal"; exit 1 at the first difference."""
import argparse
import importlib.util
import os
import sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "torch_loader", os.path.join(here, "..", "..", "examples", "torch_loader.py"))
torch_loader = importlib.util.module_from_spec(spec)
spec.loader.exec_module(torch_loader)

p = argparse.ArgumentParser()
p.add_argument("mount")
p.add_argument("local")
p.add_argument("--workers", type=int, default=4)
p.add_argument("--chip", type=int, default=128)
p.add_argument("--stride", type=int, default=96)
a = p.parse_args()

chips = torch_loader.chip_grid(a.mount, a.chip, a.stride)
if not chips:
    sys.exit("no chips under %s" % a.mount)
if chips != torch_loader.chip_grid(a.local, a.chip, a.stride):
    sys.exit("the mount's files or sizes differ from the local ones")
local = torch_loader.ChipDataset(a.local, chips, a.chip)
n = 0
for i, t in enumerate(torch_loader.loader(a.mount, chips, a.chip, a.workers)):
    want = local[i]
    if t.dtype != want.dtype or t.shape != want.shape or not torch.equal(t, want):
        path, col, row = chips[i]
        sys.exit("chip %d (%s at %d,%d) differs: %s %s through the mount, %s %s local"
                 % (i, path, col, row, t.dtype, tuple(t.shape), want.dtype, tuple(want.shape)))
    n += 1
if n != len(chips):
    sys.exit("the DataLoader gave %d chips of %d" % (n, len(chips)))
print("%d chips equal" % n)
