#!/usr/bin/python3
"""The bench's table, CSV and chart. Also usable alone to redraw a run:

    report.py results/<timestamp>     prints the table and the README's
                                      table, rewrites chart.png
"""
import csv
import json
import math
import os
import shutil
import subprocess
import sys

COLUMNS = ["workload", "contestant", "family", "unit", "rate", "ratio_local", "ratio_best",
           "best_other", "items", "wall_s", "items_per_s", "mb_per_s", "bytes", "requests",
           "req_per_item", "data_gets", "get_per_item", "fetched_bytes", "kb_per_item",
           "methods", "p50_ms", "p95_ms", "daemon_cpu_s", "daemon_ms_per_item",
           "daemon_rss_mb", "client_cpu_s", "other_cpu", "check", "mismatches", "note",
           "mode", "profile", "timestamp"]


def add_ratios(rows):
    """ratio_local: rate / local's rate in the same workload. ratio_best: rate /
    the best rate among the other remote families (a tilefs row is compared
    with the best of vsicurl and rclone, not with another tilefs row)."""
    by = {}
    for r in rows:
        by.setdefault(r["workload"], []).append(r)
    for wl, rs in by.items():
        local = next((r.get("rate") for r in rs if r["family"] == "local"
                      and r["check"] == "ok"), None)
        for r in rs:
            if r.get("items"):
                r["req_per_item"] = r.get("requests", 0) / r["items"]
                if r.get("data_gets") is not None:
                    r["get_per_item"] = r["data_gets"] / r["items"]
                r["kb_per_item"] = r.get("fetched_bytes", 0) / 1024.0 / r["items"]
                if r.get("daemon_cpu_s") is not None:
                    r["daemon_ms_per_item"] = 1000.0 * r["daemon_cpu_s"] / r["items"]
            rate = r.get("rate")
            if rate is None:
                continue
            if local:
                r["ratio_local"] = rate / local
            others = [o for o in rs if o["family"] not in (r["family"], "local")
                      and o["check"] == "ok" and o.get("rate")]
            if others:
                best = max(others, key=lambda o: o["rate"])
                r["ratio_best"] = rate / best["rate"]
                r["best_other"] = best["contestant"]


def write_csv(path, rows, meta):
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            out = dict(r)
            out.update(mode=meta.get("mode"), profile=meta.get("profile"),
                       timestamp=meta.get("timestamp"))
            for k, v in out.items():
                if isinstance(v, float):
                    out[k] = "%.6g" % v
            w.writerow(out)
    os.replace(tmp, path)


def read_csv(path):
    rows = []
    with open(path) as f:
        for r in csv.DictReader(f):
            for k, v in list(r.items()):
                if v == "":
                    r[k] = None
                    continue
                try:
                    r[k] = float(v) if k not in ("workload", "contestant", "family", "unit",
                                                 "check", "note", "methods", "best_other",
                                                 "mode", "profile", "timestamp") else v
                except ValueError:
                    pass
            rows.append(r)
    return rows


def _f(v, fmt, width):
    if v is None:
        return "-".rjust(width)
    return (fmt % v).rjust(width)


