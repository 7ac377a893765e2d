#!/usr/bin/env python3
"""The cache point (issue 27): cached against uncached pipelines and against PyTorch's DataLoader, one run.

    bench/compare_cache.py [--root DIR] [--images 2000] [--batch-size 64] [--workers 2] [--epochs 4]
                           [--repeats 3] [--trainers 4] [--quick] [--json] [--json-out FILE]

The images: --root DIR (an ImageFolder), else ../shared/data/make_imagefolder.py TMP N 0 in a temporary directory.
Each batchd case runs build/bin/batchd-bench (--json, one line per epoch) against a daemon of its own, started fresh
for the case (build/bin/batchd --workers W on a unique socket; a config declaring the folder as dataset "bench", the
recipe below as [pipelines.train224_cached], and [cache] max_bytes): every case starts with a cold cache. Cases,
each as seconds per epoch, epoch 0 (the fill) and epochs >= 1 apart, repeated R times, median [min-max]:
  a. val224 vs val224_cached; val224_u8 vs val224_u8_cached (goal: val224_cached >= 10x val224 at epochs >= 1).
  b. train224_cached = decode(max_side = 256) -> cache -> random_resized_crop(224) -> horizontal_flip -> to_tensor
     -> normalize(ImageNet), FFCV's pre-resized store, vs the uncached preset train224 (goal >= 3x).
  c. K trainers (--trainers, K processes, seeds 1..K) on one daemon reading train224_cached, vs K reading train224;
     aggregate img/s = the sum of the trainers' rates at epochs >= 1 (goal >= 3x).
  d. a cache of half the working set: cache.max_bytes = the index + half the bytes of train224_cached's entries,
     computed from the images' sizes (an entry is the decoded image at max_side 256: round_up(h x w x 3, 64) bytes;
     the index as daemon/cache/sample_cache.cc sizes it). One epoch fills the cache, then E - 1 epochs (another
     trainer, another seed) read it. Hit rate over those epochs = hits / samples at the cache point, from the
     daemon's counters (batchctl cache --json) before and after them (goal: within 0.05 of 0.5); checked by a
     measure that does not trust the daemon: 1 - (bytes of sample files the workers read) / (E - 1) x (bytes of all
     sample files), since a hit reads no file and a miss reads its file once (pread, counted in the workers'
     /proc/PID/io rchar): byte-weighted, equal to the count-weighted rate in expectation (admission follows the
     shuffled order).
  e. PyTorch's DataLoader on the same folder, same batch size and workers, in the same run (torch.set_num_threads(1)):
     ../shared/bench/torch_peer.py for val224 and train224 (the comparison for a, b, and K concurrent DataLoaders
     for c); val224_u8 (Resize(256), CenterCrop(224), PILToTensor) by this script's own child. DataLoader has no
     cache: each of its epochs decodes every image again.
Ratios are taken per repeat (the runs of one repeat are minutes apart, not the whole run: a shared machine's load
changes) and reported as median [min-max] over the repeats. Every batchd trainer must see every image once per epoch (unique_indices), or this exits 1. --quick: 192 images,
2 epochs, 1 repeat, 2 trainers (a smoke run, < 1 min). --json prints one object instead of the tables.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from contextlib import contextmanager

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_fmnist import ROOT, die, machine_info, machine_line  # noqa: E402
from compare_share import children, children_cpu_seconds, start_daemon  # noqa: E402
import cache_sizes  # noqa: E402
from compare_cache_report import print_tables, report  # noqa: E402

from project_python import DEFAULT_PYTHON  # noqa: E402

SHARED = next((p for p in (os.path.join(ROOT, "..", "shared"), "/work/shared") if os.path.isdir(p)),
              os.path.join(ROOT, "..", "shared"))
TRAIN_CACHED = ('[{ op = "decode", max_side = 256 }, { op = "cache" }, { op = "random_resized_crop", size = 224 }, '
                '{ op = "horizontal_flip" }, { op = "to_tensor" }, '
                '{ op = "normalize", mean = [0.485, 0.456, 0.406], std = [0.229, 0.224, 0.225] }]')
BIG_CACHE = 3 << 30  # holds every case's entries (3 x ~300 MB at 2,000 images)


def config_text(root, max_bytes):
    return (f'[limits]\nmax_shm_bytes = {max_bytes + (4 << 30)}\n[cache]\nmax_bytes = {max_bytes}\n'
            f'[datasets.bench]\nformat = "imagefolder"\nroot = "{root}"\n'
            f'[pipelines.train224_cached]\nops = {TRAIN_CACHED}\n')


@contextmanager
def daemon(args, max_bytes):
    """A fresh daemon (a cold cache) on a unique socket; yields (socket, daemon Popen)."""
    tmp = tempfile.mkdtemp(prefix="batchd-cache-bench-")
    cfg, sock = os.path.join(tmp, "batchd.toml"), os.path.join(tmp, "batchd.sock")
    with open(cfg, "w") as f:
        f.write(config_text(args.root, max_bytes))
    proc = start_daemon(args, cfg, sock)
    try:
        yield sock, proc
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        shutil.rmtree(tmp, ignore_errors=True)


def bench_cmd(args, sock, pipeline, epochs, seed):
    return [os.path.join(ROOT, "build", "bin", "batchd-bench"), "--socket", sock, "--dataset", "bench",
            "--pipeline", pipeline, "--batch-size", str(args.batch_size), "--epochs", str(epochs),
            "--seed", str(seed), "--json"]


def peer_cmd(args, pipeline):
    if pipeline == "val224_u8":  # not one of torch_peer.py's pipelines: this script's own child
        return [args.python, os.path.abspath(__file__), "--child-u8", "--root", args.root, "--batch-size",
                str(args.batch_size), "--workers", str(args.workers), "--epochs", str(args.epochs)]
    return [args.python, os.path.join(SHARED, "bench", "torch_peer.py"), "--dataset", "imagefolder", "--root",
            args.root, "--pipeline", pipeline, "--batch-size", str(args.batch_size), "--workers", str(args.workers),
            "--epochs", str(args.epochs)]


def run_all(cmds, name, epochs, images, check_unique):
    """Runs the commands at once; each one's per-epoch JSON rows (checked: E epochs of every image)."""
    procs = [subprocess.Popen(c, cwd=ROOT, stdout=subprocess.PIPE, text=True) for c in cmds]
    outs = [p.communicate()[0] for p in procs]
    result = []
    for p, out in zip(procs, outs):
        if p.returncode != 0:
            die(f"{name} exited with status {p.returncode}: {' '.join(cmds[0])}")
        rows = [json.loads(line) for line in out.splitlines() if line.startswith("{") and '"epoch"' in line]
        bad = [r for r in rows if r["samples"] != images or (check_unique and r["unique_indices"] != images)]
        if len(rows) != epochs or bad:
            die(f"{name}: expected {epochs} epochs of all {images} images once each, got {rows}")
        result.append(rows)
    return result


