"""The baseline: torch.utils.data.DataLoader over torchvision.datasets.ImageFolder (bench/peers, issue 42).

What it runs: ImageFolder(root, transform=common.transform(recipe)) (PIL decode + convert("RGB"), then
torchvision's RandomResizedCrop/flip or Resize(256)/CenterCrop(224), ToTensor, Normalize) in a
DataLoader(batch_size=64, shuffle=True, num_workers=W, persistent_workers=True, pin_memory=False,
drop_last=False), torch.set_num_threads(1) in the main process.

Configuration and its source: the reference ImageNet training script of PyTorch
(pytorch/examples imagenet/main.py and torchvision's references/classification/train.py: ImageFolder +
these transforms + DataLoader(num_workers=W, shuffle=True)); persistent_workers=True as the DataLoader docs
recommend to keep worker processes across epochs; pin_memory off since there is no GPU. Worker processes use
torch's default start method on Linux (fork) and torch's default prefetch_factor (2 batches per worker).

--dump-eval N: the same dataset and eval transform, torch.utils.data.Subset(range(N)) unshuffled: this is the
reference every other peer's dump is compared with.
"""
import sys
import time

import common

NAME = "dataloader"


def main():
    t0 = time.monotonic()
    args = common.parse_args()
    try:
        import torch
        from torch.utils.data import DataLoader, Subset
        from torchvision.datasets import ImageFolder
    except Exception as e:  # noqa: BLE001 - reported as the peer's error
        common.fail(NAME, f"{type(e).__name__}: {e}")
    torch.set_num_threads(1)
    ds = ImageFolder(args.root, transform=common.transform(args.recipe))
    samples = common.imagefolder_samples(args.root)
    if [(p, int(c)) for p, c in ds.samples] != samples:
        common.fail(NAME, "common.imagefolder_samples differs from torchvision ImageFolder's order", 1)
    if args.dump_eval:
        dl = DataLoader(Subset(ds, range(args.dump_n)), batch_size=args.batch_size, shuffle=False,
                        num_workers=args.workers)
        batches = list(dl)
        common.save_dump(NAME, args, torch.cat([b[0] for b in batches]), torch.cat([b[1] for b in batches]), samples)
        return
    dl = DataLoader(ds, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                    persistent_workers=args.workers > 0, pin_memory=False, drop_last=False)
    common.Epochs(NAME, torch.__version__, args, samples, t0).run(lambda e: iter(dl))


if __name__ == "__main__":
    sys.exit(main())
