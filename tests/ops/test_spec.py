"""Whole specs through batchd's real executor (plan + compiled kernels + the fused head/tail) against torchvision
0.29 on real photographs; and the plan's rules (spec_plan.h), one test each."""

import numpy as np
import pytest
import torch
import torchvision.transforms as T

import batchd_ops_testing as ops
from conftest import png  # the photos as PNG bytes (and the fixture encoded)

IMAGENET = dict(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])


def jpeg_bytes(img):
    with open(img.filename, "rb") as f:
        return f.read()


def torch_batch(transform, photos):
    return np.stack([transform(p).numpy() for p in photos])


def test_val224_with_exact_decode_is_bit_identical_to_torchvision(photos):
    spec = [{"op": "decode", "exact_decode": True}, {"op": "resize", "size": 256}, {"op": "center_crop", "size": 224},
            {"op": "to_tensor"}, {"op": "normalize", **IMAGENET}]
    ours, _ = ops.run(spec, [jpeg_bytes(p) for p in photos])
    ref = torch_batch(T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(), T.Normalize(**IMAGENET)]), photos)
    assert ours.dtype == np.float32 and ours.shape == ref.shape
    assert np.array_equal(ours, ref)


@pytest.mark.parametrize("layout", ["CHW", "HWC"])
def test_unfused_ops_equal_torchvision(photos, layout):
    # resize to [h, w] is not the fused val path: every op runs as its own kernel; flips with p = 1 are certain.
    spec = [{"op": "resize", "size": [200, 300]}, {"op": "center_crop", "size": [180, 250]},
            {"op": "vertical_flip", "p": 1.0}, {"op": "horizontal_flip", "p": 1}, {"op": "to_tensor"},
            {"op": "normalize", **IMAGENET}, {"op": "layout", "order": layout}]
    ours, _ = ops.run(spec, [png(p) for p in photos])
    ref = torch_batch(T.Compose([T.Resize([200, 300]), T.CenterCrop([180, 250]), T.RandomVerticalFlip(1.0),
                                 T.RandomHorizontalFlip(1.0), T.ToTensor(), T.Normalize(**IMAGENET)]), photos)
    if layout == "HWC":
        ref = ref.transpose(0, 2, 3, 1)
    assert np.array_equal(ours, ref)


def test_center_crop_larger_than_the_image_pads_with_zero_as_torchvision(photos):
    spec = [{"op": "resize", "size": 100}, {"op": "center_crop", "size": [120, 260]}, {"op": "pil_to_tensor"}]
    ours, _ = ops.run(spec, [png(p) for p in photos])
    ref = torch_batch(T.Compose([T.Resize(100), T.CenterCrop([120, 260]), T.PILToTensor()]), photos)
    assert ours.dtype == np.uint8 and np.array_equal(ours, ref)


def test_uint8_tensor_then_convert_image_dtype_and_normalize_as_torchvision(photos):
    spec = [{"op": "resize", "size": [64, 64]}, {"op": "pil_to_tensor"}, {"op": "convert_image_dtype"},
            {"op": "normalize", **IMAGENET}]
    ours, _ = ops.run(spec, [png(p) for p in photos])
    ref = torch_batch(T.Compose([T.Resize([64, 64]), T.PILToTensor(), T.ConvertImageDtype(torch.float32),
                                 T.Normalize(**IMAGENET)]), photos)
    assert np.array_equal(ours, ref)


def test_float_to_uint8_conversion_scales_as_torchvision(photos):
    spec = [{"op": "resize", "size": [32, 48]}, {"op": "to_tensor"}, {"op": "convert_image_dtype", "dtype": "uint8"}]
    ours, _ = ops.run(spec, [png(p) for p in photos])
    ref = torch_batch(T.Compose([T.Resize([32, 48]), T.ToTensor(), T.ConvertImageDtype(torch.uint8)]), photos)
    assert np.array_equal(ours, ref)


