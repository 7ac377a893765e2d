"""torchvision.transforms (v1) -> batchd's op dicts: one translator per class, the table that translate.py's
docstring gives (its walker looks each transform's class up in TRANSLATORS, and merges the v2 classes' table,
v2.py, which reuses the helpers of HELPERS). A translator takes (transform, state) and returns
its op dicts; state["translate"] is the walker (for RandomApply/RandomChoice/RandomOrder's inner transforms),
state["where"] the transform's place; an unsupported value raises v2.Refused."""
import types

import torch
from torchvision import transforms as T
from torchvision.transforms import autoaugment as AA
from torchvision.transforms import _presets

from . import v2
from .spec import check_value

_INTERPOLATION = {T.InterpolationMode.NEAREST: "nearest", T.InterpolationMode.BILINEAR: "bilinear",
                  T.InterpolationMode.BICUBIC: "bicubic"}
_DTYPES = {torch.uint8: "uint8", torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}

_Refused = v2.Refused  # a transform that cannot be translated: raised as BatchdError with place and class
_interpolation = v2.interpolation


def _square_or_pair(size):
    """A (h, w) size as torchvision's _setup_size stores it: n when h == w, else [h, w]."""
    h, w = (int(x) for x in size)
    return h if h == w else [h, w]


def _antialias(value, on_tensor, deferred=False):
    if on_tensor and deferred and not value:  # after v2's ToImage, before batchd's pil_to_tensor (v2.py)
        raise _Refused(f"antialias={value} after ToImage/PILToTensor: batchd resizes before the conversion, as PIL "
                       "does, always antialiased; pass antialias=True (v2's default)")
    if on_tensor:
        return bool(value)  # None means False on a tensor (torchvision's resize kernels for tensors)
    if value is False:
        raise _Refused("antialias=False on a PIL image: torchvision ignores it and antialiases anyway; batchd always "
                       "antialiases there: pass antialias=True or leave it at its default")
    return True


def _pair_or_number(value, key):
    """sigma (s, s) -> s; (lo, hi) -> [lo, hi]."""
    values = check_value(value, key)
    if isinstance(values, list) and len(values) == 2 and values[0] == values[1]:
        return values[0]
    return values


def _fill(op, fill):
    if fill is not None:
        op["fill"] = check_value(fill, "fill")
    return op


def _resize_op(size, interpolation, antialias, max_size, state):
    if not isinstance(size, int):
        size = [int(x) for x in size]
        size = size[0] if len(size) == 1 else size  # [n] is the shorter side, as n
    op = {"op": "resize", "size": size, "interpolation": interpolation,
          "antialias": _antialias(antialias, state["tensor"], state["pending"] is not None)}
    if max_size is not None:
        op["max_size"] = int(max_size)
    return op


def _resize(t, state):
    return [_resize_op(t.size, _interpolation(t.interpolation), t.antialias, t.max_size, state)]


def _random_crop(t, state):
    op = {"op": "random_crop", "size": _square_or_pair(t.size), "pad_if_needed": bool(t.pad_if_needed),
          "fill": check_value(t.fill, "fill"), "padding_mode": str(t.padding_mode)}
    if t.padding is not None:
        padding = check_value(t.padding, "padding")
        op["padding"] = padding[0] if isinstance(padding, list) and len(padding) == 1 else padding
    return [op]


def _random_resized_crop(t, state):
    return [{"op": "random_resized_crop", "size": _square_or_pair(t.size), "scale": check_value(t.scale, "scale"),
             "ratio": check_value(t.ratio, "ratio"), "interpolation": _interpolation(t.interpolation),
             "antialias": _antialias(t.antialias, state["tensor"], state["pending"] is not None)}]


def _color_jitter(t, state):
    op = {"op": "color_jitter"}
    for key in ("brightness", "contrast", "saturation", "hue"):
        value = getattr(t, key)
        op[key] = 0 if value is None else check_value(value, key)
    return [op]


def _auto_augment(t, state):
    if t.policy != AA.AutoAugmentPolicy.IMAGENET:
        raise _Refused(f"policy={t.policy}: batchd has AutoAugmentPolicy.IMAGENET only")
    return [_fill({"op": "auto_augment", "policy": "imagenet", "interpolation": _interpolation(t.interpolation)},
                  t.fill)]