def seconds(row):
    """An epoch's seconds, from its rate (its "seconds" is rounded to 0.1 ms: a cached epoch of a few images)."""
    return row["samples"] / row["samples_per_s"]


def per_epoch(rows):
    """(epoch-0 seconds, mean seconds of epochs >= 1) of one trainer."""
    return seconds(rows[0]), statistics.mean(seconds(r) for r in rows[1:])


def case_single(args, pipeline, cached):
    """One batchd trainer on a fresh daemon: (epoch 0 s, steady s/epoch)."""
    with daemon(args, BIG_CACHE if cached else 0) as (sock, _):
        return per_epoch(run_all([bench_cmd(args, sock, pipeline, args.epochs, 1)], pipeline, args.epochs,
                                 args.images, True)[0])


def case_peer(args, pipeline, k=1):
    """k DataLoaders at once: (epoch 0 s, steady s/epoch) of the first, and the aggregate steady img/s."""
    rows = run_all([peer_cmd(args, pipeline)] * k, f"DataLoader {pipeline}", args.epochs, args.images, False)
    return (*per_epoch(rows[0]), sum(args.images / per_epoch(r)[1] for r in rows))


def case_trainers(args, pipeline, cached):
    """K batchd trainers (seeds 1..K) on one fresh daemon: aggregate steady img/s, worker CPU ms per image."""
    with daemon(args, BIG_CACHE if cached else 0) as (sock, proc):
        cpu0 = children_cpu_seconds(proc.pid)
        rows = run_all([bench_cmd(args, sock, pipeline, args.epochs, s) for s in range(1, args.trainers + 1)],
                       f"{args.trainers} trainers {pipeline}", args.epochs, args.images, True)
        cpu = children_cpu_seconds(proc.pid) - cpu0
    return (sum(args.images / per_epoch(r)[1] for r in rows),
            1000 * cpu / (args.trainers * args.epochs * args.images))


