"""torchvision.transforms.v2 classes -> batchd's op dicts: the translators translate.py adds to its table.

What maps to what (class of torchvision.transforms.v2 -> op; attributes as v2 stores them; interpolation a
torchvision InterpolationMode or the string v2 keeps, "nearest"/"bilinear"/"bicubic"):

  ToImage, PILToTensor                      -> pil_to_tensor (uint8 [3, H, W]), placed right before the first op that
                                               needs a tensor (convert_image_dtype, normalize, random_erasing,
                                               layout) or at the end: v2's documented order converts first and
                                               runs the geometry on the uint8 tensor, batchd runs its image ops
                                               before pil_to_tensor, as PIL (measured within 1 level of v2's tensor
                                               kernels bilinear, 2 bicubic: docs/pipeline_ops.md)
  ToTensor (deprecated in v2)               -> to_tensor
  ToDtype(dtype, scale=True)                -> convert_image_dtype (uint8/float32/float16/bfloat16); a dict of
                                               dtypes is read as v2 reads it for the input it gets: the
                                               tv_tensors.Image key after ToImage, torch.Tensor's after
                                               PILToTensor / ToPureTensor, then "others" (neither: refused, as v2
                                               raises; None: no op; on a PIL image no op, as v2); scale=False
                                               refused (a cast without scaling has no op)
  ConvertImageDtype(dtype)                  -> convert_image_dtype
  ToPureTensor                              -> nothing (it unwraps the tv_tensor; no value changes)
  Resize(size, interpolation, max_size, antialias)                -> resize (size=None with max_size refused)
  fill (a dict per input type, as v2 keeps it) is read the same way (PIL.Image.Image's key on a PIL image);
  interpolation may be an InterpolationMode, v2's string, or an int / PIL.Image.Resampling (as v2 accepts it)
  CenterCrop, RandomCrop, RandomResizedCrop, RandomHorizontalFlip, RandomVerticalFlip, ColorJitter,
  RandomGrayscale, GaussianBlur, Normalize  -> as their v1 classes (RandomCrop's padding, which v2 keeps as
                                               [left, right, top, bottom], goes as [left, top, right, bottom];
                                               padding with pad_if_needed in reflect / symmetric mode is refused:
                                               v2 pads once where v1 and batchd pad twice)
  RandomErasing(p, scale, ratio, value)     -> random_erasing (value None: "random", v2's normal draws)
  AutoAugment, RandAugment, TrivialAugmentWide -> auto_augment / rand_augment / trivial_augment_wide
  RandomApply, RandomChoice, RandomOrder, Compose -> random_apply / random_choice / random_order / the ops in order

Draws: every op draws from the sample's (seed, epoch, index), not from torch's generator, so a v2 pipeline gives
the same distribution as torchvision, not the same numbers. Where v2 draws differently from v1 (the auto-augment
family's sign: torch.rand(()) <= 0.5 for v1's torch.randint(2); AutoAugment's sub-policy probabilities drawn one by
one), the probabilities are the same; tests/ops/test_transforms_v2_*.py replay each class's draws.

CutMix and MixUp are batch transforms: batch.py.
"""
import PIL.Image
import torch
from torchvision import transforms as T
from torchvision import tv_tensors
from torchvision.transforms import v2
from torchvision.transforms.functional import _interpolation_modes_from_int

from .spec import check_value

_MODES = {"nearest": "nearest", "bilinear": "bilinear", "bicubic": "bicubic"}
# What v2 looks a per-type dict (fill, ToDtype's dtype) up by, for the input a transform gets: state["v2_input"].
_INPUT_TYPES = {"pil": PIL.Image.Image, "image": tv_tensors.Image, "plain": torch.Tensor}


class Refused(Exception):
    """A v2 transform that cannot be translated: the reason (translate.py raises it with place and class)."""


