"""The throughput workload (issue 44 item 2): how many GB/s one mount moves,
and what each GB costs in CPU, beside curl, over https and plain http in
the same run.

The data: every file of the bench data set but chipset/ (gen_data.py: the
S2-, Landsat- and NAIP-like COGs and the striped GeoTIFFs; 1.7 GB in full
mode, 77 MB in quick), served by an nginx of its own on 127.0.0.1 with no
injected delay and no rate limit, its files in the page cache. Each
contestant starts on a dropped page cache (the origin's files then read
back in, so that the origin's disk is not what is measured):

  curl-null   one curl, 32 parallel ranged GETs, each to /dev/null
  curl-disk   the same into files, then sync: a disk cache's floor, and
              the baseline of the ratios
  warm        tilefs warm (default options) into an empty cache dir, then
              sync
  cold        a tilefs mount on an empty cache dir (default options); 8
              readers `cat` every file whole to /dev/null; the rate is the
              readers', the daemon's CPU is counted until it has gone idle
              (writing and sealing what it fetched)
  warm-mount  the same mount, its daemon idle, read again the same way
              (these opens find the files cached whole: they are sealed)
  warm-again  once the daemon is idle again, the same once more (the
              kernel reads sealed files by passthrough where it can)
  warm-daemon the same cache after an unmount, mounted with
              --no-passthrough: every read goes through the daemon

Then one large non-TIFF file (gen_data.py's large/: 1 GiB, 128 MiB in
quick) from an origin with the run's profile (30 ms before the first byte,
50 MB/s a connection by default): `cat` through a cold mount against curl
with 32 ranges of the file in parallel (the baseline of that row's ratios)
and curl with one stream.

CPU: the readers' and curl's from getrusage(RUSAGE_CHILDREN); the daemon's
from /proc/PID/stat, and per thread from /proc/PID/task/*/stat (utime +
stime), grouped by the thread's name (comm); nginx's from /proc. Written to
results/<ts>/throughput.{txt,json}. Nothing here is timed against a limit;
wrong bytes (checked with sha256 after the timed passes) are a failure.
"""
import os
import shutil
import subprocess
import threading
import time

import bench
from origin import Origin
from procfs import children_cpu, machine_busy, proc_stats, thread_cpu

MiB = 1 << 20
READERS = 8        # cat processes reading the files of a pass
PARALLEL = 32      # curl's transfers at once
SETTLE_QUIET_S = 2.0
SETTLE_LIMIT_S = 180


def log(msg):
    bench.log(msg)


def now():
    return time.monotonic()


def data_files(data):
    """[(relative path, size)] of every file of the data set but chipset/."""
    out = []
    for kind in sorted(os.listdir(data)):
        d = os.path.join(data, kind)
        if kind == bench.CHIPSET or not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if name.endswith(".tif"):
                out.append((kind + "/" + name, os.path.getsize(os.path.join(d, name))))
    return out


def link_root(dest, src, kinds):
    """DEST holding a symlink to SRC/KIND for each of KINDS: an origin root
    that serves just those directories (nginx follows the links)."""
    os.makedirs(dest)
    for k in kinds:
        os.symlink(os.path.join(src, k), os.path.join(dest, k))
    return dest


def read_into_page_cache(paths):
    """Read PATHS whole, so the origin serves them from RAM."""
    for p in paths:
        with open(p, "rb", buffering=0) as f:
            while f.read(8 * MiB):
                pass


def fresh(state, origin_paths=()):
    """A dropped page cache, then the origin's files read back in."""
    bench.drop_caches(state)
    read_into_page_cache(origin_paths)


