#!/usr/bin/env python3
"""Compare batchd with a PyTorch DataLoader on a language-model token file (pipeline "lm"), same machine, one run.

    bench/compare_tokens.py [--seq-len 1024] [--batch-size 32] [--workers 2] [--epochs 10] [--peer-epochs 3]
                            [--repeats 1] [--json]

The token file is made once with ../shared/data/make_tokens.py OUT 32 (byte-level uint16 tokens of the Python
standard library's sources, ~11.6 M tokens: 11,365 windows of T = 1024) under build/bench-data/. Alternating R times,
runs
  build/bin/batchd-bench --spawn --config CFG --dataset tokens --pipeline lm --batch-size B --workers W --epochs E
  PY ../shared/bench/torch_peer.py --dataset tokens --path F --seq-len T --batch-size B --workers W --epochs E'
(the peer: np.memmap windows in a DataLoader, x = w[:-1], y = w[1:] as int64, the same tensors batchd's lm pipeline
makes), and reports epoch-0 and steady-state samples/s and their ratio. Steady state is all samples of epochs >= 1
over their total time (one epoch of batchd is a few tens of milliseconds, so it runs more epochs than the peer and a
per-epoch mean would weigh the noisiest epochs as much as the rest). batchd must deliver every window exactly once per
epoch, or this exits 1. Exit 2 if the peer's Python lacks torch. --json: one object shaped as compare_fmnist.py's,
with "benchmark": "compare_tokens" (bench/plot.py draws it).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_fmnist import ROOT, die, machine_info, machine_line, medians, run_json_lines  # noqa: E402

from project_python import DEFAULT_PYTHON, NEEDS  # noqa: E402


def ensure_tokens(path, python):
    if os.path.exists(path):
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    maker = os.path.join(ROOT, "..", "shared", "data", "make_tokens.py")
    print(f"making {path} ...", file=sys.stderr)
    subprocess.run([python, maker, path + ".tmp", "32"], check=True, stdout=subprocess.DEVNULL)
    os.rename(path + ".tmp", path)


def summarize(rows):
    steady = rows[1:]
    return {"epoch0_samples_per_s": rows[0]["samples_per_s"],
            "steady_samples_per_s": sum(r["samples"] for r in steady) / sum(r["seconds"] for r in steady)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seq-len", type=int, default=1024)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=10, help="batchd epochs per run; >= 2 (epoch 0 is start-up)")
    ap.add_argument("--peer-epochs", type=int, default=3, help="peer epochs per run; >= 2")
    ap.add_argument("--repeats", type=int, default=1, help="alternate batchd/peer runs R times, report medians")
    ap.add_argument("--peer", default=os.path.join(ROOT, "..", "shared", "bench", "torch_peer.py"))
    ap.add_argument("--python", default=DEFAULT_PYTHON)
    ap.add_argument("--json", action="store_true", help="print one JSON summary object instead of the table")
    args = ap.parse_args()
    if min(args.epochs, args.peer_epochs) < 2 or args.repeats < 1:
        die("need --epochs and --peer-epochs >= 2 (steady state is epochs >= 1) and --repeats >= 1")
    if subprocess.run([args.python, "-c", "import torch, numpy"]).returncode != 0:
        die(f"{args.python} cannot import torch/numpy: {NEEDS} (or pass --python PATH)", 2)
    bench = os.path.join(ROOT, "build", "bin", "batchd-bench")
    if not os.access(bench, os.X_OK):
        die(f"{bench} not found; build it (cmake --build build --target batchd batchd-bench)")
    path = os.path.join(ROOT, "build", "bench-data", "tokens.bin")
    ensure_tokens(path, args.python)
    windows = (os.path.getsize(path) // 2 - 1) // args.seq_len
    cfg = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
    cfg.write(f'[datasets.tokens]\nformat = "tokens"\npath = "{path}"\ndtype = "uint16"\nseq_len = {args.seq_len}\n')
    cfg.close()

    common = ["--batch-size", str(args.batch_size), "--workers", str(args.workers)]
    systems = {"batchd": ([bench, "--spawn", "--config", cfg.name, "--dataset", "tokens", "--pipeline", "lm",
                           *common, "--epochs", str(args.epochs), "--json"], args.epochs),
               "torch.DataLoader": ([args.python, args.peer, "--dataset", "tokens", "--path", path, "--seq-len",
                                     str(args.seq_len), *common, "--epochs", str(args.peer_epochs)], args.peer_epochs)}
    runs = {name: [] for name in systems}
    torch_version = "unknown"
    try:
        for _ in range(args.repeats):
            for name, (cmd, epochs) in systems.items():
                rows = run_json_lines(cmd, name, epochs)
                for r in rows:
                    if r["samples"] != windows or (name == "batchd" and r["unique_indices"] != windows):
                        die(f"{name} epoch {r['epoch']}: samples={r['samples']} unique_indices="
                            f"{r.get('unique_indices', 'n/a')}, expected {windows} (every window once)")
                torch_version = rows[0].get("torch", torch_version)
                runs[name].append(summarize(rows))
    finally:
        os.unlink(cfg.name)

    result = medians(runs)
    ratio = result["batchd"]["steady_samples_per_s"] / result["torch.DataLoader"]["steady_samples_per_s"]
    machine = machine_info(torch_version)
    if args.json:
        print(json.dumps({"benchmark": "compare_tokens",
                          "dataset": "tokens", "pipeline": "lm", "seq_len": args.seq_len, "windows": windows,
                          "batch_size": args.batch_size, "workers": args.workers, "epochs": args.epochs,
                          "peer_epochs": args.peer_epochs, "repeats": args.repeats, "machine": machine,
                          "results": result, "runs": runs, "ratio_steady": round(ratio, 2)}, indent=2))
        return 0
    print(f"Token file of {windows:,} windows (T = {args.seq_len}), pipeline lm, median of {args.repeats} run(s)\n")
    print("| system | workers | batch size | epochs | epoch-0 samples/s | steady-state samples/s |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, r in result.items():
        print(f"| {name} | {args.workers} | {args.batch_size} | {systems[name][1]} | "
              f"{r['epoch0_samples_per_s']:,.0f} | {r['steady_samples_per_s']:,.0f} |")
    print("\n" + machine_line(machine))
    print(f"ratio batchd/DataLoader (steady state): {ratio:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
