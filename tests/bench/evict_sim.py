#!/usr/bin/python3
"""Trace simulator of cache eviction policies, as the index keeps them.

Replays unit access traces through a cache of a fixed number of equal units
and prints, per scenario and policy, the origin fetches of each epoch (in
units, and as a ratio to epoch 1). The policies model what the index does:
eviction runs in bursts, from over the bound down to 95% of it (persist.c
evict_to(); units on probation leave one by one, in the order they came,
down to the bound; with admission, admitted units are first held to 95%),
a unit's `hits` counts reads at least WINDOW seconds apart, and times are
whole seconds. Stdlib only; run it as

    python3 tests/bench/evict_sim.py [--units N] [--seed S] [--hint]

With --hint it replays instead epochs over a set twice the cache (policy
admit) with a hint fetching the next AHEAD units of the order ahead of the
reader into the full cache, and counts what the index admits by count and
by the idle rule: fetched ahead onto probation, and (rows "kept") kept for
the reader until it reads them, as the index does (evict.h: EVICT_AHEAD_S).

Policies:
  slru      tilefs up to schema 5: every fetched unit stored; victims read
            once (hits <= 1) first, least recently read first within.
  lru       plain LRU, for reference.
  lip       LRU with insertion at the LRU end (Qureshi et al. 2007), one in
            32 at the MRU end (BIP), so a changing set still comes in.
  admit     index schema 6 (cache/store/evict.h): slru's victim order, behind
            an admission rule in the spirit of TinyLFU: once the cache is full, a fetched
            unit is stored on probation (evicted before every admitted unit)
            unless its count, remembered after eviction in a ghost table,
            beats the count of the victim it would displace by more than
            ADMIT_MARGIN; ties keep the
            resident. A victim idle for IDLE_FACTOR times longer than the
            candidate's last reuse interval loses whatever its count, so a
            working set that truly changes comes in.
  admit-noidle  the same without the idle rule.
"""
import argparse
import collections
import random

WINDOW = 10            # seconds between two reads that both count (index.c)
IDLE_FACTOR = 4        # EVICT_IDLE_FACTOR: victim idle this many reuse intervals
ADMIT_MARGIN = 1       # EVICT_ADMIT_MARGIN: a count must beat the victim's by more
GHOSTS_PER_UNIT = 2    # ghost rows kept, per cached unit


class Cache:
    def __init__(self, capacity, policy):
        self.capacity = capacity
        self.policy = policy
        self.units = {}    # key -> [hits, last, admitted, order]
        self.ghosts = {}   # key -> (hits, last, order)
        self.clock = 0     # insertion/touch order, for LRU within a second
        self.rng = random.Random(7)
        self.admitted_by = collections.Counter()   # "count", "idle"
        self.keep_ahead = False   # units fetched ahead stay until read
        self.unread = set()       # such units

    def _victim_key(self, key, probation_first=True):
        hits, last, admitted, order = self.units[key]
        if self.policy == "lru":
            return (order,)
        if self.policy == "lip":
            return (order,)
        if self.policy.startswith("admit") and not admitted:
            return (0, 0, last, order)    # probation: in the order it came
        if probation_first:
            return (admitted, hits > 1, last, order)
        return (hits > 1, last, order)

    def _coldest_admitted(self):
        best = None
        for k, u in self.units.items():
            if self.policy.startswith("admit") and not u[2]:
                continue
            kk = self._victim_key(k)
            if best is None or kk < best[0]:
                best = (kk, k)
        return best[1] if best else None

    def access(self, key, t, prefetch=False):
        """Read KEY at time T (seconds, float); PREFETCH: fetch it if it is
        missing, not a read. True if a hit."""
        now = int(t)
        self.clock += 1
        u = self.units.get(key)
        if u is not None and prefetch:
            return True
        if u is not None:
            self.unread.discard(key)
            if u[1] < now - WINDOW:
                u[0] += 1
            elif not u[2]:
                return True   # probation keeps its fetch time (index.c)
            u[1] = now
            u[3] = self.clock
            return True
        # a miss: fetched, then stored (or stored on probation)
        g = self.ghosts.pop(key, None)
        hits = 1 if g is None else g[0] + (g[1] < now - WINDOW)
        admitted = 1
        order = self.clock
        if self.policy == "lip" and self.rng.randrange(32) != 0 and self.units:
            order = min(u[3] for u in self.units.values()) - 1
        # full: past the level eviction brings it down to
        if self.policy.startswith("admit") and len(self.units) + 1 > self.target():
            v = self._coldest_admitted()
            if v is not None:
                vh, vlast = self.units[v][0], self.units[v][1]
                rule = admit(g, vh, vlast, now, self.policy == "admit")
                admitted = int(rule is not None)
                if rule:
                    self.admitted_by[rule] += 1
        if not self.policy.startswith("admit"):
            admitted = 1   # the other policies have no probation
        self.units[key] = [hits, now, admitted, order]
        if prefetch and self.keep_ahead and not admitted:
            self.unread.add(key)
        if len(self.units) > self.capacity:
            self._evict()
        return False

    def target(self):
        return self.capacity - self.capacity // 20

    def _evict(self):
        target = self.target()
        if self.policy.startswith("admit"):
            # admitted units are held to the target first (persist.c
            # evict_pass()): an admission takes its victim's place at once
            held = [k for k, u in self.units.items() if u[2]]
            if len(held) > target:
                for k in sorted(held, key=self._victim_key)[:len(held) - target]:
                    hits, last, _, o = self.units.pop(k)
                    self.ghosts[k] = (hits, last, o)
        order = sorted(self.units, key=self._victim_key)
        for k in order:
            if k in self.unread:
                continue
            # probation leaves one by one, down to the bound only; admitted
            # units in a burst, down to the target
            bound = self.capacity if not self.units[k][2] else target
            if len(self.units) <= bound:
                break
            hits, last, _, o = self.units.pop(k)
            self.ghosts[k] = (hits, last, o)
        bound = GHOSTS_PER_UNIT * self.capacity
        if len(self.ghosts) > bound:
            old = sorted(self.ghosts, key=lambda k: (self.ghosts[k][1], self.ghosts[k][2]))
            for k in old[:len(self.ghosts) - bound]:
                del self.ghosts[k]


