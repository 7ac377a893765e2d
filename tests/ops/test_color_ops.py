"""The color ops (daemon/transforms/ops/color_ops.cc) through batchd's real executor (ops.run: plan + compiled
kernels) against torchvision 0.29's transform classes on the photos, with parameters that fix the random outcome
(ranges [f, f], p = 0 or 1, sigma [s, s]); and the plan's refusals (torchvision's own checks)."""

import numpy as np
import pytest
import torch
import torchvision.transforms as T

import batchd_ops_testing as ops
from conftest import png  # the photos as PNG bytes (and the fixture encoded)

CROP = [{"op": "center_crop", "size": [150, 190]}]
REF_CROP = T.CenterCrop([150, 190])


def run(op, encoded, seed=0):
    out, _ = ops.run(CROP + [op, {"op": "pil_to_tensor"}], encoded, seed=seed)
    return out


def reference(transform, photos):
    return np.stack([T.PILToTensor()(transform(REF_CROP(p))).numpy() for p in photos])


@pytest.mark.parametrize("key,value", [("brightness", [0.4, 0.4]), ("brightness", [1.7, 1.7]),
                                       ("contrast", [0.3, 0.3]), ("contrast", [2.2, 2.2]),
                                       ("saturation", [0.0, 0.0]), ("saturation", [1.6, 1.6]),
                                       ("hue", [-0.4, -0.4]), ("hue", [0.5, 0.5]), ("hue", [0.07, 0.07])])
def test_color_jitter_one_factor_equals_torchvision(photos, encoded, key, value):
    ours = run({"op": "color_jitter", key: value}, encoded)
    assert np.array_equal(ours, reference(T.ColorJitter(**{key: value}), photos))


def test_color_jitter_all_four_in_the_drawn_order_equals_torchvision(photos, encoded, monkeypatch):
    """Four fixed factors; torchvision is made to apply them in the order batchd drew for each sample."""
    ranges = dict(brightness=[1.3, 1.3], contrast=[0.6, 0.6], saturation=[1.5, 1.5], hue=[-0.2, -0.2])
    seed = 4
    ours = run({"op": "color_jitter", **ranges}, encoded, seed=seed)
    orders = [order for order, _ in ops.color_jitter_draws(*ranges.values(), seed, len(photos))]
    assert len({tuple(o) for o in orders}) > 3
    jitter = T.ColorJitter(**ranges)
    for i, photo in enumerate(photos):
        monkeypatch.setattr(torch, "randperm", lambda n, order=orders[i]: torch.tensor(order))
        assert np.array_equal(ours[i], reference(jitter, [photo])[0]), (i, orders[i])


def test_color_jitter_numbers_are_ranges_around_one_and_zero(photos, encoded):
    """A number n is [max(0, 1 - n), 1 + n] (hue: [-n, n]), drawn as that range would be; 0 is off."""
    off = run({"op": "color_jitter", "brightness": 0, "contrast": 0, "saturation": 0, "hue": 0}, encoded)
    assert np.array_equal(off, reference(lambda x: x, photos))
    for key, n, pair in [("brightness", 0.5, [0.5, 1.5]), ("brightness", 1.5, [0.0, 2.5]),
                         ("contrast", 0.2, [0.8, 1.2]), ("saturation", 3, [0, 4]), ("hue", 0.3, [-0.3, 0.3])]:
        as_number = run({"op": "color_jitter", key: n}, encoded, seed=7)
        assert np.array_equal(as_number, run({"op": "color_jitter", key: pair}, encoded, seed=7)), (key, n)
        assert not np.array_equal(as_number, off), (key, n)


@pytest.mark.parametrize("p", [0.0, 1.0])
def test_random_grayscale_equals_torchvision(photos, encoded, p):
    ours = run({"op": "random_grayscale", "p": p}, encoded)
    assert np.array_equal(ours, reference(T.RandomGrayscale(p), photos))


def test_random_grayscale_default_p_is_a_tenth(photos):
    thumbnails = [png(p.resize((64, 48))) for p in photos] * 40
    spec = [{"op": "center_crop", "size": [48, 64]}, {"op": "pil_to_tensor"}]
    is_gray = lambda batch: np.array([np.array_equal(x[0], x[1]) and np.array_equal(x[1], x[2]) for x in batch])
    colored = ~is_gray(ops.run(spec, thumbnails)[0])
    made_gray = is_gray(ops.run(spec[:1] + [{"op": "random_grayscale"}] + spec[1:], thumbnails, seed=2)[0])
    rate = made_gray[colored].mean()
    assert 0.03 < rate < 0.2, rate


