#!/usr/bin/python3
"""tests/stress/readers.py: the stress test's readers. Python stdlib only.

    readers.py run --src DIR --mounts MNT_A,MNT_B --seconds N --seed S
                   --workers W --out DIR
    readers.py verify --src DIR --mounts MNT_A,MNT_B --out DIR
    readers.py blocks FILE          (print "OFFSET LENGTH LEADER" per tile)

run: W reader processes, each until N seconds have passed, reading the files
of DIR through a mount picked at random for each read, and comparing every
byte returned with the file in DIR:

  range   pread of a random range (1 byte to 512 KiB, some across the end)
  tile    pread of one or a few whole tiles or strips (offsets parsed from
          the TIFF's IFDs here), sometimes with GDAL's 4-byte leader and
          trailer
  mmap    a few slices of a mapping of the whole file
  whole   the whole file, front to back, in 1 MiB reads

30% of the reads go to the same 8 adjacent tiles of one TIFF (chosen by S),
so that both mounts fetch the same units at once (claims, waits and
takeovers) while eviction keeps taking them away.

A read that fails (EIO after the origin's faults, ENOTCONN or ENOENT while a
mount is killed and mounted again, a SIGBUS in an mmap) counts as an error;
a read that returns a byte that differs from the source, or ends before the
file does, as a wrong read: its details go to OUT/wrong.jsonl (one JSON
object a line) and the first few to stderr. The page cache of the file is
dropped (POSIX_FADV_DONTNEED) before most reads so they reach the daemon.

A reader killed by a signal (SIGBUS from an mmap'd page the mount could not
read) counts as one error and is started again. A read blocked for more
than --stuck-after seconds (180) is reported on stderr and counted as
stuck. At the end the readers get --drain seconds (30) to finish the read
they are in; readers still blocked then are reported (file, mount, offset)
and killed, their reads counted as errors.

verify: every file read whole through each mount, once, compared byte for
byte (the origin's faults are off by then). Same counters.

Both write OUT/NAME.json: {"reads", "wrong", "errors", "errnos": {...},
"stuck", "blocked_at_end", "by_kind": {...}, "by_mount": {...}}.
"""

import argparse
import errno
import json
import mmap
import os
import random
import signal
import struct
import sys
import time

KINDS = ["range", "tile", "mmap", "whole"]
# slots per reader in the shared board (doubles)
(S_READS, S_WRONG, S_ERRORS, S_STUCK, S_T0, S_MOUNT, S_FILE, S_OFF, S_LEN, S_KIND,
 S_OPS, S_TSUM, S_TMAX) = range(13)
SLOTS = 13
NKEYS = 64  # errno/kind counters per reader after the slots


# ----------------------------------------------------------------- TIFF IFDs

