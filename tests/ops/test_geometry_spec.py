"""The geometry ops through batchd's real executor (ops.run: plan, compiled kernels, fused head) against torchvision
0.29's transform classes on the photographs: resize (every interpolation, max_size), random_crop (padding,
pad_if_needed, fill, every padding_mode), random_resized_crop (every interpolation, square and not), exact given
batchd's draws (torchvision's get_params is patched to return them); and the plan's refusals for these ops.
decode has exact_decode = true: the fast decode is the core's own tolerance (test_spec.py)."""

import numpy as np
import pytest
import torch
from torchvision import transforms as T
from torchvision.transforms import InterpolationMode

import batchd_ops_testing as ops
from geometry_cases import RANDOM_CROPS, case_id
from conftest import png  # the photos as PNG bytes (and the fixture encoded)

EXACT = {"op": "decode", "exact_decode": True}
MODES = {"nearest": InterpolationMode.NEAREST, "bilinear": InterpolationMode.BILINEAR,
         "bicubic": InterpolationMode.BICUBIC}


def torchvision_batch(transforms_per_photo, photos):
    return np.stack([t(p).numpy() for t, p in zip(transforms_per_photo, photos)])


def patch_get_params(monkeypatch, cls, boxes):
    """cls.get_params returns batchd's draws, photo after photo."""
    it = iter(boxes)
    monkeypatch.setattr(cls, "get_params", staticmethod(lambda *a, **k: tuple(int(v) for v in next(it))))


@pytest.mark.parametrize("name", list(MODES))
@pytest.mark.parametrize("size,max_size", [(232, None), ([200, 300], None), (200, 240)])
def test_resize_equals_torchvision(photos, name, size, max_size):
    resize = {"op": "resize", "size": size, "interpolation": name}
    if max_size is not None:
        resize["max_size"] = max_size
    spec = [EXACT, resize, {"op": "center_crop", "size": 160}, {"op": "pil_to_tensor"}]
    ours, _ = ops.run(spec, [png(p) for p in photos])
    tv = T.Compose([T.Resize(size, MODES[name], max_size), T.CenterCrop(160), T.PILToTensor()])
    assert np.array_equal(ours, torchvision_batch([tv] * len(photos), photos)), (name, size, max_size)




@pytest.mark.parametrize("spec", RANDOM_CROPS, ids=case_id)
def test_random_crop_equals_torchvision_with_our_draws(photos, monkeypatch, spec):
    padding, fill = spec.get("padding"), spec.get("fill", [0])
    op = {"op": "random_crop", **spec}
    ours, _ = ops.run([EXACT, op, {"op": "pil_to_tensor"}], [png(p) for p in photos], seed=21)
    # Sample i's rng is (seed, epoch 0, i) and random_crop is its first draw: the binding's draw i.
    boxes = [ops.random_crop_params(p.width, p.height, i + 1, 21, spec["size"], padding,
                                    spec.get("pad_if_needed", False))[i] for i, p in enumerate(photos)]
    patch_get_params(monkeypatch, T.RandomCrop, boxes)
    tv = T.Compose([T.RandomCrop(spec["size"], padding if padding is None or len(padding) > 1 else padding[0],
                                 spec.get("pad_if_needed", False), fill[0] if len(fill) == 1 else tuple(fill),
                                 spec.get("padding_mode", "constant")), T.PILToTensor()])
    assert np.array_equal(ours, torchvision_batch([tv] * len(photos), photos))


def test_random_crop_larger_than_the_image_is_a_data_error_naming_the_sample(photos):
    small = photos[0].resize((50, 40))
    with pytest.raises(RuntimeError, match=r"image 1: random_crop: crop size 64x64 is larger than the \(padded\) "
                                           r"image 40x50: give padding or pad_if_needed = true"):
        ops.run([{"op": "random_crop", "size": 64}, {"op": "pil_to_tensor"}], [png(photos[1]), png(small)])


