#!/usr/bin/python3
"""pread_check.py [--seed N] [--threads N] [--procs N] [--reads N] MNTDIR LOCALDIR

Random os.pread()s of every file under LOCALDIR, done through MNTDIR from
several processes, each with several threads, all at once; every result is
compared with the same pread of the local file. Offsets include the last
bytes of a file and ranges past its end. Deterministic for a given seed.
Exit 0 when all reads matched; prints the mismatches and exits 1 otherwise.
"""
import argparse
import os
import random
import sys
import threading


def explain(lfd, got, want):
    """What a wrong read of the same length got instead: where it first
    differs, whether the rest is zeros (a hole), and whether its bytes are
    the file's from elsewhere (a read at the wrong offset)."""
    i = next(k for k in range(len(got)) if got[k] != want[k])
    rest = got[i:i + 4096]
    at = -1
    if len(got) - i >= 16:
        at = os.pread(lfd, os.fstat(lfd).st_size, 0).find(got[i:i + 64])
    return "; first wrong byte at +%d, %s, %s" % (
        i, "zeros from there" if rest.count(0) == len(rest) else "not zeros",
        "the file's bytes at %d" % at if at >= 0 else "not the file's bytes elsewhere")


def files_under(root):
    out = []
    for d, _, names in os.walk(root):
        for n in names:
            if not n.startswith("."):
                out.append(os.path.relpath(os.path.join(d, n), root))
    return sorted(out)


def worker(args, rel_files, seed, errors, lock):
    rng = random.Random(seed)
    fds = {}
    try:
        for _ in range(args.reads):
            rel = rng.choice(rel_files)
            if rel not in fds:
                fds[rel] = (os.open(os.path.join(args.mnt, rel), os.O_RDONLY),
                            os.open(os.path.join(args.local, rel), os.O_RDONLY))
            mfd, lfd = fds[rel]
            size = os.fstat(lfd).st_size
            kind = rng.random()
            if kind < 0.1:
                off = max(0, size - rng.randint(1, 5000))  # the tail
            elif kind < 0.15:
                off = size + rng.randint(0, 100)  # past the end
            else:
                off = rng.randint(0, max(0, size - 1))
            n = rng.choice([1, 17, 4096, rng.randint(1, 300000)])
            got = os.pread(mfd, n, off)
            want = os.pread(lfd, n, off)
            if got != want:
                with lock:
                    errors.append("%s off=%d len=%d: got %d bytes, want %d%s" % (
                        rel, off, n, len(got), len(want),
                        " (same length, different bytes" + explain(lfd, got, want) + ")"
                        if len(got) == len(want) else ""))
    except OSError as e:
        with lock:
            errors.append("%s: %s" % (type(e).__name__, e))
    finally:
        for a, b in fds.values():
            os.close(a)
            os.close(b)


def run_proc(args, rel_files, proc_no):
    errors, lock, threads = [], threading.Lock(), []
    for t in range(args.threads):
        th = threading.Thread(target=worker, args=(
            args, rel_files, args.seed * 1000 + proc_no * 100 + t, errors, lock))
        th.start()
        threads.append(th)
    for th in threads:
        th.join()
    for e in errors[:20]:
        print("proc %d: %s" % (proc_no, e), file=sys.stderr)
    return 1 if errors else 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--procs", type=int, default=3)
    p.add_argument("--reads", type=int, default=200)
    p.add_argument("mnt")
    p.add_argument("local")
    args = p.parse_args()
    rel_files = files_under(args.local)
    if not rel_files:
        sys.exit("no files under " + args.local)
    pids = []
    for n in range(args.procs):
        pid = os.fork()
        if pid == 0:
            os._exit(run_proc(args, rel_files, n))
        pids.append(pid)
    bad = 0
    for pid in pids:
        _, st = os.waitpid(pid, 0)
        if st != 0:
            bad += 1
    total = args.procs * args.threads * args.reads
    if bad:
        print("pread_check: %d of %d processes saw wrong bytes or errors" % (bad, args.procs),
              file=sys.stderr)
        return 1
    print("pread_check: %d random reads over %d files matched" % (total, len(rel_files)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
