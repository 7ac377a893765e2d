#!/usr/bin/env python3
"""Your own Dataset (issue 26): batchd.Loader vs torch DataLoader on the same Python Dataset, same machine, one run.

    bench/compare_own_dataset.py [--epochs 10] [--repeats 3] [--images 1000] [--cases C,...] [--build DIR]
                                 [--data DATA] [--generator] [--workers 4] [--json]

Cases (--cases, comma-separated; all by default):
  synthetic5, synthetic0:  the PyTorch data-loading tutorial's SyntheticDataset: 512 samples, each a
      torch.randn(3, 224, 224) float32 image and an int label (its index, so every sample is checked once per
      epoch), made after time.sleep(transform_delay) of 5 ms / 0 ms (a stand-in for decode and augmentation);
  synthetic5-getitems, synthetic0-getitems:  the same with a batched __getitems__(indices) that sleeps
      transform_delay * len(indices) once per call and makes the same tensors: the dataset's own work per sample
      is the same as without it, so the pair shows what the call structure (one call per batch, as DataLoader and
      batchd both make it) changes, not what a cheaper batched transform would save in either loader;
  imagefolder:  a Python ImageFolder-style Dataset (not torchvision's ImageFolder, which batchd serves natively):
      it lists a tree made once by ../shared/data/make_imagefolder.py ROOT N 0 (ROOT = DATA/imagefolder-N),
      opens each JPEG with PIL (.convert("RGB")) and applies torchvision RandomResizedCrop(224),
      RandomHorizontalFlip, ToTensor, Normalize (ImageNet mean/std): images/s;
  padding, detection, captions:  batches that are not one stack of fixed-shape tensors (issue 40): a padding
      collate_fn, torchvision's detection collate over images of different sizes, (image, str) samples with
      default_collate, an IterableDataset stream sharded by its workers (bench/collate_cases.py); batchd's workers
      collate each batch into its slot.
Both loaders get the same arguments: batch_size=32, shuffle=True, num_workers=4 (--workers), prefetch_factor=2; DataLoader also
persistent_workers=True (batchd's workers persist anyway). --generator: both also get
generator=torch.Generator().manual_seed(0) and persistent_workers=True, so batchd runs DataLoader's sampler in the
trainer (docs/python.md, "Your sampler, run in the trainer") instead of the daemon's. Each run is a child process (the trainer) that builds
one loader and iterates it for E epochs, taking each batch and reading its labels (no model). Measured per epoch:
wall time from iter() to the last batch (epoch 1 includes building the loader and starting its workers: reported
apart as start-up; "epoch" = the median of epochs 2..E) and the trainer's CPU seconds (time.process_time of the
trainer process alone: not its workers, not the daemon; median of epochs 2..E). After the run: its workers' CPU
(RUSAGE_CHILDREN once they are joined) and the daemon's (/proc/PID/stat), per epoch over all E epochs; batchd's
slot growths (loader.slot_growths: the most of any run).
The daemon: one `batchd --socket TMP --workers 1` started by this script for the whole run (its start-up is in no
figure; its one forked worker idles: an own Dataset's samples are made by the trainer's workers). Runs alternate
(DataLoader then batchd, then batchd then DataLoader, ...) R times (--repeats); each figure is the median over the
R runs and the ratio DataLoader epoch time / batchd epoch time is taken per pair of adjacent runs: median (min-max).
Goals (the issue's): >= 1.0 at 5 ms (no slower), >= 2.0 at 0 ms, >= 1.0 for imagefolder. Every epoch must deliver
every sample once (synthetic: each index once; imagefolder: N samples), or this exits 1; exit 2 if this Python
lacks torch. --json prints one object
{"benchmark": "compare_own_dataset", ..., "machine": {...}, "cases": {case: {"DataLoader": {...}, "batchd": {...},
"ratio": ..., "ratio_min": ..., "ratio_max": ..., "goal": ..., "met": ...}}} instead of the table (bench/plot.py
does not draw it). --build DIR: where bin/batchd and python/ are; DATA: build/bench-data by default.
"""
import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_fmnist import ROOT, die, machine_info, machine_line  # noqa: E402
from compare_imagefolder import ensure_tree  # noqa: E402

