"""torchvision.transforms.v2's color ops and RandomErasing against batchd's ops, given batchd's draws
(v2_reference.py says how). Measured here (12 photos) and asserted:
- exact: ColorJitter, RandomGrayscale, RandomErasing (a number, per channel, "random").
- GaussianBlur: within 1, as v1 (v2 makes its kernel with a softmax): 0 (3x3, 1x7), 5 (5x9), 20 (9x9, sigma drawn
  in [0.1, 2]) and 34 (23x23) of 1,026,000 values differ by 1.
"""
import numpy as np
import pytest
import torch
from torchvision.transforms import v2

import batchd_ops_testing as ops
from v2_reference import EXACT, IMAGENET, levels, patch_make_params, v2_batch


CROP = [{"op": "center_crop", "size": [150, 190]}]


def color_run(op, encoded, seed=0):
    out, _ = ops.run(CROP + [op, {"op": "pil_to_tensor"}], encoded, seed=seed)
    return out


def color_reference(transform, photos):
    return v2_batch(v2.Compose([v2.CenterCrop([150, 190]), transform, v2.PILToTensor()]), photos)


@pytest.mark.parametrize("kwargs", [dict(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1),
                                    dict(brightness=(0.2, 1.9), hue=(-0.5, -0.3)), dict(saturation=(0, 0.5))])
def test_color_jitter_equals_v2_given_batchds_order_and_factors(photos, encoded, monkeypatch, kwargs):
    jitter = v2.ColorJitter(**kwargs)
    ranges = [getattr(jitter, key) for key in ("brightness", "contrast", "saturation", "hue")]
    spec = {"op": "color_jitter", **{k: list(r) for k, r in zip(("brightness", "contrast", "saturation", "hue"), ranges)
                                     if r is not None}}
    ours = color_run(spec, encoded, seed=4)
    draws = ops.color_jitter_draws(*[None if r is None else list(r) for r in ranges], 4, len(photos))
    assert len({tuple(order) for order, _ in draws}) > 3
    patch_make_params(monkeypatch, v2.ColorJitter, [
        dict(fn_idx=torch.tensor(order), **{f"{k}_factor": None if np.isnan(f) else float(f)
                                            for k, f in zip(("brightness", "contrast", "saturation", "hue"), factors)})
        for order, factors in draws])
    assert np.array_equal(ours, color_reference(jitter, photos))


def test_random_grayscale_equals_v2_given_batchds_coin(photos, encoded, monkeypatch):
    ours = color_run({"op": "random_grayscale", "p": 0.5}, encoded, seed=6)
    coins = ops.random_grayscale_draws(0.5, 6, len(photos))
    assert 2 <= sum(coins) <= len(photos) - 2
    it = iter(coins)
    monkeypatch.setattr(torch, "rand", lambda *a, **k: torch.tensor([0.0 if next(it) else 1.0]))
    assert np.array_equal(ours, color_reference(v2.RandomGrayscale(0.5), photos))
    monkeypatch.undo()
    for p in (0.0, 1.0):
        assert np.array_equal(color_run({"op": "random_grayscale", "p": p}, encoded),
                              color_reference(v2.RandomGrayscale(p), photos)), p


@pytest.mark.parametrize("kernel_size,sigma", [(3, (0.5, 0.5)), ((5, 9), (1.2, 1.2)), (23, (3.0, 3.0)),
                                               ((1, 7), (2.0, 2.0)), (9, (0.1, 2.0))])
def test_gaussian_blur_within_one_of_v2_given_batchds_sigma(photos, encoded, monkeypatch, kernel_size, sigma):
    ks = list(kernel_size) if isinstance(kernel_size, tuple) else kernel_size
    ours = color_run({"op": "gaussian_blur", "kernel_size": ks, "sigma": list(sigma)}, encoded, seed=2)
    sigmas = ops.gaussian_sigma_draws(*sigma, 2, len(photos))
    patch_make_params(monkeypatch, v2.GaussianBlur, [dict(sigma=[s, s]) for s in sigmas])
    worst, count = levels(ours, color_reference(v2.GaussianBlur(kernel_size, sigma), photos))
    # measured: 0 (3x3, 1x7), 5 (5x9), 20 (9x9, drawn sigma), 34 (23x23) of 1,026,000 values differ by 1
    assert worst <= 1 and count <= 1e-3 * ours.size, (worst, count)


# --- random_erasing (after the float conversion and normalize, where the references put it) ---

@pytest.mark.parametrize("value,v2_value", [(0, 0), ([0.5, -1.0, 2.0], (0.5, -1.0, 2.0)), ("random", "random")])
def test_random_erasing_equals_v2_given_batchds_box(photos, encoded, monkeypatch, value, v2_value):
    head = [EXACT, {"op": "resize", "size": [48, 64]}, {"op": "pil_to_tensor"},
            {"op": "convert_image_dtype", "dtype": "float32"}, {"op": "normalize", **IMAGENET}]
    erasing = {"op": "random_erasing", "p": 0.6, "scale": [0.02, 0.33], "ratio": [0.3, 3.3], "value": value}
    base, _ = ops.run(head, encoded)
    ours, _ = ops.run(head + [erasing], encoded, seed=3, epoch=1)
    erased = 0
    for i in range(len(photos)):
        # random_erasing is the sample's only random op: its rng is (3, 1, i) from the start.
        expected, box = ops.random_erasing(base[i], 0.6, (0.02, 0.33), (0.3, 3.3), value, 3, 1, i)
        assert np.array_equal(ours[i], expected), i
        if box is None:
            monkeypatch.setattr(torch, "rand", lambda *a, **k: torch.tensor([1.0]))  # v2 skips: rand >= p
        else:
            top, left, h, w = box
            v = torch.from_numpy(expected[:, top:top + h, left:left + w].copy())
            monkeypatch.setattr(torch, "rand", lambda *a, **k: torch.tensor([0.0]))
            monkeypatch.setattr(v2.RandomErasing, "make_params",
                                lambda self, flat, box=box, v=v: dict(i=box[0], j=box[1], h=box[2], w=box[3], v=v))
        theirs = v2.RandomErasing(0.6, (0.02, 0.33), (0.3, 3.3), v2_value)(torch.from_numpy(base[i].copy()))
        monkeypatch.undo()
        assert np.array_equal(ours[i], theirs.numpy()), (i, box)
        erased += box is not None
    assert 2 <= erased <= len(photos) - 2, erased
