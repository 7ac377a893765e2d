"""The auto-augment family's pixels (daemon/transforms/kernels/augment/) against torchvision 0.29 and Pillow 13 on the
photographs: Pillow's affine engine (F.affine / F.rotate on PIL images) byte for byte with every filter, each of the
15 ops of _apply_op, and whole TrivialAugmentWide / RandAugment / AutoAugment forward() passes fed the sample's random
numbers (augment_rng.py)."""
import math

import numpy as np
import pytest
from PIL import Image
from torchvision.transforms import InterpolationMode
from torchvision.transforms import autoaugment as AA
from torchvision.transforms import functional as F

import batchd_ops_testing as ops
from augment_rng import feed_torch

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


# --- the ops' pixels, and whole transforms ---

def op_magnitudes(name):
    """Magnitudes of `name` from TrivialAugmentWide's and RandAugment's tables (a few bins, both signs), and 0 (the
    tables' first value; for Posterize no table gives 0 bits, which Pillow 13 refuses: its tables end at 2 and 4)."""
    values = {0.0} if name != "Posterize" else set()
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
        feed_torch(monkeypatch, 5, 1, index)
        theirs = np.asarray(make(MODES[mode], fill)(img))
        monkeypatch.undo()
        ours = ops.augment_run(np.asarray(img), space, 5, 1, index, interpolation=mode, fill=fill3(fill), **kwargs)
        assert np.array_equal(ours, theirs), (space, index, img.filename, mode, fill)
        changed += not np.array_equal(ours, np.asarray(img))
    assert changed >= 18, changed