from project_python import DEFAULT_PYTHON, NEEDS  # noqa: E402
from collate_cases import CASES as COLLATED  # noqa: E402

try:
    import torch
    from PIL import Image
    from torch.utils.data import Dataset
except ImportError as e:
    die(f"{sys.executable} cannot import torch and PIL ({e}): run it with {DEFAULT_PYTHON} ({NEEDS})", 2)

PY = DEFAULT_PYTHON
CASES = {"synthetic5": (0.005, False), "synthetic5-getitems": (0.005, True), "synthetic0": (0.0, False),
         "synthetic0-getitems": (0.0, True), "imagefolder": None, **{c: None for c in COLLATED}}
GOALS = {"synthetic5": 1.0, "synthetic5-getitems": 1.0, "synthetic0": 2.0, "synthetic0-getitems": 2.0,
         "imagefolder": 1.0, **{c: 1.5 for c in COLLATED}}  # collated: the transport dominates (issue 40)
SYSTEMS = ("DataLoader", "batchd")
BATCH, PREFETCH = 32, 2


class SyntheticDataset(Dataset):
    """The tutorial's dataset: `size` samples of (torch.randn(3, 224, 224) float32, label = the index)."""

    def __init__(self, size=512, transform_delay=0.005):
        self.size, self.transform_delay = size, transform_delay

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        if self.transform_delay:
            time.sleep(self.transform_delay)
        return torch.randn(3, 224, 224), index


class BatchedSyntheticDataset(SyntheticDataset):
    """The same samples through __getitems__: one sleep of transform_delay * len(indices) per call."""

    def __getitems__(self, indices):
        if self.transform_delay:
            time.sleep(self.transform_delay * len(indices))
        return [(torch.randn(3, 224, 224), index) for index in indices]


class JpegFolder(Dataset):
    """An ImageFolder-style Dataset in Python: root/<class>/*.jpg, PIL + torchvision's train transforms."""

    def __init__(self, root):
        from torchvision import transforms as T
        classes = sorted(e.name for e in os.scandir(root) if e.is_dir())
        self.samples = [(os.path.join(root, c, f), k) for k, c in enumerate(classes)
                        for f in sorted(os.listdir(os.path.join(root, c))) if f.endswith(".jpg")]
        self.transform = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
                                    T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        path, label = self.samples[index]
        with open(path, "rb") as f:
            image = Image.open(f).convert("RGB")
        return self.transform(image), label


def trainer(args):
    """Runs in a child: one loader (args.trainer) over args.case for args.epochs epochs; one JSON line per epoch,
    then one with the workers' CPU seconds."""
    warnings.filterwarnings("ignore", message="This DataLoader will create")  # 4 workers on 2 cores: as asked
    collate_fn, indices_of = None, lambda batch: batch[1].tolist()
    if args.case == "imagefolder":
        dataset = JpegFolder(args.root)
    elif args.case in COLLATED:
        make, collate_fn, indices_of = COLLATED[args.case]
        dataset = make()
    else:
        delay, getitems = CASES[args.case]
        dataset = (BatchedSyntheticDataset if getitems else SyntheticDataset)(512, delay)
    n = len(dataset)
    shuffle = not isinstance(dataset, torch.utils.data.IterableDataset)  # DataLoader refuses it for an iterable
    loader = None
    for epoch in range(args.epochs):
        wall, cpu = time.perf_counter(), time.process_time()
        if loader is None:
            extra = dict(generator=torch.Generator().manual_seed(0), persistent_workers=True) if args.generator else {}
            if args.trainer == "batchd":
                import batchd
                loader = batchd.Loader(dataset, batch_size=BATCH, shuffle=shuffle, num_workers=args.workers,
                                       prefetch_factor=PREFETCH, socket=args.socket, collate_fn=collate_fn, **extra)
            else:
                extra["persistent_workers"] = True
                loader = torch.utils.data.DataLoader(dataset, batch_size=BATCH, shuffle=shuffle, num_workers=args.workers,
                                                     prefetch_factor=PREFETCH, collate_fn=collate_fn, **extra)
        seen = []
        for batch in loader:
            seen.extend(indices_of(batch))
            del batch
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        ok = len(seen) == n and (args.case == "imagefolder" or sorted(seen) == list(range(n)))
        print(json.dumps({"epoch": epoch, "seconds": wall, "trainer_cpu_s": cpu, "samples": len(seen), "ok": ok}),
              flush=True)
    growths = loader.slot_growths if args.trainer == "batchd" else 0
    if args.trainer == "batchd":
        loader.close()
    del loader  # DataLoader: its iterator's __del__ joins the persistent workers
    gc.collect()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"workers_cpu_s": children.ru_utime + children.ru_stime, "slot_growths": growths}), flush=True)
    return 0