def tiff_blocks(path):
    """[(offset, length)] of every tile or strip of every IFD in the main
    chain of the TIFF (classic or BigTIFF) at PATH, and whether GDAL's
    4-byte leader and trailer surround them. ([], False) when not a TIFF."""
    with open(path, "rb") as fh:
        data = fh.read()
    if len(data) < 16 or data[:2] not in (b"II", b"MM"):
        return [], False
    e = "<" if data[:2] == b"II" else ">"
    magic = struct.unpack_from(e + "H", data, 2)[0]
    if magic == 42:
        big, ifd = False, struct.unpack_from(e + "I", data, 4)[0]
    elif magic == 43:
        big, ifd = True, struct.unpack_from(e + "Q", data, 8)[0]
    else:
        return [], False
    leader = b"BLOCK_LEADER=SIZE_AS_UINT4" in data[:4096] and \
        b"KNOWN_INCOMPATIBLE_EDITION=YES" not in data[:4096]
    sizes = {1: 1, 2: 1, 3: 2, 4: 4, 6: 1, 7: 1, 8: 2, 9: 4, 16: 8, 17: 8, 18: 8}
    fmt = {1: "B", 3: "H", 4: "I", 16: "Q", 6: "b", 8: "h", 9: "i", 17: "q", 18: "Q"}
    blocks = []
    seen = set()
    while ifd and ifd not in seen and ifd < len(data):
        seen.add(ifd)
        if big:
            n = struct.unpack_from(e + "Q", data, ifd)[0]
            pos, esz = ifd + 8, 20
        else:
            n = struct.unpack_from(e + "H", data, ifd)[0]
            pos, esz = ifd + 2, 12
        tags = {}
        for i in range(n):
            p = pos + i * esz
            if big:
                tag, typ, cnt = struct.unpack_from(e + "HHQ", data, p)
                vpos, inline = p + 12, 8
            else:
                tag, typ, cnt = struct.unpack_from(e + "HHI", data, p)
                vpos, inline = p + 8, 4
            if tag not in (273, 279, 324, 325) or typ not in fmt:
                continue
            if cnt * sizes[typ] > inline:
                vpos = struct.unpack_from(e + ("Q" if big else "I"), data, vpos)[0]
            tags[tag] = list(struct.unpack_from(e + fmt[typ] * cnt, data, vpos))
        offs = tags.get(324) or tags.get(273) or []
        lens = tags.get(325) or tags.get(279) or []
        blocks += [(o, l) for o, l in zip(offs, lens) if l > 0 and o + l <= len(data)]
        p = pos + n * esz
        ifd = struct.unpack_from(e + ("Q" if big else "I"), data, p)[0]
    return sorted(blocks), leader


# ------------------------------------------------------------------ the data

class Source:
    def __init__(self, src):
        self.names = []
        for base, _dirs, files in os.walk(src):
            for name in files:
                self.names.append(os.path.relpath(os.path.join(base, name), src))
        self.names.sort()
        self.data, self.blocks, self.leader = [], [], []
        for name in self.names:
            p = os.path.join(src, name)
            with open(p, "rb") as fh:
                self.data.append(fh.read())
            b, lead = tiff_blocks(p)
            self.blocks.append(b)
            self.leader.append(lead)
        self.hot_file, self.hot = 0, []

    def pick_hot(self, seed):
        """The same few tiles for every reader (from SEED): read often at
        once through both mounts, so that their units are claimed, waited
        for and taken over, while eviction takes them away again."""
        r = random.Random(seed)
        tiffs = [i for i, b in enumerate(self.blocks) if len(b) >= 8]
        if tiffs:
            self.hot_file = r.choice(tiffs)
            blocks = self.blocks[self.hot_file]
            i = r.randrange(len(blocks) - 7)
            self.hot = blocks[i:i + 8]


class Board:
    """Counters shared by the readers and the parent: a shared anonymous
    mapping of doubles, SLOTS + NKEYS per reader (each writes only its own)."""

    def __init__(self, n):
        self.n = n
        self.per = SLOTS + NKEYS
        self.mm = mmap.mmap(-1, 8 * self.per * n)
        self.v = memoryview(self.mm).cast("d")

    def get(self, w, s):
        return self.v[w * self.per + s]

    def set(self, w, s, x):
        self.v[w * self.per + s] = x

    def add(self, w, s, x=1):
        self.v[w * self.per + s] += x


# errno and kind counters: fixed key table so they fit in the board
KEYS = (["kind:" + k for k in KINDS] + ["mount:0", "mount:1"] +
        ["err:" + n for n in ("EIO", "ENOTCONN", "ENOENT", "ECONNABORTED", "EACCES", "ENXIO",
                              "EINTR", "ETIMEDOUT", "EAGAIN", "ESTALE", "ENODEV", "EBADF",
                              "ENOSPC", "SIGBUS", "killed", "other")])


def key_slot(k):
    return SLOTS + KEYS.index(k)


