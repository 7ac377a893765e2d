#!/usr/bin/env python3
"""Shared vs independent streams: K trainers on one host reading the same ImageFolder with the same pipeline.

    bench/compare_share.py [--trainers 1,2,4] [--images 2000] [--pipeline train224] [--batch-size 64]
                           [--workers 2] [--epochs 2] [--repeats 1] [--json]

One daemon (build/bin/batchd, W workers, the ImageFolder made by ../shared/data/make_imagefolder.py under
build/bench-data/) serves, for each K, two runs of K concurrent trainers (build/bin/batchd-bench --socket ... --json,
each reading E epochs):
  independent  K private streams: each batch is decoded K times;
  shared       the same K streams opened with --share NAME (StreamOptions::share): each batch is decoded once.
Reported per run: aggregate delivered img/s (K x E x N images over the wall time from the first start to the last
exit) and the workers' CPU seconds per delivered image (utime + stime of the daemon's worker processes, from
/proc, over the run). Every trainer must see every image once per epoch, or this exits 1. The goal (issue 16):
at K = 4, shared delivers >= 3.5x the aggregate of 4 independent streams on a CPU-bound host.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_fmnist import ROOT, die, machine_info, machine_line  # noqa: E402
from compare_imagefolder import ensure_tree  # noqa: E402

from project_python import DEFAULT_PYTHON  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def children(pid):
    """The pids of the direct children of `pid` (the daemon's workers), from /proc."""
    kids = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            kids += open(f"/proc/{pid}/task/{task}/children").read().split()
        except OSError:
            continue
    return kids


def children_cpu_seconds(pid):
    """utime + stime of the direct children of `pid` (the daemon's workers), in seconds."""
    total = 0.0
    for kid in children(pid):
        try:
            fields = open(f"/proc/{kid}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime (fields 14, 15 of stat)
    return total


def start_daemon(args, cfg, socket):
    daemon = subprocess.Popen([os.path.join(ROOT, "build", "bin", "batchd"), "--config", cfg, "--socket", socket,
                               "--workers", str(args.workers), "--log-level", "warn"])
    for _ in range(600):
        if os.path.exists(socket):
            return daemon
        if daemon.poll() is not None:
            die(f"batchd exited with status {daemon.returncode}")
        time.sleep(0.05)
    die("batchd did not create its socket in 30 s")


def run(args, socket, daemon, k, share):
    bench = os.path.join(ROOT, "build", "bin", "batchd-bench")
    cmd = [bench, "--socket", socket, "--dataset", "bench", "--pipeline", args.pipeline, "--batch-size",
           str(args.batch_size), "--epochs", str(args.epochs), "--json"]
    cpu0, t0 = children_cpu_seconds(daemon.pid), time.monotonic()
    procs = [subprocess.Popen(cmd + (["--share", share] if share else []), stdout=subprocess.PIPE, text=True)
             for _ in range(k)]
    outs = [p.communicate()[0] for p in procs]
    wall, cpu = time.monotonic() - t0, children_cpu_seconds(daemon.pid) - cpu0
    for p, out in zip(procs, outs):
        if p.returncode != 0:
            die(f"batchd-bench exited with status {p.returncode} ({'shared' if share else 'independent'}, K={k})")
        rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        if len(rows) != args.epochs or any(r["unique_indices"] != args.images for r in rows):
            die(f"a trainer did not read every image once per epoch: {rows}")
    images = k * args.epochs * args.images
    return {"trainers": k, "wall_s": round(wall, 3), "images": images, "img_per_s": round(images / wall, 1),
            "worker_cpu_s": round(cpu, 2), "worker_cpu_ms_per_image": round(1000 * cpu / images, 3)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trainers", default="1,2,4")
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--pipeline", default="train224")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--python", default=DEFAULT_PYTHON)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    root = os.path.join(ROOT, "build", "bench-data", f"imagefolder-{args.images}")
    ensure_tree(root, args.images, args.python)
    tmp = tempfile.mkdtemp(prefix="batchd-share-bench-")
    cfg, socket = os.path.join(tmp, "batchd.toml"), os.path.join(tmp, "batchd.sock")
    with open(cfg, "w") as f:
        f.write(f'[datasets.bench]\nformat = "imagefolder"\nroot = "{root}"\n')
    daemon = start_daemon(args, cfg, socket)
    results = []
    try:
        for k in (int(x) for x in args.trainers.split(",")):
            for rep in range(args.repeats):
                for mode in ("independent", "shared"):
                    r = run(args, socket, daemon, k, f"bench-{k}-{rep}" if mode == "shared" else None)
                    results.append(dict(r, mode=mode, repeat=rep))
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=60)
        shutil.rmtree(tmp, ignore_errors=True)

    def best(k, mode):  # median over repeats
        rows = sorted((r for r in results if r["trainers"] == k and r["mode"] == mode), key=lambda r: r["img_per_s"])
        return rows[len(rows) // 2]

    table = []
    for k in sorted({r["trainers"] for r in results}):
        ind, sh = best(k, "independent"), best(k, "shared")
        table.append({"trainers": k, "independent": ind, "shared": sh,
                      "ratio": round(sh["img_per_s"] / ind["img_per_s"], 2)})
    machine = machine_info("n/a")
    if args.json:
        print(json.dumps({"benchmark": "share", "pipeline": args.pipeline, "images": args.images,
                          "batch_size": args.batch_size, "workers": args.workers, "epochs": args.epochs,
                          "repeats": args.repeats, "machine": machine, "results": table}, indent=2))
        return 0
    print(f"{args.pipeline}, ImageFolder of {args.images} JPEGs, batch {args.batch_size}, {args.workers} workers, "
          f"{args.epochs} epochs per trainer, median of {args.repeats} run(s)\n")
    print("| trainers K | independent img/s | shared img/s | shared / independent | worker CPU ms/img independent "
          "| shared |")
    print("|---:|---:|---:|---:|---:|---:|")
    for row in table:
        ind, sh = row["independent"], row["shared"]
        print(f"| {row['trainers']} | {ind['img_per_s']:,.0f} | {sh['img_per_s']:,.0f} | {row['ratio']:.2f}x "
              f"| {ind['worker_cpu_ms_per_image']:.3f} | {sh['worker_cpu_ms_per_image']:.3f} |")
    print("\n" + machine_line(machine))
    return 0


if __name__ == "__main__":
    sys.exit(main())
