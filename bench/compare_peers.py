#!/usr/bin/env python3
"""batchd beside the loaders a team would pick instead, on the same photos, recipes and cores, in one run (issue 42).

    bench/compare_peers.py [--images 2000] [--recipes train,eval] [--batch-size 64] [--workers NPROC] [--epochs 3]
                           [--repeats 1] [--systems LIST] [--peers-python .venv-peers/bin/python]
                           [--batchd-depth N] [--json OUT]

The tree: ../shared/data/make_imagefolder.py ROOT N 0 under build/bench-data/ (real photographs; 8 of its 20 classes
are single-channel JPEGs, so every system converts to RGB as torchvision's ImageFolder does). The recipes:
  train  RandomResizedCrop(224, bilinear), RandomHorizontalFlip(), normalize (ImageNet mean/std), float32 NCHW
  eval   Resize(256), CenterCrop(224), normalize
batch 64, shuffled every epoch, every image once per epoch, all cores (--workers, default the machine's). Each system
is a runner in bench/peers/ (run_<name>.py: its configuration and where it comes from are in its docstring), started
fresh for each run; the systems alternate within each repeat:
  dataloader       torch DataLoader(ImageFolder), num_workers = W, persistent, pin_memory off: the baseline
  torchdata_nodes  torchdata.nodes' ParallelMapper over the same decode + torchvision transforms
  spdl             SPDL's pipeline with its own image decoding, thread stages
  dali             NVIDIA DALI's CPU pipeline (readers.file, decoders.image(device="cpu"), ...)
  ffcv             FFCV's Loader over a .beton of the photos at full size (written once, its time apart)
  litdata          litdata's StreamingDataLoader over the photos optimized once (its time apart)
  batchd_preset, batchd_compose, batchd_folder, batchd_own
                   batchd.Loader with the daemon's preset (train224 / val224), with the recipe's Compose
                   translated, over torchvision's ImageFolder (recognised: the daemon's native ops run it), and over
                   a user's own Dataset of the same samples (attached Python workers; bench/peers/run_batchd.py)
batchd's runners run in the project venv (--python, with build/python); the others in the peers venv
(--peers-python: bench/peers/requirements.txt, ./setup.sh --bench-peers). A runner that cannot import or run its
peer prints the exact error: it is reported as such, not timed.

Reported per recipe and system: steady-state images/s (mean of epochs >= 1) and its ratio to DataLoader and to
batchd (preset); CPU seconds per 1,000 images of every process of the run (its whole process tree, reaped: the
runner, its workers, batchd's daemon and its workers; epoch 0 included); peak memory, the summed PSS of that tree
sampled every 0.25 s, batchd's daemon and its workers shown apart; the time from the runner's start to its first
batch; the one-off conversion (ffcv, litdata). Then, on the eval recipe, each system's output for the first 64
images in ImageFolder's order against DataLoader's (torchvision's): mean and max absolute difference in uint8 levels
(|a - b| x std x 255). --json OUT writes it all as one object ({"benchmark": "compare_peers", ...}: bench/plot.py).
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_fmnist import ROOT, die, machine_info, machine_line  # noqa: E402
from compare_imagefolder import ensure_tree  # noqa: E402

from project_python import DEFAULT_PYTHON  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers"))
import common as peers_common  # noqa: E402

PEERS = ["dataloader", "torchdata_nodes", "spdl", "dali", "ffcv", "litdata"]
BATCHD = ["batchd_preset", "batchd_compose", "batchd_folder", "batchd_own"]
CONVERTS = {"ffcv", "litdata"}
DUMP = 64


def tree_of(pid):
    """pid and all its descendants (now)."""
    out, pending = [], [pid]
    while pending:
        p = pending.pop()
        out.append(p)
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children") as f:
                    pending += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return out


def pss_kib(pid):
    """(PSS in KiB, is it batchd's daemon or one of its workers) of one process; (0, False) once it is gone."""
    try:
        with open(f"/proc/{pid}/comm") as f:
            daemon = f.read().startswith("batchd")
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]), daemon
    except OSError:
        pass
    return 0, False


