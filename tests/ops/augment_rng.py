"""torch.randint / torch.rand replaced by a sample's SampleRng, so that torchvision's own auto-augment forward()
draws the numbers batchd draws (tests/ops/test_augment*.py); and the same for torchvision.transforms.v2's classes,
which call torch differently (V2Feeder, feed_torch_v2: tests/ops/test_transforms_v2_*.py)."""
import math

import torch
from torchvision.transforms import v2

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


# --- torchvision.transforms.v2 ---
#
# batchd draws what v1 draws, in v1's order (augment_space.h). v2's classes call torch otherwise:
#   op index    v1 and v2: torch.randint(len(ops)) (v2: shape ()), an index into the class's op table; v2's table is
#               the class attribute _AUGMENTATION_SPACE. The feeder takes batchd's op by name and answers with its
#               index in v2's table, so a reordered table would still get batchd's op.
#   TA bin      v1: torch.randint(len(magnitudes), (1,)); v2: torch.randint(num_magnitude_bins, ()): the same number.
#   sign        v1: torch.randint(2, (1,)), negative when 1 (AutoAugment: torch.randint(2, (2,)) up front, negative
#               when 0); v2: torch.rand(()) <= 0.5 is negative, drawn only for an op that is signed and has
#               magnitudes (AutoAugment: only for an op that runs). The feeder answers 0.0 for batchd's "negative"
#               and 1.0 for its "positive".
#   AutoAugment v1: policy, probs (2), signs (2), all up front; v2: policy, then per op torch.rand(()) <= p and, if
#               the op runs and is signed, its sign. batchd draws v1's five numbers when v2 asks for the policy; the
#               feeder then answers v2's calls in v2's order: prob_0, [sign_0], prob_1, [sign_1], each probability
#               the float32 value batchd drew (v2 compares it with p as v1 does).
#   coin        the flips (_RandomApplyTransform.forward: torch.rand(1) >= p skips): batchd's rng.uniform(0, 1),
#               answered as a float64 tensor so that v2 compares batchd's double with p.

_SPACES = {v2.TrivialAugmentWide: "trivial_augment_wide", v2.RandAugment: "rand_augment",
           v2.AutoAugment: "auto_augment"}
_COINS = (v2.RandomHorizontalFlip, v2.RandomVerticalFlip)
_NEGATIVE, _POSITIVE = 0.0, 1.0  # torch.rand(()) <= 0.5 negates


