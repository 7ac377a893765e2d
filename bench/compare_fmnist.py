#!/usr/bin/env python3
"""Compare batchd with a PyTorch DataLoader on Fashion-MNIST (pipeline "fmnist"), same machine, one run.

    bench/compare_fmnist.py [--batch-size 256] [--workers 2] [--epochs 3] [--repeats 1] [--json]

--json prints one object instead of the table: {"benchmark": "compare_fmnist", ..., "machine": {nproc, cpu, torch,
loadavg}, "results": {system: {epoch0_samples_per_s, steady_samples_per_s}}, "ratio_steady": ...} (bench/plot.py
draws it).

Runs, alternating R times (--repeats):
  build/bin/batchd-bench --spawn --dataset fashion-mnist --pipeline fmnist --batch-size B --workers W --epochs E --json
  PY ../shared/bench/torch_peer.py --dataset fashion-mnist --pipeline fmnist --batch-size B --workers W --epochs E
Measured: samples/s per epoch as each system reports it. Epoch 0 includes start-up (daemon spawn or DataLoader
worker start) and is reported on its own; steady state is the mean over epochs >= 1. With R > 1 each figure is
the median over the R runs. batchd must deliver every one of the 60000 training samples exactly once per epoch
(unique_indices == samples == 60000), or this exits 1. Exit 2 if the peer's Python lacks torch/torchvision.
PY defaults to the project venv's .venv/bin/python (./setup.sh --tests; bench/project_python.py), else this Python.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from project_python import DEFAULT_PYTHON, NEEDS  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FMNIST_TRAIN = 60000


def die(msg, code=1):
    print(f"compare_fmnist: {msg}", file=sys.stderr)
    sys.exit(code)


def run_json_lines(cmd, name, epochs):
    """Run cmd (stderr streams through), return its per-epoch JSON objects from stdout."""
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        die(f"{name} failed with exit status {proc.returncode}: {' '.join(cmd)}")
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    if [r.get("epoch") for r in rows] != list(range(epochs)):
        die(f"{name} printed epochs {[r.get('epoch') for r in rows]}, expected 0..{epochs - 1}")
    return rows


def summarize(rows):
    return {"epoch0_samples_per_s": rows[0]["samples_per_s"],
            "steady_samples_per_s": statistics.mean(r["samples_per_s"] for r in rows[1:])}


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def medians(runs):
    """{system: [summary per run]} -> {system: {key: median over the runs}}."""
    return {name: {key: statistics.median(s[key] for s in rs) for key in rs[0]} for name, rs in runs.items()}


def machine_info(torch_version):
    """What the JSON records of the machine; loadavg (1, 5, 15 min) is read when the run ends: the 1- and 5-minute
    figures cover the run, so a busy machine (other builds on the same cores) shows in the record."""
    return {"nproc": len(os.sched_getaffinity(0)), "cpu": cpu_model(), "torch": torch_version,
            "loadavg": [round(x, 2) for x in os.getloadavg()]}


def machine_line(machine):
    return (f"machine: nproc={machine['nproc']}, cpu={machine['cpu']}, torch {machine['torch']}, "
            f"loadavg {' '.join(str(x) for x in machine['loadavg'])}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=3, help="per run; >= 2 (epoch 0 is start-up)")
    ap.add_argument("--repeats", type=int, default=1, help="alternate batchd/peer runs R times, report medians")
    ap.add_argument("--peer", default=os.path.join(ROOT, "..", "shared", "bench", "torch_peer.py"))
    ap.add_argument("--python", default=DEFAULT_PYTHON, help="interpreter for the peer (default: the project venv's)")
    ap.add_argument("--json", action="store_true", help="print one JSON summary object instead of the table")
    args = ap.parse_args()
    if args.epochs < 2 or args.repeats < 1:
        die("need --epochs >= 2 (steady state is epochs >= 1) and --repeats >= 1")
    bench = os.path.join(ROOT, "build", "bin", "batchd-bench")
    if not os.access(bench, os.X_OK):
        die(f"{bench} not found; build it with ./setup.sh")
    if not os.path.isfile(args.peer):
        die(f"peer script {args.peer} not found (use --peer PATH)")
    if subprocess.run([args.python, "-c", "import torch, torchvision"]).returncode != 0:
        die(f"{args.python} cannot import torch/torchvision: {NEEDS} (or pass --python PATH)", 2)

    common = ["--dataset", "fashion-mnist", "--pipeline", "fmnist", "--batch-size", str(args.batch_size),
              "--workers", str(args.workers), "--epochs", str(args.epochs)]
    systems = {"batchd": [bench, "--spawn", *common, "--json"],
               "torch.DataLoader": [args.python, args.peer, *common]}
    runs = {name: [] for name in systems}
    torch_version = "unknown"
    for _ in range(args.repeats):
        for name, cmd in systems.items():
            rows = run_json_lines(cmd, name, args.epochs)
            for r in rows:
                ok = r["samples"] == FMNIST_TRAIN and (name != "batchd" or r["unique_indices"] == FMNIST_TRAIN)
                if not ok:
                    die(f"{name} epoch {r['epoch']}: samples={r['samples']} unique_indices="
                        f"{r.get('unique_indices', 'n/a')}, expected {FMNIST_TRAIN} (every sample once)")
            torch_version = rows[0].get("torch", torch_version)
            runs[name].append(summarize(rows))

    result = medians(runs)
    ratio = result["batchd"]["steady_samples_per_s"] / result["torch.DataLoader"]["steady_samples_per_s"]
    machine = machine_info(torch_version)
    if args.json:
        print(json.dumps({"benchmark": "compare_fmnist",
                          "dataset": "fashion-mnist", "pipeline": "fmnist", "batch_size": args.batch_size,
                          "workers": args.workers, "epochs": args.epochs, "repeats": args.repeats,
                          "machine": machine, "results": result, "runs": runs,
                          "ratio_steady": round(ratio, 2)}, indent=2))
        return 0
    print(f"Fashion-MNIST, pipeline fmnist, {args.epochs} epochs per run, median of {args.repeats} run(s)\n")
    print("| system | workers | batch size | epoch-0 samples/s | steady-state samples/s |")
    print("|---|---:|---:|---:|---:|")
    for name, r in result.items():
        print(f"| {name} | {args.workers} | {args.batch_size} | {r['epoch0_samples_per_s']:,.0f} "
              f"| {r['steady_samples_per_s']:,.0f} |")
    print("\n" + machine_line(machine))
    print(f"ratio batchd/DataLoader (steady state): {ratio:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
