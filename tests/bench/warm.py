#!/usr/bin/python3
"""tilefs warm's rate beside parallel curl range downloads and rclone copy.

Run through tests/bench/run warm (make bench, make bench-warm). The bench
data set (gen_data.py) is served by the same nginx as the main bench (first-
byte delay and a per-connection rate limit, --profile). Each contestant
fetches every file once, N transfers at once:

  curl     one curl --parallel --parallel-max N over 16 MiB byte ranges of
           each file (the last range of a file shorter), each saved to a file
           on the scratch disk, then sync: the baseline, as issue 12 defines
           it
  warm     tilefs warm --jobs N into a fresh cache dir (stored on SSD)
  rclone   rclone copy --transfers N of the http remote into a fresh dir

Each is run --repeat times (page cache dropped before each) and the median
is reported, as MB/s and as a ratio to curl. The goal: warm >= 0.95 of curl
at 16 jobs. With the quick data set (files of 6 to 15 MB) every file is one
range, so curl keeps only 7 transfers busy: the goal is judged on the full
set.
The exit status is 1 only if something failed or fetched wrong bytes.
"""
import argparse
import datetime
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
import bench  # noqa: E402

MiB = 1 << 20


def files_of(root):
    out = []
    for d, _, names in os.walk(root):
        for n in sorted(names):
            if n.endswith(".tif"):
                p = os.path.join(d, n)
                out.append((os.path.relpath(p, root), os.path.getsize(p)))
    return sorted(out)


CURL_RANGE = 16 * MiB  # the baseline's range size (issue 12)
GOAL = 0.95            # warm / curl at --jobs 16


def run_curl(origin, files, jobs, scratch):
    chunk = CURL_RANGE
    cfg = os.path.join(scratch, "curl.cfg")
    dest = os.path.join(scratch, "curl-parts")
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    blocks = ['url = "%s%s"\nrange = "%d-%d"\noutput = "%s/%d"\nsilent\nshow-error\nfail\n%s'
              % (origin.url, rel, off, min(size, off + chunk) - 1, dest, i, origin.curl_config())
              for i, (rel, size, off) in enumerate((rel, size, off) for rel, size in files
                                                   for off in range(0, size, chunk))]
    with open(cfg, "w") as f:
        f.write("next\n".join(blocks))
    t0 = time.monotonic()
    subprocess.run(["curl", "--parallel", "--parallel-max", str(jobs), "--parallel-immediate",
                    "--no-progress-meter", "-K", cfg], check=True)
    subprocess.run(["sync", "-f", dest], check=True)
    return time.monotonic() - t0


def verdict(rows):
    """'met: 0.97' or 'not met: 0.72', warm / curl at 16 jobs."""
    got = [ratio for jobs, name, _, _, ratio, _ in rows if jobs == 16 and name == "warm"]
    if not got:
        return "not measured: no run with 16 jobs"
    return ("met: %.2f" if got[0] >= GOAL else "not met: %.2f") % got[0]


def run_warm(origin, files, jobs, scratch, tilefs):
    cache = os.path.join(scratch, "warm-cache")
    shutil.rmtree(cache, ignore_errors=True)
    t0 = time.monotonic()
    r = subprocess.run([tilefs, "warm", origin.url, "--cache-dir", cache, "--jobs", str(jobs),
                        "--cache-size", "100G"] + origin.tilefs_args(),
                       capture_output=True, text=True)
    subprocess.run(["sync", "-f", scratch], check=True)
    took = time.monotonic() - t0
    if r.returncode != 0:
        raise RuntimeError("tilefs warm exited %d:\n%s%s" % (r.returncode, r.stdout, r.stderr))
    return took, r.stdout.strip()


def run_rclone(origin, files, jobs, scratch):
    dest = os.path.join(scratch, "rclone-copy")
    shutil.rmtree(dest, ignore_errors=True)
    t0 = time.monotonic()
    subprocess.run(["rclone", "copy", ":http:", dest, "--http-url", origin.url,
                    "--transfers", str(jobs), "--checkers", str(jobs),
                    "--config", "/dev/null", "-q"] + origin.rclone_args(), check=True)
    subprocess.run(["sync", "-f", dest], check=True)
    took = time.monotonic() - t0
    for rel, size in files:
        if os.path.getsize(os.path.join(dest, rel)) != size:
            raise RuntimeError("rclone copied %s with the wrong size" % rel)
    return took


