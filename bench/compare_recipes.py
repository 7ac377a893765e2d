#!/usr/bin/env python3
"""Training recipes as data: batchd.Loader(transform=Compose) against DataLoader with the same Compose, one run.

    bench/compare_recipes.py [--images 2000] [--recipes new_train,new_eval,timm_train] [--batch-size 64]
                             [--workers 2] [--epochs 3] [--repeats 1] [--json]

Each recipe is ONE torchvision 0.14 Compose (and, for new_train, one batch transform), built once per process by
recipe() below and handed unchanged to both systems:

  new_train   pytorch/vision references/classification (v0.14), the "new recipe"'s train side: train.py with
              --train-crop-size 176 --auto-augment ta_wide --random-erase 0.1 --mixup-alpha 0.2 --cutmix-alpha 1.0
              (interpolation bilinear, hflip 0.5: the defaults), i.e. presets.py's ClassificationPresetTrain =
                RandomResizedCrop(176), RandomHorizontalFlip(0.5), TrivialAugmentWide(), PILToTensor(),
                ConvertImageDtype(torch.float), Normalize(ImageNet mean/std), RandomErasing(p=0.1)
              and train.py's collate_fn:  RandomChoice([RandomMixup(num_classes, p=1.0, alpha=0.2),
                                                        RandomCutmix(num_classes, p=1.0, alpha=1.0)])
              (RandomMixup/RandomCutmix: references/classification/transforms.py, written out in
              bench/mixup_cutmix.py; num_classes = len(ImageFolder.classes), as train.py takes it).
  new_eval    the same recipe's eval side, --val-resize-size 232 --val-crop-size 224: ClassificationPresetEval =
                Resize(232), CenterCrop(224), PILToTensor(), ConvertImageDtype(torch.float), Normalize.
  timm_train  timm's default train transform (huggingface/pytorch-image-models, timm/data/transforms_factory.py,
              transforms_imagenet_train with its defaults: img_size 224, scale (0.08, 1.0), ratio (3/4, 4/3),
              interpolation 'random', hflip 0.5, vflip 0, color_jitter 0.4, no auto-augment, no random erasing,
              IMAGENET_DEFAULT_MEAN/STD), which builds
                RandomResizedCropAndInterpolation(224, scale, ratio, interpolation='random'),
                RandomHorizontalFlip(p=0.5), ColorJitter(0.4, 0.4, 0.4) (a scalar jitter is (j, j, j), hue off),
                MaybeToTensor(), Normalize(mean, std).
              timm is not in Debian, so this is the equivalent torchvision Compose: RandomResizedCropAndInterpolation
              with 'random' picks bilinear or bicubic with equal odds per image (timm/data/transforms.py,
              _RANDOM_INTERPOLATION) and otherwise crops as RandomResizedCrop does, so it is written
                RandomChoice([RandomResizedCrop(224, scale, ratio, BILINEAR), RandomResizedCrop(224, scale, ratio,
                              BICUBIC)])
              (the same distribution of crops and of interpolations; batchd translates it to a random_choice of two
              random_resized_crop ops); MaybeToTensor is ToTensor on a PIL image.

Systems, each in a fresh process, alternating R times (--repeats), 2 workers and batch 64 by default, shuffled,
E epochs (--epochs), every one of the --images JPEGs once per epoch:
  batchd            batchd.Loader("bench", transform=<the Compose>, batch_transform=<the RandomChoice or None>,
                    batch_size=B, shuffle=True) in a Python loop that takes each batch and counts it (what a user
                    writes), against a private daemon (build/bin/batchd --workers W, a config declaring the image
                    folder as dataset "bench"). Epoch 0's clock starts before the daemon is spawned: it includes
                    the daemon's start, its indexing of the folder and the stream's planning. Every epoch must
                    deliver each image exactly once (the batches' "index" tensors), or this exits 1.
  torch.DataLoader  DataLoader(torchvision.datasets.ImageFolder(ROOT, transform=<the Compose>) (PIL loader),
                    batch_size=B, shuffle=True, num_workers=W, collate_fn=<the RandomChoice over default_collate,
                    as train.py> or None, pin_memory=False, persistent_workers=True), torch.set_num_threads(1) as
                    ../shared/bench/torch_peer.py; epoch 0 includes the workers' start.
Both loops check the batches' shapes (image [B, 3, C, C]; label int64 [B], or float one-hot [B, classes] after the
batch transform). The tree is ../shared/data/make_imagefolder.py ROOT N 0 under build/bench-data/, made once
(compare_imagefolder.ensure_tree). Reported: epoch-0 and steady-state (mean of epochs >= 1) images/s, median over
the runs, and batchd / DataLoader at steady state. --json prints one object instead, compare_imagefolder's shape:
{"benchmark": "compare_recipes", ..., "machine": {...}, "pipelines": {recipe: {"results": {system: {...}},
"ratio_steady": ..., "spec": <batchd's canonical spec of the recipe>, "batchd_stages_us_per_sample": {...}}}}
(bench/plot.py draws it). batchd's per-stage worker time per image (read, decode, crop_resize = every op between
decode and the last write, normalize_collate) comes from one more run per recipe, after the timed ones:
build/bin/batchd-bench --stages over the canonical spec the Loader's daemon returned, declared as a [pipelines]
table (the same ops, the C++ client; not part of the ratios).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from types import SimpleNamespace

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_fmnist import ROOT, die, machine_info, machine_line, medians, summarize  # noqa: E402
from compare_imagefolder import ensure_tree, print_table  # noqa: E402
from compare_python import daemon_at  # noqa: E402

from project_python import DEFAULT_PYTHON, NEEDS  # noqa: E402

RECIPES = ["new_train", "new_eval", "timm_train"]
SYSTEMS = ["batchd", "torch.DataLoader"]
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def recipe(name, num_classes):
    """(transform, batch_transform or None, output size) of a recipe (the module docstring says where each is
    from)."""
    import torch
    from torchvision import transforms as T
    from mixup_cutmix import RandomCutmix, RandomMixup
    bilinear, bicubic = T.InterpolationMode.BILINEAR, T.InterpolationMode.BICUBIC
    if name == "new_train":
        transform = T.Compose([
            T.RandomResizedCrop(176, interpolation=bilinear), T.RandomHorizontalFlip(0.5),
            T.TrivialAugmentWide(interpolation=bilinear), T.PILToTensor(), T.ConvertImageDtype(torch.float),
            T.Normalize(mean=IMAGENET_MEAN, std=IMAGENET_STD), T.RandomErasing(p=0.1)])
        mixup_cutmix = T.RandomChoice([RandomMixup(num_classes, p=1.0, alpha=0.2),
                                       RandomCutmix(num_classes, p=1.0, alpha=1.0)])
        return transform, mixup_cutmix, 176
    if name == "new_eval":
        return T.Compose([
            T.Resize(232, interpolation=bilinear), T.CenterCrop(224), T.PILToTensor(),
            T.ConvertImageDtype(torch.float), T.Normalize(mean=IMAGENET_MEAN, std=IMAGENET_STD)]), None, 224
    if name == "timm_train":
        scale, ratio = (0.08, 1.0), (3.0 / 4.0, 4.0 / 3.0)
        return T.Compose([
            T.RandomChoice([T.RandomResizedCrop(224, scale=scale, ratio=ratio, interpolation=bilinear),
                            T.RandomResizedCrop(224, scale=scale, ratio=ratio, interpolation=bicubic)]),
            T.RandomHorizontalFlip(p=0.5), T.ColorJitter(0.4, 0.4, 0.4), T.ToTensor(),
            T.Normalize(mean=IMAGENET_MEAN, std=IMAGENET_STD)]), None, 224
    die(f"unknown recipe {name!r}; known: {', '.join(RECIPES)}")


def check_batch(images, labels, size, num_classes, mixed, where):
    """A batch as the recipe makes it: images float32 [b, 3, size, size]; labels int64 [b], or float32 one-hot
    [b, num_classes] when mixed."""
    b = images.shape[0]
    want = (b, num_classes, "torch.float32") if mixed else (b, "torch.int64")
    got = (*labels.shape, str(labels.dtype))
    if (*images.shape[1:], str(images.dtype)) != (3, size, size, "torch.float32") or got != want:
        die(f"{where}: a batch of images {images.dtype} {list(images.shape)} and labels {labels.dtype} "
            f"{list(labels.shape)}, expected float32 [{b}, 3, {size}, {size}] and {want}")


def epoch_row(system, epoch, n, seconds, **extra):
    row = {"system": system, "epoch": epoch, "samples": n, "seconds": round(seconds, 4),
           "samples_per_s": round(n / seconds, 1), **extra}
    print(json.dumps(row), flush=True)


def write_config(directory, root, more=""):
    """directory/batchd.toml declaring the image folder as dataset "bench" (and `more`); its path."""
    config = os.path.join(directory, "batchd.toml")
    with open(config, "w") as f:
        f.write(f'[datasets.bench]\nformat = "imagefolder"\nroot = "{root}"\n{more}')
    return config


def run_batchd(args, root, num_classes):
    """A child: batchd.Loader over the recipe against a private daemon, one JSON line per epoch (and the spec)."""
    import batchd
    import torch
    transform, batch_transform, size = recipe(args.recipe, num_classes)
    with tempfile.TemporaryDirectory(prefix="batchd-recipes-") as tmp:
        config = write_config(tmp, root)
        start = time.perf_counter()  # epoch 0 includes the daemon's start
        with daemon_at(SimpleNamespace(socket=None, workers=args.workers, config=config)) as sock:
            loader = batchd.Loader("bench", transform=transform, batch_transform=batch_transform,
                                   batch_size=args.batch_size, shuffle=True, socket=sock, as_dict=True)
            print(json.dumps({"spec": loader.spec}), flush=True)
            for epoch in range(args.epochs):
                n, seen = 0, []
                for batch in loader:
                    check_batch(batch["image"], batch["label"], size, num_classes, batch_transform is not None,
                                f"batchd {args.recipe} epoch {epoch}")
                    n += batch["image"].shape[0]
                    seen.append(batch["index"].clone())
                seconds = time.perf_counter() - start
                unique = int(torch.cat(seen).unique().numel()) if seen else 0
                epoch_row("batchd", epoch, n, seconds, unique_indices=unique)
                start = time.perf_counter()


def run_dataloader(args, root, num_classes):
    """A child: DataLoader over torchvision's ImageFolder with the same recipe, one JSON line per epoch."""
    import torch
    import torchvision
    from torch.utils.data import DataLoader, default_collate
    torch.set_num_threads(1)
    transform, batch_transform, size = recipe(args.recipe, num_classes)
    dataset = torchvision.datasets.ImageFolder(root, transform=transform)
    collate_fn = None
    if batch_transform is not None:
        def collate_fn(samples):  # train.py's
            return batch_transform(*default_collate(samples))
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                        collate_fn=collate_fn, pin_memory=False, persistent_workers=args.workers > 0)
    for epoch in range(args.epochs):
        start, n = time.perf_counter(), 0
        for images, labels in loader:
            check_batch(images, labels, size, num_classes, batch_transform is not None,
                        f"torch.DataLoader {args.recipe} epoch {epoch}")
            n += images.shape[0]
        epoch_row("torch.DataLoader", epoch, n, time.perf_counter() - start, torch=torch.__version__)


