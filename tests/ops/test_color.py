"""batchd's color functions (daemon/transforms/kernels/color/color.h) equal torchvision 0.29's on PIL images (Pillow
13), and its ColorJitter / RandomGrayscale / GaussianBlur draws have torchvision's distributions.

Tolerances (measured on the photos and on every 8-bit RGB color): every function is byte-exact except
gaussian_blur, where torch sums the 2-D kernel in float32 and batchd sums separably in double: an output differs by
at most 1, where the exact sum lies within float32 rounding of a half; measured on the 12 photos (8.06M values,
torch 2.15): 0 for 1x1 and 3x3 kernels, 40-279 (<= 3.5e-5) for 7x3, 5x9, 51x1 and 23x23, and 8566 (1.06e-3) for a
101x101 kernel, which the cases below do not include (asserted: at most 1e-3)."""
import numpy as np
import pytest
import torch
from PIL import Image, ImageEnhance, ImageOps
from torchvision.transforms import functional as F

import batchd_ops_testing as ops


@pytest.fixture(scope="module")
def arrays(photos):
    return [(img, np.asarray(img)) for img in photos]


@pytest.fixture(scope="module")
def every_color():
    """All 2^24 RGB colors as one 4096 x 4096 image (per-pixel functions see every input they can get)."""
    v = np.arange(1 << 24, dtype=np.uint32)
    rgb = np.stack([(v >> 16) & 255, (v >> 8) & 255, v & 255], axis=-1).astype(np.uint8)
    return rgb.reshape(4096, 4096, 3)


def assert_same(ours, theirs, what):
    theirs = np.asarray(theirs)
    assert ours.shape == theirs.shape, what
    diff = np.abs(ours.astype(int) - theirs.astype(int))
    assert diff.max() == 0, f"{what}: {np.count_nonzero(diff)} values differ, by up to {diff.max()}"


@pytest.mark.parametrize("name,fn,factors", [
    ("brightness", F.adjust_brightness, [0.0, 0.3, 0.61, 1.0, 1.37, 2.5]),
    ("contrast", F.adjust_contrast, [0.0, 0.2, 0.77, 1.0, 1.5, 3.0]),
    ("saturation", F.adjust_saturation, [0.0, 0.45, 1.0, 1.3, 4.0]),
    ("sharpness", F.adjust_sharpness, [0.0, 0.5, 1.0, 1.8, 3.0]),
    ("hue", F.adjust_hue, [-0.5, -0.31, -0.001, 0.0, 0.002, 0.1, 0.25, 0.5]),
])
def test_adjust_equals_torchvision(arrays, name, fn, factors):
    ours_fn = getattr(ops, "adjust_" + name)
    for img, a in arrays:
        for f in factors:
            assert_same(ours_fn(a, f), fn(img, f), f"{img.filename} {name} {f}")


@pytest.mark.parametrize("name,fn,args", [
    ("posterize", F.posterize, [1, 2, 4, 7, 8]),
    ("solarize", F.solarize, [0, 1, 64.5, 128, 200, 255, 256]),
])
def test_lut_ops_equal_torchvision(arrays, name, fn, args):
    for img, a in arrays:
        for x in args:
            assert_same(getattr(ops, name)(a, x), fn(img, x), f"{img.filename} {name} {x}")


