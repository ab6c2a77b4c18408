#!/usr/bin/python3
"""A million names on S3: listing, reading and warming a tree of small
objects too large to keep on this disk (issue 56, items 4 and 9).

Run alone (tests/bench/names.py --help) or through bench.py's `names`
workload. tests/lib/sigv4_store.py serves a bucket whose tree is made up
as it is asked for (SIGV4_SYNTH): GROUPS folders of PATCHES patch folders
of four band files of SIZE bytes (250 x 1,000 x 4 = 1,000,000 objects by
default), every answer DELAY_MS late, every signature checked. Then, each
step timed, through one mount with default options on an empty cache:

  first  the last file of the tree read right after the mount: seconds,
         requests (a name past what the first listing shows)
  list   `find` over the whole tree: seconds, names (checked against the
         tree's count), listing requests (the mount's own included), the
         daemon's RSS after it (not with --no-find: the reads come first,
         as a data loader's first epoch would)
  read   READS random files read whole by 8 threads, each checked
         against the bytes the store made: files/s, GETs
  warm   `tilefs warm --from-file` of WARM other random files into the
         mount's cache dir, beside the mount: files/s, GETs; then the
         same files read through the mount with no request

Prints one JSON object on stdout (and --json FILE); progress on stderr.
The exit status is 1 if a name is missing or extra, a byte is wrong, or a
step failed; never for a slow step.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BANDS = ("B02.tif", "B03.tif", "B04.tif", "B08.tif")
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
from origin import S3Store  # noqa: E402


def log(msg):
    sys.stderr.write("names: %s\n" % msg)
    sys.stderr.flush()


def key_of(i, patches):
    p = i // len(BANDS)
    return "g%03d/S2A_patch_%07d/%s" % (p // patches, p, BANDS[i % len(BANDS)])


def data_of(key, size):
    """What the store serves for KEY (sigv4_store.py's synth_data())."""
    unit = (key + "\n").encode()
    return (unit * (size // len(unit) + 1))[:size]


def status(pid):
    """VmRSS and VmHWM of PID, MB."""
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                out[k] = int(v.split()[0]) / 1024.0
    return out


def requests(store, off):
    """(listings, GETs of objects, HEADs) the store answered past OFF."""
    t = store.since(off)
    return t["listings"], t["data_gets"], t["methods"].get("HEAD", 0)


def read_all(mnt, keys, size, threads=8):
    """Read KEYS whole through MNT, THREADS at once: wrong ones' keys."""
    wrong, lock, it = [], threading.Lock(), iter(keys)

    def worker():
        while True:
            with lock:
                key = next(it, None)
            if key is None:
                return
            with open(os.path.join(mnt, key), "rb") as f:
                got = f.read()
            if got != data_of(key, size):
                with lock:
                    wrong.append(key)
    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return wrong


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tilefs", default=os.path.join(REPO, "build", "tilefs"))
    ap.add_argument("--groups", type=int, default=250)
    ap.add_argument("--patches", type=int, default=1000, help="patch folders a group")
    ap.add_argument("--size", type=int, default=1024, help="bytes an object")
    ap.add_argument("--delay-ms", type=int, default=30)
    ap.add_argument("--reads", type=int, default=4000)
    ap.add_argument("--warm", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=56)
    ap.add_argument("--find-timeout", type=int, default=1200,
                    help="seconds find may take before it is stopped (a slow step, not a "
                    "failure) [1200]")
    ap.add_argument("--no-find", dest="find", action="store_false",
                    help="read right after the mount, as a data loader's first epoch would")
    ap.add_argument("--mount-args", default="", help="more options of tilefs mount")
    ap.add_argument("--keep", action="store_true", help="keep the scratch dir (logs)")
    ap.add_argument("--json", help="also write the result here")
    a = ap.parse_args()
    nkeys = a.groups * a.patches * len(BANDS)
    want_names = a.groups + a.groups * a.patches + nkeys
    scratch = tempfile.mkdtemp(prefix="tilefs-names.")
    mnt, cache = os.path.join(scratch, "mnt"), os.path.join(scratch, "cache")
    os.makedirs(mnt)
    os.makedirs(os.path.join(scratch, "root"))
    env = dict(os.environ, **S3Store.environment())
    store = S3Store(os.path.join(scratch, "root"), a.delay_ms, scratch,
                    synth="%d,%d,%d" % (a.groups, a.patches, a.size))
    store.start()
    endpoint = store.tilefs_args()
    res = {"objects": nkeys, "names": want_names, "size": a.size, "delay_ms": a.delay_ms,
           "reads": a.reads, "warms": a.warm, "ok": True}
    daemon = None
    try:
        t0 = time.time()
        daemon = subprocess.Popen([a.tilefs, "mount", "-f", "--cache-dir", cache,
                                   "--log-file", os.path.join(scratch, "tilefs.log")]
                                  + a.mount_args.split() + endpoint + [store.url, mnt], env=env,
                                  stdin=subprocess.DEVNULL)
        for _ in range(600):
            if os.path.ismount(mnt) or daemon.poll() is not None:
                break
            time.sleep(0.1)
        if not os.path.ismount(mnt):
            raise RuntimeError("the mount did not come up (%s)" % os.path.join(
                scratch, "tilefs.log"))
        res["mount_s"] = time.time() - t0
        res["rss_mounted_mb"] = status(daemon.pid)["VmRSS"]
        off = store.offset()
        t0 = time.time()
        wrong = read_all(mnt, [key_of(nkeys - 1, a.patches)], a.size, threads=1)
        res["first_read_s"] = time.time() - t0
        res["first_read_requests"] = requests(store, off)
        res["ok"] = res["ok"] and not wrong
        log("first read, the last file: %.2f s, requests %s" % (
            res["first_read_s"], res["first_read_requests"]))
        if a.find:
            log("find over %d names, %d ms a request" % (want_names, a.delay_ms))
            off = 0		# (the mount's own listing counts)
            t0 = time.time()
            try:
                out = subprocess.run(["find", mnt], capture_output=True, text=True, check=True,
                                     timeout=a.find_timeout)
                res["found"] = len(out.stdout.splitlines()) - 1
                if res["found"] != want_names:
                    res["ok"] = False
            except subprocess.TimeoutExpired:
                res["found"] = None
                log("find: stopped after %d s" % a.find_timeout)
            res["list_s"] = time.time() - t0
            res["list_requests"] = requests(store, off)
            res["rss_listed_mb"] = status(daemon.pid)
            log("find: %.1f s, %s names, requests (lists, GETs, HEADs) %s, RSS %s" % (
                res["list_s"], res["found"], res["list_requests"], res["rss_listed_mb"]))
        rng = random.Random(a.seed)
        picked = rng.sample(range(nkeys), min(nkeys, a.reads + a.warm))
        reads = [key_of(i, a.patches) for i in picked[:a.reads]]
        warms = [key_of(i, a.patches) for i in picked[a.reads:]]
        off = store.offset()
        t0 = time.time()
        wrong = read_all(mnt, reads, a.size)
        res["read_files_per_s"] = len(reads) / (time.time() - t0)
        res["read_requests"] = requests(store, off)
        res["read_wrong"] = len(wrong)
        res["rss_read_mb"] = status(daemon.pid)
        log("read %d: %.0f files/s, requests %s, wrong %d" % (
            len(reads), res["read_files_per_s"], res["read_requests"], len(wrong)))
        listf = os.path.join(scratch, "warm.txt")
        with open(listf, "w") as f:
            f.write("".join(k + "\n" for k in warms))
        off = store.offset()
        t0 = time.time()
        w = subprocess.run([a.tilefs, "warm", "--cache-dir", cache, "--from-file", listf]
                           + endpoint + [store.url], env=env, capture_output=True, text=True)
        res["warm_files_per_s"] = len(warms) / (time.time() - t0)
        res["warm_exit"] = w.returncode
        res["warm_requests"] = requests(store, off)
        off = store.offset()
        wrong = read_all(mnt, warms, a.size)
        res["warmed_read_requests"] = requests(store, off)
        res["warmed_wrong"] = len(wrong)
        log("warm %d: %.0f files/s, exit %d, requests %s; read after: requests %s, wrong %d%s" % (
            len(warms), res["warm_files_per_s"], w.returncode, res["warm_requests"],
            res["warmed_read_requests"], len(wrong),
            "" if w.returncode == 0 else ": " + w.stderr.strip()[-300:]))
        if res["read_wrong"] or res["warmed_wrong"] or w.returncode != 0:
            res["ok"] = False
    except (RuntimeError, subprocess.CalledProcessError, OSError) as e:
        res["ok"] = False
        res["error"] = str(e)
        log("failed: %s" % e)
    finally:
        if daemon:
            subprocess.run(["fusermount3", "-u", mnt], capture_output=True)
            try:
                daemon.wait(timeout=60)
            except subprocess.TimeoutExpired:
                daemon.kill()
        store.stop()
        if a.keep:
            log("kept %s" % scratch)
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    text = json.dumps(res, indent=1)
    print(text)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text + "\n")
    return 0 if res["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