def cache_counts(sock):
    """(hits, samples) of the daemon's cache points since it started (batchctl cache --json: hits, fills,
    uncached)."""
    out = subprocess.run([os.path.join(ROOT, "build", "bin", "batchctl"), "--socket", sock, "cache", "--json"],
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    c = json.loads(out)["cache"]
    hits, fills, uncached = (int(c.get(k, 0)) for k in ("hits", "fills", "uncached"))
    return hits, hits + fills + uncached


def case_half(args, sizes):
    """(d): (cache.max_bytes, hit rate over epochs >= 1 from the daemon's counts, the same from the files the
    workers read, steady s/epoch)."""
    max_bytes = cache_sizes.max_bytes_for(sizes["entry_bytes"] // 2)
    with daemon(args, max_bytes) as (sock, proc):
        run_all([bench_cmd(args, sock, "train224_cached", 1, 1)], "half cache, fill", 1, args.images, True)
        hits0, samples0 = cache_counts(sock)
        read0 = cache_sizes.workers_rchar(children(proc.pid))
        rows = run_all([bench_cmd(args, sock, "train224_cached", args.epochs - 1, 2)], "half cache, read",
                       args.epochs - 1, args.images, True)[0]
        read = cache_sizes.workers_rchar(children(proc.pid)) - read0
        hits1, samples1 = cache_counts(sock)
    if samples1 - samples0 != (args.epochs - 1) * args.images:
        die(f"half cache: the daemon counted {samples1 - samples0} samples at its cache point, expected "
            f"{(args.epochs - 1) * args.images}")
    hit_bytes = 1 - read / ((args.epochs - 1) * sizes["file_bytes"])
    return max_bytes, (hits1 - hits0) / (samples1 - samples0), hit_bytes, statistics.mean(seconds(r) for r in rows)


def child_u8(args):
    """DataLoader with Resize(256), CenterCrop(224), PILToTensor (val224_u8), torch_peer.py's JSON rows."""
    import time
    import torch
    import torchvision
    import torchvision.transforms as T
    from torch.utils.data import DataLoader
    torch.set_num_threads(1)
    ds = torchvision.datasets.ImageFolder(args.root, transform=T.Compose([T.Resize(256), T.CenterCrop(224),
                                                                         T.PILToTensor()]))
    dl = DataLoader(ds, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                    persistent_workers=args.workers > 0)
    for epoch in range(args.epochs):
        start, n = time.perf_counter(), 0
        for x, _ in dl:
            n += x.shape[0]
        dt = time.perf_counter() - start
        print(json.dumps({"system": "torch.DataLoader", "epoch": epoch, "samples": n, "seconds": round(dt, 4),
                          "samples_per_s": round(n / dt, 1)}), flush=True)
    return 0


def measure(args, sizes):
    cases = {}  # name -> list over repeats of (epoch0 s, steady s) or numbers

    def add(name, value):
        cases.setdefault(name, []).append(value)
    for rep in range(args.repeats):
        print(f"repeat {rep + 1}/{args.repeats} ...", file=sys.stderr)
        for pipe in ("val224", "val224_u8"):
            add(pipe, case_single(args, pipe, False))
            add(pipe + "_cached", case_single(args, pipe + "_cached", True))
            add("DataLoader " + pipe, case_peer(args, pipe)[:2])
        add("train224", case_single(args, "train224", False))
        add("train224_cached", case_single(args, "train224_cached", True))
        add("DataLoader train224", case_peer(args, "train224")[:2])
        add("trainers train224", case_trainers(args, "train224", False))
        add("trainers train224_cached", case_trainers(args, "train224_cached", True))
        add("trainers DataLoader train224", case_peer(args, "train224", args.trainers)[2:])
        add("half cache", case_half(args, sizes))
    return cases


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", help="an ImageFolder (default: make_imagefolder.py's, in a temporary directory)")
    ap.add_argument("--images", type=int, default=2000, help="images to make when --root is not given")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--trainers", type=int, default=4)
    ap.add_argument("--quick", action="store_true", help="192 images, 2 epochs, 1 repeat, 2 trainers")
    ap.add_argument("--python", default=DEFAULT_PYTHON)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--json-out", help="also write the JSON object to this file")
    ap.add_argument("--child-u8", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_u8:
        return child_u8(args)
    if args.quick:
        args.images, args.epochs, args.repeats, args.trainers = (args.images if args.root else 192), 2, 1, 2
    if args.epochs < 2:
        die("need --epochs >= 2 (steady state is epochs >= 1)")
    for tool in ("batchd", "batchd-bench", "batchctl"):
        if not os.access(os.path.join(ROOT, "build", "bin", tool), os.X_OK):
            die(f"build/bin/{tool} not found; build it (cmake --build build --target batchd batchd-bench batchctl)")
    made = None
    if not args.root:
        made = tempfile.mkdtemp(prefix="batchd-cache-images-")
        args.root = os.path.join(made, "images")
        print(f"making {args.images} images under {args.root} ...", file=sys.stderr)
        subprocess.run([args.python, os.path.join(SHARED, "data", "make_imagefolder.py"), args.root,
                        str(args.images), "0"], check=True, stdout=subprocess.DEVNULL)
    try:
        sizes = cache_sizes.working_set(args.root, 256)
        args.images = sizes["images"]
        out = report(args, measure(args, sizes), sizes)
    finally:
        if made:
            shutil.rmtree(made, ignore_errors=True)
    import torch
    out["machine"] = machine_info(torch.__version__)
    record = json.dumps({"benchmark": "compare_cache", "images": args.images, "batch_size": args.batch_size,
                         "workers": args.workers, "epochs": args.epochs, "repeats": args.repeats,
                         "trainers": args.trainers, **out}, indent=2)
    if args.json_out:
        with open(args.json_out, "w") as f:
            f.write(record + "\n")
    if args.json:
        print(record)
    else:
        print_tables(args, out)
        print("\n" + machine_line(out["machine"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