class V2Feeder:
    """torch.randint / torch.rand for the v2 classes above, from sample (seed, epoch, index)'s rng in batchd's order.
    Every call is checked against what the class being run is expected to ask; anything else fails the test."""

    def __init__(self, seed, epoch, index):
        self.rng = ops.AugmentRng(seed, epoch, index)
        self.transform = None  # the v2 transform whose forward() runs
        self.expect = []       # what its next calls ask for: ("op",) | ("bin",) | ("sign",) | ("policy",) | ("coin",)
        self.answers = []      # AutoAugment: torch.rand values queued in v2's order

    # --- the forward() wrapper: what the transform will ask ---
    def begin(self, transform):
        assert self.transform is None, "nested fed transforms"
        self.transform = transform
        if isinstance(transform, v2.AutoAugment):
            self.expect = [("policy",)]
        elif isinstance(transform, (v2.TrivialAugmentWide, v2.RandAugment)):
            self.expect = [("op",)]
        else:
            self.expect = [("coin",)]

    def end(self):
        assert not self.answers, f"{type(self.transform).__name__} left {self.answers} unasked"
        self.transform, self.expect, self.answers = None, [], []

    # --- torch.randint / torch.rand ---
    def randint(self, *args, size=None, **_):
        """torch.randint(high, size) or (low, high, size), size positional or by name."""
        bounds = list(args) if size is not None else list(args[:-1])
        size = tuple(size if size is not None else args[-1])
        low, high = (0, bounds[0]) if len(bounds) == 1 else bounds
        assert self.transform is not None, f"torch.randint{args} outside a fed v2 transform"
        assert size in ((), (1,)), size
        what = self.expect.pop(0) if self.expect else ("none",)
        t = self.transform
        if what == ("op",):
            space = _SPACES[type(t)]
            keys = tuple(t._AUGMENTATION_SPACE.keys())
            assert (low, high) == (0, len(keys)), (low, high, keys)
            name = ops.augment_space_ops(space)[self.rng.randint(0, len(keys) - 1)]
            value = keys.index(name)
            magnitudes_fn, signed = t._AUGMENTATION_SPACE[name]
            has = magnitudes_fn(2, 8, 8) is not None
            more = [("bin",)] if has and isinstance(t, v2.TrivialAugmentWide) else []
            more += [("sign",)] if has and signed else []
            # RandAugment: the next op follows (num_ops of them); TrivialAugmentWide: one op.
            self.expect = more + ([("op",)] if isinstance(t, v2.RandAugment) else [])
        elif what == ("bin",):
            assert low == 0 and high == t.num_magnitude_bins, (low, high)
            value = self.rng.randint(0, high - 1)  # the sign, if any, is asked next
        elif what == ("policy",):
            assert (low, high) == (0, len(t._policies)), (low, high)
            value = self._draw_auto_augment()
        else:
            raise AssertionError(f"{type(t).__name__}: unexpected torch.randint{args}, expected {what}")
        return torch.tensor(value, dtype=torch.long).reshape(size)

    def rand(self, *size, **_):
        """torch.rand(size) or torch.rand(*size)."""
        size = tuple(size[0]) if len(size) == 1 and not isinstance(size[0], int) else tuple(size)
        assert self.transform is not None, f"torch.rand{size} outside a fed v2 transform"
        t = self.transform
        if isinstance(t, _COINS):
            assert self.expect == [("coin",)] and size == (1,), (self.expect, size)
            self.expect = []
            return torch.tensor([(self.rng.next() >> 11) * 2.0**-53], dtype=torch.float64)
        assert size == (), size
        if isinstance(t, v2.AutoAugment):
            assert self.answers, "AutoAugment: a torch.rand batchd did not draw"
            return torch.tensor(self.answers.pop(0), dtype=torch.float32)
        assert self.expect and self.expect[0] == ("sign",), (type(t).__name__, self.expect)
        self.expect.pop(0)
        return torch.tensor(_NEGATIVE if self.rng.randint(0, 1) == 1 else _POSITIVE)

    def _draw_auto_augment(self):
        """batchd's (v1's) policy, probs and signs; queues v2's torch.rand answers in v2's order."""
        t = self.transform
        policy_id = self.rng.randint(0, len(t._policies) - 1)
        probs = [(self.rng.next() >> 40) * 2.0**-24 for _ in range(2)]
        signs = [self.rng.randint(0, 1) for _ in range(2)]
        for (name, p, _), prob, sign in zip(t._policies[policy_id], probs, signs):
            self.answers.append(prob)
            runs = bool(torch.tensor(prob, dtype=torch.float32) <= p)  # v2's own test
            magnitudes_fn, signed = t._AUGMENTATION_SPACE[name]
            if runs and signed and magnitudes_fn(10, 8, 8) is not None:
                self.answers.append(_NEGATIVE if sign == 0 else _POSITIVE)  # v1: negative when signs[i] == 0
        self.expect = []
        return policy_id


def feed_torch_v2(monkeypatch, seed, epoch, index):
    """Until monkeypatch.undo(): the v2 auto-augment classes and flips draw sample (seed, epoch, index)'s numbers, in
    batchd's order, from their own forward() (which the feeder wraps to know who asks). Returns the feeder."""
    feeder = V2Feeder(seed, epoch, index)
    for cls in (*_SPACES, *_COINS):
        original = cls.forward

        def forward(self, *inputs, _original=original):
            feeder.begin(self)
            try:
                return _original(self, *inputs)
            finally:
                feeder.end()
        monkeypatch.setattr(cls, "forward", forward)
    monkeypatch.setattr(torch, "randint", feeder.randint)
    monkeypatch.setattr(torch, "rand", feeder.rand)
    return feeder