@pytest.mark.parametrize("name", list(MODES))
@pytest.mark.parametrize("size", [224, [176, 144]])  # square bilinear takes the fused head, the rest the kernel
def test_random_resized_crop_equals_torchvision_with_our_draws(photos, monkeypatch, name, size):
    op = {"op": "random_resized_crop", "size": size, "interpolation": name, "scale": [0.2, 0.9]}
    ours, _ = ops.run([EXACT, op, {"op": "pil_to_tensor"}], [png(p) for p in photos], seed=8)
    boxes = [ops.random_resized_crop_params(p.width, p.height, i + 1, 8, [0.2, 0.9])[i] for i, p in enumerate(photos)]
    patch_get_params(monkeypatch, T.RandomResizedCrop, boxes)
    tv = T.Compose([T.RandomResizedCrop(size, (0.2, 0.9), interpolation=MODES[name]), T.PILToTensor()])
    assert np.array_equal(ours, torchvision_batch([tv] * len(photos), photos)), (name, size)


def test_random_crop_draws_are_seeded_by_sample(photos):
    spec = [{"op": "random_crop", "size": 96}, {"op": "pil_to_tensor"}]
    data = [png(p) for p in photos[:4]]
    a, _ = ops.run(spec, data, seed=3, epoch=1)
    b, _ = ops.run(spec, data, seed=3, epoch=1)
    c, _ = ops.run(spec, data, seed=3, epoch=2)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


CROP = {"op": "center_crop", "size": 100}


@pytest.mark.parametrize("op,message", [
    ({"padding": [1, 2, 3]}, "ops[1] (random_crop): padding: takes 1, 2 or 4 numbers"),
    ({"padding": [1, 2, 3, 4, 5]}, "ops[1] (random_crop): padding:"),
    ({"padding": -1}, "ops[1] (random_crop): padding: -1 is out of range [0"),
    ({"padding": 2000}, "padding: 2000 is over limits.max_padding (1024)"),
    ({"fill": [1, 2]}, "ops[1] (random_crop): fill: takes one number or [r, g, b], not 2 numbers"),
    ({"fill": 256}, "ops[1] (random_crop): fill: 256 is out of range [0, 255]"),
    ({"padding_mode": "wrap"}, "ops[1] (random_crop): padding_mode: \"wrap\" is not one of"),
    ({"size": 120}, "ops[1] (random_crop): size: 120x120 is larger than the 100x100 (padded) image it gets"),
    ({"size": [90, 5000]}, "size: 5000 is over limits.max_output_side (4096)"),
])
def test_plan_refuses_bad_random_crops(op, message):
    with pytest.raises(ValueError) as e:
        ops.plan([CROP, {"op": "random_crop", "size": 64, **op}, {"op": "to_tensor"}])
    assert message in str(e.value)


def test_plan_accepts_a_crop_that_padding_makes_fit():
    ops.plan([CROP, {"op": "random_crop", "size": 120, "padding": 10}, {"op": "to_tensor"}])
    ops.plan([CROP, {"op": "random_crop", "size": [130, 90], "pad_if_needed": True}, {"op": "to_tensor"}])


@pytest.mark.parametrize("name", ["nearest", "bicubic"])
def test_interpolation_is_part_of_the_canonical_spec(name):
    a = ops.plan([{"op": "random_resized_crop", "size": 224, "interpolation": name}, {"op": "to_tensor"}])
    assert a != ops.plan([{"op": "random_resized_crop", "size": 224}, {"op": "to_tensor"}])


def _jpeg(photo):
    with open(photo.filename, "rb") as f:
        return f.read()


