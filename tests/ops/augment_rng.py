"""torch.randint / torch.rand replaced by a sample's SampleRng, so that torchvision's own auto-augment forward()
draws the numbers batchd draws (tests/ops/test_augment*.py)."""
import math

import torch

import batchd_ops_testing as ops


class RngAsTorch:
    """torch.randint / torch.rand as the sample's rng draws them: randint(n) -> rng.randint(0, n - 1),
    rand -> 24 random bits * 2^-24 (batchd's float32 uniform for AutoAugment's probabilities)."""

    def __init__(self, seed, epoch, index):
        self.rng = ops.AugmentRng(seed, epoch, index)

    def randint(self, high, size, dtype=None, **_):
        values = [self.rng.randint(0, high - 1) for _ in range(math.prod(size))]
        return torch.tensor(values, dtype=torch.long).reshape(size)

    def rand(self, size, **_):
        values = [(self.rng.next() >> 40) * 2.0**-24 for _ in range(math.prod(size))]
        return torch.tensor(values, dtype=torch.float32).reshape(size)


def feed_torch(monkeypatch, seed, epoch, index):
    """Until monkeypatch.undo(): torch.randint and torch.rand draw from sample (seed, epoch, index)'s rng."""
    rng = RngAsTorch(seed, epoch, index)
    monkeypatch.setattr(torch, "randint", rng.randint)
    monkeypatch.setattr(torch, "rand", rng.rand)
