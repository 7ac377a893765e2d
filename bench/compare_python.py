#!/usr/bin/env python3
"""Python loops over batchd.Loader vs torch DataLoader vs the C++ batchd-bench, same machine, one run.

    bench/compare_python.py [--epochs 3] [--workers 2] [--images 2000] [--repeats 1] [--paired N] [--json]

For fmnist (fashion-mnist, batch 256) and train224 (a 2,000-JPEG ImageFolder, batch 64) runs, each with W workers:
  * torch.DataLoader: ../shared/bench/torch_peer.py (its loop only takes each batch and counts it);
  * batchd.Loader:   a Python loop that only takes each batch and counts it (--python-loop, below), against a
                     private daemon;
  * batchd-bench:    the C++ client, the same daemon configuration.
Prints steady-state samples/s (mean of epochs >= 1) and the ratios batchd.Loader / batchd-bench (target: within
10%) and batchd.Loader / DataLoader. With --repeats R the three run in turn R times and each figure is the median
(this 2-core machine is shared: single fmnist runs vary by +-15%). --json prints one object instead of the table:
{"benchmark": "compare_python", "mode": "unpaired" or "paired", ..., "machine": {...}, "pipelines": {P:
{"torch.DataLoader" (unpaired only), "batchd.Loader", "batchd-bench": steady samples/s, "ratio_python_cpp": ...}}}
(bench/plot.py draws it).
"""
import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_fmnist import ROOT, die, machine_info, machine_line  # noqa: E402
from compare_imagefolder import ensure_tree  # noqa: E402

from project_python import DEFAULT_PYTHON  # noqa: E402

PY = DEFAULT_PYTHON


def python_loop(args):
    """Runs in a child: iterate batchd.Loader for E epochs against --socket, or a fresh daemon, one JSON line per
    epoch."""
    import batchd
    with daemon_at(args) as sock:
        loader = batchd.Loader(args.dataset, args.batch_size, shuffle=True, pipeline=args.pipeline, socket=sock,
                               as_dict=True)
        for epoch in range(args.epochs):
            start, n = time.perf_counter(), 0
            for batch in loader:
                n += batch["image"].shape[0]
            dt = time.perf_counter() - start
            print(json.dumps({"system": "batchd.Loader", "epoch": epoch, "samples": n, "seconds": dt,
                              "samples_per_s": n / dt}), flush=True)


@contextlib.contextmanager
def daemon_at(args):
    """args.socket if given, else a private daemon (args.workers, args.config) for the block's duration."""
    if args.socket:
        yield args.socket
        return
    with tempfile.TemporaryDirectory(prefix="batchd-pybench-") as tmp:
        sock = os.path.join(tmp, "batchd.sock")
        cmd = [os.path.join(ROOT, "build", "bin", "batchd"), "--socket", sock, "--workers", str(args.workers),
               "--log-level", "warn"] + (["--config", args.config] if args.config else [])
        daemon = subprocess.Popen(cmd)
        while not os.path.exists(sock):
            time.sleep(0.01)
        try:
            yield sock
        finally:
            daemon.terminate()
            daemon.wait()