# The crops the fused head takes besides bilinear ones (fused_head.h): bicubic, timm's random interpolation (a
# random_choice of a bilinear and a bicubic crop of one size), bicubic resize + center crop (timm's eval).
FUSED_HEADS = {
    "bicubic_rrc": [{"op": "random_resized_crop", "size": 96, "interpolation": "bicubic"}],
    "choice_without_p": [{"op": "random_choice",
                          "ops": [{"op": "random_resized_crop", "size": 96, "interpolation": "bicubic"},
                                  {"op": "random_resized_crop", "size": 96, "ratio": [0.5, 2.0]}]}],
    "choice_of_rrc": [{"op": "random_choice", "p": [0.3, 0.7],
                       "ops": [{"op": "random_resized_crop", "size": 96, "interpolation": "bilinear"},
                               {"op": "random_resized_crop", "size": 96, "interpolation": "bicubic",
                                "scale": [0.3, 1.0]}]}],
    "bicubic_resize_center_crop": [{"op": "resize", "size": 110, "interpolation": "bicubic"},
                                   {"op": "center_crop", "size": 96}],
}


@pytest.mark.parametrize("head", list(FUSED_HEADS))
def test_decode_fused_with_a_bicubic_or_chosen_crop_makes_the_unfused_ops_bytes(photos, head):
    # decode's max_side above every photo is a plain decode that keeps the head from fusing: with exact_decode the
    # fused step must draw (the choice, then the box) and resample exactly as the ops one by one.
    data = [_jpeg(p) for p in photos]
    for seed in (1, 2, 3):
        fused, _ = ops.run([EXACT] + FUSED_HEADS[head] + [{"op": "pil_to_tensor"}], data, seed=seed)
        unfused, _ = ops.run([{**EXACT, "max_side": 4096}] + FUSED_HEADS[head] + [{"op": "pil_to_tensor"}], data,
                             seed=seed)
        assert np.array_equal(fused, unfused), (head, seed)


@pytest.mark.parametrize("head", list(FUSED_HEADS))
def test_the_fast_fused_head_is_taken_and_stays_within_the_fast_decodes_tolerance(photos, head):
    # The fast decode of a fused head DCT-scales and decodes only the crop's window: its bytes differ from the
    # unfused fast decode (so the head was taken), and from PIL's decode by the fast decode's tolerance (a 96-pixel
    # crop of these photos: a mean of about 1.6-1.8 levels for bilinear and bicubic alike, docs/pipeline_ops.md).
    data = [_jpeg(p) for p in photos]
    fast, _ = ops.run([{"op": "decode"}] + FUSED_HEADS[head] + [{"op": "pil_to_tensor"}], data, seed=4)
    unfused, _ = ops.run([{"op": "decode", "max_side": 4096}] + FUSED_HEADS[head] + [{"op": "pil_to_tensor"}], data,
                         seed=4)
    exact, _ = ops.run([EXACT] + FUSED_HEADS[head] + [{"op": "pil_to_tensor"}], data, seed=4)
    assert not np.array_equal(fast, unfused), f"{head}: not fused"
    assert np.abs(fast.astype(int) - exact.astype(int)).mean() < 2.5, head


# Choices the head does not take (fused_head.cc): an option with nearest, or not square. They run as the ops: the
# fast decode gives exactly the unfused fast decode's bytes.
UNFUSED_HEADS = {
    "choice_with_nearest": [{"op": "random_choice",
                             "ops": [{"op": "random_resized_crop", "size": 64, "interpolation": "nearest"},
                                     {"op": "random_resized_crop", "size": 64}]}],
    "choice_not_square": [{"op": "random_choice",
                           "ops": [{"op": "random_resized_crop", "size": [64, 48]},
                                   {"op": "random_resized_crop", "size": [64, 48], "interpolation": "bicubic"}]}],
}


@pytest.mark.parametrize("head", list(UNFUSED_HEADS))
def test_a_choice_the_head_does_not_take_runs_as_the_ops(photos, head):
    data = [_jpeg(p) for p in photos]
    fast, _ = ops.run([{"op": "decode"}] + UNFUSED_HEADS[head] + [{"op": "pil_to_tensor"}], data, seed=6)
    unfused, _ = ops.run([{"op": "decode", "max_side": 4096}] + UNFUSED_HEADS[head] + [{"op": "pil_to_tensor"}],
                         data, seed=6)
    assert np.array_equal(fast, unfused), head
