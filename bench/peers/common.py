"""Shared by bench/peers/run_<name>.py (issue 42): the command line, the JSON lines, the batch checks, the two
torchvision recipes, and torchvision ImageFolder's order of a tree, so that every peer runner means the same.

Recipes (torchvision's, exactly): train = RandomResizedCrop(224, bilinear, scale (0.08, 1), ratio (3/4, 4/3)),
RandomHorizontalFlip(0.5), ToTensor, Normalize(ImageNet mean, std); eval = Resize(256, bilinear, antialias),
CenterCrop(224), ToTensor, Normalize. Batches: float32 [b,3,224,224] images and int64 [b] labels, b = the batch
size or, once an epoch, the remainder (the last batch; a peer that yields batches in completion order, SPDL,
may deliver it before others). An epoch must yield every image once: checked as exactly as many samples as the
tree has images, each label exactly as often as in the tree (the images themselves are not identified).

Only the standard library is imported at module level, so a runner's first_batch_s counts the import of torch and
of its peer. `python common.py DUMP_A.npy DUMP_B.npy` prints how far two --dump-eval outputs are apart in uint8
levels (|a-b| * std * 255, per channel): {"mean": ..., "max": ..., "n": ...}.
"""
import argparse
import json
import math
import os
import sys
import time

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
SIZE = 224
RESIZE = 256
SCALE = (0.08, 1.0)
RATIO = (3.0 / 4.0, 4.0 / 3.0)
# torchvision.datasets.folder.IMG_EXTENSIONS
IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def parse_args(argv=None, extra=None):
    """The runners' shared command line; extra(parser) adds a runner's own options."""
    p = argparse.ArgumentParser(description="Time one data loader over an ImageFolder tree (bench/peers).")
    p.add_argument("--root", required=True, help="ImageFolder tree: ROOT/<class>/<image>")
    p.add_argument("--recipe", choices=("train", "eval"), default="train")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--workers", type=int, default=os.cpu_count(), help="worker processes/threads (default: CPUs)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--work-dir", default="/tmp/batchd-peers", help="where a converted copy of the tree is kept")
    p.add_argument("--dump-eval", nargs=2, metavar=("N", "OUT"),
                   help="instead of timing: the eval recipe over the first N images in ImageFolder order, "
                        "unshuffled, saved as float32 [N,3,224,224] with numpy.save")
    if extra:
        extra(p)
    a = p.parse_args(argv)
    if a.dump_eval:
        a.dump_n, a.dump_out = int(a.dump_eval[0]), a.dump_eval[1]
        a.recipe = "eval"
    return a


def emit(obj):
    print(json.dumps(obj), flush=True)


def fail(system, error, code=3, key="error"):
    """A peer that cannot be imported or run (exit 3), or a failed check (exit 1): one JSON line, then exit."""
    emit({"system": system, key: str(error)})
    sys.exit(code)


def find_classes(root):
    """torchvision.datasets.folder.find_classes: the sorted names of root's subfolders."""
    classes = sorted(e.name for e in os.scandir(root) if e.is_dir())
    if not classes:
        raise FileNotFoundError(f"no class folders in {root}")
    return classes


def imagefolder_samples(root):
    """[(path, label)] in torchvision ImageFolder's order (datasets.folder.make_dataset): classes sorted, then
    each class folder walked (followlinks, sorted) with its files sorted; only IMG_EXTENSIONS, case-insensitive."""
    out = []
    for label, c in enumerate(find_classes(root)):
        for dirpath, _, fnames in sorted(os.walk(os.path.join(root, c), followlinks=True)):
            for f in sorted(fnames):
                if f.lower().endswith(IMG_EXTENSIONS):
                    out.append((os.path.join(dirpath, f), label))
    return out


def pil_rgb(path_or_file):
    """torchvision.datasets.folder.pil_loader: decode with PIL and convert to RGB (grey JPEGs too)."""
    from PIL import Image
    with (open(path_or_file, "rb") if isinstance(path_or_file, str) else path_or_file) as f:
        img = Image.open(f)
        return img.convert("RGB")


def transform(recipe):
    """The torchvision Compose of a recipe (PIL image in, normalized float32 CHW tensor out)."""
    from torchvision import transforms as T
    bilinear = T.InterpolationMode.BILINEAR
    if recipe == "train":
        head = [T.RandomResizedCrop(SIZE, scale=SCALE, ratio=RATIO, interpolation=bilinear),
                T.RandomHorizontalFlip(0.5)]
    else:
        head = [T.Resize(RESIZE, interpolation=bilinear), T.CenterCrop(SIZE)]
    return T.Compose(head + [T.ToTensor(), T.Normalize(MEAN, STD)])


def rrc_params(width, height, rng):
    """torchvision RandomResizedCrop.get_params(img, SCALE, RATIO) for an image of width x height, drawing from
    rng (a random.Random): (top, left, h, w) of the crop, 10 tries, then the central crop in the ratio range."""
    area = width * height
    log_ratio = (math.log(RATIO[0]), math.log(RATIO[1]))
    for _ in range(10):
        target_area = area * rng.uniform(*SCALE)
        aspect = math.exp(rng.uniform(*log_ratio))
        w = int(round(math.sqrt(target_area * aspect)))
        h = int(round(math.sqrt(target_area / aspect)))
        if 0 < w <= width and 0 < h <= height:
            return rng.randint(0, height - h), rng.randint(0, width - w), h, w
    in_ratio = width / height
    if in_ratio < min(RATIO):
        w, h = width, int(round(width / min(RATIO)))
    elif in_ratio > max(RATIO):
        h, w = height, int(round(height * max(RATIO)))
    else:
        w, h = width, height
    return (height - h) // 2, (width - w) // 2, h, w