def cpu_seconds(pid):
    """utime + stime of process `pid` (/proc/PID/stat), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(args, system, case, sock, daemon, env):
    """One trainer child; its summary: epoch-1 and median epoch seconds, trainer / workers / daemon CPU per epoch."""
    cmd = [PY, os.path.abspath(__file__), "--trainer", system, "--case", case, "--epochs", str(args.epochs),
           "--socket", sock, "--root", args.root, "--workers", str(args.workers)] + (["--generator"] if args.generator else [])
    before = cpu_seconds(daemon.pid)
    out = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True, env=env)
    daemon_cpu = cpu_seconds(daemon.pid) - before
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    epochs = [r for r in rows if "epoch" in r]
    if out.returncode != 0 or len(epochs) != args.epochs:
        die(f"{system} on {case} failed (exit status {out.returncode}): {' '.join(cmd)}")
    bad = [r["epoch"] + 1 for r in epochs if not r["ok"]]
    if bad:
        die(f"{system} on {case}: epochs {bad} did not deliver every sample exactly once")
    steady = epochs[1:]
    seconds = statistics.median(r["seconds"] for r in steady)
    return {"epoch1_s": epochs[0]["seconds"], "epoch_s": seconds,
            "samples_per_s": epochs[0]["samples"] / seconds,
            "trainer_cpu_s": statistics.median(r["trainer_cpu_s"] for r in steady),
            "workers_cpu_s": rows[-1]["workers_cpu_s"] / args.epochs,
            "daemon_cpu_s": daemon_cpu / args.epochs if system == "batchd" else 0.0,
            "slot_growths": rows[-1]["slot_growths"]}


def compare(args, sock, daemon, env):
    """{case: {system: medians, "runs": ..., "ratio": ...}}, the runs alternating."""
    report = {}
    for case in args.cases:
        runs = {s: [] for s in SYSTEMS}
        for r in range(args.repeats):
            for system in (SYSTEMS if r % 2 == 0 else SYSTEMS[::-1]):
                runs[system].append(run(args, system, case, sock, daemon, env))
                print(f"{case} {system}: epoch {runs[system][-1]['epoch_s']:.3f} s", file=sys.stderr)
        ratios = sorted(d["epoch_s"] / b["epoch_s"] for d, b in zip(runs["DataLoader"], runs["batchd"]))
        entry = {s: {k: statistics.median(x[k] for x in runs[s]) for k in runs[s][0]}
                 for s in SYSTEMS}
        entry.update(ratio=round(statistics.median(ratios), 2), ratio_min=round(ratios[0], 2),
                     ratio_max=round(ratios[-1], 2), goal=GOALS[case], runs=runs)
        entry["met"] = entry["ratio"] >= GOALS[case]
        report[case] = entry
    return report


def print_table(args, report):
    sampler = ", generator= (batchd runs DataLoader's sampler in the trainer)" if args.generator else ""
    print(f"batch {BATCH}, num_workers {args.workers}, prefetch_factor {PREFETCH}, shuffle{sampler}; {args.epochs} epochs per run, "
          f"epoch = median of epochs 2..{args.epochs}; median of {args.repeats} alternating runs per system\n")
    print("| case | system | epoch 1 (start-up) s | epoch s | samples/s | trainer CPU s/epoch | workers CPU s/epoch "
          "| daemon CPU s/epoch | slot growths | DataLoader / batchd epoch time: median (min-max) | goal |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for case, e in report.items():
        for s in SYSTEMS:
            r = e[s]
            ratio = f"**{e['ratio']:.2f}** ({e['ratio_min']:.2f}-{e['ratio_max']:.2f})" if s == "batchd" else ""
            goal = f">= {e['goal']:.1f}: {'met' if e['met'] else 'NOT met'}" if s == "batchd" else ""
            growths = f"{max(x['slot_growths'] for x in e['runs'][s])}" if s == "batchd" else ""
            print(f"| {case} | {s} | {r['epoch1_s']:.2f} | {r['epoch_s']:.3f} | {r['samples_per_s']:,.0f} | "
                  f"{r['trainer_cpu_s']:.3f} | {r['workers_cpu_s']:.2f} | {r['daemon_cpu_s']:.3f} | {growths} | "
                  f"{ratio} | {goal} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epochs", type=int, default=10, help="per run; >= 2 (epoch 1 is start-up)")
    ap.add_argument("--repeats", type=int, default=3, help="alternating runs per system and case")
    ap.add_argument("--images", type=int, default=1000, help="JPEGs in the imagefolder case's tree")
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="the build with bin/batchd and python/")
    ap.add_argument("--data", default=os.path.join(ROOT, "build", "bench-data"),
                    help="where the imagefolder case's tree is made once (DATA/imagefolder-N)")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    ap.add_argument("--workers", type=int, default=4, help="num_workers of both loaders")
    ap.add_argument("--generator", action="store_true",
                    help="both loaders get a generator: batchd runs DataLoader's sampler in the trainer")
    ap.add_argument("--trainer", choices=SYSTEMS, help=argparse.SUPPRESS)
    ap.add_argument("--case", help=argparse.SUPPRESS)
    ap.add_argument("--socket", help=argparse.SUPPRESS)
    ap.add_argument("--root", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.trainer:
        return trainer(args)
    args.cases = args.cases.split(",")
    if args.epochs < 2 or args.repeats < 1 or not set(args.cases) <= set(CASES):
        die(f"need --epochs >= 2, --repeats >= 1 and --cases of {', '.join(CASES)}")
    bin_ = os.path.join(args.build, "bin", "batchd")
    if not os.access(bin_, os.X_OK):
        die(f"{bin_} not found: build it (./setup.sh) or give --build DIR")
    args.root = os.path.join(args.data, f"imagefolder-{args.images}")
    if "imagefolder" in args.cases:
        ensure_tree(args.root, args.images, PY)
    env = dict(os.environ, PYTHONPATH=os.path.join(args.build, "python"))
    with tempfile.TemporaryDirectory(prefix="batchd-own-") as tmp:
        sock = os.path.join(tmp, "batchd.sock")
        daemon = subprocess.Popen([bin_, "--socket", sock, "--workers", "1", "--log-level", "warn",
                                   "--exit-with-parent", str(os.getpid())])
        try:
            while not os.path.exists(sock):
                if daemon.poll() is not None:
                    die(f"{bin_} exited with status {daemon.returncode} at start-up")
                time.sleep(0.01)
            report = compare(args, sock, daemon, env)
        finally:
            daemon.terminate()
            daemon.wait()
    machine = machine_info(torch.__version__)
    if args.json:
        print(json.dumps({"benchmark": "compare_own_dataset", "generator": args.generator, "batch_size": BATCH,
                          "workers": args.workers,
                          "prefetch_factor": PREFETCH, "epochs": args.epochs, "repeats": args.repeats,
                          "images": args.images, "machine": machine, "cases": report}, indent=2))
        return 0
    print_table(args, report)
    print("\n" + machine_line(machine))
    return 0


if __name__ == "__main__":
    sys.exit(main())
