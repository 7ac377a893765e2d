#!/usr/bin/env python3
"""batchd's side of bench/compare_peers.py: batchd.Loader over the photo tree against a private daemon, a child of
this process (build/bin/batchd --workers W, a config declaring the tree as dataset "bench"), so that its CPU time and
memory count in this process's tree. Three ways a user reaches it, --variant:

  preset    batchd.Loader("bench", pipeline="train224" | "val224"): the daemon's own C++ pipelines
            (../shared/bench/torch_peer.py's recipes; bench/compare_imagefolder.py runs them with the C++ client)
  compose   batchd.Loader("bench", transform=<torchvision's Compose of the recipe>): the Compose translated into the
            daemon's ops (bench/compare_recipes.py)
  folder    batchd.Loader(torchvision.datasets.ImageFolder(root, transform=Compose)): the Loader recognises an
            ImageFolder and translates its transform, so the daemon's native ops serve it (client/python/batchd/
            _loader/folder.py)
  own       batchd.Loader(<a Dataset of the same samples, PIL decode + the Compose in __getitem__>, num_workers=W):
            a user's own Dataset, made by the Loader's attached worker processes (bench/compare_own_dataset.py)

The command line and the JSON lines are those of every runner in bench/peers/ (bench/compare_peers.py reads them);
the recipes are common.transform's. epoch 0 includes the daemon's start, its indexing of the tree and the plan; the
first batch counts from main's first line, before batchd or torch is imported.
"""
import os
import subprocess
import sys
import tempfile
import time

import common

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def daemon(tmp, root, workers):
    """A private daemon serving `root` as "bench": (process, socket)."""
    config = os.path.join(tmp, "batchd.toml")
    with open(config, "w") as f:
        f.write(f'[datasets.bench]\nformat = "imagefolder"\nroot = "{root}"\n')
    sock = os.path.join(tmp, "batchd.sock")
    proc = subprocess.Popen([os.path.join(ROOT, "build", "bin", "batchd"), "--socket", sock, "--workers",
                             str(workers), "--config", config, "--cache-dir", "", "--log-level", "warn"])
    while not os.path.exists(sock):
        if proc.poll() is not None:
            common.fail("batchd", f"batchd exited with {proc.returncode} at start-up")
        time.sleep(0.01)
    return proc, sock


def photo_dataset(samples, transform):
    """A user's own map-style Dataset over the tree: what torchvision's ImageFolder does, in Python (PIL decode,
    RGB, the Compose), so that the Loader cannot recognise it and its attached workers run it."""
    from torch.utils.data import Dataset

    class PhotoDataset(Dataset):
        def __len__(self):
            return len(samples)

        def __getitem__(self, i):
            path, label = samples[i]
            return transform(common.pil_rgb(path)), label

    return PhotoDataset()


def loader_of(args, sock, shuffle):
    import batchd
    kw = dict(batch_size=args.batch_size, shuffle=shuffle, socket=sock, as_dict=True)
    if args.depth is not None:
        kw["depth"] = args.depth
    if args.variant == "preset":
        return batchd.Loader("bench", pipeline={"train": "train224", "eval": "val224"}[args.recipe], **kw)
    transform = common.transform(args.recipe)
    if args.variant == "compose":
        return batchd.Loader("bench", transform=transform, **kw)
    if args.variant == "folder":
        import torchvision  # the preset never imports it (1.5 s here): a trainer on a preset need not
        return batchd.Loader(torchvision.datasets.ImageFolder(args.root, transform=transform), **kw)
    kw.pop("as_dict")  # an own Dataset's batches are its collated samples: [images, labels]
    return batchd.Loader(photo_dataset(common.imagefolder_samples(args.root), transform), num_workers=args.workers,
                         **kw)


def pair(batch):
    """(images, labels) of a batch: a dict of the daemon's pipelines, or an own Dataset's default_collate list."""
    return (batch["image"], batch["label"]) if isinstance(batch, dict) else (batch[0], batch[1])


def main():
    t0 = time.monotonic()
    def extra(p):
        p.add_argument("--variant", choices=["preset", "compose", "folder", "own"], default="preset")
        p.add_argument("--depth", type=int, default=None,
                       help="the stream's slots (batchd.Loader's depth=); default the Loader's (the daemon's 4 + 1)")

    args = common.parse_args(extra=extra)
    name = f"batchd_{args.variant}"
    try:
        import batchd
        import torch
    except Exception as e:  # noqa: BLE001 - reported as the system's error
        common.fail(name, f"{type(e).__name__}: {e}")
    samples = common.imagefolder_samples(args.root)
    with tempfile.TemporaryDirectory(prefix="batchd-peers-") as tmp:
        proc, sock = daemon(tmp, args.root, args.workers)
        try:
            if args.dump_eval:  # the eval recipe, unshuffled: ImageFolder's order
                loader = loader_of(args, sock, shuffle=False)
                images, labels = [], []
                for batch in loader:
                    image, label = pair(batch)
                    images.append(image.clone())
                    labels.append(label.clone())
                    if sum(len(x) for x in images) >= args.dump_n:
                        break
                loader.close()
                n = args.dump_n
                common.save_dump(name, args, torch.cat(images)[:n], torch.cat(labels)[:n], samples)
                return 0
            loader = loader_of(args, sock, shuffle=True)
            common.Epochs(name, getattr(batchd, "__version__", "dev"), args, samples, t0).run(
                lambda epoch: (pair(b) for b in loader))
            loader.close()
        finally:
            proc.terminate()
            proc.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