def main():
    ap = argparse.ArgumentParser(prog="tests/bench/run warm", description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="the 78 MB data set, not 1.7 GB")
    ap.add_argument("--profile", choices=sorted(bench.PROFILES), default="region")
    ap.add_argument("--scheme", choices=("https", "http"), default="https",
                    help="the origin over https (a CA made at set-up) or plain http [https]")
    ap.add_argument("--jobs", default="16", help="comma list of transfer counts [16]")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each, median kept [3]")
    ap.add_argument("--tilefs", default=os.path.join(bench.REPO, "build", "tilefs"))
    ap.add_argument("--results", help="results directory [results/<timestamp>-warm]")
    a = ap.parse_args()

    mode = "quick" if a.quick else "full"
    root = bench.ensure_data(mode)
    files = files_of(root)
    total = sum(s for _, s in files)
    results = a.results or os.path.join(
        bench.REPO, "results", datetime.datetime.now().strftime("%Y%m%d-%H%M%S") + "-warm")
    os.makedirs(results, exist_ok=True)
    scratch_base = "/var/tmp" if os.path.isdir("/var/tmp") else None
    scratch = tempfile.mkdtemp(prefix="tilefs-warm-bench.", dir=scratch_base)
    delay, rate = bench.PROFILES[a.profile]
    origin = bench.Origin(root, delay, rate, scratch, tls=(a.scheme == "https"))
    origin.start()
    have_rclone = shutil.which("rclone") is not None
    state = {}
    rows = []
    status = 0
    try:
        for jobs in [int(j) for j in a.jobs.split(",")]:
            runs = {"curl": [], "warm": [], "rclone": []}
            for rep in range(a.repeat):
                for name in ("curl", "warm", "rclone"):
                    if name == "rclone" and not have_rclone:
                        continue
                    bench.drop_caches(state)
                    off = origin.offset()
                    if name == "curl":
                        took = run_curl(origin, files, jobs, scratch)
                    elif name == "warm":
                        took, summary = run_warm(origin, files, jobs, scratch, a.tilefs)
                        bench.log("  warm: " + summary)
                    else:
                        took = run_rclone(origin, files, jobs, scratch)
                    t = origin.since(off)
                    n, nbytes = t["requests"], t["bytes"]
                    if nbytes < total:
                        raise RuntimeError("%s fetched %d bytes of %d" % (name, nbytes, total))
                    runs[name].append((took, n, nbytes))
                    bench.log("jobs %d run %d %-6s %6.2f s  %7.1f MB/s  %d requests"
                              % (jobs, rep + 1, name, took, total / took / 1e6, n))
            base = statistics.median(t for t, _, _ in runs["curl"])
            for name, rs in runs.items():
                if not rs:
                    continue
                took = statistics.median(t for t, _, _ in rs)
                rows.append((jobs, name, took, total / took / 1e6, base / took,
                             statistics.median(n for _, n, _ in rs)))
        # the last warm's cache must give back every byte
        cache = os.path.join(scratch, "warm-cache")
        mnt = os.path.join(scratch, "mnt")
        os.makedirs(mnt, exist_ok=True)
        off = origin.offset()
        subprocess.run([a.tilefs, "mount", origin.url, mnt, "--cache-dir", cache,
                        "--cache-size", "100G"] + origin.tilefs_args(), check=True)
        try:
            for rel, _ in files:
                if bench.sha256(os.path.join(mnt, rel)) != bench.sha256(os.path.join(root, rel)):
                    bench.log("WRONG BYTES through the warmed cache: " + rel)
                    status = 1
        finally:
            subprocess.run(["fusermount3", "-u", mnt])
        data_gets = origin.since(off)["data_gets"]
        verify = "after the warm, a mount read every file (sha256 equal: %s) with %d data GETs" % (
            "yes" if status == 0 else "NO", data_gets)
    except Exception as e:
        bench.log("bench failed: %s" % e)
        status = 1
        verify = "failed: %s" % e
    finally:
        origin.stop()
        shutil.rmtree(scratch, ignore_errors=True)

    lines = ["tilefs warm vs parallel curl and rclone copy: %s data set (%d files, %.0f MB), "
             "%s, profile %s (%d ms first byte, %s/s per connection), median of %d runs"
             % (mode, len(files), total / 1e6, a.scheme, a.profile, delay,
                bench.PROFILES[a.profile][1], a.repeat),
             "", "%-5s %-7s %9s %10s %9s %9s" % ("jobs", "who", "seconds", "MB/s", "x curl",
                                                 "requests")]
    for jobs, name, took, mbs, ratio, n in rows:
        lines.append("%-5d %-7s %9.2f %10.1f %9.2f %9d" % (jobs, name, took, mbs, ratio, n))
    lines += ["", verify, "goal: warm >= %.2f x curl at 16 jobs (%s); every run ends with a "
              "sync of what it wrote" % (GOAL, verdict(rows))]
    if state.get("note"):
        lines.append("note: " + state["note"])
    text = "\n".join(lines) + "\n"
    with open(os.path.join(results, "warm.txt"), "w") as f:
        f.write(text)
    print("\n" + text + "\n(in %s)" % os.path.join(results, "warm.txt"))
    return status


if __name__ == "__main__":
    sys.exit(main())
