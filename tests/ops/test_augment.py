"""The auto-augment family (daemon/transforms/augment/) against torchvision 0.14 and Pillow 9.4 on the photographs:
Pillow's affine engine (F.affine / F.rotate on PIL images) byte for byte with every filter, the magnitude tables bit
for bit (torch.linspace's float32 values), and the draws: the same ops and magnitudes as torchvision's own forward()
when torch's generator is replaced by the sample's rng, and op / bin / sign / sub-policy frequencies (chi-square with
fixed seeds; thresholds that the right distribution passes by a wide margin and a biased one fails)."""
import math

import numpy as np
import pytest
import torch
from PIL import Image
from scipy import stats
from torchvision.transforms import InterpolationMode
from torchvision.transforms import autoaugment as AA
from torchvision.transforms import functional as F

import batchd_ops_testing as ops

MODES = {"nearest": InterpolationMode.NEAREST, "bilinear": InterpolationMode.BILINEAR,
         "bicubic": InterpolationMode.BICUBIC}
FILLS = [None, 128, [10, 200, 30]]


def fill3(fill):
    """functional_pil._parse_fill: None -> 0, a number for every band, then int() of each."""
    if fill is None:
        return [0, 0, 0]
    return [int(f) for f in fill] if isinstance(fill, list) else [int(fill)] * 3


def sample(photos, mode):
    """All photos for nearest (the policies' default); four for the slower filters."""
    return photos if mode == "nearest" else photos[:4]


def square(img):
    side = min(img.size)
    return img.crop((0, 0, side, side))


# --- Pillow's affine engine, as torchvision's _apply_op calls it ---

@pytest.mark.parametrize("mode", MODES)
def test_shear_equals_torchvision(photos, mode):
    for img in sample(photos, mode):
        a = np.asarray(img)
        for fill in FILLS:
            for m in [0.0, -0.0, 0.3, -0.3, 0.99, -0.99, 0.0330000]:
                for shear in ([math.degrees(math.atan(m)), 0.0], [0.0, math.degrees(math.atan(m))]):
                    theirs = F.affine(img, angle=0.0, translate=[0, 0], scale=1.0, shear=shear,
                                      interpolation=MODES[mode], fill=fill, center=[0, 0])
                    matrix = ops.augment_inverse_affine_matrix([0, 0], 0.0, [0, 0], 1.0, shear)
                    ours = ops.augment_affine(a, matrix, mode, fill3(fill))
                    assert np.array_equal(ours, np.asarray(theirs)), (img.filename, mode, fill, shear)


@pytest.mark.parametrize("mode", MODES)
def test_translate_equals_torchvision(photos, mode):
    for img in sample(photos, mode):
        a = np.asarray(img)
        w, h = img.size
        for fill in FILLS:
            for t in [0, 16, -16, 32, -5, 227, -10000]:
                for translate in ([t, 0], [0, t]):
                    theirs = F.affine(img, angle=0.0, translate=translate, scale=1.0, shear=[0.0, 0.0],
                                      interpolation=MODES[mode], fill=fill)
                    matrix = ops.augment_inverse_affine_matrix([w * 0.5, h * 0.5], 0.0, translate, 1.0, [0.0, 0.0])
                    ours = ops.augment_affine(a, matrix, mode, fill3(fill))
                    assert np.array_equal(ours, np.asarray(theirs)), (img.filename, mode, fill, translate)


@pytest.mark.parametrize("mode", MODES)
def test_rotate_equals_torchvision(photos, mode):
    """Every path of Image.rotate: the copy (0, -0, 360), the 180 flip, the 90/270 transposes (square images) and
    the affine matrix (others, and 90/270 on non-square images)."""
    angles = [0.0, -0.0, 360.0, 4.5, -4.5, 13.3, 30.0, -30.0, 90.0, -90.0, 135.0, -135.0, 180.0, -180.0, 270.0]
    for img in sample(photos, mode)[:6] + [square(p) for p in photos[:3]]:
        a = np.asarray(img)
        for fill in FILLS:
            for angle in angles:
                theirs = F.rotate(img, angle, interpolation=MODES[mode], fill=fill)
                ours = ops.augment_rotate(a, angle, mode, fill3(fill))
                assert np.array_equal(ours, np.asarray(theirs)), (img.filename, img.size, mode, fill, angle)


def test_inverse_affine_matrix_equals_torchvision():
    for center in ([0, 0], [112.0, 80.5], [250.0, 314.0]):
        for angle in (0.0, 17.0, -45.5):
            for translate in ([0, 0], [16, -3]):
                for shear in ([0.0, 0.0], [math.degrees(math.atan(0.3)), 0.0], [0.0, -44.7], [12.0, 5.0]):
                    for scale in (1.0, 0.7):
                        theirs = F._get_inverse_affine_matrix(center, angle, translate, scale, shear)
                        ours = ops.augment_inverse_affine_matrix(center, angle, translate, scale, shear)
                        assert ours == theirs, (center, angle, translate, shear, scale)