def run_system(args, system, recipe_name):
    """Runs one system in a child process; (its epoch rows, the spec batchd printed or None)."""
    cmd = [args.python, os.path.abspath(__file__), "--child", system, "--recipe", recipe_name,
           "--images", str(args.images), "--batch-size", str(args.batch_size), "--workers", str(args.workers),
           "--epochs", str(args.epochs)]
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "build", "python"))
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True, env=env)
    if proc.returncode != 0:
        die(f"{system} {recipe_name} failed with exit status {proc.returncode}: {' '.join(cmd)}")
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    rows = [r for r in lines if "epoch" in r]
    if [r["epoch"] for r in rows] != list(range(args.epochs)):
        die(f"{system} {recipe_name} printed epochs {[r['epoch'] for r in rows]}, expected 0..{args.epochs - 1}")
    for r in rows:
        if r["samples"] != args.images or (system == "batchd" and r["unique_indices"] != args.images):
            die(f"{system} {recipe_name} epoch {r['epoch']}: samples={r['samples']} "
                f"unique={r.get('unique_indices')}, expected {args.images} (every image once)")
    return rows, next((r["spec"] for r in lines if "spec" in r), None)


def toml(value):
    """A JSON value (a canonical spec) as a TOML value: inline tables and arrays."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml(v)}" for k, v in value.items()) + " }"
    return json.dumps(value)


def stages(args, recipe_name, spec):
    """batchd's worker time per image (µs) for the recipe: build/bin/batchd-bench --stages over its canonical spec,
    declared as [pipelines.RECIPE] of the spawned daemon's config; one run of 2 epochs, outside the timed ones."""
    with tempfile.TemporaryDirectory(prefix="batchd-recipes-") as tmp:
        table = "".join(f"{key} = {toml(ops)}\n" for key, ops in spec.items() if ops)
        config = write_config(tmp, tree(args), f"\n[pipelines.{recipe_name}]\n{table}")
        cmd = [os.path.join(ROOT, "build", "bin", "batchd-bench"), "--spawn", "--config", config, "--dataset",
               "bench", "--pipeline", recipe_name, "--batch-size", str(args.batch_size), "--workers",
               str(args.workers), "--epochs", "2", "--stages", "--json"]
        proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        die(f"batchd-bench --stages {recipe_name} failed with exit status {proc.returncode}: {' '.join(cmd)}")
    rows = [json.loads(line) for line in proc.stdout.splitlines() if "stages_us_per_sample" in line]
    return {key: round(value, 1) for key, value in rows[-1]["stages_us_per_sample"].items()}