def table(rows, meta):
    hdr = ("%-13s %-15s %9s %-8s %6s %6s %6s %6s %8s %6s %6s %6s %6s %7s %5s %6s  %s" % (
        "workload", "contestant", "rate", "unit", "xlocal", "xbest", "req/it", "GET/it",
        "KB/it", "p50ms", "p95ms", "cliCPU", "dCPU", "dCPU/it", "dRSS", "othCPU", "check"))
    lines = [
        "tilefs bench, %s mode, %s, profile %s (%s ms first byte, %sB/s per connection), "
        "%s workers, %s" % (meta.get("mode"), meta.get("scheme", "http"), meta.get("profile"),
                            meta.get("delay_ms"), str(meta.get("rate", "")).upper(),
                            meta.get("workers"), meta.get("timestamp")),
        "", hdr, "-" * len(hdr)]
    if meta.get("reader_env"):
        lines.insert(1, "readers' environment (every contestant): " + " ".join(
            "%s=%s" % kv for kv in sorted(meta["reader_env"].items())))
    last = None
    for r in rows:
        if last is not None and r["workload"] != last:
            lines.append("")
        last = r["workload"]
        chk = r["check"]
        if chk not in ("ok",):
            chk += " " + (r.get("note") or "")[:150]
        lines.append("%-13s %-15s %s %-8s %s %s %s %s %s %s %s %s %s %s %s %s  %s" % (
            r["workload"], r["contestant"], _f(r.get("rate"), "%.1f", 9), r["unit"],
            _f(r.get("ratio_local"), "%.2f", 6), _f(r.get("ratio_best"), "%.2f", 6),
            _f(r.get("req_per_item"), "%.2f", 6), _f(r.get("get_per_item"), "%.2f", 6),
            _f(r.get("kb_per_item"), "%.0f", 8),
            _f(r.get("p50_ms"), "%.0f", 6), _f(r.get("p95_ms"), "%.0f", 6),
            _f(r.get("client_cpu_s"), "%.1f", 6), _f(r.get("daemon_cpu_s"), "%.1f", 6),
            _f(r.get("daemon_ms_per_item"), "%.1f", 7), _f(r.get("daemon_rss_mb"), "%.0f", 5),
            _f(r.get("other_cpu"), "%.2f", 6), chk))
    notes = ["%s/%s: %s" % (r["workload"], r["contestant"], r["note"]) for r in rows
             if r["check"] == "ok" and r.get("note")]
    if notes:
        lines += ["", "Notes on rows:"] + ["  " + n for n in notes]
    described = meta.get("described") or {}
    if described:
        lines += ["", "Workloads:"] + ["  %s: %s" % kv for kv in described.items()]
    lines.append("")
    lines.append(
        "rate: items/s (chips, opens, tiles) or MB/s of decoded pixels (full, overview); "
        "xlocal: rate / local's; xbest: rate / best other remote family's "
        "(vsicurl*, rclone*, tilefs*); req/it, KB/it: origin requests and body bytes per "
        "item (nginx log; a mount's first phase includes its mount-time listing); GET/it: "
        "data GETs per item (GETs of a file answered 200 or 206: not listings, HEADs or "
        "probes for missing names; a warm tilefs row should show 0); "
        "p50/p95: per item, open to close; cliCPU: CPU s of the reader processes; dCPU, "
        "dCPU/it, dRSS: CPU s in the phase, CPU ms per item, and peak RSS (VmHWM, MB) of "
        "the mount daemon (tilefs, rclone); othCPU: cores kept busy by other jobs on the "
        "machine during the phase "
        "(all busy CPU time less the readers', the daemon's and nginx's, per second; of "
        "%s), a measure of how disturbed that row is; check: every item's bytes against "
        "local's (WRONG = differ)." % os.cpu_count())
    return "\n".join(lines) + "\n"


# the README's names for the phases; a per-set chips workload is named
# from its data set (meta["described"])
README_LABELS = {
    "chips": "random 256x256 chips, fresh open each (all files)",
    "chips-torch": "random chips, all files, through a torch DataLoader",
    "aligned": "chips inside one tile each",
    "full": "whole files",
    "overview": "every overview level",
    "epoch1": "3 epochs of chips: epoch 1",
    "epoch2": "epoch 2",
    "epoch3": "epoch 3",
    "opens": "open storm (open, sidecar probes, readdir)",
    "preads": "raw tile preads, no decoding",
    "chipset": "chip files, 1,500 in one directory, fresh open each",
    "xr-rioxarray": "rioxarray + dask, 512x512 windows",
    "xr-zarr": "tifffile + zarr + dask, the same windows",
    "xr-memmap": "numpy.memmap of striped files, windows",
    "xr-mmap-tiled": "numpy.memmap of tiled files, raw tiles",
}
# the chips workloads whose costs per chip the README shows, if they ran
README_COSTS = ("chips", "chips-s2", "chips-landsat", "chipset")


def markdown(rows, meta):
    """The README's tables of a run: each remote contestant's rate relative
    to local per phase; then, per chips workload, what a chip cost: origin
    requests (data GETs), KB fetched, the daemon's CPU ms."""
    names = [n for n in meta.get("contestants", []) if n != "local"]
    got = {(r["workload"], r["contestant"]): r for r in rows}
    phases = []
    for r in rows:
        if r["workload"] not in phases:
            phases.append(r["workload"])
    described = meta.get("described") or {}

    def label(ph):
        if ph in README_LABELS:
            return README_LABELS[ph]
        d = described.get(ph, ph)
        return d.replace("random 256x256 chips", "random chips", 1)

    def cells(ph, fmt):
        out = []
        for n in names:
            r = got.get((ph, n))
            if r and r["check"] != "ok":
                out.append(r["check"])
            else:
                v = fmt(r) if r else None
                out.append("-" if v is None else v)
        return " | ".join(out)

    def ratio(r):
        return "%.2f" % r["ratio_local"] if r.get("ratio_local") else None

    def cost(r):
        if r.get("req_per_item") is None:
            return None
        s = "%.2f (%s) req, %.0f KB" % (r["req_per_item"], _f(r.get("get_per_item"), "%.2f", 0),
                                       r.get("kb_per_item") or 0)
        if r.get("daemon_ms_per_item") is not None:
            s += ", %.1f ms" % r["daemon_ms_per_item"]
        return s

    head = " | ".join(n.replace("-", " ") for n in names)
    rule = "|---" * (len(names) + 1) + "|"
    lines = ["| workload | %s |" % head, rule]
    lines += ["| %s | %s |" % (label(ph), cells(ph, ratio)) for ph in phases]
    costs = [w for w in README_COSTS if w in phases]
    if costs:
        lines += ["", "Per chip: origin requests (data GETs), KB fetched, daemon CPU ms:", "",
                  "| chips | %s |" % head, rule]
        for w in costs:
            what = "all files" if w == "chips" else label(w).replace("random chips, ", "")
            lines.append("| %s | %s |" % (what, cells(w, cost)))
    return "\n".join(lines) + "\n"


