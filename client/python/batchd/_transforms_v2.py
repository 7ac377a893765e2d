"""torchvision.transforms.v2 classes -> batchd's op dicts: the translators batchd._transforms adds to its table.

What maps to what (class of torchvision.transforms.v2 -> op; attributes as v2 stores them; interpolation a
torchvision InterpolationMode or the string v2 keeps, "nearest"/"bilinear"/"bicubic"):

  ToImage, PILToTensor                      -> pil_to_tensor (uint8 [3, H, W]; what follows works on a tensor)
  ToTensor (deprecated in v2)               -> to_tensor
  ToDtype(dtype, scale=True)                -> convert_image_dtype (uint8/float32/float16/bfloat16); a dict of
                                               dtypes is taken when it gives images one dtype (tv_tensors.Image or
                                               "others"); scale=False refused (a cast without scaling has no op)
  ConvertImageDtype(dtype)                  -> convert_image_dtype
  ToPureTensor                              -> nothing (it unwraps the tv_tensor; no value changes)
  Resize(size, interpolation, max_size, antialias)                -> resize (size=None with max_size refused)
  CenterCrop, RandomCrop, RandomResizedCrop, RandomHorizontalFlip, RandomVerticalFlip, ColorJitter,
  RandomGrayscale, GaussianBlur, Normalize  -> as their v1 classes (RandomCrop's padding, which v2 keeps as
                                               [left, right, top, bottom], goes as [left, top, right, bottom])
  RandomErasing(p, scale, ratio, value)     -> random_erasing (value None: "random", v2's normal draws)
  AutoAugment, RandAugment, TrivialAugmentWide -> auto_augment / rand_augment / trivial_augment_wide
  RandomApply, RandomChoice, RandomOrder, Compose -> random_apply / random_choice / random_order / the ops in order

Draws: every op draws from the sample's (seed, epoch, index), not from torch's generator, so a v2 pipeline gives
the same distribution as torchvision, not the same numbers. Where v2 draws differently from v1 (the auto-augment
family's sign: torch.rand(()) <= 0.5 for v1's torch.randint(2); AutoAugment's sub-policy probabilities drawn one by
one), the probabilities are the same; tests/ops/test_transforms_v2.py replays each class's draws.

CutMix and MixUp are batch transforms: batchd._batch_transforms.
"""
import torch
from torchvision import transforms as T
from torchvision.transforms import v2

from ._spec import check_value

_MODES = {"nearest": "nearest", "bilinear": "bilinear", "bicubic": "bicubic"}


class Refused(Exception):
    """A v2 transform that cannot be translated: the reason (batchd._transforms raises it with place and class)."""


def interpolation(mode):
    """An InterpolationMode or v2's string -> batchd's name."""
    name = mode.value if isinstance(mode, T.InterpolationMode) else mode
    if name not in _MODES:
        raise Refused(f"interpolation={mode!r}: batchd has nearest, bilinear and bicubic")
    return _MODES[name]


def _fill_value(t):
    """v2 keeps fill as given (.fill) and as a dict per tv_tensor type (._fill): one value for images, or None."""
    fill = t.fill
    if isinstance(fill, dict):
        values = {repr(v) for v in fill.values()}
        if len(values) != 1:
            raise Refused(f"fill={fill!r}: batchd takes one fill for the image")
        fill = next(iter(fill.values()))
    return None if fill is None else check_value(fill, "fill")


def _with_fill(op, t):
    fill = _fill_value(t)
    if fill is not None:
        op["fill"] = fill
    return [op]


def _random_crop(t, state, square_or_pair):
    op = {"op": "random_crop", "size": square_or_pair(t.size), "pad_if_needed": bool(t.pad_if_needed),
          "padding_mode": str(t.padding_mode)}
    fill = _fill_value(t)
    op["fill"] = 0 if fill is None else fill
    if t.padding is not None:
        left, right, top, bottom = (int(x) for x in t.padding)
        op["padding"] = [left, top, right, bottom]
    return [op]


def _to_dtype(t, state, dtypes):
    dtype = t.dtype
    if isinstance(dtype, dict):
        from torchvision import tv_tensors
        image = dtype.get(tv_tensors.Image, dtype.get("others"))
        if image is None:
            raise Refused(f"dtype={dtype!r}: no dtype for images (tv_tensors.Image or 'others')")
        dtype = image
    if not getattr(t, "scale", True):
        raise Refused("scale=False: batchd's convert_image_dtype scales (ToDtype(..., scale=True)); a cast that keeps "
                      "the values has no op")
    if dtype not in dtypes:
        raise Refused(f"dtype={dtype}: batchd converts to {', '.join(f'torch.{d}' for d in dtypes.values())}")
    return [{"op": "convert_image_dtype", "dtype": dtypes[dtype]}]