def run(cmd, env=None):
    """Runs a runner; (its JSON lines, its tree's CPU seconds, peak PSS MiB of the tree, of batchd's part, rc)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True, env=env)
    peak = [0, 0]

    def sample():
        while proc.poll() is None:
            sizes = [pss_kib(p) for p in tree_of(proc.pid)]
            total, daemon = sum(s for s, _ in sizes), sum(s for s, d in sizes if d)
            peak[0], peak[1] = max(peak[0], total), max(peak[1], daemon)
            time.sleep(0.25)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = proc.communicate()
    sampler.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return lines, cpu, peak[0] / 1024, peak[1] / 1024, proc.returncode


def command(system, args, root, work, extra):
    if system in BATCHD:
        depth = [] if args.batchd_depth is None else ["--depth", str(args.batchd_depth)]
        return [args.python, os.path.join(ROOT, "bench", "peers", "run_batchd.py"), "--variant",
                system.split("_", 1)[1], *common_args(args, root, work), *depth, *extra]
    return [args.peers_python, os.path.join(ROOT, "bench", "peers", f"run_{system}.py"),
            *common_args(args, root, work), *extra]


def common_args(args, root, work):
    return ["--root", root, "--batch-size", str(args.batch_size), "--workers", str(args.workers), "--work-dir", work]


def error_of(lines, rc, cmd):
    for line in lines:
        if "error" in line or "dump_error" in line:
            return line.get("error") or line.get("dump_error")
    return f"exit status {rc}: {' '.join(cmd)}" if rc != 0 else None


def measure(system, recipe, args, root, work, env):
    """One timed run: its summary, or {"error": ...}."""
    cmd = command(system, args, root, work, ["--recipe", recipe, "--epochs", str(args.epochs)])
    lines, cpu, pss, daemon_pss, rc = run(cmd, env)
    if (err := error_of(lines, rc, cmd)) is not None:
        return {"error": err}
    rows = [r for r in lines if "epoch" in r]
    if len(rows) != args.epochs:
        return {"error": f"{len(rows)} epochs reported of {args.epochs}: {' '.join(cmd)}"}
    images = sum(r["samples"] for r in rows)
    return {"version": rows[0].get("version", "?"),
            "epoch0_samples_per_s": rows[0]["samples"] / rows[0]["seconds"],
            "steady_samples_per_s": statistics.mean(r["samples"] / r["seconds"] for r in rows[1:]),
            "first_batch_s": rows[0].get("first_batch_s"),
            "cpu_s_per_1000": cpu / images * 1000, "peak_pss_mib": pss, "daemon_pss_mib": daemon_pss}


def eval_match(systems, args, root, work, env):
    """{system: {"mean", "max", "n"}} of each system's eval output in uint8 levels against DataLoader's (common.py)."""
    dumps, out = {}, {}
    with tempfile.TemporaryDirectory(prefix="batchd-peers-dump-") as tmp:
        for system in systems:
            path = os.path.join(tmp, f"{system}.npy")
            cmd = command(system, args, root, work, ["--dump-eval", str(DUMP), path])
            lines, _, _, _, rc = run(cmd, env)
            err = error_of(lines, rc, cmd)
            if err is None and os.path.exists(path):
                dumps[system] = path
            else:
                out[system] = {"error": err or "no dump written"}
        for system, path in dumps.items():
            out[system] = (peers_common.diff_dumps(path, dumps["dataloader"]) if "dataloader" in dumps
                           else {"error": "no DataLoader dump to compare with"})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--recipes", default="train,eval")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--systems", default=",".join(PEERS + BATCHD))
    ap.add_argument("--python", default=DEFAULT_PYTHON)
    ap.add_argument("--peers-python", default=os.path.join(ROOT, ".venv-peers", "bin", "python"))
    ap.add_argument("--batchd-depth", type=int, default=None,
                    help="batchd's slots per stream (Loader depth=); default the Loader's, 5 (the daemon's 4 + 1)")
    ap.add_argument("--json", metavar="OUT")
    args = ap.parse_args()
    systems = args.systems.split(",")
    if args.epochs < 2 or "dataloader" not in systems:
        die("need --epochs >= 2 (steady state is epochs >= 1) and dataloader among --systems (the baseline)")
    if not os.access(args.peers_python, os.X_OK):
        die(f"{args.peers_python}: no peers venv; make it with ./setup.sh --bench-peers (or pass --peers-python)", 2)
    root = os.path.join(ROOT, "build", "bench-data", f"imagefolder-{args.images}")
    ensure_tree(root, args.images, args.python)
    work = os.path.join(ROOT, "build", "bench-data", f"peers-work-{args.images}")
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "build", "python"))
    conversion = {}
    for system in [s for s in systems if s in CONVERTS]:  # written once, timed apart (a runner reuses it)
        lines, _, _, _, rc = run(command(system, args, root, work, ["--recipe", "eval", "--epochs", "1"]), env)
        conv = [r for r in lines if "conversion_s" in r]
        conversion[system] = conv[0] if conv else {
            "error": error_of(lines, rc, [system]) or f"already converted in {work} by an earlier run: not timed"}
    report = {}
    for recipe in args.recipes.split(","):
        runs = {s: [] for s in systems}
        for _ in range(args.repeats):
            for system in systems:
                runs[system].append(measure(system, recipe, args, root, work, env))
        results = {}
        for system, rs in runs.items():
            ok = [r for r in rs if "error" not in r]
            results[system] = ({k: (statistics.median(r[k] for r in ok) if isinstance(ok[0][k], (int, float))
                                    else ok[0][k]) for k in ok[0]} if ok else rs[0])
        base = results["dataloader"].get("steady_samples_per_s")
        ours = results.get("batchd_preset", {}).get("steady_samples_per_s")
        for r in results.values():
            if "steady_samples_per_s" in r:
                r["ratio_dataloader"] = r["steady_samples_per_s"] / base if base else None
                r["ratio_batchd"] = r["steady_samples_per_s"] / ours if ours else None
        report[recipe] = {"results": results}
    match = eval_match(systems, args, root, work, env)
    data = {"benchmark": "compare_peers", "images": args.images, "batch_size": args.batch_size,
            "workers": args.workers, "epochs": args.epochs, "repeats": args.repeats, "batchd_depth": args.batchd_depth,
            "machine": machine_info(results.get("dataloader", {}).get("version", "?")), "recipes": report,
            "conversion": conversion, "eval_match": match}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(data, f, indent=2)
    print_report(data)
    return 0


def fmt(value, spec):
    """A figure of the table, or nothing where there is none (no DataLoader or batchd run to divide by)."""
    return "" if value is None else format(value, spec)


def print_report(data):
    print(f"{data['images']} photos, batch {data['batch_size']}, {data['workers']} workers, {data['epochs']} epochs,"
          f" median of {data['repeats']} run(s)\n")
    print("| recipe | system | version | img/s | x DataLoader | x batchd | CPU s / 1k img | peak PSS MiB (daemon) "
          "| first batch s |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for recipe, rep in data["recipes"].items():
        for system, r in rep["results"].items():
            if "error" in r:
                print(f"| {recipe} | {system} | | error: {r['error'][:160]} | | | | | |")
                continue
            print(f"| {recipe} | {system} | {r['version']} | {r['steady_samples_per_s']:,.0f} "
                  f"| {fmt(r['ratio_dataloader'], '.2f')} | {fmt(r['ratio_batchd'], '.2f')} "
                  f"| {r['cpu_s_per_1000']:.1f} | {r['peak_pss_mib']:,.0f} ({r['daemon_pss_mib']:,.0f}) "
                  f"| {fmt(r['first_batch_s'], '.1f')} |")
    print("\neval output against DataLoader's (uint8 levels, first 64 images):")
    for system, m in data["eval_match"].items():
        print(f"  {system}: " + (f"mean {m['mean']:.3f}, max {m['max']:.1f}" if "error" not in m
                                 else f"error: {m['error'][:200]}"))
    for system, c in data["conversion"].items():
        print(f"conversion {system}: " + (f"{c['conversion_s']:.1f} s" if "conversion_s" in c else c.get("error")))
    print("\n" + machine_line(data["machine"]))


if __name__ == "__main__":
    sys.exit(main())
