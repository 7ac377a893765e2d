"""torchvision transforms (v1 and v2: its table is batchd._transforms_v2's) -> batchd's op dicts (docs/operations.md,
"Pipelines"), for Loader(transform=...). v1 (every attribute read from the object, sizes as torchvision stores them,
tuples become lists, InterpolationMode.NEAREST/BILINEAR/BICUBIC -> "nearest"/"bilinear"/"bicubic"):

  Resize(size, interpolation, max_size, antialias)       -> resize (size: int -> n, [n] -> n, (h, w) -> [h, w])
  CenterCrop(size)                                        -> center_crop (size (h, w): [h, w], or n when h == w)
  RandomCrop(size, padding, pad_if_needed, fill, padding_mode)         -> random_crop
  RandomResizedCrop(size, scale, ratio, interpolation, antialias)      -> random_resized_crop
  RandomHorizontalFlip(p), RandomVerticalFlip(p)          -> horizontal_flip, vertical_flip
  ColorJitter(brightness, contrast, saturation, hue)      -> color_jitter: each factor's [min, max] as ColorJitter
                                                             stores it (0.4 -> [0.6, 1.4]), 0 when it is None (off)
  RandomGrayscale(p)                                      -> random_grayscale
  GaussianBlur(kernel_size, sigma)                        -> gaussian_blur (equal pairs as one number)
  TrivialAugmentWide, RandAugment, AutoAugment            -> trivial_augment_wide, rand_augment, auto_augment
                                                             (policy IMAGENET -> "imagenet"; fill None: left out)
  ToTensor, PILToTensor                                   -> to_tensor, pil_to_tensor
  ConvertImageDtype(dtype)                                -> convert_image_dtype (torch.uint8/float32/float16/
                                                             bfloat16 -> "uint8"/"float32"/"float16"/"bfloat16")
  Normalize(mean, std)                                    -> normalize (a single mean/std value: for all 3 channels)
  RandomErasing(p, scale, ratio, value)                   -> random_erasing (value: n, [r, g, b] or "random")
  RandomApply(transforms, p), RandomChoice(transforms, p), RandomOrder(transforms)
                                                          -> random_apply / random_choice / random_order, "ops" the
                                                             translated transforms
  Compose(transforms), a list or tuple, torch.nn.Sequential -> the translated transforms in order (flattened)
  transforms._presets.ImageClassification (weights.transforms()) -> resize, center_crop, pil_to_tensor,
                                                             convert_image_dtype float32, normalize (its forward)
  (`inplace`, of Normalize and RandomErasing, is not carried: it changes no output value.)
  any other object with a .transforms attribute (the references' ClassificationPresetTrain/Eval keep
  self.transforms = Compose(...)): its .transforms, followed until a Compose or a list.

antialias: torchvision always antialiases a PIL image (Resize/RandomResizedCrop with antialias None or True), which
is what batchd's resize does (antialias true); after ToTensor/PILToTensor the transform works on a tensor, where
None means False (0.14 and 0.29 alike; the default is True since 0.17), so antialias is then sent as given (None ->
false) and the daemon decides whether it can.

Refused, with BatchdError naming the transform's place (transform[2].transforms[0]), its class and the reason,
never dropped: every other class (Lambda, Pad, RandomRotation, AugMix, ToPILImage, ...), a subclass of a class
above (its forward may differ), a v2 class with no op, a user's class, and unsupported attribute
values: interpolation BOX/HAMMING/LANCZOS, AutoAugment policy CIFAR10/SVHN, antialias=False on a PIL image
(torchvision antialiases anyway; batchd will not guess which was meant), ConvertImageDtype to another dtype,
RandomChoice/RandomApply over a transform that is refused.

Batch transforms (mixup, cutmix): batchd/_batch_transforms.py.
"""
import types

import torch
from torchvision import transforms as T
from torchvision.transforms import autoaugment as AA
from torchvision.transforms import _presets
from torchvision.transforms.transforms import RandomTransforms as _RandomTransforms

from . import _transforms_v2
from ._batchd import BatchdError
from ._spec import check_op, check_value, spec_error

_INTERPOLATION = {T.InterpolationMode.NEAREST: "nearest", T.InterpolationMode.BILINEAR: "bilinear",
                  T.InterpolationMode.BICUBIC: "bicubic"}
_DTYPES = {torch.uint8: "uint8", torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}
_FOLLOW_LIMIT = 8  # .transforms attributes followed before giving up (a cycle, or not a preset)

_Refused = _transforms_v2.Refused  # a transform that cannot be translated: raised as BatchdError with place and class
_interpolation = _transforms_v2.interpolation


def _square_or_pair(size):
    """A (h, w) size as torchvision's _setup_size stores it: n when h == w, else [h, w]."""
    h, w = (int(x) for x in size)
    return h if h == w else [h, w]