def interpolation(mode):
    """An InterpolationMode or v2's string -> batchd's name."""
    if isinstance(mode, int):  # PIL's constants (Image.Resampling is an IntEnum), as torchvision maps them
        try:
            mode = _interpolation_modes_from_int(int(mode))
        except (KeyError, ValueError):
            raise Refused(f"interpolation={mode!r}: batchd has nearest, bilinear and bicubic") from None
    name = mode.value if isinstance(mode, T.InterpolationMode) else mode
    if name not in _MODES:
        raise Refused(f"interpolation={mode!r}: batchd has nearest, bilinear and bicubic")
    return _MODES[name]


def by_input_type(table, state):
    """A v2 per-type dict's entry for the input the transform gets (state["v2_input"]), else "others", else None."""
    key = _INPUT_TYPES[state.get("v2_input", "pil")]
    return table[key] if key in table else table.get("others")


def _fill_value(t, state):
    """v2 keeps fill as given (.fill), a dict per input type or one value; None means 0."""
    fill = by_input_type(t.fill, state) if isinstance(t.fill, dict) else t.fill
    return None if fill is None else check_value(fill, "fill")


def _with_fill(op, t, state):
    fill = _fill_value(t, state)
    if fill is not None:
        op["fill"] = fill
    return [op]


def _random_crop(t, state, square_or_pair):
    op = {"op": "random_crop", "size": square_or_pair(t.size), "pad_if_needed": bool(t.pad_if_needed),
          "padding_mode": str(t.padding_mode)}
    if t.padding is not None and t.pad_if_needed and op["padding_mode"] in ("reflect", "symmetric"):
        raise Refused(f"padding and pad_if_needed in {op['padding_mode']} mode: v2 pads once by both amounts, where "
                      "v1 and batchd pad the padded image again (other pixels); use one of the two, or v1's class")
    fill = _fill_value(t, state)
    op["fill"] = 0 if fill is None else fill
    if t.padding is not None:
        left, right, top, bottom = (int(x) for x in t.padding)
        op["padding"] = [left, top, right, bottom]
    return [op]


def _to_dtype(t, state, dtypes):
    dtype = t.dtype
    if not state["tensor"]:
        return []  # v2 passes a PIL image through ToDtype unchanged
    if isinstance(dtype, dict):
        key = _INPUT_TYPES[state["v2_input"]]
        if key not in dtype and "others" not in dtype:  # v2 raises ValueError("No dtype was specified for type ...")
            raise Refused(f"dtype={dtype!r}: no dtype for the image's type ({key.__module__}.{key.__qualname__}) "
                          "nor 'others' (torchvision raises here too)")
        dtype = by_input_type(dtype, state)
        if dtype is None:
            return []  # "others": None: v2 leaves it as it is
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
    return _with_fill({"op": "auto_augment", "policy": "imagenet", "interpolation": interpolation(t.interpolation)}, t,
                      state)


def _to_tensor(t, state):
    if state["tensor"]:
        return []  # v2's ToTensor leaves a tensor (an Image from ToImage) as it is
    state["tensor"], state["v2_input"] = True, "plain"
    return [{"op": "to_tensor"}]


def _deferred_pil_to_tensor(v2_input):
    """ToImage / PILToTensor: the conversion waits for the first op that needs a tensor (translate.py places
    state["pending"] there); the ops between see a tensor in v2 (antialias, dict keys) and run as PIL in batchd."""
    def translate(t, state):
        if state["depth"] > 0:
            raise Refused("inside a random container: batchd converts to a tensor once, unconditionally; put it at "
                          "the top level of the Compose")
        if not state["tensor"]:
            state["pending"] = "pil_to_tensor"
        state["tensor"], state["v2_input"] = True, v2_input
        return []
    return translate


def _to_pure_tensor(t, state):
    state["v2_input"] = "plain" if state["tensor"] else state.get("v2_input", "pil")
    return []


# batchd's ops that take a tensor (the others take the PIL-style image): a deferred pil_to_tensor goes before them.
TENSOR_OPS = frozenset({"convert_image_dtype", "normalize", "random_erasing", "layout"})