def admit(ghost, victim_hits, victim_last, now, idle_rule):
    """The admission rule of evict_admit() (cache/store/evict.c): the part
    of it that admits ("count", "idle"), or None."""
    if ghost is None:
        return None
    g_hits, g_last = ghost[0], ghost[1]
    if g_hits > victim_hits + ADMIT_MARGIN:
        return "count"
    interval = max(now - g_last, 1)
    return "idle" if idle_rule and now - victim_last > IDLE_FACTOR * interval else None


def run(policy, epochs, capacity, epoch_s, ahead=0, admitted_by=None, keep_ahead=False):
    """EPOCHS: list of lists of keys; each epoch lasts EPOCH_S seconds; a
    hint fetches the AHEAD keys after each read's (KEEP_AHEAD: and what it
    fetched onto probation stays until read). Returns fetches per
    epoch (the reader's misses and the hint's), and per epoch the units
    admitted by each rule into ADMITTED_BY (a list) if given."""
    c = Cache(capacity, policy)
    c.keep_ahead = keep_ahead
    t = 1000.0
    out = []
    for keys in epochs:
        dt = epoch_s / max(len(keys), 1)
        misses = 0
        c.admitted_by.clear()
        for i, k in enumerate(keys):
            for j in keys[i + 1:i + 1 + ahead]:
                if not c.access(j, t, prefetch=True):
                    misses += 1
            if not c.access(k, t):
                misses += 1
            t += dt
        out.append(misses)
        if admitted_by is not None:
            admitted_by.append(dict(c.admitted_by))
        t += epoch_s * 0.1      # a pause between epochs
    return out


def shuffled(keys, rng):
    keys = list(keys)
    rng.shuffle(keys)
    return keys


def scenarios(n, seed):
    rng = random.Random(seed)
    cap = n
    big = ["a%d" % i for i in range(2 * n)]
    fits = ["w%d" % i for i in range(int(0.8 * n))]
    scan = ["s%d" % i for i in range(int(1.5 * n))]
    newset = ["b%d" % i for i in range(int(0.8 * n))]
    newbig = ["c%d" % i for i in range(2 * n)]
    return [
        ("(i) 2x cache, 5 shuffled epochs", cap,
         [shuffled(big, rng) for _ in range(5)]),
        ("(ii) 0.8x cache, scan of 1.5x between epochs 2 and 3", cap,
         [shuffled(fits, rng), shuffled(fits, rng), scan, shuffled(fits, rng),
          shuffled(fits, rng)]),
        ("(iii) 3 epochs of a 2x set, then 6 of a new 0.8x set", cap,
         [shuffled(big, rng) for _ in range(3)] + [shuffled(newset, rng) for _ in range(6)]),
        ("(iii') 3 epochs of a 2x set, then 6 of a new 2x set", cap,
         [shuffled(big, rng) for _ in range(3)] + [shuffled(newbig, rng) for _ in range(6)]),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--units", type=int, default=250, help="cache size in units")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--hint", action="store_true",
                    help="a hint fetching ahead into the full cache instead")
    a = ap.parse_args()
    if a.hint:
        hint(a.units, a.seed)
        return
    policies = ["slru", "lru", "lip", "admit-noidle", "admit"]
    for name, cap, epochs in scenarios(a.units, a.seed):
        for epoch_s in (2, 10, 120):
            print("%s; epochs of %d s; cache %d units" % (name, epoch_s, cap))
            print("  %-13s %s" % ("policy", "  ".join("ep%-5d" % (i + 1)
                                                       for i in range(len(epochs)))))
            for p in policies:
                m = run(p, epochs, cap, epoch_s)
                cells = []
                for i, x in enumerate(m):
                    ratio = x / m[0] if m[0] else 0
                    cells.append("%-7s" % ("%.2f" % ratio if i and name.startswith("(i)")
                                          else str(x)))
                print("  %-13s %s" % (p, "  ".join(cells)))
            print()


def hint(n, seed):
    rng = random.Random(seed)
    big = ["a%d" % i for i in range(2 * n)]
    epochs = [shuffled(big, rng) for _ in range(5)]
    print("2x cache, 5 shuffled epochs of 10 s, a hint AHEAD units ahead; cache %d units" % n)
    print("  %-9s %-28s %s" % ("ahead", "fetched / epoch 1 (ep2-5)",
                               "admitted in a full cache, by count / by the idle rule"))
    for ahead, kept in ((0, False), (3, False), (6, False), (12, False),
                        (3, True), (6, True), (12, True), (24, True)):
        by = []
        m = run("admit", epochs, n, 10, ahead, by, kept)
        print("  %-9s %-28s %s" % ("%d%s" % (ahead, " kept" if kept else ""), " ".join("%.2f" % (x / m[0]) for x in m[1:]),
                                   " ".join("%d/%d" % (b.get("count", 0), b.get("idle", 0))
                                            for b in by[1:])))


if __name__ == "__main__":
    main()