def _antialias(value, on_tensor, deferred=False):
    if on_tensor and deferred and not value:  # after v2's ToImage, before batchd's pil_to_tensor (_transforms_v2)
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
            op = {"op": name, "ops": _translate_one(t.transforms, state, state["where"] + ".transforms")}
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


_TRANSLATORS = {
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
_NESTED = (_TRANSLATORS[T.RandomApply], _TRANSLATORS[T.RandomChoice], _TRANSLATORS[T.RandomOrder])
_V2 = _transforms_v2.translators(types.SimpleNamespace(
    resize_op=_resize_op, square_or_pair=_square_or_pair, pair_or_number=_pair_or_number, per_channel=_per_channel,
    antialias=_antialias, dtypes=_DTYPES, nested=_nested, random_resized_crop=_random_resized_crop,
    color_jitter=_color_jitter))
_NESTED += tuple(_V2[c] for c in (_transforms_v2.v2.RandomApply, _transforms_v2.v2.RandomChoice,
                                  _transforms_v2.v2.RandomOrder))
_TRANSLATORS.update(_V2)
_COMPOSES = (T.Compose, _transforms_v2.SEQUENCE)
_SEQUENCES = (list, tuple, torch.nn.Sequential, torch.nn.ModuleList)  # Compose: its .transforms


def _class_name(t):
    cls = type(t)
    return f"{cls.__module__}.{cls.__qualname__}"


def _why_not(t):
    """Why `t`, not a class batchd translates, is refused."""
    module = type(t).__module__
    if type(t) is T.Lambda:
        return ("a Lambda: Python code, which the daemon does not run; write what it does as ops, or apply it in "
                "the training step")
    if module.startswith("torchvision.prototype"):
        return "a torchvision.prototype object: write the recipe with torchvision.transforms (v1 or v2), or as op dicts"
    for known in (*_TRANSLATORS, *_COMPOSES, _RandomTransforms):
        if isinstance(t, known):
            return (f"a subclass of torchvision's {known.__name__}, whose behaviour may differ: use "
                    f"{known.__name__} itself, or op dicts")
    if module.startswith("torchvision."):
        return ("a torchvision transform that batchd has no op for (docs/operations.md, \"Pipelines\", lists "
                "them): apply it in the training step, or leave it out knowingly")
    return ("not a torchvision transform batchd can run in the daemon (a Lambda or your own class is Python code): "
            "write the recipe with the torchvision classes batchd translates, or as op dicts")


def _holds_transforms(t):
    """A preset object (the references' ClassificationPresetTrain/Eval): not torchvision's, with .transforms."""
    return (hasattr(t, "transforms") and not type(t).__module__.startswith("torchvision.")
            and not isinstance(t, (*_TRANSLATORS, *_COMPOSES, _RandomTransforms, *_SEQUENCES)))


def _translate_one(t, state, where):
    if isinstance(t, dict):
        return [check_op(t, where)]
    translate = _TRANSLATORS.get(type(t))
    if translate is not None:
        state["where"] = where
        if translate in _NESTED:  # its refusals name the inner transform already
            return translate(t, state)
        try:
            return translate(t, state)
        except _Refused as e:
            raise spec_error(f"batchd cannot translate {where}: {type(t).__name__} with {e}") from None
        except BatchdError as e:  # a value check_value() refused: name the transform, not only the key
            raise spec_error(f"batchd cannot translate {where}: {type(t).__name__}: {e}") from None
    if type(t) in _COMPOSES:
        return _translate_all(t.transforms, state, where + ".transforms")
    if type(t) in _SEQUENCES:
        return _translate_all(t, state, where)
    inner = t
    for _ in range(_FOLLOW_LIMIT):
        if not _holds_transforms(inner):
            break
        inner, where = inner.transforms, where + ".transforms"
    if inner is not t and (type(inner) in _COMPOSES or type(inner) in _SEQUENCES):
        return _translate_one(inner, state, where)
    raise spec_error(f"batchd cannot translate {where}: {_class_name(inner)} ({inner!r}) is {_why_not(inner)}")


def _translate_all(transforms, state, where):
    ops = []
    for i, t in enumerate(transforms):
        ops.extend(_transforms_v2.place_pending(_translate_one(t, state, f"{where}[{i}]"), state))
    return ops


def ops_from_torchvision(transform):
    """The op dicts of `transform` (see the module docstring); BatchdError (code "invalid argument") naming the
    first transform that cannot be translated, its place (transform.transforms[2].transforms[0]), its class and
    why."""
    state = {"tensor": False, "v2_input": "pil", "pending": None, "depth": 0}
    ops = _transforms_v2.place_pending(_translate_one(transform, state, "transform"), state)
    return ops + [{"op": state["pending"]}] if state["pending"] else ops