@pytest.mark.parametrize("kernel_size,sigma", [(3, [0.5, 0.5]), ([5, 9], [1.2, 1.2]), (23, 3.0), ([1, 7], [2, 2])])
def test_gaussian_blur_equals_torchvision_within_one(photos, encoded, kernel_size, sigma):
    ours = run({"op": "gaussian_blur", "kernel_size": kernel_size, "sigma": sigma}, encoded).astype(int)
    ref = reference(T.GaussianBlur(kernel_size, sigma), photos).astype(int)
    diff = np.abs(ours - ref)
    assert diff.max() <= 1 and np.count_nonzero(diff) <= 1e-3 * diff.size, (diff.max(), np.count_nonzero(diff))


def test_gaussian_blur_draws_sigma_per_sample(encoded):
    spec = {"op": "gaussian_blur", "kernel_size": 9, "sigma": [1.0, 3.0]}
    a, b = run(spec, encoded[:1] * 6, seed=3), run(spec, encoded[:1] * 6, seed=3)
    assert np.array_equal(a, b)
    assert len({x.tobytes() for x in a}) == 6


@pytest.mark.parametrize("op,message", [
    ({"op": "color_jitter", "hue": 0.6}, "ops[1] (color_jitter): hue: 0.6 is out of range [-0.5, 0.5]"),
    ({"op": "color_jitter", "hue": -0.1}, "hue: a single number must be non-negative"),
    ({"op": "color_jitter", "hue": [-0.6, 0.1]}, "hue: -0.6 is out of range [-0.5, 0.5]"),
    ({"op": "color_jitter", "brightness": -0.1}, "brightness: -0.1 is out of range [0, inf]"),
    ({"op": "color_jitter", "contrast": [1.2, 0.8]}, "contrast: min is above max"),
    ({"op": "color_jitter", "saturation": [1, 2, 3]}, "saturation: has 3 numbers"),
    ({"op": "random_grayscale", "p": 1.1}, "p: 1.1 is out of range [0, 1]"),
    ({"op": "gaussian_blur"}, "kernel_size: is required"),
    ({"op": "gaussian_blur", "kernel_size": 4}, "kernel_size: must be odd positive integers, not 4"),
    ({"op": "gaussian_blur", "kernel_size": [3, 2.5]}, "kernel_size: must be odd positive integers, not 2.5"),
    ({"op": "gaussian_blur", "kernel_size": 0}, "kernel_size: 0 is out of range [1"),
    ({"op": "gaussian_blur", "kernel_size": 103}, "kernel_size: 103 is over limits.max_kernel_size (101)"),
    ({"op": "gaussian_blur", "kernel_size": 3, "sigma": 0}, "sigma: must be positive"),
    ({"op": "gaussian_blur", "kernel_size": 3, "sigma": [2, 1]}, "sigma: min is above max"),
])
def test_plan_refuses_as_torchvision_does(op, message):
    with pytest.raises(ValueError) as e:
        ops.plan(CROP + [op, {"op": "to_tensor"}])
    assert message in str(e.value)


@pytest.mark.parametrize("op", [{"op": "color_jitter"}, {"op": "random_grayscale"},
                                {"op": "gaussian_blur", "kernel_size": 3}])
def test_color_ops_take_images_not_tensors(op):
    with pytest.raises(ValueError, match=r"ops\[2\] \(\w+\): takes a PIL-style image, not a tensor"):
        ops.plan(CROP + [{"op": "to_tensor"}, op])


def test_canonical_form_writes_the_defaults():
    assert ops.plan(CROP + [{"op": "color_jitter"}, {"op": "random_grayscale"},
                            {"op": "gaussian_blur", "kernel_size": 3}, {"op": "to_tensor"}]) == \
        ops.plan(CROP + [{"op": "color_jitter", "hue": 0, "brightness": 0.0, "contrast": 0, "saturation": 0},
                         {"op": "random_grayscale", "p": 0.1},
                         {"op": "gaussian_blur", "sigma": [0.1, 2.0], "kernel_size": 3}, {"op": "to_tensor"}])