def errname(e):
    n = errno.errorcode.get(e.errno, "other") if isinstance(e, OSError) else "other"
    return n if "err:" + n in KEYS else "other"


# ------------------------------------------------------------------- reading

def pread_full(fd, length, off):
    """Read up to LENGTH bytes at OFF, looping over short reads; stops at
    EOF (an empty read)."""
    parts, got = [], 0
    while got < length:
        b = os.pread(fd, min(length - got, 1 << 20), off + got)
        if not b:
            break
        parts.append(b)
        got += len(b)
    return b"".join(parts)


class Reader:
    def __init__(self, w, src, mounts, board, rng, out):
        self.w, self.src, self.mounts, self.board, self.rng = w, src, mounts, board, rng
        self.wrong_path = os.path.join(out, "wrong.jsonl")

    def begin(self, mi, fi, off, length, kind):
        b, w = self.board, self.w
        b.set(w, S_MOUNT, mi)
        b.set(w, S_FILE, fi)
        b.set(w, S_OFF, off)
        b.set(w, S_LEN, length)
        b.set(w, S_KIND, KINDS.index(kind))
        b.set(w, S_T0, time.time())

    def end(self, t0):
        b, w = self.board, self.w
        b.set(w, S_T0, 0)
        dt = time.time() - t0
        b.add(w, S_OPS)
        b.add(w, S_TSUM, dt)
        if dt > b.get(w, S_TMAX):
            b.set(w, S_TMAX, dt)

    def check(self, mi, fi, off, length, got, kind, note=""):
        """Compare GOT with the source's [off, off+length) (clipped at EOF)."""
        b, w = self.board, self.w
        b.add(w, S_READS)
        b.add(w, key_slot("kind:" + kind))
        b.add(w, key_slot("mount:%d" % mi))
        data = self.src.data[fi]
        want = data[off:off + length]
        if got == want:
            return True
        b.add(w, S_WRONG)
        n = min(len(got), len(want))
        first = next((i for i in range(n) if got[i] != want[i]), n)
        diff = [i for i in range(n) if got[i] != want[i]]
        rec = {"reader": w, "pid": os.getpid(), "mount": self.mounts[mi], "file": self.src.names[fi],
               "kind": kind + (" " + note if note else ""), "offset": off, "length": length,
               "returned": len(got), "expected": len(want), "first_diff": off + first,
               "got_byte": got[first] if first < len(got) else None,
               "want_byte": want[first] if first < len(want) else None,
               "bytes_differing": len(diff),
               "differing_all_zero": bool(diff) and all(got[i] == 0 for i in diff),
               "diff_span": [off + diff[0], off + diff[-1] + 1] if diff else None,
               "time": time.time()}
        line = json.dumps(rec) + "\n"
        fd = os.open(self.wrong_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
        if b.get(w, S_WRONG) <= 3:
            sys.stderr.write("readers: WRONG READ: %s" % line)
        return False

    def error(self, e):
        self.board.add(self.w, S_ERRORS)
        self.board.add(self.w, key_slot("err:" + errname(e)))

    def open(self, mi, fi):
        fd = os.open(os.path.join(self.mounts[mi], self.src.names[fi]), os.O_RDONLY)
        if self.rng.random() < 0.8:
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            except OSError:
                pass
        return fd

    def one(self):
        r = self.rng
        mi = r.randrange(len(self.mounts))
        hot = self.src.hot and r.random() < 0.3
        fi = self.src.hot_file if hot else r.randrange(len(self.src.names))
        size = len(self.src.data[fi])
        blocks = self.src.hot if hot else self.src.blocks[fi]
        kind = "tile" if hot and r.random() < 0.6 else \
            r.choices(KINDS, weights=[40, 35 if blocks else 0, 20, 5])[0]
        if kind == "range":
            length = int(2 ** r.uniform(0, 19))
            off = r.randrange(size) if r.random() < 0.9 else max(0, size - r.randrange(1, length + 2))
            ranges = [(off, length)]
        elif kind == "tile":
            i = r.randrange(len(blocks))
            k = r.choice([1, 1, 1, 2, 4])
            chosen = blocks[i:i + k]
            off = chosen[0][0]
            length = chosen[-1][0] + chosen[-1][1] - off
            if self.src.leader[fi] and r.random() < 0.5:
                off, length = off - 4, length + 8
            ranges = [(off, length)]
        elif kind == "mmap":
            ranges = []
            for _ in range(r.randint(1, 4)):
                if blocks and r.random() < 0.5:
                    o, l = r.choice(blocks)
                else:
                    l = int(2 ** r.uniform(0, 18))
                    o = r.randrange(max(1, size - l))
                ranges.append((o, min(l, size - o)))
            off, length = ranges[0]
        else:
            off, length = 0, size
            ranges = [(0, size)]
        self.begin(mi, fi, off, length, kind)
        t0 = time.time()
        fd = -1
        try:
            fd = self.open(mi, fi)
            if kind == "mmap":
                m = mmap.mmap(fd, size, prot=mmap.PROT_READ)
                try:
                    for o, l in ranges:
                        self.begin(mi, fi, o, l, kind)
                        self.check(mi, fi, o, l, m[o:o + l], kind)
                finally:
                    m.close()
            elif kind == "whole":
                got = pread_full(fd, size + 1, 0)
                self.check(mi, fi, 0, size, got, kind)
            else:
                got = pread_full(fd, length, off)
                self.check(mi, fi, off, length, got, kind)
        except OSError as e:
            self.error(e)
        finally:
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
            self.end(t0)


def reader_main(w, opts, src, board, seed, deadline):
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    rng = random.Random(seed)
    rd = Reader(w, src, opts.mounts, board, rng, opts.out)
    while time.time() < deadline:
        rd.one()
    os._exit(0)


def summarise(board, src, mounts, extra):
    total = {"reads": 0, "wrong": 0, "errors": 0, "stuck": 0, "errnos": {}, "by_kind": {},
             "by_mount": {}, "ops": 0, "op_seconds": 0.0, "op_max_seconds": 0.0}
    for w in range(board.n):
        total["ops"] += int(board.get(w, S_OPS))
        total["op_seconds"] += board.get(w, S_TSUM)
        total["op_max_seconds"] = max(total["op_max_seconds"], board.get(w, S_TMAX))
        total["reads"] += int(board.get(w, S_READS))
        total["wrong"] += int(board.get(w, S_WRONG))
        total["errors"] += int(board.get(w, S_ERRORS))
        total["stuck"] += int(board.get(w, S_STUCK))
        for k in KEYS:
            v = int(board.get(w, key_slot(k)))
            if not v:
                continue
            cat, name = k.split(":", 1)
            d = {"err": "errnos", "kind": "by_kind", "mount": "by_mount"}[cat]
            if cat == "mount":
                name = mounts[int(name)]
            total[d][name] = total[d].get(name, 0) + v
    total.update(extra)
    return total


def describe(board, w, src, mounts):
    return "reader %d: %s read of %s through %s, offset %d, length %d, blocked %.0f s" % (
        w, KINDS[int(board.get(w, S_KIND))], src.names[int(board.get(w, S_FILE))],
        mounts[int(board.get(w, S_MOUNT))], int(board.get(w, S_OFF)),
        int(board.get(w, S_LEN)), time.time() - board.get(w, S_T0))


def cmd_run(opts):
    src = Source(opts.src)
    src.pick_hot(opts.seed)
    board = Board(opts.workers)
    start = time.time()
    deadline = start + opts.seconds
    pids = {}
    master = random.Random(opts.seed)
    respawns = 0

    def spawn(w):
        seed = master.randrange(1 << 62)
        pid = os.fork()
        if pid == 0:
            try:
                reader_main(w, opts, src, board, seed, deadline)
            finally:
                os._exit(0)
        pids[pid] = w

    for w in range(opts.workers):
        spawn(w)
    reported = set()
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(1))
    blocked_at_end = []
    while pids:
        now = time.time()
        try:
            pid, st = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid:
            w = pids.pop(pid)
            if os.WIFSIGNALED(st):
                # a SIGBUS from a page the mount could not fill: an error
                sig = os.WTERMSIG(st)
                board.add(w, S_ERRORS)
                board.add(w, key_slot("err:" + ("SIGBUS" if sig == signal.SIGBUS else "killed")))
                board.set(w, S_T0, 0)
                if now < deadline and not stopping:
                    respawns += 1
                    spawn(w)
            continue
        for w in set(pids.values()):
            t0 = board.get(w, S_T0)
            if t0 and now - t0 > opts.stuck_after and (w, t0) not in reported:
                reported.add((w, t0))
                board.add(w, S_STUCK)
                sys.stderr.write("readers: STUCK: %s\n" % describe(board, w, src, opts.mounts))
        if stopping or now > deadline + opts.drain:
            for pid, w in list(pids.items()):
                if board.get(w, S_T0):
                    blocked_at_end.append(describe(board, w, src, opts.mounts))
                    board.add(w, S_ERRORS)
                    board.add(w, key_slot("err:killed"))
                    board.set(w, S_T0, 0)
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            for msg in blocked_at_end:
                sys.stderr.write("readers: still blocked at the end, killed: %s\n" % msg)
            deadline_kill = time.time() + 30
            while pids and time.time() < deadline_kill:
                try:
                    pid, st = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid:
                    pids.pop(pid, None)
                else:
                    time.sleep(0.1)
            break
        time.sleep(0.1)
    res = summarise(board, src, opts.mounts,
                    {"respawns": respawns, "blocked_at_end": blocked_at_end,
                     "seconds": round(time.time() - start, 1),
                     "left_unreaped": len(pids)})
    write_json(os.path.join(opts.out, "run.json"), res)
    return 0