def explain(meta, notes):
    txt = """
What these numbers mean, and what they do not:
- One machine (%s CPUs, shared with other jobs: expect +-20%% run to run, and
  far more in rows where othCPU is high), origin on loopback over %s. Latency
  and bandwidth are injected by nginx: %s ms before the first byte of every
  request (listings and HEADs too) and %sB/s per request. Real object
  stores add variance, slow tails, throttling and per-request prices that
  are not modelled here.
- The page cache is dropped before every phase, so local reads come from this
  machine's disk, and a mount's warm data from its on-disk cache, not RAM.
  Local is a reference, not a ceiling: loopback plus a cache can beat it.
- cold = fresh cache directory for each workload; warm = the same directory
  after an unmount and a new mount (rclone keeps its VFS cache across mounts
  too). epochs run in one mount, with fresh reader processes per epoch (like a
  DataLoader without persistent workers), so /vsicurl/'s in-process cache
  starts empty each epoch.
- %s reader processes on 2 cores: the readers, the daemon and nginx compete
  for CPU, so CPU-heavy contestants are penalised more than on a big VM.
- The bench never fails because something is slow; only wrong bytes, a failing
  tilefs, or a broken harness fail it.
""" % (os.cpu_count(), {"https": "https (nginx ssl; every client given its CA)"}.get(
        meta.get("scheme"), "plain http"), meta.get("delay_ms"),
       str(meta.get("rate", "")).upper(), meta.get("workers"))
    if notes:
        txt += "\nNotes on this run:\n" + "".join("- %s\n" % n for n in notes)
    return txt


def chart(rows, meta, path):
    """Grouped bars: each contestant's rate relative to local, per workload
    (log scale). Returns a note if no chart could be drawn."""
    gp = shutil.which("gnuplot")
    if not gp:
        return "no chart: gnuplot is not installed (tests/bench/install-deps installs it)"
    wls, names = [], []
    for r in rows:
        if r["workload"] not in wls:
            wls.append(r["workload"])
        if r["family"] != "local" and r["contestant"] not in names:
            names.append(r["contestant"])
    if not wls or not names:
        return "no chart: nothing was measured"
    val = {(r["workload"], r["contestant"]): r.get("ratio_local") for r in rows
           if r["check"] == "ok" and r["contestant"] in names}
    dat = path[:-4] + ".dat"
    with open(dat, "w") as f:
        f.write("workload " + " ".join(n.replace(" ", "_") for n in names) + "\n")
        for w in wls:
            f.write(w + " " + " ".join(
                ("%.4g" % val[(w, n)]) if val.get((w, n)) else "-" for n in names) + "\n")
    vals = [v for v in val.values() if v]
    if not vals:
        return "no chart: no contestant besides local has a result"
    lo = 10 ** math.floor(math.log10(max(min(vals), 1e-4) / 1.5)) if vals else 0.01
    hi = 10 ** math.ceil(math.log10(max(vals) * 1.5)) if vals else 10
    title = ("tilefs bench (%s, %s: %s ms, %sB/s per connection): throughput relative "
             "to local disk, log scale" % (meta.get("mode"), meta.get("profile"),
                                           meta.get("delay_ms"),
                                           str(meta.get("rate", "")).upper()))
    script = """
set terminal pngcairo size 1400,700 font "sans,10"
set output '%s'
set title "%s"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set datafile missing '-'
set logscale y
set yrange [%g:%g]
set grid ytics
set ylabel "rate / local rate (1 = as fast as local disk)"
set key outside right top
set xtics nomirror
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 1.5 lc rgb "black"
plot for [i=2:%d] '%s' using i:xtic(1) title columnheader(i)
""" % (path, title, lo, hi, len(names) + 1, dat)
    gpf = path[:-4] + ".gp"
    with open(gpf, "w") as f:
        f.write(script)
    r = subprocess.run([gp, gpf], capture_output=True, text=True)
    if r.returncode != 0 or not os.path.exists(path):
        return "no chart: gnuplot failed: %s" % r.stderr.strip()[-300:]
    return ""


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: report.py RESULTS_DIR")
    d = sys.argv[1]
    with open(os.path.join(d, "meta.json")) as f:
        meta = json.load(f)
    rows = read_csv(os.path.join(d, "results.csv"))
    print(table(rows, meta) + explain(meta, meta.get("notes", [])))
    print(markdown(rows, meta))
    note = chart(rows, meta, os.path.join(d, "chart.png"))
    if note:
        print(note)


if __name__ == "__main__":
    main()
