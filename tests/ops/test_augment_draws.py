"""The auto-augment family's tables and draws (daemon/transforms/kernels/augment/augment_space.h) against torchvision
0.29: the magnitude tables bit for bit (torch.linspace's float32 values), the same ops and magnitudes as torchvision's
own forward() when torch's generator is replaced by the sample's rng (augment_rng.py), and op / bin / sign / sub-policy
frequencies (chi-square with fixed seeds; thresholds that the right distribution passes by a wide margin and a biased
one fails: checked once with a 1/3 sign and a skewed sub-policy draw)."""
import numpy as np
import pytest
import torch
from PIL import Image
from scipy import stats
from torchvision.transforms import autoaugment as AA

import batchd_ops_testing as ops
from augment_rng import feed_torch

# --- the magnitude tables ---

def test_linspace_is_torchs_float32_bit_for_bit():
    ends = [(0.0, 0.3), (0.0, 0.99), (0.0, 0.9), (0.0, 32.0), (0.0, 135.0), (0.0, 30.0), (255.0, 0.0)]
    ends += [(0.0, 150.0 / 331.0 * w) for w in (1, 32, 224, 333, 500, 640, 1023, 4096)]
    for start, end in ends:
        for steps in list(range(2, 300)) + [511, 512, 1000, 1024]:
            theirs = torch.linspace(start, end, steps).numpy()
            ours = ops.augment_linspace(start, end, steps)
            assert np.array_equal(ours.view(np.uint32), theirs.view(np.uint32)), (start, end, steps)


SPACES = {
    "trivial_augment_wide": lambda bins, h, w: AA.TrivialAugmentWide(bins)._augmentation_space(bins),
    "rand_augment": lambda bins, h, w: AA.RandAugment(2, 0, bins)._augmentation_space(bins, (h, w)),
    "auto_augment": lambda bins, h, w: AA.AutoAugment()._augmentation_space(bins, (h, w)),
}


@pytest.mark.parametrize("space", SPACES)
def test_magnitude_tables_equal_torchvisions(space):
    assert ops.augment_space_ops(space) == list(SPACES[space](10, 5, 5).keys())
    for bins in (2, 3, 7, 10, 17, 31, 32, 33, 64, 101, 1024):
        for h, w in ((224, 224), (333, 500), (17, 1000)):
            for name, (table, signed) in SPACES[space](bins, h, w).items():
                if table.ndim == 0:
                    assert ops.augment_magnitude(space, name, 0, bins, h, w) == 0.0
                    continue
                for b in range(bins):
                    assert ops.augment_magnitude(space, name, b, bins, h, w) == float(table[b].item()), \
                        (space, name, bins, b)


# --- the draws, through torchvision's own forward() ---

def torchvision_steps(monkeypatch, transform, seed, index, size):
    calls = []
    feed_torch(monkeypatch, seed, 0, index)
    monkeypatch.setattr(AA, "_apply_op", lambda img, name, magnitude, **_: calls.append((name, magnitude)) or img)
    transform(Image.new("RGB", size))
    monkeypatch.undo()
    return calls


CASES = [
    ("trivial_augment_wide", lambda: AA.TrivialAugmentWide(), {}),
    ("trivial_augment_wide", lambda: AA.TrivialAugmentWide(num_magnitude_bins=7), {"num_bins": 7}),
    ("rand_augment", lambda: AA.RandAugment(), {}),
    ("rand_augment", lambda: AA.RandAugment(num_ops=3, magnitude=4, num_magnitude_bins=10),
     {"num_ops": 3, "magnitude": 4, "num_bins": 10}),
    ("auto_augment", lambda: AA.AutoAugment(AA.AutoAugmentPolicy.IMAGENET), {"policy": "imagenet"}),
    ("auto_augment", lambda: AA.AutoAugment(AA.AutoAugmentPolicy.CIFAR10), {"policy": "cifar10"}),
    ("auto_augment", lambda: AA.AutoAugment(AA.AutoAugmentPolicy.SVHN), {"policy": "svhn"}),
]


