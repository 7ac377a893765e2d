#!/usr/bin/env python3
"""One stream against DataLoader as the number of workers grows (docs/benchmarks.md, "scaling").

    bench/scaling.py [--workers 1,2,4,8,15] [--pipelines fmnist,train224,val224] [--epochs 3] [--repeats 1]
                     [--out build/scaling.json]

For each W it runs bench/compare_fmnist.py (fmnist) and bench/compare_imagefolder.py (train224, val224) with
--workers W: batchd-bench --spawn --workers W (one stream, the daemon's default depth) and
../shared/bench/torch_peer.py with DataLoader(num_workers=W), alternating, on the same machine. Writes one JSON
object: {"benchmark": "scaling", "machine": ..., "workers": [W...], "pipelines": {P: {"batchd": [steady samples/s
per W], "torch.DataLoader": [...]}}} to --out and prints a table. bench/plot.py draws it.
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_json(cmd):
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit(f"scaling: {' '.join(cmd)} failed with exit status {proc.returncode}")
    return json.loads(proc.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", default="1,2,4,8,15")
    ap.add_argument("--pipelines", default="fmnist,train224,val224")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "scaling.json"))
    args = ap.parse_args()
    workers = [int(w) for w in args.workers.split(",")]
    pipelines = args.pipelines.split(",")
    vision = [p for p in pipelines if p != "fmnist"]
    out = {"benchmark": "scaling", "workers": workers, "epochs": args.epochs, "repeats": args.repeats, "pipelines": {}}
    for w in workers:
        common = ["--workers", str(w), "--epochs", str(args.epochs), "--repeats", str(args.repeats), "--json"]
        reports = {}
        if "fmnist" in pipelines:
            r = run_json([os.path.join(ROOT, "bench", "compare_fmnist.py"), *common])
            reports["fmnist"] = r["results"]
            out["machine"] = r["machine"]
        if vision:
            r = run_json([os.path.join(ROOT, "bench", "compare_imagefolder.py"), "--pipelines", ",".join(vision),
                          *common])
            reports.update({p: rep["results"] for p, rep in r["pipelines"].items()})
            out["machine"] = r["machine"]
        for p, res in reports.items():
            row = out["pipelines"].setdefault(p, {})
            for system, summary in res.items():
                row.setdefault(system, []).append(round(summary["steady_samples_per_s"]))
        print(f"W={w}: " + ", ".join(f"{p} {res['batchd']['steady_samples_per_s']:,.0f} vs "
                                      f"{res['torch.DataLoader']['steady_samples_per_s']:,.0f}"
                                      for p, res in reports.items()), flush=True)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=2)
    print(f"\n| pipeline | system | " + " | ".join(f"W={w}" for w in workers) + " |")
    print("|---|---|" + "---:|" * len(workers))
    for p, row in out["pipelines"].items():
        for system, values in row.items():
            print(f"| {p} | {system} | " + " | ".join(f"{v:,}" for v in values) + " |")
    print(f"\nwritten: {args.out}; machine: {out.get('machine')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