@pytest.mark.parametrize("name", ["autocontrast", "equalize", "invert"])
def test_histogram_ops_equal_torchvision(arrays, name):
    fn = getattr(F, name)
    for img, a in arrays:
        assert_same(getattr(ops, name)(a), fn(img), f"{img.filename} {name}")
        # A low-contrast crop: autocontrast stretches it, equalize spreads its few levels.
        dim = (a[:64, :80] // 4 + 100).astype(np.uint8)
        assert_same(getattr(ops, name)(dim), fn(Image.fromarray(dim)), f"{img.filename} {name} (dim crop)")


def test_histogram_ops_on_flat_and_two_level_images():
    flat = np.full((7, 9, 3), 77, np.uint8)
    two = flat.copy()
    two[0, 0] = [0, 255, 78]
    for name in ["autocontrast", "equalize"]:
        for a in (flat, two):
            assert_same(getattr(ops, name)(a), getattr(ImageOps, name)(Image.fromarray(a)), f"{name} {a[0, 0]}")


def test_grayscale_equals_torchvision(arrays):
    for img, a in arrays:
        assert_same(ops.to_grayscale(a), F.rgb_to_grayscale(img, 3), img.filename)


def test_per_pixel_functions_on_every_color(every_color):
    """Every 8-bit RGB input of the per-pixel functions (grayscale, saturation, hue): byte-exact."""
    img = Image.fromarray(every_color)
    assert_same(ops.to_grayscale(every_color), F.rgb_to_grayscale(img, 3), "grayscale")
    for f in [0.37, 1.9]:
        assert_same(ops.adjust_saturation(every_color, f), ImageEnhance.Color(img).enhance(f), f"saturation {f}")
    for f in [-0.5, 0.0, 0.13]:
        assert_same(ops.adjust_hue(every_color, f), F.adjust_hue(img, f), f"hue {f}")


def test_small_images():
    """Images smaller than the 3x3 SMOOTH kernel, and one row or column."""
    rng = np.random.default_rng(3)
    for h, w in [(1, 1), (1, 5), (2, 2), (5, 1), (3, 3), (4, 7)]:
        a = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        img = Image.fromarray(a)
        for f in [0.0, 0.5, 2.0]:
            assert_same(ops.adjust_sharpness(a, f), F.adjust_sharpness(img, f), f"sharpness {h}x{w} {f}")
            assert_same(ops.adjust_contrast(a, f), F.adjust_contrast(img, f), f"contrast {h}x{w} {f}")


def blur_mismatch(ours, theirs):
    diff = np.abs(ours.astype(int) - np.asarray(theirs).astype(int))
    return diff.max(), np.count_nonzero(diff)


@pytest.mark.parametrize("kx,ky,sx,sy", [(1, 1, 1.0, 1.0), (3, 3, 0.1, 0.1), (3, 3, 1.0, 1.0), (5, 9, 0.8, 2.0),
                                         (23, 23, 1.7, 1.7), (7, 3, 2.0000001192092896, 0.3), (51, 1, 9.0, 0.5)])
def test_gaussian_blur_equals_torchvision(arrays, kx, ky, sx, sy):
    differing = total = 0
    for img, a in arrays:
        ours = ops.gaussian_blur(a, kx, ky, sx, sy)
        worst, count = blur_mismatch(ours, F.gaussian_blur(img, [kx, ky], [sx, sy]))
        assert worst <= 1, (img.filename, worst)
        differing += count
        total += a.size
    assert differing <= 1e-3 * total, f"{differing} of {total} values differ by 1"


def test_gaussian_blur_scratch_forms_agree(arrays):
    _, a = arrays[0]
    assert np.array_equal(ops.gaussian_blur(a, 5, 3, 1.1, 0.7, thread_scratch=True),
                          ops.gaussian_blur(a, 5, 3, 1.1, 0.7))


def test_gaussian_blur_wider_than_the_image():
    """torch refuses reflect padding >= the side; batchd folds the reflection again (color.h)."""
    a = np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3)
    ours = ops.gaussian_blur(a, 15, 15, 3.0, 3.0)
    index = lambda i, n: [0, 1, 2, 3, 2, 1][i % 6] if n == 4 else [0, 1, 2, 3, 4, 5, 4, 3, 2, 1][i % 10]
    padded = a[[index(i - 7, 4) for i in range(4 + 14)]][:, [index(j - 7, 6) for j in range(6 + 14)]]
    t = torch.from_numpy(padded.astype(np.float32)).permute(2, 0, 1)[None]
    k = torch.exp(-0.5 * (torch.linspace(-7, 7, 15) / 3.0) ** 2)
    k = k / k.sum()
    theirs = torch.nn.functional.conv2d(t, (k[:, None] * k[None, :]).expand(3, 1, 15, 15), groups=3)
    assert blur_mismatch(ours, theirs[0].round().permute(1, 2, 0).to(torch.uint8).numpy()) == (0, 0)


def test_gaussian_blur_sigma_below_float_range_is_one_tap(arrays):
    """A sigma > 0 that is 0 as a float32 (torch: NaN weights) blurs nothing, the Gaussian's limit (color.h)."""
    _, a = arrays[0]
    assert np.array_equal(ops.gaussian_blur(a, 5, 3, 1e-50, 1e-50), a)