@pytest.mark.parametrize("space,make,kwargs", CASES)
def test_draws_equal_torchvisions_forward_with_the_same_random_numbers(monkeypatch, space, make, kwargs):
    transform = make()
    for w, h in ((224, 224), (500, 333)):
        ours = ops.augment_draws(space, 77, 400, height=h, width=w, **kwargs)
        for index in range(400):
            theirs = torchvision_steps(monkeypatch, transform, 77, index, (w, h))
            assert [(n, m) for n, m, _ in ours[index] if n] == theirs, (space, index)


# --- frequencies ---

N = 28000


def test_trivial_augment_wide_frequencies():
    draws = [d[0] for d in ops.augment_draws("trivial_augment_wide", 1, N)]
    names = ops.augment_space_ops("trivial_augment_wide")
    counts = np.array([sum(1 for n, _, _ in draws if n == k) for k in names])
    assert counts.sum() == N and stats.chisquare(counts).pvalue > 1e-3, counts
    bins = np.bincount([b for _, _, b in draws if b >= 0], minlength=31)
    assert len(bins) == 31 and stats.chisquare(bins).pvalue > 1e-3, bins
    assert all(b == -1 for n, _, b in draws if n in ("Identity", "AutoContrast", "Equalize"))
    signed = [m for n, m, b in draws if n in ("ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate",
                                              "Brightness", "Color", "Contrast", "Sharpness") and b > 0]
    negative = sum(1 for m in signed if m < 0)
    assert stats.binomtest(negative, len(signed)).pvalue > 1e-3, (negative, len(signed))
    assert all(m >= 0 for n, m, _ in draws if n in ("Posterize", "Solarize"))


def test_rand_augment_frequencies():
    draws = ops.augment_draws("rand_augment", 2, N // 2, num_ops=2, magnitude=9, num_bins=31)
    names = ops.augment_space_ops("rand_augment")
    for position in range(2):
        picked = [d[position][0] for d in draws]
        counts = np.array([picked.count(k) for k in names])
        assert stats.chisquare(counts).pvalue > 1e-3, (position, counts)
    # the magnitude is the fixed bin's, up to the sign
    for d in draws[:200]:
        for name, m, _ in d:
            assert abs(m) == ops.augment_magnitude("rand_augment", name, 9, 31, 224, 224)


def test_auto_augment_imagenet_frequencies():
    """The sub-policy is uniform over 25, and each of its two ops runs with the policy's probability: per
    sub-policy, the outcomes (which ops ran) against their probabilities, one chi-square over all of them."""
    policies = AA.AutoAugment(AA.AutoAugmentPolicy.IMAGENET).policies
    draws = ops.augment_draws("auto_augment", 3, N, policy="imagenet")
    ids = np.array([d[0][2] for d in draws])
    per_policy = np.bincount(ids, minlength=25)
    assert stats.chisquare(per_policy).pvalue > 1e-3, per_policy
    chi2, dof = 0.0, 0
    for pid, (first, second) in enumerate(policies):
        outcomes = [tuple(n for n, _, _ in d if n) for d, i in zip(draws, ids) if i == pid]
        expected = {}
        for ran1 in (False, True):
            for ran2 in (False, True):
                key = tuple(op[0] for op, ran in ((first, ran1), (second, ran2)) if ran)
                p = (first[1] if ran1 else 1 - first[1]) * (second[1] if ran2 else 1 - second[1])
                expected[key] = expected.get(key, 0.0) + p * len(outcomes)
        assert set(outcomes) <= {k for k, e in expected.items() if e > 0}, (pid, set(outcomes))
        cells = [(outcomes.count(k), e) for k, e in expected.items() if e > 0]
        chi2 += sum((o - e) ** 2 / e for o, e in cells)
        dof += len(cells) - 1
    assert stats.chi2.sf(chi2, dof) > 1e-3, (chi2, dof)