def eval_geometry(width, height):
    """torchvision Resize(256) then CenterCrop(224) for an image of width x height: the resized (w, h), then the
    crop's (left, top) in it (transforms.functional._compute_resized_output_size and center_crop)."""
    short, long = (width, height) if width <= height else (height, width)
    new_short, new_long = RESIZE, int(RESIZE * long / short)
    w, h = (new_short, new_long) if width <= height else (new_long, new_short)
    return w, h, int(round((w - SIZE) / 2.0)), int(round((h - SIZE) / 2.0))


class Epochs:
    """Runs a runner's epochs: times each, checks each batch, prints the JSON lines.

    samples: the tree's imagefolder_samples; each epoch must yield each label as often as the tree has it.
    t0: time.monotonic() at the runner's first line of main (before any import of the peer)."""

    def __init__(self, system, version, args, samples, t0):
        self.system, self.version, self.args, self.n, self.t0 = system, version, args, len(samples), t0
        self.counts = [0] * (max(lab for _, lab in samples) + 1)
        for _, lab in samples:
            self.counts[lab] += 1

    def check(self, images, labels, seen, partial):
        import torch
        bs = self.args.batch_size
        if not isinstance(images, torch.Tensor) or not isinstance(labels, torch.Tensor):
            fail(self.system, f"batch is {type(images).__name__}/{type(labels).__name__}, not torch tensors", 1)
        b = images.shape[0] if images.dim() == 4 else -1
        if images.dtype != torch.float32 or tuple(images.shape) != (b, 3, SIZE, SIZE):
            fail(self.system, f"images {images.dtype} {list(images.shape)}, not float32 [b,3,{SIZE},{SIZE}]", 1)
        if labels.dtype != torch.int64 or tuple(labels.shape) != (b,):
            fail(self.system, f"labels {labels.dtype} {list(labels.shape)}, not int64 [{b}]", 1)
        if b != bs and (b < 1 or b > bs or partial or b != self.n % bs):
            fail(self.system, f"a batch of {b} after {seen} samples (batch size {bs}, {self.n} images): only the "
                              f"remainder ({self.n % bs}) may come as a partial batch, once an epoch", 1)
        if not 0 <= int(labels.min()) <= int(labels.max()) < len(self.counts):
            fail(self.system, f"labels out of range: {int(labels.min())}..{int(labels.max())}", 1)
        return b

    def run(self, epoch_iter):
        """epoch_iter(epoch) -> an iterator of (images, labels) torch batches for that epoch."""
        for e in range(self.args.epochs):
            start = time.monotonic()
            seen, first, partial, counts = 0, None, False, None
            for images, labels in epoch_iter(e):
                if first is None:
                    first = time.monotonic() - self.t0
                b = self.check(images, labels, seen, partial)
                partial, seen = partial or b != self.args.batch_size, seen + b
                c = labels.bincount(minlength=len(self.counts))
                counts = c if counts is None else counts + c
            secs = time.monotonic() - start
            if seen != self.n:
                fail(self.system, f"epoch {e} yielded {seen} samples, the tree has {self.n} images", 1)
            if counts.tolist() != self.counts:
                fail(self.system, f"epoch {e}'s labels {counts.tolist()} are not the tree's {self.counts}", 1)
            line = {"system": self.system, "version": self.version, "recipe": self.args.recipe, "epoch": e,
                    "samples": seen, "seconds": round(secs, 4)}
            if e == 0:
                line["first_batch_s"] = round(first, 4)
            emit(line)


def conversion_line(system, seconds, nbytes):
    emit({"system": system, "conversion_s": round(seconds, 3), "converted_bytes": int(nbytes)})


def dir_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def save_dump(system, args, images, labels, samples):
    """images: float32 [N,3,224,224] (torch or numpy) of the first N images in ImageFolder order; labels checked."""
    import numpy as np
    images = images.numpy() if hasattr(images, "numpy") else np.asarray(images)
    labels = [int(x) for x in (labels.tolist() if hasattr(labels, "tolist") else labels)]
    n = args.dump_n
    want = [lab for _, lab in samples[:n]]
    if images.dtype != np.float32 or images.shape != (n, 3, SIZE, SIZE):
        fail(system, f"dump is {images.dtype} {list(images.shape)}, not float32 [{n},3,{SIZE},{SIZE}]", 1)
    if labels != want:
        fail(system, f"dump labels {labels} are not ImageFolder's order {want}", 1, key="dump_error")
    np.save(args.dump_out, np.ascontiguousarray(images))
    emit({"system": system, "dump": args.dump_out, "images": n})


def diff_dumps(a, b):
    import numpy as np
    x, y = np.load(a), np.load(b)
    if x.shape != y.shape:
        return {"error": f"shapes differ: {x.shape} vs {y.shape}"}
    lv = np.abs(x.astype(np.float64) - y) * (np.array(STD).reshape(1, 3, 1, 1) * 255.0)
    return {"mean": round(float(lv.mean()), 3), "max": round(float(lv.max()), 2), "n": int(x.shape[0])}


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: common.py DUMP_A.npy DUMP_B.npy")
    emit(diff_dumps(sys.argv[1], sys.argv[2]))
