"""tilefs.torch: a torch Sampler that tells a tilefs mount each epoch's
reads in advance.

A training loop knows its sample order before the epoch starts.
HintedSampler wraps any sampler (RandomSampler, DistributedSampler, a list
of indices): at the start of each epoch it draws the whole order, hands it
to the mount as this process's hint (tilefs.Mount.hint), then yields the
indices. The mount fetches the chips' tiles ahead of the DataLoader's
workers, so a cold epoch does not wait a round trip per chip.

    from tilefs.torch import HintedSampler
    sampler = HintedSampler(RandomSampler(dataset), dataset.describe, "/mnt/eo")
    DataLoader(dataset, sampler=sampler, num_workers=4)

describe(i) returns (path relative to the mount, (x, y, w, h) or None):
None hints the whole file. Under DistributedSampler each rank's sampler
draws only that rank's share, so each rank hints its own share; the mount
serves every rank's hint at once and drops a rank's when its process
exits. set_epoch() is passed on to the wrapped sampler. If the hint cannot
be given (not a tilefs mount, a refused order), training goes on unhinted
after one warning.
"""
import sys

from torch.utils.data import Sampler

import tilefs


class HintedSampler(Sampler):
    """Yield SAMPLER's indices, after hinting the epoch's order to the
    tilefs mount at MOUNTPOINT. DESCRIBE(i): (path under the mount, window
    or None)."""

    def __init__(self, sampler, describe, mountpoint):
        self.sampler = sampler
        self.describe = describe
        self.mountpoint = mountpoint
        self.warned = False

    def __len__(self):
        return len(self.sampler)

    def set_epoch(self, epoch):
        """Pass the epoch on (DistributedSampler shuffles by it)."""
        if hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(epoch)

    def hint(self, order):
        """Hand ORDER's entries to the mount; warn once if it cannot."""
        try:
            tilefs.Mount(self.mountpoint).hint(self.describe(i) for i in order)
        except (tilefs.Error, ValueError, OSError) as e:
            if not self.warned:
                self.warned = True
                print("tilefs.torch: no hint (%s): reading unhinted" % e, file=sys.stderr)

    def __iter__(self):
        order = list(iter(self.sampler))
        self.hint(order)
        return iter(order)