def test_float_to_uint8_of_values_outside_0_1_wraps_as_torch(photos):
    # After normalize the values leave [0, 1]: torch's .to(torch.uint8) truncates through int64 and keeps the low
    # byte (-0.5 -> 0, -1.5 -> 255, 1.2 -> 51), it does not clamp (dtype_cast.h).
    spec = [{"op": "resize", "size": [32, 48]}, {"op": "to_tensor"}, {"op": "normalize", **IMAGENET},
            {"op": "convert_image_dtype", "dtype": "uint8"}]
    ours, _ = ops.run(spec, [png(p) for p in photos])
    ref = torch_batch(T.Compose([T.Resize([32, 48]), T.ToTensor(), T.Normalize(**IMAGENET),
                                 T.ConvertImageDtype(torch.uint8)]), photos)
    assert np.array_equal(ours, ref)


def _bits(a):
    """float16 / bfloat16 values as their 16 bits (numpy has no bfloat16: batchd_ops_testing gives its bits)."""
    if isinstance(a, torch.Tensor):
        return a.view(torch.int16).numpy().view(np.uint16) if a.dtype in (torch.float16, torch.bfloat16) else a.numpy()
    return a.view(np.uint16) if a.dtype == np.float16 else a


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("ops_after,transforms_after", [
    # uint8 -> dtype as the tail's last step (into the slot, through the table), mirrored rows in CHW.
    ([{"op": "horizontal_flip", "p": 1}, {"op": "pil_to_tensor"}, {"op": "convert_image_dtype", "dtype": "DT"}],
     [T.RandomHorizontalFlip(1.0), T.PILToTensor(), "DT"]),
    # normalize on dtype values: torch rounds mean and std, the difference and the quotient.
    ([{"op": "horizontal_flip", "p": 1}, {"op": "pil_to_tensor"}, {"op": "convert_image_dtype", "dtype": "DT"},
      {"op": "normalize", **IMAGENET}, {"op": "layout", "order": "HWC"}],
     [T.RandomHorizontalFlip(1.0), T.PILToTensor(), "DT", T.Normalize(**IMAGENET), "HWC"]),
    # float32 -> dtype, and back to uint8 (x * 255.999 rounded to dtype: 1.0 becomes 256, which wraps to 0).
    ([{"op": "to_tensor"}, {"op": "normalize", **IMAGENET}, {"op": "convert_image_dtype", "dtype": "DT"}],
     [T.ToTensor(), T.Normalize(**IMAGENET), "DT"]),
    ([{"op": "to_tensor"}, {"op": "convert_image_dtype", "dtype": "DT"}, {"op": "convert_image_dtype", "dtype": "uint8"}],
     [T.ToTensor(), "DT", T.ConvertImageDtype(torch.uint8)]),
    # after the tail: random_erasing (p 0) ends it, so normalize and the casts run as kernels on the sample's values.
    ([{"op": "pil_to_tensor"}, {"op": "convert_image_dtype", "dtype": "DT"}, {"op": "random_erasing", "p": 0},
      {"op": "normalize", **IMAGENET}, {"op": "convert_image_dtype", "dtype": "float32"}],
     [T.PILToTensor(), "DT", T.Normalize(**IMAGENET), T.ConvertImageDtype(torch.float32)]),
    ([{"op": "pil_to_tensor"}, {"op": "convert_image_dtype", "dtype": "DT"}, {"op": "random_erasing", "p": 0},
      {"op": "normalize", **IMAGENET}],
     [T.PILToTensor(), "DT", T.Normalize(**IMAGENET)]),
])
def test_float16_and_bfloat16_equal_torchvision_bit_for_bit(photos, dtype, ops_after, transforms_after):
    tdt = getattr(torch, dtype)
    spec = [{"op": "resize", "size": [48, 64]}] + [{**o, "dtype": dtype} if o.get("dtype") == "DT" else o
                                                    for o in ops_after]
    tail = [T.ConvertImageDtype(tdt) if t == "DT" else t for t in transforms_after]
    hwc = tail[-1] == "HWC"
    compose = T.Compose([T.Resize([48, 64])] + [t for t in tail if t != "HWC"])
    ours, _ = ops.run(spec, [png(p) for p in photos])
    ref = torch.stack([compose(p) for p in photos])
    if hwc:
        ref = ref.permute(0, 2, 3, 1).contiguous()
    assert ours.shape == tuple(ref.shape)
    assert np.array_equal(_bits(ours), _bits(ref))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_random_erasing_on_float16_and_bfloat16_assigns_the_rounded_value_as_torch(photos, dtype):
    # torchvision's F.erase assigns a float32 value into the tensor, which rounds it: normalize after it sees the
    # rounded value. The box is where the erased run differs from the same run with p = 0.
    tdt = getattr(torch, dtype)
    value = [0.1, 0.2, 0.3]
    head = [{"op": "resize", "size": [48, 64]}, {"op": "pil_to_tensor"}, {"op": "convert_image_dtype", "dtype": dtype}]
    data = [png(p) for p in photos[:3]]
    plain, _ = ops.run(head + [{"op": "random_erasing", "p": 0.0, "value": value}], data)
    erased, _ = ops.run(head + [{"op": "random_erasing", "p": 1.0, "scale": [0.1, 0.2], "value": value},
                                {"op": "normalize", **IMAGENET}], data)
    for k, photo in enumerate(photos[:3]):
        t = T.Compose([T.Resize([48, 64]), T.PILToTensor(), T.ConvertImageDtype(tdt)])(photo)
        rounded = torch.tensor(value).to(tdt)
        mask = (torch.from_numpy(_bits(plain[k]).astype(np.int32)) !=
                t.view(torch.int16).to(torch.int32) & 0xFFFF)
        assert not mask.any(), "p = 0 erased nothing"
        # ours before normalize: find the box from the normalized output against a normalized unerased tensor
        normalized = T.Normalize(**IMAGENET)(t)
        diff = torch.from_numpy(_bits(erased[k]).astype(np.int32)) != normalized.view(torch.int16).to(torch.int32) & 0xFFFF
        rows, cols = diff.any(0).any(1).nonzero(), diff.any(0).any(0).nonzero()
        i, j = rows.min().item(), cols.min().item()
        h, w = rows.max().item() - i + 1, cols.max().item() - j + 1
        ref = T.Normalize(**IMAGENET)(T.functional.erase(t, i, j, h, w, rounded[:, None, None]))
        assert np.array_equal(_bits(erased[k]), _bits(ref)), f"photo {k}: box {(i, j, h, w)}"