def _random_erasing(t, state):
    value = t.value
    if value is None:
        value = "random"
    else:
        value = check_value(value, "value")
        if isinstance(value, list) and len(value) == 1:
            value = value[0]
    return [{"op": "random_erasing", "p": float(t.p), "scale": check_value(t.scale, "scale"),
             "ratio": check_value(t.ratio, "ratio"), "value": value}]


def _auto_augment(t, state):
    if t.policy != v2.AutoAugmentPolicy.IMAGENET:
        raise Refused(f"policy={t.policy}: batchd has AutoAugmentPolicy.IMAGENET only")
    return _with_fill({"op": "auto_augment", "policy": "imagenet", "interpolation": interpolation(t.interpolation)}, t)


def _to_tensor(name):
    def translate(t, state):
        state["tensor"] = True
        return [{"op": name}]
    return translate


def translators(h):
    """The v2 classes' translators, built on batchd._transforms' helpers `h` (a namespace with resize_op,
    square_or_pair, pair_or_number, per_channel, dtypes, nested)."""
    def resize(t, state):
        if t.size is None:
            raise Refused(f"size=None (max_size={t.max_size}): give the size batchd resizes to")
        return [h.resize_op(t.size, interpolation(t.interpolation), t.antialias, t.max_size, state)]

    def random_resized_crop(t, state):
        return [{"op": "random_resized_crop", "size": h.square_or_pair(t.size), "scale": check_value(t.scale, "scale"),
                 "ratio": check_value(t.ratio, "ratio"), "interpolation": interpolation(t.interpolation),
                 "antialias": h.antialias(t.antialias, state["tensor"])}]

    def color_jitter(t, state):
        op = {"op": "color_jitter"}
        for key in ("brightness", "contrast", "saturation", "hue"):
            value = getattr(t, key)
            op[key] = 0 if value is None else check_value(value, key)
        return [op]

    return {
        v2.ToImage: _to_tensor("pil_to_tensor"),
        v2.PILToTensor: _to_tensor("pil_to_tensor"),
        v2.ToTensor: _to_tensor("to_tensor"),
        v2.ToDtype: lambda t, s: _to_dtype(t, s, h.dtypes),
        v2.ConvertImageDtype: lambda t, s: _to_dtype(t, s, h.dtypes),
        v2.ToPureTensor: lambda t, s: [],
        v2.Resize: resize,
        v2.CenterCrop: lambda t, s: [{"op": "center_crop", "size": h.square_or_pair(t.size)}],
        v2.RandomCrop: lambda t, s: _random_crop(t, s, h.square_or_pair),
        v2.RandomResizedCrop: random_resized_crop,
        v2.RandomHorizontalFlip: lambda t, s: [{"op": "horizontal_flip", "p": float(t.p)}],
        v2.RandomVerticalFlip: lambda t, s: [{"op": "vertical_flip", "p": float(t.p)}],
        v2.ColorJitter: color_jitter,
        v2.RandomGrayscale: lambda t, s: [{"op": "random_grayscale", "p": float(t.p)}],
        v2.GaussianBlur: lambda t, s: [{"op": "gaussian_blur", "kernel_size": h.square_or_pair(t.kernel_size),
                                        "sigma": h.pair_or_number(t.sigma, "sigma")}],
        v2.Normalize: lambda t, s: [{"op": "normalize", "mean": h.per_channel(t.mean, "mean"),
                                     "std": h.per_channel(t.std, "std")}],
        v2.RandomErasing: _random_erasing,
        v2.TrivialAugmentWide: lambda t, s: _with_fill(
            {"op": "trivial_augment_wide", "num_magnitude_bins": int(t.num_magnitude_bins),
             "interpolation": interpolation(t.interpolation)}, t),
        v2.RandAugment: lambda t, s: _with_fill(
            {"op": "rand_augment", "num_ops": int(t.num_ops), "magnitude": int(t.magnitude),
             "num_magnitude_bins": int(t.num_magnitude_bins), "interpolation": interpolation(t.interpolation)}, t),
        v2.AutoAugment: _auto_augment,
        v2.RandomApply: h.nested("random_apply", with_p=True),
        v2.RandomChoice: h.nested("random_choice", with_p=True),
        v2.RandomOrder: h.nested("random_order", with_p=False),
    }


SEQUENCE = v2.Compose  # its .transforms: the translated transforms in order