def epochs_of(cmd, env=None):
    """Runs cmd; its per-epoch JSON rows."""
    out = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True, env=env)
    if out.returncode != 0:
        die(f"failed ({out.returncode}): {' '.join(cmd)}")
    return [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{") and '"epoch"' in l]


def steady(rows):
    return statistics.mean(r["samples_per_s"] for r in rows[1:])


def paired(args, cases, env, bench):
    """Python and C++ loops in turn against one daemon per pipeline: the same daemon state, adjacent in time."""
    report = {}
    for pipe, dataset, batch, config, _ in cases:
        common = ["--pipeline", pipe, "--batch-size", str(batch), "--epochs", str(args.epochs)]
        args.config = config
        with daemon_at(args) as sock:
            py, cpp = [], []
            for _ in range(args.paired):
                py.append(steady(epochs_of([PY, os.path.abspath(__file__), "--python-loop", "--socket", sock,
                                            "--dataset", dataset, *common], env)))
                cpp.append(steady(epochs_of([bench, "--socket", sock, "--dataset", dataset, *common, "--json"])))
        ratios = sorted(p / c for p, c in zip(py, cpp))
        report[pipe] = {"batchd.Loader": statistics.median(py), "batchd-bench": statistics.median(cpp),
                        "ratio_python_cpp": round(statistics.median(ratios), 3),
                        "ratio_python_cpp_min": round(ratios[0], 3), "ratio_python_cpp_max": round(ratios[-1], 3)}
    if args.json:
        return print_json(args, "paired", report, "unknown")
    print(f"{args.epochs} epochs per run, {args.workers} workers, one daemon per pipeline; {args.paired} rounds of "
          "(Python loop, batchd-bench); steady state = mean of epochs >= 1\n")
    print("| pipeline | batchd.Loader (Python) median | batchd-bench (C++) median | Python/C++ per round: median "
          "(min-max) |")
    print("|---|---:|---:|---:|")
    for pipe, r in report.items():
        print(f"| {pipe} | {r['batchd.Loader']:,.0f} | {r['batchd-bench']:,.0f} | {r['ratio_python_cpp']:.2f} "
              f"({r['ratio_python_cpp_min']:.2f}-{r['ratio_python_cpp_max']:.2f}) |")
    print("\n" + machine_line(machine_info("unknown")))
    return 0


def print_json(args, mode, report, torch_version):
    print(json.dumps({"benchmark": "compare_python", "mode": mode, "epochs": args.epochs, "workers": args.workers,
                      "images": args.images, "repeats": args.repeats, "paired_rounds": args.paired,
                      "machine": machine_info(torch_version), "pipelines": report}, indent=2))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--paired", type=int, default=0, metavar="N",
                    help="instead: per pipeline one daemon, N rounds of the Python loop then batchd-bench against "
                         "it; prints the median (min-max) of the per-round ratios Python / C++")
    ap.add_argument("--socket", help=argparse.SUPPRESS)
    ap.add_argument("--python-loop", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--dataset"), ap.add_argument("--pipeline"), ap.add_argument("--config")
    ap.add_argument("--batch-size", type=int)
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = ap.parse_args()
    if args.python_loop:
        return python_loop(args)
    root = os.path.join(ROOT, "build", "bench-data", f"imagefolder-{args.images}")
    ensure_tree(root, args.images, PY)
    cfg = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
    cfg.write(f'[datasets.bench]\nformat = "imagefolder"\nroot = "{root}"\n')
    cfg.close()
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "build", "python"))
    peer = os.path.join(ROOT, "..", "shared", "bench", "torch_peer.py")
    bench = os.path.join(ROOT, "build", "bin", "batchd-bench")
    cases = [("fmnist", "fashion-mnist", 256, None, ["--dataset", "fashion-mnist"]),
             ("train224", "bench", 64, cfg.name, ["--dataset", "imagefolder", "--root", root])]
    if args.paired:
        return paired(args, cases, env, bench)
    report, torch_version = {}, "unknown"
    for pipe, dataset, batch, config, peer_args in cases:
        common = ["--pipeline", pipe, "--batch-size", str(batch), "--workers", str(args.workers),
                  "--epochs", str(args.epochs)]
        runs = {"torch.DataLoader": [], "batchd.Loader": [], "batchd-bench": []}
        for _ in range(args.repeats):
            rows = epochs_of([PY, peer, *peer_args, *common])
            torch_version = rows[0].get("torch", torch_version)
            runs["torch.DataLoader"].append(steady(rows))
            runs["batchd.Loader"].append(steady(epochs_of(
                [PY, os.path.abspath(__file__), "--python-loop", "--dataset", dataset, *common]
                + (["--config", config] if config else []), env)))
            runs["batchd-bench"].append(steady(epochs_of([bench, "--spawn", "--dataset", dataset, *common, "--json"]
                                                         + (["--config", config] if config else []))))
        r = {name: statistics.median(values) for name, values in runs.items()}
        r["ratio_python_cpp"] = round(r["batchd.Loader"] / r["batchd-bench"], 3)
        r["ratio_python_dataloader"] = round(r["batchd.Loader"] / r["torch.DataLoader"], 2)
        report[pipe] = r
    if args.json:
        return print_json(args, "unpaired", report, torch_version)
    print(f"{args.epochs} epochs per run, {args.workers} workers; steady state = mean of epochs >= 1; "
          f"median of {args.repeats} run(s)\n")
    print("| pipeline | DataLoader | batchd.Loader (Python) | batchd-bench (C++) | Python/C++ | Python/DataLoader |")
    print("|---|---:|---:|---:|---:|---:|")
    for pipe, r in report.items():
        print(f"| {pipe} | {r['torch.DataLoader']:,.0f} | {r['batchd.Loader']:,.0f} | {r['batchd-bench']:,.0f} | "
              f"{r['ratio_python_cpp']:.2f} | {r['ratio_python_dataloader']:.1f}x |")
    print("\n" + machine_line(machine_info(torch_version)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