def cmd_verify(opts):
    """Every file, whole, through each mount; the same checks, one process."""
    src = Source(opts.src)
    board = Board(1)
    rd = Reader(0, src, opts.mounts, board, random.Random(0), opts.out)
    for mi in range(len(opts.mounts)):
        for fi in range(len(src.names)):
            size = len(src.data[fi])
            rd.begin(mi, fi, 0, size, "whole")
            fd = -1
            try:
                fd = rd.open(mi, fi)
                rd.check(mi, fi, 0, size, pread_full(fd, size + 1, 0), "whole", "(final verify)")
            except OSError as e:
                rd.error(e)
                sys.stderr.write("readers: verify: %s through %s: %s\n"
                                 % (src.names[fi], opts.mounts[mi], e))
            finally:
                if fd >= 0:
                    os.close(fd)
    write_json(os.path.join(opts.out, "verify.json"), summarise(board, src, opts.mounts, {}))
    return 0


def write_json(path, obj):
    with open(path + ".tmp", "w", encoding="utf-8") as fh:
        json.dump(obj, fh)
        fh.write("\n")
    os.rename(path + ".tmp", path)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "blocks":
        blocks, leader = tiff_blocks(sys.argv[2])
        for o, l in blocks:
            print(o, l, 4 if leader else 0)
        return 0
    p = argparse.ArgumentParser()
    p.add_argument("cmd", choices=["run", "verify"])
    p.add_argument("--src", required=True)
    p.add_argument("--mounts", required=True, type=lambda s: s.split(","))
    p.add_argument("--out", required=True)
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--stuck-after", type=float, default=180)
    p.add_argument("--drain", type=float, default=30)
    opts = p.parse_args()
    return cmd_run(opts) if opts.cmd == "run" else cmd_verify(opts)


if __name__ == "__main__":
    sys.exit(main())