def test_random_apply_choice_order_with_certain_outcomes(photos):
    flip = {"op": "horizontal_flip", "p": 1.0}
    spec = [{"op": "resize", "size": [40, 40]}, {"op": "random_apply", "p": 1.0, "ops": [flip]},
            {"op": "random_choice", "ops": [{"op": "vertical_flip", "p": 1.0}], "p": [1]},
            {"op": "random_apply", "p": 0.0, "ops": [flip]}, {"op": "pil_to_tensor"}]
    ours, _ = ops.run(spec, [png(p) for p in photos[:3]])
    ref = torch_batch(T.Compose([T.Resize([40, 40]), T.RandomHorizontalFlip(1.0), T.RandomVerticalFlip(1.0),
                                 T.PILToTensor()]), photos[:3])
    assert np.array_equal(ours, ref)


def test_a_sample_is_the_same_whoever_makes_it_and_differs_by_seed(photos):
    spec = [{"op": "random_resized_crop", "size": 64}, {"op": "horizontal_flip"}, {"op": "pil_to_tensor"}]
    data = [png(p) for p in photos[:4]]
    a, _ = ops.run(spec, data, seed=5, epoch=2)
    b, _ = ops.run(spec, data, seed=5, epoch=2)
    c, _ = ops.run(spec, data, seed=6, epoch=2)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_key_order_and_defaults_do_not_change_the_canonical_spec():
    a = ops.plan([{"op": "random_resized_crop", "size": 224, "scale": [0.08, 1.0]}, {"op": "to_tensor"}])
    b = ops.plan([{"scale": [0.08, 1], "size": 224.0, "op": "random_resized_crop", "interpolation": "bilinear"},
                  {"op": "to_tensor"}])
    c = ops.plan([{"op": "decode"}, {"op": "random_resized_crop", "size": 224}, {"op": "to_tensor"}])
    assert a == b == c
    assert a != ops.plan([{"op": "random_resized_crop", "size": 192}, {"op": "to_tensor"}])