def _convert_image_dtype(t, state):
    if t.dtype not in _DTYPES:
        raise _Refused(f"dtype={t.dtype}: batchd converts to {', '.join(f'torch.{d}' for d in _DTYPES.values())}")
    return [{"op": "convert_image_dtype", "dtype": _DTYPES[t.dtype]}]


def _per_channel(value, key):
    values = check_value(value, key)
    if not isinstance(values, list):
        values = [values]
    return values * 3 if len(values) == 1 else values


def _random_erasing(t, state):
    value = t.value if isinstance(t.value, str) else check_value(t.value, "value")
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    return [{"op": "random_erasing", "p": float(t.p), "scale": check_value(t.scale, "scale"),
             "ratio": check_value(t.ratio, "ratio"), "value": value}]


def _to_tensor(name):
    def translate(t, state):
        state["tensor"], state["v2_input"] = True, "plain"
        return [{"op": name}]
    return translate


def _nested(name, with_p):
    def translate(t, state):
        state["depth"] += 1  # inside a container a deferred pil_to_tensor is not placed (it would run sometimes)
        try:
            op = {"op": name, "ops": state["translate"](t.transforms, state, state["where"] + ".transforms")}
        finally:
            state["depth"] -= 1
        if with_p and t.p is not None:
            op["p"] = float(t.p) if name == "random_apply" else check_value(t.p, "p")
        return [op]
    return translate


def _image_classification(t, state):
    ops = [{"op": "resize", "size": int(t.resize_size[0]), "interpolation": _interpolation(t.interpolation),
            "antialias": _antialias(getattr(t, "antialias", True), False)},
           {"op": "center_crop", "size": int(t.crop_size[0])},
           {"op": "pil_to_tensor"}, {"op": "convert_image_dtype", "dtype": "float32"},
           {"op": "normalize", "mean": _per_channel(t.mean, "mean"), "std": _per_channel(t.std, "std")}]
    state["tensor"] = True
    return ops


TRANSLATORS = {
    T.Resize: _resize,
    T.CenterCrop: lambda t, s: [{"op": "center_crop", "size": _square_or_pair(t.size)}],
    T.RandomCrop: _random_crop,
    T.RandomResizedCrop: _random_resized_crop,
    T.RandomHorizontalFlip: lambda t, s: [{"op": "horizontal_flip", "p": float(t.p)}],
    T.RandomVerticalFlip: lambda t, s: [{"op": "vertical_flip", "p": float(t.p)}],
    T.ColorJitter: _color_jitter,
    T.RandomGrayscale: lambda t, s: [{"op": "random_grayscale", "p": float(t.p)}],
    T.GaussianBlur: lambda t, s: [{"op": "gaussian_blur", "kernel_size": _square_or_pair(t.kernel_size),
                                   "sigma": _pair_or_number(t.sigma, "sigma")}],
    T.TrivialAugmentWide: lambda t, s: [_fill(
        {"op": "trivial_augment_wide", "num_magnitude_bins": int(t.num_magnitude_bins),
         "interpolation": _interpolation(t.interpolation)}, t.fill)],
    T.RandAugment: lambda t, s: [_fill(
        {"op": "rand_augment", "num_ops": int(t.num_ops), "magnitude": int(t.magnitude),
         "num_magnitude_bins": int(t.num_magnitude_bins), "interpolation": _interpolation(t.interpolation)}, t.fill)],
    T.AutoAugment: _auto_augment,
    T.ToTensor: _to_tensor("to_tensor"),
    T.PILToTensor: _to_tensor("pil_to_tensor"),
    T.ConvertImageDtype: _convert_image_dtype,
    T.Normalize: lambda t, s: [{"op": "normalize", "mean": _per_channel(t.mean, "mean"),
                                "std": _per_channel(t.std, "std")}],
    T.RandomErasing: _random_erasing,
    T.RandomApply: _nested("random_apply", with_p=True),
    T.RandomChoice: _nested("random_choice", with_p=True),
    T.RandomOrder: _nested("random_order", with_p=False),
    _presets.ImageClassification: _image_classification,
}
NESTED = (TRANSLATORS[T.RandomApply], TRANSLATORS[T.RandomChoice], TRANSLATORS[T.RandomOrder])
HELPERS = types.SimpleNamespace(
    resize_op=_resize_op, square_or_pair=_square_or_pair, pair_or_number=_pair_or_number, per_channel=_per_channel,
    antialias=_antialias, dtypes=_DTYPES, nested=_nested, random_resized_crop=_random_resized_crop,
    color_jitter=_color_jitter)