def tree(args):
    return os.path.join(ROOT, "build", "bench-data", f"imagefolder-{args.images}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--recipes", default=",".join(RECIPES))
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--python", default=DEFAULT_PYTHON,
                    help="interpreter for both systems' processes (needs torch and torchvision)")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    ap.add_argument("--child", choices=SYSTEMS, help=argparse.SUPPRESS)
    ap.add_argument("--recipe", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        from torchvision.datasets.folder import find_classes
        root = tree(args)
        num_classes = len(find_classes(root)[0])  # train.py: len(dataset.classes)
        (run_batchd if args.child == "batchd" else run_dataloader)(args, root, num_classes)
        return 0
    recipes = args.recipes.split(",")
    unknown = [r for r in recipes if r not in RECIPES]
    if unknown or args.epochs < 2 or args.repeats < 1:
        die(f"need --recipes from {','.join(RECIPES)} (got {','.join(unknown) or 'those'}), --epochs >= 2 (steady "
            "state is epochs >= 1) and --repeats >= 1")
    if not os.access(os.path.join(ROOT, "build", "bin", "batchd"), os.X_OK):
        die("build/bin/batchd not found; build it with ./setup.sh")
    if subprocess.run([args.python, "-c", "import torch, torchvision"]).returncode != 0:
        die(f"{args.python} cannot import torch/torchvision: {NEEDS} (or pass --python PATH)", 2)
    ensure_tree(tree(args), args.images, args.python)

    report, torch_version = {}, "unknown"
    for name in recipes:
        runs, spec = {system: [] for system in SYSTEMS}, None
        for _ in range(args.repeats):
            for system in SYSTEMS:
                rows, printed = run_system(args, system, name)
                spec = printed or spec
                torch_version = rows[0].get("torch", torch_version)
                runs[system].append(summarize(rows))
        result = medians(runs)
        ratio = result["batchd"]["steady_samples_per_s"] / result["torch.DataLoader"]["steady_samples_per_s"]
        ratio0 = result["batchd"]["epoch0_samples_per_s"] / result["torch.DataLoader"]["epoch0_samples_per_s"]
        report[name] = {"results": result, "runs": runs, "ratio_steady": round(ratio, 2),
                        "ratio_epoch0": round(ratio0, 2), "spec": spec,
                        "batchd_stages_us_per_sample": stages(args, name, spec)}

    machine = machine_info(torch_version)
    if args.json:
        print(json.dumps({"benchmark": "compare_recipes", "images": args.images, "batch_size": args.batch_size,
                          "workers": args.workers, "epochs": args.epochs, "repeats": args.repeats,
                          "batchd_client": "batchd.Loader (Python)", "machine": machine, "pipelines": report},
                         indent=2))
        return 0
    print(f"ImageFolder of {args.images} JPEGs, the same torchvision Compose on both sides, {args.epochs} epochs per "
          f"run, median of {args.repeats} run(s); batchd = batchd.Loader (Python loop)\n")
    print_table(report, args)
    print("\nepoch-0 ratios: " + ", ".join(f"{name} {rep['ratio_epoch0']:.2f}x" for name, rep in report.items()))
    print("\nbatchd worker time per image (µs; batchd-bench --stages over the same spec, after the timed runs):")
    for name, rep in report.items():
        print(f"  {name}: {rep['batchd_stages_us_per_sample']}")
    print("\n" + machine_line(machine))
    return 0


if __name__ == "__main__":
    sys.exit(main())
