#!/usr/bin/env python3
"""A torch Sampler that tells a tilefs mount each epoch's reads in advance.

A training loop knows its sample order before the epoch starts. HintedSampler
wraps any sampler (or list of indices): at the start of each epoch it draws
the whole order, writes it as an order file (one chip a line: the file's path
under the mount and the full-resolution pixel window the chip reads) and
hands it to the mount with `tilefs hint`, then yields the indices. The mount
fetches the chips' tiles ahead of the DataLoader's workers, so a cold epoch
does not wait a round trip per chip.

    from tilefs_sampler import HintedSampler
    sampler = HintedSampler(RandomSampler(dataset), dataset.describe, "/mnt/eo")
    DataLoader(dataset, sampler=sampler, num_workers=4)

describe(i) returns (path relative to the mount, (x, y, w, h) or None): None
hints the whole file. If the hint cannot be given (not a tilefs mount, no
tilefs on PATH), training goes on unhinted after one warning. Standard
library and torch only.
"""
import os
import subprocess
import sys
import tempfile

from torch.utils.data import Sampler


def order_line(path, window):
    """One line of an order file, or None for a path the format cannot hold
    (a tab or a newline in it)."""
    if "\t" in path or "\n" in path or "\r" in path:
        return None
    if window is None:
        return path + "\n"
    x, y, w, h = (int(v) for v in window)
    return "%s\t%d %d %d %d\n" % (path, x, y, w, h)


class HintedSampler(Sampler):
    """Yield SAMPLER's indices, after hinting the epoch's order to the tilefs
    mount at MOUNTPOINT. DESCRIBE(i): (path under the mount, window or None)."""

    def __init__(self, sampler, describe, mountpoint, tilefs="tilefs"):
        self.sampler = sampler
        self.describe = describe
        self.mountpoint = mountpoint
        self.tilefs = tilefs
        self.warned = False

    def __len__(self):
        return len(self.sampler)

    def hint(self, order):
        """Write ORDER's lines to a private temporary file and run tilefs hint."""
        fd, path = tempfile.mkstemp(prefix="tilefs-order-", suffix=".txt")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
                for i in order:
                    line = order_line(*self.describe(i))
                    if line is not None:
                        f.write(line)
            r = subprocess.run([self.tilefs, "hint", self.mountpoint, path],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if r.returncode != 0 and not self.warned:
                self.warned = True
                print("tilefs_sampler: no hint (%s): reading unhinted"
                      % r.stderr.strip(), file=sys.stderr)
        except OSError as e:
            if not self.warned:
                self.warned = True
                print("tilefs_sampler: no hint (%s): reading unhinted" % e, file=sys.stderr)
        finally:
            os.unlink(path)

    def __iter__(self):
        order = list(iter(self.sampler))
        self.hint(order)
        return iter(order)