def test_two_spellings_of_one_parameter_have_one_canonical_form():
    crop = {"op": "center_crop", "size": 8}
    jitter = ops.plan([crop, {"op": "color_jitter", "brightness": 0.4, "hue": 0.1}, {"op": "to_tensor"}])
    assert jitter == ops.plan([crop, {"op": "color_jitter", "brightness": [0.6, 1.4], "hue": [-0.1, 0.1],
                                      "contrast": [1, 1]}, {"op": "to_tensor"}])
    blur = ops.plan([crop, {"op": "gaussian_blur", "kernel_size": 5, "sigma": 2}, {"op": "to_tensor"}])
    assert blur == ops.plan([crop, {"op": "gaussian_blur", "kernel_size": [5, 5], "sigma": [2.0, 2.0]},
                             {"op": "to_tensor"}])


@pytest.mark.parametrize("spec,message", [
    ([{"op": "resize_it", "size": 3}, {"op": "to_tensor"}], "ops[0] (resize_it): unknown op (known: decode"),
    ([{"op": "resize", "sizes": 3}], "ops[0] (resize): unknown parameter 'sizes' (resize takes size"),
    ([{"op": "resize"}], "ops[0] (resize): size: is required"),
    ([{"op": "center_crop", "size": 0}], "ops[0] (center_crop): size: 0 is out of range [1"),
    ([{"op": "center_crop", "size": 5000}], "size: 5000 is over limits.max_output_side (4096)"),
    ([{"op": "horizontal_flip", "p": 1.5}], "ops[0] (horizontal_flip): p: 1.5 is out of range [0, 1]"),
    ([{"op": "resize", "size": 10, "interpolation": "lanczos"}], "interpolation: \"lanczos\" is not one of"),
    ([{"op": "center_crop", "size": 8}, {"op": "normalize", **IMAGENET}], "ops[1] (normalize): takes a tensor"),
    ([{"op": "center_crop", "size": 8}, {"op": "pil_to_tensor"}, {"op": "normalize", **IMAGENET}],
     "ops[2] (normalize): takes a float tensor, not uint8"),
    ([{"op": "to_tensor"}, {"op": "center_crop", "size": 8}], "ops[1] (center_crop): takes a PIL-style image"),
    ([{"op": "center_crop", "size": 8}, {"op": "decode"}, {"op": "to_tensor"}], "ops[1] (decode): comes once, first"),
    ([{"op": "resize", "size": 8}, {"op": "to_tensor"}], "the output's size depends on the input image"),
    ([{"op": "center_crop", "size": 8}], "the ops end with an image, not a tensor"),
    ([{"op": "center_crop", "size": 8}, {"op": "random_apply", "ops": [{"op": "resize", "size": [4, 4]}]},
      {"op": "to_tensor"}], "the output's size depends on the input image"),
    ([{"op": "center_crop", "size": 8}, {"op": "to_tensor"}, {"op": "layout", "order": "HWC"},
      {"op": "normalize", **IMAGENET}], "ops[3] (normalize): comes before layout"),
    ([{"op": "random_resized_crop", "size": 8, "scale": [0.9, 0.5]}, {"op": "to_tensor"}], "scale: min is above max"),
    ([{"op": "random_choice", "ops": [{"op": "horizontal_flip"}], "p": [1, 2]}], "p: has 2 weights for 1 ops"),
    ([{"op": "resize", "size": 8, "antialias": False}], "antialias: false is not served"),
])
def test_plan_refuses_naming_the_op_and_key(spec, message):
    with pytest.raises(ValueError) as e:
        ops.plan(spec)
    assert message in str(e.value)


def test_too_many_ops_counts_nested_ones():
    flip = {"op": "horizontal_flip"}
    ops.plan([{"op": "center_crop", "size": 8}, *[flip] * 60, {"op": "to_tensor"}])  # 62 + decode = 63 <= 64
    with pytest.raises(ValueError, match=r"more than 64 ops, nested ones included \(limits.max_ops\)"):
        ops.plan([{"op": "center_crop", "size": 8}, {"op": "random_apply", "ops": [flip] * 61}, {"op": "to_tensor"}])
