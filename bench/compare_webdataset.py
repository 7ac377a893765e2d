#!/usr/bin/env python3
"""Compare batchd with webdataset's loader on WebDataset tar shards of JPEGs, same machine, one run.

    bench/compare_webdataset.py [--images 2000] [--per-shard 250] [--pipelines train224] [--batch-size 64]
                                [--workers 2] [--epochs 3] [--repeats 1] [--exact-decode] [--json]

The shards are made once with ../shared/data/make_shards.py DIR N 0 PER_SHARD (the photographs of
make_imagefolder.py, 333-640 px wide JPEGs, in shard-000000.tar ...) under build/bench-data/. For each pipeline,
alternating R times, runs
  build/bin/batchd-bench --spawn --config CFG --dataset bench --pipeline P --batch-size B --workers W --epochs E
  PY ../shared/bench/torch_peer.py --dataset webdataset --shards 'DIR/*.tar' --pipeline P --batch-size B ...
(the peer is webdataset's .shuffle(1000).decode("pil").to_tuple("jpg", "cls") on tarfile, in a DataLoader) and
reports epoch-0 and steady-state (mean of epochs >= 1) samples/s and their ratio. batchd's config puts its index
cache under build/bench-data/ (its first run indexes the shards, later runs read the cache; batchd-bench waits
for the index before epoch 0). batchd must deliver every sample exactly once per epoch, or this exits 1. --json:
one object shaped as compare_imagefolder.py's, with "benchmark": "compare_webdataset" (bench/plot.py draws it).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_fmnist import ROOT, die, machine_info, machine_line, medians, summarize  # noqa: E402
from compare_imagefolder import parse_image_args, print_table  # noqa: E402


def ensure_shards(directory, images, per_shard, python):
    marker = os.path.join(directory, ".complete")
    if os.path.exists(marker):
        return
    maker = os.path.join(ROOT, "..", "shared", "data", "make_shards.py")
    print(f"making {images} images in shards of {per_shard} under {directory} ...", file=sys.stderr)
    subprocess.run([python, maker, directory, str(images), "0", str(per_shard)], check=True,
                   stdout=subprocess.DEVNULL)
    open(marker, "w").close()


def run(name, cmd, images):
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        die(f"{name} failed with exit status {proc.returncode}: {' '.join(cmd)}")
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{") and '"epoch"' in line]
    for r in rows:
        if r["samples"] != images or (name == "batchd" and r["unique_indices"] != images):
            die(f"{name} epoch {r['epoch']}: samples={r['samples']} unique={r.get('unique_indices')}, "
                f"expected {images}")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per-shard", type=int, default=250, help="samples per shard (at least 2 shards per worker)")
    args = parse_image_args(ap, "train224")
    bench = os.path.join(ROOT, "build", "bin", "batchd-bench")
    data = os.path.join(ROOT, "build", "bench-data")
    shards = os.path.join(data, f"webdataset-{args.images}-{args.per_shard}")
    ensure_shards(shards, args.images, args.per_shard, args.python)
    shard_count = len([f for f in os.listdir(shards) if f.endswith(".tar")])
    if shard_count < args.workers:
        die(f"{shard_count} shard(s) for {args.workers} workers: the peer splits shards across workers; lower "
            "--per-shard")
    cfg = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
    cfg.write(f'[daemon]\ncache_dir = "{os.path.join(data, "index-cache")}"\n'
              f'[datasets.bench]\nformat = "webdataset"\nshards = "{shards}/shard-*.tar"\n')
    cfg.close()

    report, torch_version = {}, "unknown"
    try:
        for pipe in args.pipelines.split(","):
            common = ["--pipeline", pipe, "--batch-size", str(args.batch_size), "--workers", str(args.workers),
                      "--epochs", str(args.epochs)]
            systems = {
                "batchd": [bench, "--spawn", "--config", cfg.name, "--dataset", "bench", *common, "--json"] +
                          (["--exact-decode"] if args.exact_decode else []),
                "webdataset (torch.DataLoader)": [args.python, args.peer, "--dataset", "webdataset", "--shards",
                                                  os.path.join(shards, "*.tar"), *common]}
            runs = {name: [] for name in systems}
            for _ in range(args.repeats):
                for name, cmd in systems.items():
                    rows = run(name, cmd, args.images)
                    torch_version = rows[0].get("torch", torch_version)
                    runs[name].append(summarize(rows))
            result = medians(runs)
            ratio = (result["batchd"]["steady_samples_per_s"] /
                     result["webdataset (torch.DataLoader)"]["steady_samples_per_s"])
            report[pipe] = {"results": result, "ratio_steady": round(ratio, 2)}
    finally:
        os.unlink(cfg.name)

    machine = machine_info(torch_version)
    if args.json:
        print(json.dumps({"benchmark": "compare_webdataset",
                          "images": args.images, "shards": shard_count, "batch_size": args.batch_size,
                          "workers": args.workers, "epochs": args.epochs, "repeats": args.repeats,
                          "exact_decode": args.exact_decode, "machine": machine, "pipelines": report}, indent=2))
        return 0
    print(f"WebDataset shards: {args.images} JPEGs in {shard_count} shards, {args.epochs} epochs per run, median of "
          f"{args.repeats} run(s)\n")
    print_table(report, args)
    print("\n" + machine_line(machine))
    return 0


if __name__ == "__main__":
    sys.exit(main())
