"""Datasets and collate_fns of the collated-batch tests (test_collate.py), shaped after real training code, in a module
so that spawned workers can import them. Every sample is a function of its index: no randomness, so batchd's
batches can be compared with DataLoader's exactly."""
import collections
import os
import sys

import numpy as np
import torch
from torch.utils.data import Dataset

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from collate_cases import detection_collate, pad_collate  # noqa: E402,F401 - the benchmark's, the same code

Target = collections.namedtuple("Target", ["boxes", "labels", "image_id"])


class Detection(Dataset):
    """torchvision's detection references' samples: an image of its own size and a dict target."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        h, w = 20 + (i * 7) % 13, 16 + (i * 5) % 11
        image = torch.arange(3 * h * w, dtype=torch.float32).reshape(3, h, w) / (i + 1)
        boxes = torch.tensor([[j, j, j + 4.0, j + 5.0] for j in range(1 + i % 3)])
        return image, {"boxes": boxes, "labels": torch.arange(1 + i % 3), "image_id": i, "name": f"img-{i:04d}.jpg"}


class Tokens(Dataset):
    """Variable-length token lists, as a tokenized text dataset gives them."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"input_ids": [(i * 31 + k) % 1000 for k in range(3 + (i * 7) % 17)], "label": i % 5}


class Captioned(Dataset):
    """(tensor, str) samples: default_collate makes (a stacked tensor, a list of str)."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.full((2, 3), float(i)), f"caption {i}"


class Mixed(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i


def mixed_collate(indices):
    """Every kind of leaf a collate_fn may return, nested."""
    return {"target": Target(torch.tensor(indices), np.array(indices, dtype=np.int16), None),
            "meta": [("n", len(indices)), {"bytes": bytes(indices), "ratio": len(indices) / 7}],
            "bf16": torch.tensor(indices, dtype=torch.bfloat16), "empty": torch.zeros(0, 4),
            "strided": torch.arange(4 * len(indices)).reshape(len(indices), 4).t()}


class Growing(Dataset):
    """Sample i is a tensor of i + 1 floats: later batches need more bytes than the first."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.ones(1 + i * 50)


def list_collate(batch):
    return list(batch)


def same(ours, theirs, where="batch"):
    """Asserts that `ours` equals DataLoader's `theirs`: the same types all the way down, tensors of the same dtype,
    shape and values, numpy arrays alike, other leaves equal."""
    assert type(ours) is type(theirs), f"{where}: {type(ours).__name__} against {type(theirs).__name__}"
    if isinstance(theirs, torch.Tensor):
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape and torch.equal(ours, theirs), where
    elif isinstance(theirs, np.ndarray):
        assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs), where
    elif isinstance(theirs, dict):
        assert list(ours) == list(theirs), where
        for key in theirs:
            same(ours[key], theirs[key], f"{where}[{key!r}]")
    elif isinstance(theirs, (list, tuple)):
        assert len(ours) == len(theirs), where
        for k, (a, b) in enumerate(zip(ours, theirs)):
            same(a, b, f"{where}[{k}]")
    else:
        assert ours == theirs, f"{where}: {ours!r} against {theirs!r}"