def needs_tensor(op):
    """Whether `op` (an op dict, maybe a container of ops) has an op that takes a tensor."""
    return op.get("op") in TENSOR_OPS or any(needs_tensor(o) for o in op.get("ops", []) if isinstance(o, dict))


def place_pending(ops, state):
    """A deferred pil_to_tensor (ToImage / PILToTensor) goes right before the first top-level op of `ops` that takes
    a tensor (or a container holding one); a conversion of `ops`' own (to_tensor, pil_to_tensor: an op dict, the
    weights' transforms()) uses it up instead; inside a container (state["depth"] > 0) nothing is placed."""
    if state["pending"] is None or state["depth"] > 0:
        return ops
    for i, op in enumerate(ops):
        if isinstance(op, dict) and op.get("op") in ("to_tensor", "pil_to_tensor"):
            state["pending"] = None
            return ops
        if isinstance(op, dict) and needs_tensor(op):
            pending, state["pending"] = state["pending"], None
            return [*ops[:i], {"op": pending}, *ops[i:]]
    return ops


def translators(h):
    """The v2 classes' translators, built on translate.py's helpers `h` (a namespace with resize_op,
    square_or_pair, pair_or_number, per_channel, antialias, dtypes, nested, and the v1 random_resized_crop and
    color_jitter translators, which serve v2's classes as they are)."""
    def resize(t, state):
        if t.size is None:
            raise Refused(f"size=None (max_size={t.max_size}): give the size batchd resizes to")
        return [h.resize_op(t.size, interpolation(t.interpolation), t.antialias, t.max_size, state)]

    return {
        v2.ToImage: _deferred_pil_to_tensor("image"),
        v2.PILToTensor: _deferred_pil_to_tensor("plain"),
        v2.ToTensor: _to_tensor,
        v2.ToDtype: lambda t, s: _to_dtype(t, s, h.dtypes),
        v2.ConvertImageDtype: lambda t, s: _to_dtype(t, s, h.dtypes),
        v2.ToPureTensor: _to_pure_tensor,
        v2.Resize: resize,
        v2.CenterCrop: lambda t, s: [{"op": "center_crop", "size": h.square_or_pair(t.size)}],
        v2.RandomCrop: lambda t, s: _random_crop(t, s, h.square_or_pair),
        v2.RandomResizedCrop: h.random_resized_crop,  # the v1 translators: the same attributes, stored alike
        v2.RandomHorizontalFlip: lambda t, s: [{"op": "horizontal_flip", "p": float(t.p)}],
        v2.RandomVerticalFlip: lambda t, s: [{"op": "vertical_flip", "p": float(t.p)}],
        v2.ColorJitter: h.color_jitter,
        v2.RandomGrayscale: lambda t, s: [{"op": "random_grayscale", "p": float(t.p)}],
        v2.GaussianBlur: lambda t, s: [{"op": "gaussian_blur", "kernel_size": h.square_or_pair(t.kernel_size),
                                        "sigma": h.pair_or_number(t.sigma, "sigma")}],
        v2.Normalize: lambda t, s: [{"op": "normalize", "mean": h.per_channel(t.mean, "mean"),
                                     "std": h.per_channel(t.std, "std")}],
        v2.RandomErasing: _random_erasing,
        v2.TrivialAugmentWide: lambda t, s: _with_fill(
            {"op": "trivial_augment_wide", "num_magnitude_bins": int(t.num_magnitude_bins),
             "interpolation": interpolation(t.interpolation)}, t, s),
        v2.RandAugment: lambda t, s: _with_fill(
            {"op": "rand_augment", "num_ops": int(t.num_ops), "magnitude": int(t.magnitude),
             "num_magnitude_bins": int(t.num_magnitude_bins), "interpolation": interpolation(t.interpolation)}, t, s),
        v2.AutoAugment: _auto_augment,
        v2.RandomApply: h.nested("random_apply", with_p=True),
        v2.RandomChoice: h.nested("random_choice", with_p=True),
        v2.RandomOrder: h.nested("random_order", with_p=False),
    }


SEQUENCE = v2.Compose  # its .transforms: the translated transforms in order