@pytest.mark.parametrize("mode", MODES)
def test_other_matrices_take_pillows_other_paths(photos, mode):
    """Corners beyond +-32768 leave Pillow's 16.16 fixed point path for its double one (nearest); a scale with no
    rotation or shear takes ImagingScaleAffine (nearest)."""
    img = photos[0]
    a = np.asarray(img)
    for matrix in ([1.0, 0.3, -40000.0, 0.0, 1.0, 0.0], [0.9, -0.2, 33000.0, 0.1, 1.0, -5.0],
                   [1.0, 0.5, 0.0, 0.2, 1.0, 0.0], [-1.0, 0.0, 400.0, 0.0, 1.0, 0.0],
                   [0.7, 0.0, 3.3000001, 0.0, 1.3, -2.7], [1.0 / 3.0, 0.0, -1.0 / 6.0 + 1e-4, 0.0, 0.5, 0.0]):
        theirs = img.transform(img.size, Image.AFFINE, matrix, int(F.pil_modes_mapping[MODES[mode]]),
                               fillcolor=(1, 2, 3))
        ours = ops.augment_affine(a, matrix, mode, [1, 2, 3])
        assert np.array_equal(ours, np.asarray(theirs)), (matrix, mode)


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


def torchvision_steps(monkeypatch, transform, seed, index, size):
    calls = []
    rng = RngAsTorch(seed, 0, index)
    monkeypatch.setattr(torch, "randint", rng.randint)
    monkeypatch.setattr(torch, "rand", rng.rand)
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


# --- the ops' pixels, and whole transforms ---

def op_magnitudes(name):
    """Magnitudes of `name` from TrivialAugmentWide's and RandAugment's tables (a few bins, both signs)."""
    values = {0.0}
    for space, bins in (("trivial_augment_wide", (1, 7, 15, 22, 30)), ("rand_augment", (9, 30))):
        for b in bins:
            m = ops.augment_magnitude(space, name, b, 31, 333, 500)
            values |= {m, -m} if name not in ("Posterize", "Solarize") else {m}
    return sorted(values)


ALL_OPS = ["Identity", "ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate", "Brightness", "Color", "Contrast",
           "Sharpness", "Posterize", "Solarize", "AutoContrast", "Equalize", "Invert"]


@pytest.mark.parametrize("name", ALL_OPS)
def test_each_op_equals_torchvisions_apply_op(photos, name):
    for i, img in enumerate(photos):
        a = np.asarray(img)
        mode = "nearest" if i % 3 else "bilinear"
        fill = FILLS[i % 3]
        for m in op_magnitudes(name):
            theirs = AA._apply_op(img, name, m, interpolation=MODES[mode], fill=fill)
            ours = ops.augment_apply_op(a, name, m, mode, fill3(fill))
            assert np.array_equal(ours, np.asarray(theirs)), (img.filename, name, m, mode, fill)


RUNS = [
    ("trivial_augment_wide", lambda i, f: AA.TrivialAugmentWide(interpolation=i, fill=f), {}),
    ("rand_augment", lambda i, f: AA.RandAugment(interpolation=i, fill=f), {}),
    ("rand_augment", lambda i, f: AA.RandAugment(num_ops=4, magnitude=25, interpolation=i, fill=f),
     {"num_ops": 4, "magnitude": 25}),
    ("auto_augment", lambda i, f: AA.AutoAugment(interpolation=i, fill=f), {"policy": "imagenet"}),
]


@pytest.mark.parametrize("space,make,kwargs", RUNS)
def test_whole_transform_equals_torchvisions_forward(monkeypatch, photos, space, make, kwargs):
    """forward() of torchvision's class fed the sample's random numbers, against run_augment with that sample's rng:
    the same bytes, image after image (most of them changed by the transform)."""
    changed = 0
    for index in range(36):
        img = photos[index % len(photos)]
        mode = "nearest" if index % 4 else "bilinear"
        fill = FILLS[index % 3]
        rng = RngAsTorch(5, 1, index)
        monkeypatch.setattr(torch, "randint", rng.randint)
        monkeypatch.setattr(torch, "rand", rng.rand)
        theirs = np.asarray(make(MODES[mode], fill)(img))
        monkeypatch.undo()
        ours = ops.augment_run(np.asarray(img), space, 5, 1, index, interpolation=mode, fill=fill3(fill), **kwargs)
        assert np.array_equal(ours, theirs), (space, index, img.filename, mode, fill)
        changed += not np.array_equal(ours, np.asarray(img))
    assert changed >= 18, changed
