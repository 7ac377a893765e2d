#!/usr/bin/env python3
"""Compare batchd with a PyTorch DataLoader on an ImageFolder of JPEGs, same machine, one run.

    bench/compare_imagefolder.py [--images 2000] [--pipelines train224,val224] [--batch-size 64] [--workers 2]
                                 [--epochs 3] [--repeats 1] [--exact-decode] [--json]

The tree is made once with ../shared/data/make_imagefolder.py ROOT N 0 (real photographs, 333-640 px wide JPEGs)
under build/bench-data/. For each pipeline, alternating R times, runs
  build/bin/batchd-bench --spawn --config CFG --dataset bench --pipeline P --batch-size B --workers W --epochs E
  PY ../shared/bench/torch_peer.py --dataset imagefolder --root ROOT --pipeline P --batch-size B --workers W ...
and reports epoch-0 and steady-state (mean of epochs >= 1) samples/s, their ratio, and batchd's per-stage worker
time per sample (read, decode, crop/resize, normalize + write into the slot). batchd must deliver every image
exactly once per epoch, or this exits 1. --json prints one object instead: {"benchmark": "compare_imagefolder", ...,
"machine": {...}, "pipelines": {P: {"results": {system: {...samples_per_s}}, "ratio_steady": ...}}} (bench/plot.py).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_fmnist import ROOT, die, machine_info, machine_line, medians, summarize  # noqa: E402

from project_python import DEFAULT_PYTHON, NEEDS  # noqa: E402


def ensure_tree(root, images, python):
    marker = os.path.join(root, ".complete")
    if os.path.exists(marker):
        return
    maker = os.path.join(ROOT, "..", "shared", "data", "make_imagefolder.py")
    print(f"making {images} images under {root} ...", file=sys.stderr)
    subprocess.run([python, maker, root, str(images), "0"], check=True, stdout=subprocess.DEVNULL)
    open(marker, "w").close()


def parse_image_args(ap, pipelines):
    """The options every image benchmark takes (compare_webdataset.py too), parsed and checked."""
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--pipelines", default=pipelines)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--exact-decode", action="store_true", help="batchd decodes JPEGs at full size (no DCT scaling)")
    ap.add_argument("--peer", default=os.path.join(ROOT, "..", "shared", "bench", "torch_peer.py"))
    ap.add_argument("--python", default=DEFAULT_PYTHON)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.epochs < 2:
        die("need --epochs >= 2 (steady state is epochs >= 1)")
    if subprocess.run([args.python, "-c", "import torch, torchvision"]).returncode != 0:
        die(f"{args.python} cannot import torch/torchvision: {NEEDS} (or pass --python PATH)", 2)
    return args


def print_table(report, args):
    """The markdown table of an image benchmark's report: per pipeline, each system's rates and batchd's ratio."""
    print("| pipeline | system | workers | batch | epoch-0 img/s | steady img/s | ratio |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for pipe, rep in report.items():
        for name, r in rep["results"].items():
            ratio = f"{rep['ratio_steady']:.2f}x" if name == "batchd" else ""
            print(f"| {pipe} | {name} | {args.workers} | {args.batch_size} | {r['epoch0_samples_per_s']:,.0f} "
                  f"| {r['steady_samples_per_s']:,.0f} | {ratio} |")


def main():
    args = parse_image_args(argparse.ArgumentParser(description=__doc__,
                                                    formatter_class=argparse.RawDescriptionHelpFormatter),
                            "train224,val224")
    bench = os.path.join(ROOT, "build", "bin", "batchd-bench")
    root = os.path.join(ROOT, "build", "bench-data", f"imagefolder-{args.images}")
    ensure_tree(root, args.images, args.python)
    cfg = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
    cfg.write(f'[datasets.bench]\nformat = "imagefolder"\nroot = "{root}"\n')
    cfg.close()

    report = {}
    torch_version = "unknown"
    for pipe in args.pipelines.split(","):
        common = ["--pipeline", pipe, "--batch-size", str(args.batch_size), "--workers", str(args.workers),
                  "--epochs", str(args.epochs)]
        systems = {"batchd": [bench, "--spawn", "--config", cfg.name, "--dataset", "bench", *common, "--json",
                              "--stages"] + (["--exact-decode"] if args.exact_decode else []),
                   "torch.DataLoader": [args.python, args.peer, "--dataset", "imagefolder", "--root", root, *common]}
        runs, stages = {name: [] for name in systems}, []
        for _ in range(args.repeats):
            for name, cmd in systems.items():
                proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
                if proc.returncode != 0:
                    die(f"{name} failed with exit status {proc.returncode}: {' '.join(cmd)}")
                lines = [json.loads(l) for l in proc.stdout.splitlines() if l.startswith("{")]
                rows = [r for r in lines if "epoch" in r]
                stages += [r["stages_us_per_sample"] for r in lines if "stages_us_per_sample" in r]
                for r in rows:
                    if r["samples"] != args.images or (name == "batchd" and r["unique_indices"] != args.images):
                        die(f"{name} {pipe} epoch {r['epoch']}: samples={r['samples']} "
                            f"unique={r.get('unique_indices')}, expected {args.images}")
                torch_version = rows[0].get("torch", torch_version)
                runs[name].append(summarize(rows))
        result = medians(runs)
        ratio = result["batchd"]["steady_samples_per_s"] / result["torch.DataLoader"]["steady_samples_per_s"]
        stage = {k: round(statistics.median(s[k] for s in stages), 1) for k in stages[0]} if stages else {}
        report[pipe] = {"results": result, "ratio_steady": round(ratio, 2), "batchd_stages_us_per_sample": stage}

    machine = machine_info(torch_version)
    if args.json:
        print(json.dumps({"benchmark": "compare_imagefolder",
                          "images": args.images, "batch_size": args.batch_size, "workers": args.workers,
                          "epochs": args.epochs, "repeats": args.repeats, "exact_decode": args.exact_decode,
                          "machine": machine, "pipelines": report}, indent=2))
        return 0
    print(f"ImageFolder of {args.images} JPEGs, {args.epochs} epochs per run, median of {args.repeats} run(s)\n")
    print_table(report, args)
    print("\nbatchd worker time per image (µs, median over runs):")
    for pipe, rep in report.items():
        print(f"  {pipe}: {rep['batchd_stages_us_per_sample']}")
    print("\n" + machine_line(machine))
    return 0


if __name__ == "__main__":
    sys.exit(main())