def range_size(total):
    """The ranges curl fetches: about 4 for each of its 32 transfers at once,
    1-16 MiB (16 MiB is the warm bench's baseline range)."""
    return max(1, min(16, total // (4 * PARALLEL) // MiB)) * MiB


def curl_parts(origin, files, chunk):
    """[(url, first byte, last byte)] covering FILES in CHUNK-byte ranges."""
    return [(origin.url + rel, off, min(size, off + chunk) - 1)
            for rel, size in files for off in range(0, size, chunk)]


def run_curl(origin, parts, outdir, parallel, scratch):
    """One curl fetching PARTS, PARALLEL at once, each to /dev/null (OUTDIR
    None) or to a file of OUTDIR (then sync)."""
    cfg = os.path.join(scratch, "curl.cfg")
    blocks = ['url = "%s"\nrange = "%d-%d"\noutput = "%s"\nsilent\nshow-error\nfail\n%s' % (
        url, a, b, os.path.join(outdir, str(i)) if outdir else "/dev/null",
        origin.curl_config()) for i, (url, a, b) in enumerate(parts)]
    with open(cfg, "w") as f:
        f.write("next\n".join(blocks))
    subprocess.run(["curl", "--parallel", "--parallel-max", str(parallel),
                    "--parallel-immediate", "--no-progress-meter", "-K", cfg], check=True)
    if outdir:
        subprocess.run(["sync", "-f", outdir], check=True)


def run_cats(paths, readers):
    """READERS cat processes reading PATHS whole to /dev/null (xargs -P)."""
    subprocess.run(["xargs", "-0", "-P", str(readers), "-n", "1", "cat"],
                   input=b"\0".join(p.encode() for p in paths),
                   stdout=subprocess.DEVNULL, check=True)


class Mount:
    """tilefs mount -f of ORIGIN at MNT on CACHE, run by us (so we know
    its pid)."""

    def __init__(self, ctx, origin, cache, mnt, logf, extra=()):
        self.ctx, self.origin, self.cache, self.mnt, self.logf = ctx, origin, cache, mnt, logf
        self.extra = list(extra)
        self.proc = None

    def start(self):
        os.makedirs(self.cache, exist_ok=True)
        os.makedirs(self.mnt, exist_ok=True)
        cmd = [self.ctx.tilefs, "mount", "-f", "--cache-dir", self.cache, "--cache-size",
               self.ctx.default_cache_size, "--log-file", self.logf] + \
            self.origin.tilefs_args() + self.extra + [self.origin.url, self.mnt]
        with open(self.logf + ".cmd", "a") as f:
            f.write(" ".join(cmd) + "\n")
        out = open(self.logf + ".out", "a")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out,
                                     stderr=subprocess.STDOUT)
        out.close()
        deadline = now() + 60
        while now() < deadline:
            if bench.is_mounted(self.mnt):
                return self.proc.pid
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise bench.Failure("tilefs did not mount %s: %s" % (
            self.mnt, (bench.tail_of(self.logf + ".out") + bench.tail_of(self.logf)).strip()
            [-400:]))

    def stop(self):
        """Unmount; returns a note ('' if the daemon exited 0)."""
        if not self.proc:
            return ""
        note = ""
        for _ in range(20):
            r = subprocess.run(["fusermount3", "-u", self.mnt], capture_output=True, text=True)
            if r.returncode == 0 or not bench.is_mounted(self.mnt):
                break
            time.sleep(0.5)
        try:
            rc = self.proc.wait(timeout=60)
            if rc != 0:
                note = "daemon exited %d" % rc
        except subprocess.TimeoutExpired:
            note = "daemon still running 60 s after unmount"
            self.proc.kill()
            self.proc.wait()
        if bench.is_mounted(self.mnt):
            subprocess.run(["fusermount3", "-uz", self.mnt], capture_output=True)
        self.proc = None
        problems = bench.log_problems(self.logf)
        return "; ".join(x for x in (note, problems) if x)


class Threads:
    """The threads of a daemon, sampled every EVERY seconds while it runs, so
    that one that exits between two snapshots (libfuse ends idle workers)
    loses at most one interval of its CPU, not all of it. now(): {key:
    (name, CPU seconds)}, by thread id, and ("gone", name) for the CPU of
    threads whose id was taken by a new thread since."""

    def __init__(self, pid, every=0.1):
        self.pid, self.every = pid, every
        self.seen, self.gone = {}, {}
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _sample(self):
        cur = thread_cpu(self.pid)
        with self.lock:
            for tid, (comm, cpu) in cur.items():
                old = self.seen.get(tid)
                if old and cpu < old[1]:      # the id of an exited thread, reused
                    self.gone[old[0]] = self.gone.get(old[0], 0.0) + old[1]
                self.seen[tid] = (comm, cpu)

    def _run(self):
        while not self.done.wait(self.every):
            self._sample()

    def now(self):
        self._sample()
        with self.lock:
            out = dict(self.seen)
            out.update({("gone", k): (k, v) for k, v in self.gone.items()})
        return out

    def close(self):
        self.done.set()
        self.thread.join()


def snapshot(daemon=None, origin=None, threads=None):
    s = {"t": now(), "kids": children_cpu(), "busy": machine_busy(),
         "nginx": origin.cpu() if origin else 0.0, "daemon": None, "threads": {}}
    if daemon:
        st = proc_stats(daemon)
        s["daemon"] = st[0] if st else None
        s["threads"] = threads.now() if threads else thread_cpu(daemon)
    return s


def settle(pid):
    """Wait until the daemon PID has used (almost) no CPU for SETTLE_QUIET_S
    (its writing and sealing done); returns (seconds waited, settled)."""
    t0 = now()
    last = proc_stats(pid)
    quiet = now()
    while now() - t0 < SETTLE_LIMIT_S:
        time.sleep(0.5)
        cur = proc_stats(pid)
        if not cur or not last:
            return now() - t0, False
        if cur[0] - last[0] > 0.02:
            quiet = now()
        last = cur
        if now() - quiet >= SETTLE_QUIET_S:
            return now() - t0 - SETTLE_QUIET_S, True
    return now() - t0, False


def settled_note(waited, settled):
    if settled:
        return "daemon CPU counted until it went idle, %.0f s after the readers" % waited
    return "daemon CPU counted until %.0f s after the readers; still busy then" % waited


def by_thread(th0, th1, total):
    """({thread name: CPU seconds}, {thread name: threads}, (name, CPU
    seconds) of the busiest single thread) between two snapshots of a
    daemon's threads. Threads of one name (libfuse's workers) are added up;
    what the process's total has beyond them (threads that exited between
    two samples) is '(exited threads)'."""
    groups, counts, busiest = {}, {}, ("", 0.0)
    for tid, (comm, cpu) in th1.items():
        used = cpu - th0.get(tid, (comm, 0.0))[1]
        groups[comm] = groups.get(comm, 0.0) + used
        if used >= 0.01:
            counts[comm] = counts.get(comm, 0) + 1
        if tid != ("gone", comm) and used > busiest[1]:
            busiest = (comm, used)
    gone = total - sum(groups.values())
    if gone > 0.05:
        groups["(exited threads)"] = gone
    return groups, counts, busiest


def figures(name, what, nbytes, s0, s_end, s_cpu=None):
    """A row: rate from S0 to S_END (the clients' end), CPU from S0 to S_CPU
    (S_END unless the daemon's tail is counted)."""
    s_cpu = s_cpu or s_end
    wall = s_end["t"] - s0["t"]
    gb = nbytes / 1e9
    row = {"name": name, "what": what, "bytes": nbytes, "wall_s": wall,
           "gb_per_s": gb / wall if wall > 0 else None,
           "client_cpu_s": s_end["kids"] - s0["kids"],
           "nginx_cpu_s": s_cpu["nginx"] - s0["nginx"], "check": "ok", "note": ""}
    row["client_cs_per_gb"] = row["client_cpu_s"] / gb if gb else None
    row["nginx_cs_per_gb"] = row["nginx_cpu_s"] / gb if gb else None
    ours = row["client_cpu_s"] + (s_end["nginx"] - s0["nginx"])
    if s0["daemon"] is not None and s_cpu["daemon"] is not None:
        d = s_cpu["daemon"] - s0["daemon"]
        row["daemon_cpu_s"] = d
        row["daemon_cs_per_gb"] = d / gb if gb else None
        groups, counts, busiest = by_thread(s0["threads"], s_cpu["threads"], d)
        row["threads_cs_per_gb"] = {k: v / gb for k, v in sorted(
            groups.items(), key=lambda kv: -kv[1])}
        row["thread_counts"] = counts
        row["busiest_thread_cs_per_gb"] = [busiest[0], busiest[1] / gb if gb else None]
        if s_end["daemon"] is not None:
            ours += s_end["daemon"] - s0["daemon"]
    if wall > 0:
        row["other_cpu"] = max(0.0, (s_end["busy"] - s0["busy"]) - ours) / wall
    return row


def sha_check(pairs):
    """'' if every (served, local) pair has the same sha256, else a note."""
    bad = [os.path.basename(a) for a, b in pairs if bench.sha256(a) != bench.sha256(b)]
    return ("sha256 differs from the local file: %s" % ", ".join(bad[:5])) if bad else ""


def scheme_rows(ctx, scheme, root, files, state, where):
    """The data set's rows over SCHEME."""
    rows = []
    total = sum(s for _, s in files)
    local = [os.path.join(ctx.data, rel) for rel, _ in files]
    origin = Origin(root, 0, "0", ctx.scratch, tls=(scheme == "https"),
                    name="nginx-throughput-" + scheme)
    origin.start()
    try:
        parts = curl_parts(origin, files, range_size(total))
        outdir = os.path.join(where, "curl-out")
        for name, what, dest in (
                ("curl-null", "curl, %d parallel GETs to /dev/null" % PARALLEL, None),
                ("curl-disk", "curl, %d parallel GETs to files (a disk cache's floor)"
                 % PARALLEL, outdir)):
            shutil.rmtree(outdir, ignore_errors=True)
            os.makedirs(outdir)
            fresh(state, local)
            s0 = snapshot(origin=origin)
            run_curl(origin, parts, dest, PARALLEL, where)
            row = figures(name, what, total, s0, snapshot(origin=origin))
            got = sum(os.path.getsize(os.path.join(outdir, n)) for n in os.listdir(outdir))
            if dest and got != total:
                row["check"], row["note"] = "WRONG", "curl wrote %d bytes of %d" % (got, total)
            rows.append(row)
            log("    %s" % brief(row))
        shutil.rmtree(outdir, ignore_errors=True)

        cache = os.path.join(where, "warm-cache")
        fresh(state, local)
        s0 = snapshot(origin=origin)
        r = subprocess.run([ctx.tilefs, "warm", "--cache-dir", cache, "--cache-size",
                            ctx.default_cache_size] + origin.tilefs_args() + [origin.url],
                           capture_output=True, text=True)
        subprocess.run(["sync", "-f", where], check=True)
        row = figures("warm", "tilefs warm into an empty cache", total, s0,
                      snapshot(origin=origin))
        if r.returncode != 0:
            row["check"], row["note"] = "ERROR", "tilefs warm exited %d: %s" % (
                r.returncode, r.stderr.strip()[-300:])
        rows.append(row)
        log("    %s" % brief(row))
        shutil.rmtree(cache, ignore_errors=True)

        cache = os.path.join(where, "mount-cache")
        logf = os.path.join(ctx.logs, "throughput-%s.log" % scheme)
        m = Mount(ctx, origin, cache, os.path.join(where, "mnt"), logf)
        served = [os.path.join(m.mnt, rel) for rel, _ in files]
        fresh(state, local)
        pid = m.start()
        th = Threads(pid)
        try:
            s0 = snapshot(pid, origin, th)
            run_cats(served, READERS)
            s_end = snapshot(pid, origin, th)
            waited, settled = settle(pid)
            row = figures("cold", "a mount, cold (%d readers cat every file)" % READERS,
                          total, s0, s_end, snapshot(pid, origin, th))
            row["note"] = settled_note(waited, settled)
            rows.append(row)
            log("    %s" % brief(row))
            # the first warm pass: its opens find the files cached whole and
            # have them sealed; the second reads them sealed (by passthrough
            # where the kernel allows)
            for key, what in (("warm-mount", "the same mount, warm (its daemon idle)"),
                              ("warm-again", "the same mount, warm again (idle again)")):
                if key == "warm-again":
                    settle(pid)
                bench.drop_caches(state)
                s0 = snapshot(pid, origin, th)
                run_cats(served, READERS)
                row = figures(key, what, total, s0, snapshot(pid, origin, th))
                rows.append(row)
                log("    %s" % brief(row))
        finally:
            th.close()
            note = m.stop()
        m = Mount(ctx, origin, cache, m.mnt, logf, extra=["--no-passthrough"])
        bench.drop_caches(state)
        pid = m.start()
        th = Threads(pid)
        try:
            s0 = snapshot(pid, origin, th)
            run_cats(served, READERS)
            row = figures("warm-daemon", "the same cache remounted --no-passthrough, warm",
                          total, s0, snapshot(pid, origin, th))
            rows.append(row)
            log("    %s" % brief(row))
            wrong = sha_check(zip(served, local))
        finally:
            th.close()
            note = "; ".join(x for x in (note, m.stop()) if x)
        for r in rows[-4:]:
            if wrong:
                r["check"], r["note"] = "WRONG", (wrong + "; " + r["note"]).strip("; ")
            elif note:
                r["check"], r["note"] = "ERROR", (note + "; " + r["note"]).strip("; ")
        shutil.rmtree(cache, ignore_errors=True)
    finally:
        origin.stop()
    base = next((r for r in rows if r["name"] == "curl-disk" and r["check"] == "ok"), None)
    for r in rows:
        if base and r["name"] in ("curl-null", "curl-disk", "warm", "cold") and r["gb_per_s"]:
            r["x_base"] = r["gb_per_s"] / base["gb_per_s"]
    return rows


def large_rows(ctx, scheme, large, state, where):
    """One reader of one large file against a parallel download, over SCHEME,
    from an origin with the run's profile."""
    rows = []
    delay_ms, rate = ctx.profile
    size = os.path.getsize(large)
    origin = Origin(os.path.dirname(large), delay_ms, rate, ctx.scratch,
                    tls=(scheme == "https"), name="nginx-large-" + scheme)
    origin.start()
    name = os.path.basename(large)
    try:
        outdir = os.path.join(where, "large-out")
        step = -(-size // PARALLEL)
        for key, what, parts, par in (
                ("large-curl-32", "curl, %d ranges of the file in parallel, to files" % PARALLEL,
                 [(origin.url + name, a, min(size, a + step) - 1)
                  for a in range(0, size, step)], PARALLEL),
                ("large-curl-1", "curl, one stream, to a file",
                 [(origin.url + name, 0, size - 1)], 1)):
            shutil.rmtree(outdir, ignore_errors=True)
            os.makedirs(outdir)
            fresh(state, [large])
            s0 = snapshot(origin=origin)
            run_curl(origin, parts, outdir, par, where)
            row = figures(key, what, size, s0, snapshot(origin=origin))
            got = sum(os.path.getsize(os.path.join(outdir, n)) for n in os.listdir(outdir))
            if got != size:
                row["check"], row["note"] = "WRONG", "curl wrote %d bytes of %d" % (got, size)
            rows.append(row)
            log("    %s" % brief(row))
        shutil.rmtree(outdir, ignore_errors=True)
        cache = os.path.join(where, "large-cache")
        m = Mount(ctx, origin, cache, os.path.join(where, "mnt-large"),
                  os.path.join(ctx.logs, "throughput-large-%s.log" % scheme))
        fresh(state, [large])
        pid = m.start()
        th = Threads(pid)
        try:
            s0 = snapshot(pid, origin, th)
            run_cats([os.path.join(m.mnt, name)], 1)
            s_end = snapshot(pid, origin, th)
            waited, settled = settle(pid)
            row = figures("large-cold", "one reader (cat) through a cold mount", size, s0,
                          s_end, snapshot(pid, origin, th))
            row["note"] = settled_note(waited, settled)
            wrong = sha_check([(os.path.join(m.mnt, name), large)])
        finally:
            th.close()
            note = m.stop()
        if wrong or note:
            row["check"] = "WRONG" if wrong else "ERROR"
            row["note"] = "; ".join(x for x in (wrong, note, row["note"]) if x)
        rows.append(row)
        log("    %s" % brief(row))
        shutil.rmtree(cache, ignore_errors=True)
    finally:
        origin.stop()
    base = next((r for r in rows if r["name"] == "large-curl-32" and r["check"] == "ok"), None)
    for r in rows:
        if base and r["gb_per_s"]:
            r["x_base"] = r["gb_per_s"] / base["gb_per_s"]
    return rows


def brief(r):
    s = "%-12s %6.3f GB/s in %6.2f s" % (r["name"], r["gb_per_s"] or 0, r["wall_s"])
    if r.get("daemon_cs_per_gb") is not None:
        s += ", daemon %.2f core-s/GB" % r["daemon_cs_per_gb"]
    else:
        s += ", client %.2f core-s/GB" % (r["client_cs_per_gb"] or 0)
    if r["check"] != "ok":
        s += "  [%s] %s" % (r["check"], r["note"])
    return s


def _f(v, fmt, width):
    return ("-" if v is None else fmt % v).rjust(width)


def table(res):
    """The text table of a run's results (res: as throughput.json holds)."""
    lines = ["throughput (issue 44): %s mode; %d files, %.2f GB (the bench data set but "
             "chipset/); origin nginx on 127.0.0.1 without injected delay or rate limit, its "
             "files in the page cache; each contestant on a dropped page cache; %s"
             % (res["mode"], res["files"], res["bytes"] / 1e9, res["timestamp"])]
    hdr = "%-56s %7s %7s %8s %8s %8s %6s  %s" % (
        "", "GB/s", "x base", "client", "daemon", "nginx", "othCPU", "check")
    for scheme in res["schemes"]:
        rows = res["rows"][scheme]
        lines += ["", "over %s" % scheme, hdr, "%-56s %7s %7s %8s %8s %8s" % (
            "", "", "", "core-s/GB", "core-s/GB", "core-s/GB"), "-" * len(hdr)]
        for r in rows:
            if r["name"] == "large-curl-32":
                lines += ["", "one %.2f GB non-TIFF file, origin %d ms to the first byte, %s/s "
                          "a connection (base: curl's %d ranges)" % (
                              r["bytes"] / 1e9, res["large_delay_ms"],
                              res["large_rate"].upper() + "B", PARALLEL)]
            lines.append("%-56s %s %s %s %s %s %s  %s" % (
                r["what"][:56], _f(r["gb_per_s"], "%.3f", 7), _f(r.get("x_base"), "%.2f", 7),
                _f(r.get("client_cs_per_gb"), "%.2f", 8),
                _f(r.get("daemon_cs_per_gb"), "%.2f", 8), _f(r.get("nginx_cs_per_gb"), "%.2f", 8),
                _f(r.get("other_cpu"), "%.2f", 6),
                r["check"] + ((" " + r["note"][:160]) if r["note"] else "")))
            busy = [kv for kv in (r.get("threads_cs_per_gb") or {}).items() if kv[1] >= 0.005]
            if busy:
                # busiest first; threads that used no CPU are left out
                counts = r.get("thread_counts") or {}
                top = r.get("busiest_thread_cs_per_gb") or ["", None]
                lines.append("%-56s %s" % ("", "daemon threads, core-s/GB: " + ", ".join(
                    ("%s (%d threads) %.2f" % (k, counts[k], v)) if counts.get(k, 1) > 1
                    else "%s %.2f" % (k, v) for k, v in busy) + (
                        "; busiest single thread: %s %.2f" % (top[0], top[1])
                        if top[1] else "")))
    sc = res["schemes"]
    if len(sc) == 2:
        get = {(s, r["name"]): r for s in sc for r in res["rows"][s]}
        pair = []
        for key in ("curl-disk", "warm", "cold", "large-cold"):
            a, b = get.get((sc[0], key)), get.get((sc[1], key))
            if a and b and a["gb_per_s"] and b["gb_per_s"]:
                pair.append("%s %.2f" % (key, a["gb_per_s"] / b["gb_per_s"]))
        if pair:
            lines += ["", "%s rate / %s rate: %s" % (sc[0], sc[1], ", ".join(pair))]
    lines += ["", "x base: rate / curl-disk's rate over the same scheme (the large file's rows: "
              "/ curl's %d ranges); client: CPU of curl, tilefs warm or the cat readers; "
              "daemon: the mount's CPU, the cold rows' counted until it went idle; nginx: the "
              "origin's CPU; othCPU: cores busy with other jobs meanwhile (of %d)." % (
                  PARALLEL, os.cpu_count())]
    return "\n".join(lines) + "\n"


def run(ctx, notes):
    """The workload, from bench.py (--workloads throughput)."""
    files = data_files(ctx.data)
    total = sum(s for _, s in files)
    extra = bench.ensure_extra(ctx.mode)
    large = os.path.join(extra, "large", sorted(os.listdir(os.path.join(extra, "large")))[0])
    log("[44] throughput: %d files, %.0f MB; one large file of %.0f MB; https and http" % (
        len(files), total / 1e6, os.path.getsize(large) / 1e6))
    where = os.path.join(ctx.scratch, "throughput")
    root = link_root(os.path.join(where, "root"), ctx.data,
                     sorted({rel.split("/")[0] for rel, _ in files}))
    state = ctx.dropstate
    res = {"mode": ctx.mode, "timestamp": os.path.basename(ctx.results), "files": len(files),
           "bytes": total, "schemes": [], "rows": {}, "large_delay_ms": ctx.profile[0],
           "large_rate": ctx.profile[1]}
    failed = []
    for scheme in ("https", "http"):
        log("  over %s" % scheme)
        try:
            rows = scheme_rows(ctx, scheme, root, files, state, where)
            rows += large_rows(ctx, scheme, large, state, where)
        except (bench.Failure, subprocess.CalledProcessError, RuntimeError) as e:
            failed.append("%s: %s" % (scheme, e))
            log("    failed: %s" % e)
            continue
        res["schemes"].append(scheme)
        res["rows"][scheme] = rows
        failed += ["%s %s: %s %s" % (scheme, r["name"], r["check"], r["note"]) for r in rows
                   if r["check"] != "ok"]
    bench.write_section(ctx, notes, "throughput", res, table(res), failed)
