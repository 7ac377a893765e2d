#!/usr/bin/env python3
"""Train an image classifier on an ImageFolder tree, written the way torchvision's classification reference
(references/classification/train.py) and the PyTorch ImageNet example (imagenet/main.py) are, with either
torch.utils.data.DataLoader or batchd.Loader. The two differ by one name: DataLoader( becomes batchd.Loader(, every
argument as it is (see `--loader` in main()).

    PYTHONPATH=build/python examples/train_imagefolder.py DATA [--loader batchd|torch] [--epochs 1] [-b 32]
    torchrun --nproc_per_node 2 examples/train_imagefolder.py DATA ...      # distributed (gloo on CPU, nccl on GPU)

DATA holds train/ and val/, each an ImageFolder tree (DATA/train/<class>/<image>.jpg). Train: RandomResizedCrop,
RandomHorizontalFlip, ToTensor, Normalize; val: Resize, CenterCrop, ToTensor, Normalize (the sizes are flags, as in
the reference). The model is a torchvision model by name (--arch, default resnet18) with one output per class of the
training folder; SGD with momentum, cross-entropy. Distributed (WORLD_SIZE > 1, as torchrun sets it): a
DistributedSampler for training (set_epoch each epoch), DistributedSampler(shuffle=False, drop_last=True) for
validation plus a Subset loader for the samples it drops, as the ImageNet example does; counts are all-reduced.

With --loader batchd and no daemon answering (no $BATCHD_SOCKET, nothing at /run/batchd/batchd.sock), batchd.Loader
starts a daemon private to this process that declares the folders and ends with it; with $BATCHD_SOCKET naming a
daemon that declares them (format "imagefolder", root = the folder), that daemon serves them.

Each epoch prints (the ctest example_train_imagefolder reads these lines):
    epoch E train: S samples of N (len(loader.dataset)), loss L, acc@1 A%, data wait W ms/step
    epoch E val: S samples of N (len(loader.dataset)), loss L, acc@1 A%, acc@5 B%
S counts the samples the loop saw (all ranks), N is len(loader.dataset): one epoch reads each sample once, so S == N
(training: exactly when the DistributedSampler's padding is not needed, i.e. N divisible by the world size). One
difference remains, in distributed validation: the Subset loader has no sampler, so DataLoader reads the whole tail
on every rank where batchd.Loader reads this rank's share of it; val's S is then N - k + 1 for a tail of
k = N mod world_size >= 2 samples (docs/switching.md, "imagenet/main.py").
Needs torch and torchvision (the project venv's: .venv/bin/python, ./setup.sh --tests).
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torchvision.datasets as datasets
import torchvision.models as models
import torchvision.transforms as transforms
from torch.utils.data import Subset

import batchd


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", metavar="DIR", help="folder with train/ and val/ ImageFolder trees")
    ap.add_argument("--loader", choices=("batchd", "torch"), default="batchd",
                    help="batchd.Loader or torch.utils.data.DataLoader (default batchd)")
    ap.add_argument("-a", "--arch", default="resnet18", help="a torchvision.models constructor (default resnet18)")
    ap.add_argument("-j", "--workers", type=int, default=2, help="num_workers (default 2)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("-b", "--batch-size", type=int, default=32, help="per process (default 32)")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--wd", "--weight-decay", type=float, default=1e-4, dest="weight_decay")
    ap.add_argument("--train-crop-size", type=int, default=224)
    ap.add_argument("--val-resize-size", type=int, default=256)
    ap.add_argument("--val-crop-size", type=int, default=224)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--seed", type=int, default=0, help="torch.manual_seed (the model's initial weights)")
    return ap.parse_args()


def init_distributed(args):
    """torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK) -> a process group; else a single process."""
    args.world_size = int(os.environ.get("WORLD_SIZE", "1"))
    args.distributed = args.world_size > 1
    if args.distributed:
        if args.device.startswith("cuda"):
            args.device = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
            torch.cuda.set_device(torch.device(args.device))
        dist.init_process_group("nccl" if args.device.startswith("cuda") else "gloo", init_method="env://")


def reduced(values, device):
    """[sum over ranks of each value] (the values themselves in a single process)."""
    if not dist.is_initialized():
        return list(values)
    t = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return t.tolist()


def topk_correct(output, target, ks):
    """Samples whose label is among the k best outputs, for each k (k capped at the number of classes)."""
    best = output.topk(min(max(ks), output.shape[1]), dim=1).indices
    hits = best.eq(target.view(-1, 1))
    return [hits[:, :k].any(dim=1).sum().item() for k in ks]


def train_one_epoch(model, criterion, optimizer, loader, device, epoch):
    model.train()
    seen = loss_sum = correct = 0.0
    steps, wait, ready = 0, 0.0, time.perf_counter()
    for images, target in loader:
        wait += time.perf_counter() - ready
        images = images.to(device, non_blocking=True)
        target = target.to(device, non_blocking=True)
        output = model(images)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        seen += images.size(0)
        loss_sum += loss.item() * images.size(0)
        correct += topk_correct(output, target, (1,))[0]
        steps += 1
        ready = time.perf_counter()
    seen, loss_sum, correct = reduced([seen, loss_sum, correct], device)
    print(f"epoch {epoch} train: {int(seen)} samples of {len(loader.dataset)} (len(loader.dataset)), "
          f"loss {loss_sum / seen:.4f}, acc@1 {100 * correct / seen:.2f}%, "
          f"data wait {1e3 * wait / max(steps, 1):.1f} ms/step", flush=True)


def validate(model, criterion, val_loader, args, device, epoch, DataLoader):
    """As the ImageNet example: each rank reads its DistributedSampler share (drop_last=True), the sums are
    all-reduced, then every rank reads the samples past world_size * len(sampler) through a Subset loader and adds
    them to its (already reduced) sums, so every sample is counted exactly once."""
    model.eval()
    sums = [0.0, 0.0, 0.0, 0.0]  # samples, loss sum, top-1 correct, top-5 correct

    def run(loader):
        with torch.no_grad():
            for images, target in loader:
                images = images.to(device, non_blocking=True)
                target = target.to(device, non_blocking=True)
                output = model(images)
                top1, top5 = topk_correct(output, target, (1, 5))
                for i, v in enumerate((images.size(0), criterion(output, target).item() * images.size(0), top1, top5)):
                    sums[i] += v

    run(val_loader)
    sums = reduced(sums, device)
    covered = len(val_loader.sampler) * args.world_size
    if args.distributed and covered < len(val_loader.dataset):
        aux = Subset(val_loader.dataset, range(covered, len(val_loader.dataset)))
        aux_loader = DataLoader(aux, batch_size=args.batch_size, shuffle=False, num_workers=args.workers,
                                pin_memory=True)
        run(aux_loader)
    seen, loss_sum, top1, top5 = sums
    print(f"epoch {epoch} val: {int(seen)} samples of {len(val_loader.dataset)} (len(loader.dataset)), "
          f"loss {loss_sum / seen:.4f}, acc@1 {100 * top1 / seen:.2f}%, acc@5 {100 * top5 / seen:.2f}%", flush=True)


def main():
    args = parse_args()
    init_distributed(args)
    torch.manual_seed(args.seed)
    device = torch.device(args.device)

    normalize = transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    train_dataset = datasets.ImageFolder(
        os.path.join(args.data, "train"),
        transforms.Compose([
            transforms.RandomResizedCrop(args.train_crop_size),
            transforms.RandomHorizontalFlip(),
            transforms.ToTensor(),
            normalize,
        ]))
    val_dataset = datasets.ImageFolder(
        os.path.join(args.data, "val"),
        transforms.Compose([
            transforms.Resize(args.val_resize_size),
            transforms.CenterCrop(args.val_crop_size),
            transforms.ToTensor(),
            normalize,
        ]))
    if args.distributed:
        train_sampler = torch.utils.data.distributed.DistributedSampler(train_dataset)
        val_sampler = torch.utils.data.distributed.DistributedSampler(val_dataset, shuffle=False, drop_last=True)
    else:
        train_sampler = None
        val_sampler = None

    # The switch: one name. Every argument below is DataLoader's, unchanged.
    if args.loader == "batchd":
        DataLoader = batchd.Loader
    else:
        DataLoader = torch.utils.data.DataLoader
    train_loader = DataLoader(
        train_dataset, batch_size=args.batch_size, shuffle=(train_sampler is None),
        num_workers=args.workers, pin_memory=True, sampler=train_sampler)
    val_loader = DataLoader(
        val_dataset, batch_size=args.batch_size, shuffle=False,
        num_workers=args.workers, pin_memory=True, sampler=val_sampler)

    model = models.__dict__[args.arch](num_classes=len(train_dataset.classes)).to(device)
    if args.distributed:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    criterion = nn.CrossEntropyLoss().to(device)
    optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=args.momentum, weight_decay=args.weight_decay)

    for epoch in range(args.epochs):
        if args.distributed:
            train_sampler.set_epoch(epoch)
        train_one_epoch(model, criterion, optimizer, train_loader, device, epoch)
        validate(model, criterion, val_loader, args, device, epoch, DataLoader)
    if args.distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
