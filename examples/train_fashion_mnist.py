#!/usr/bin/env python3
"""Train a small CNN on Fashion-MNIST for one epoch, once with torch.utils.data.DataLoader(num_workers=2) and once
with batchd.Loader, and print for both: seconds per epoch, data-wait per step (time spent waiting for the next
batch), and test accuracy.

    PYTHONPATH=build/python examples/train_fashion_mnist.py [--socket PATH] [--epochs 1] [--batch-size 128]

Without --socket a private daemon (build/bin/batchd) is started on a temporary socket. Needs torch and
torchvision (the project venv's: .venv/bin/python, ./setup.sh --tests). The model: conv 1->32 3x3 pad 1, ReLU, maxpool 2; conv 32->64 3x3 pad 1,
ReLU, maxpool 2; linear 3136->128, ReLU, dropout 0.25; linear 128->10; Adam 1e-3.
"""
import argparse
import contextlib
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torchvision
import torchvision.transforms as T

import batchd

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FMNIST = "/usr/share/datasets/fashion-mnist"


def model():
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(3136, 128), nn.ReLU(), nn.Dropout(0.25), nn.Linear(128, 10))


def torchvision_split(cache, train):
    raw = os.path.join(cache, "FashionMNIST", "raw")
    os.makedirs(raw, exist_ok=True)
    for name in os.listdir(FMNIST):
        dst = os.path.join(raw, name[:-3])
        if name.endswith(".gz") and not os.path.exists(dst):
            with gzip.open(os.path.join(FMNIST, name), "rb") as src, open(dst, "wb") as out:
                shutil.copyfileobj(src, out)
    tf = T.Compose([T.ToTensor(), T.Normalize((0.2860,), (0.3530,))])
    return torchvision.datasets.FashionMNIST(cache, train=train, download=False, transform=tf)


def run(name, train_loader, test_loader, epochs):
    torch.manual_seed(0)
    net, loss_fn = model(), nn.CrossEntropyLoss()
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    steps, wait, start = 0, 0.0, time.perf_counter()
    for _ in range(epochs):
        net.train()
        t = time.perf_counter()
        for images, labels in train_loader:
            wait += time.perf_counter() - t
            opt.zero_grad()
            loss_fn(net(images), labels).backward()
            opt.step()
            steps += 1
            t = time.perf_counter()
    seconds = (time.perf_counter() - start) / epochs
    net.eval()
    correct = total = 0
    with torch.no_grad():
        for images, labels in test_loader:
            correct += (net(images).argmax(1) == labels).sum().item()
            total += labels.numel()
    print(f"{name:>18}: {seconds:6.1f} s/epoch, data wait {1e3 * wait / steps:6.2f} ms/step over {steps} steps, "
          f"test accuracy {100.0 * correct / total:.2f}%", flush=True)
    return correct / total


@contextlib.contextmanager
def daemon(socket):
    if socket:
        yield socket
        return
    with tempfile.TemporaryDirectory(prefix="batchd-example-") as tmp:
        path = os.path.join(tmp, "batchd.sock")
        proc = subprocess.Popen([os.path.join(ROOT, "build", "bin", "batchd"), "--socket", path, "--workers", "2",
                                 "--log-level", "warn"])
        while not os.path.exists(path):
            if proc.poll() is not None:
                sys.exit("batchd did not start")
            time.sleep(0.02)
        try:
            yield path
        finally:
            proc.terminate()
            proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--socket")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=128)
    args = ap.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() // 2))
    cache = os.path.join(tempfile.gettempdir(), "batchd-peer-cache")
    b = args.batch_size
    dl_train = torch.utils.data.DataLoader(torchvision_split(cache, True), batch_size=b, shuffle=True,
                                           num_workers=2, persistent_workers=True)
    dl_test = torch.utils.data.DataLoader(torchvision_split(cache, False), batch_size=1000, num_workers=2)
    acc_dl = run("DataLoader", dl_train, dl_test, args.epochs)
    with daemon(args.socket) as sock:
        bd_train = batchd.Loader("fashion-mnist", b, shuffle=True, pipeline="fmnist", socket=sock)
        bd_test = batchd.Loader("fashion-mnist-test", pipeline="fmnist", batch_size=1000, shuffle=False,
                                socket=sock)
        acc_bd = run("batchd.Loader", bd_train, bd_test, args.epochs)
        bd_train.close()
        bd_test.close()
    if min(acc_dl, acc_bd) < 0.5:
        sys.exit("a model did not learn (accuracy below 50%)")


if __name__ == "__main__":
    main()
