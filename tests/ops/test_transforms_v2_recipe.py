"""torchvision.transforms.v2's eval recipe, ToDtype and its documented order (ToImage first) against batchd's ops
(v2_reference.py says how). Measured here (12 photos) and asserted:
- exact: the eval recipe up to the uint8 tensor (Resize bilinear and bicubic, CenterCrop, ToImage or PILToTensor).
- ToDtype(torch.float32, scale=True) multiplies by 1/255 where batchd's convert_image_dtype divides by 255 (v1's
  ConvertImageDtype): 126 of the 256 uint8 values differ by one float32 ulp (<= 5.96e-8); after Normalize(ImageNet)
  about half the values differ, by at most 7.2e-7 (measured 7.15e-7). float16 / bfloat16: equal for all 256 values.
- ToImage first (v2's documented order): v2 then resizes the uint8 tensor with its own kernels, batchd (whose image
  ops must come before pil_to_tensor) as PIL: RandomResizedCrop(224) within 1 level (bilinear, 0.87% of the values)
  / 2 levels (bicubic, 1.16%).
"""
import numpy as np
import pytest
import torch
from torchvision.transforms import v2
from torchvision.transforms.v2 import functional as F2

import batchd_ops_testing as ops
from v2_reference import EXACT, IMAGENET, MODES, levels, patch_make_params, v2_batch


# --- the eval recipe ---

def eval_spec(interpolation):
    return [EXACT, {"op": "resize", "size": 256, "interpolation": interpolation}, {"op": "center_crop", "size": 224},
            {"op": "pil_to_tensor"}, {"op": "convert_image_dtype", "dtype": "float32"}, {"op": "normalize", **IMAGENET}]


@pytest.mark.parametrize("to_image", [v2.ToImage, v2.PILToTensor])
@pytest.mark.parametrize("interpolation", ["bilinear", "bicubic"])
def test_eval_recipe_is_exact_up_to_the_uint8_tensor(photos, encoded, interpolation, to_image):
    ours, _ = ops.run(eval_spec(interpolation)[:4], encoded)
    theirs = v2_batch(v2.Compose([v2.Resize(256, interpolation=MODES[interpolation], antialias=True),
                                  v2.CenterCrop(224), to_image()]), photos)
    assert ours.dtype == theirs.dtype == np.uint8 and np.array_equal(ours, theirs)


def test_center_crop_larger_than_the_image_pads_with_zero_as_v2(photos, encoded):
    spec = [EXACT, {"op": "resize", "size": 100}, {"op": "center_crop", "size": [120, 260]}, {"op": "pil_to_tensor"}]
    ours, _ = ops.run(spec, encoded)
    theirs = v2_batch(v2.Compose([v2.Resize(100), v2.CenterCrop([120, 260]), v2.ToImage()]), photos)
    assert np.array_equal(ours, theirs)


def test_to_dtype_multiplies_where_batchd_divides():
    """v2's ToDtype(float, scale=True): image.to(dtype).mul_(1 / 255); batchd (v1's ConvertImageDtype): / 255."""
    u8 = torch.arange(256, dtype=torch.uint8).reshape(1, 1, -1)
    ours = ops.image_to_float(u8.reshape(-1).numpy())
    theirs = F2.to_dtype(u8, torch.float32, scale=True).reshape(-1).numpy()
    differ = ours != theirs
    assert differ.sum() == 126 and np.abs(ours - theirs).max() <= 2.0**-24, (differ.sum(), np.abs(ours - theirs).max())
    assert np.array_equal(ours, (u8.reshape(-1).float() / 255).numpy())
    for dtype, to in ((torch.float16, ops.to_half), (torch.bfloat16, ops.to_bfloat16)):
        theirs = F2.to_dtype(u8, dtype, scale=True).reshape(-1).view(torch.int16).numpy().view(np.uint16)
        assert np.array_equal(to(ours), theirs), dtype


@pytest.mark.parametrize("interpolation", ["bilinear", "bicubic"])
def test_eval_recipe_float32_differs_only_by_to_dtypes_rounding(photos, encoded, interpolation):
    ours, _ = ops.run(eval_spec(interpolation), encoded)
    head = v2.Compose([v2.Resize(256, interpolation=MODES[interpolation]), v2.CenterCrop(224), v2.ToImage()])
    normalize = v2.Normalize(**IMAGENET)
    divided = np.stack([normalize(head(p).to(torch.float32) / 255).numpy() for p in photos])
    assert np.array_equal(ours, divided)  # v2's recipe with v1's division: byte for byte
    theirs = v2_batch(v2.Compose([head, v2.ToDtype(torch.float32, scale=True), normalize]), photos)
    diff = np.abs(ours - theirs)
    assert diff.max() <= 7.2e-7, diff.max()
    assert 0.4 < np.count_nonzero(diff) / diff.size < 0.6, np.count_nonzero(diff) / diff.size


# --- v2's documented order, ToImage first ---

def test_image_ops_after_pil_to_tensor_are_refused_by_the_plan():
    """ToImage() first translates to pil_to_tensor first, which the plan refuses: the spec must have the image ops
    before pil_to_tensor (the order the tolerance below is measured with)."""
    with pytest.raises(ValueError, match=r"ops\[2\] \(random_resized_crop\): takes a PIL-style image, not a tensor"):
        ops.plan([EXACT, {"op": "pil_to_tensor"}, {"op": "random_resized_crop", "size": 224},
                  {"op": "convert_image_dtype", "dtype": "float32"}])


@pytest.mark.parametrize("name,bound", [("bilinear", 1), ("bicubic", 2)])
def test_to_image_first_resizes_tensors_within_two_levels(photos, encoded, monkeypatch, name, bound):
    """v2.Compose([ToImage(), RandomResizedCrop(224), RandomHorizontalFlip(1), ToDtype(float32), Normalize]): v2
    resamples the uint8 tensor (torch's antialiased interpolate), batchd's random_resized_crop resamples as PIL.
    Measured: bilinear at most 1 level, 0.87% of the values; bicubic at most 2 levels, 1.16%."""
    spec = [EXACT, {"op": "random_resized_crop", "size": 224, "interpolation": name},
            {"op": "horizontal_flip", "p": 1.0}, {"op": "pil_to_tensor"}]
    ours, _ = ops.run(spec, encoded, seed=9)
    boxes = [ops.random_resized_crop_params(p.width, p.height, i + 1, 9)[i] for i, p in enumerate(photos)]
    patch_make_params(monkeypatch, v2.RandomResizedCrop,
                      [dict(zip(("top", "left", "height", "width"), (int(v) for v in b))) for b in boxes])
    head = v2.Compose([v2.ToImage(), v2.RandomResizedCrop(224, interpolation=MODES[name], antialias=True),
                       v2.RandomHorizontalFlip(1.0)])
    theirs = v2_batch(head, photos)
    worst, count = levels(ours, theirs)
    assert 0 < worst <= bound and count <= 0.02 * ours.size, (worst, count / ours.size)
