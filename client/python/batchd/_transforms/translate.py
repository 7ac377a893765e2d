"""torchvision transforms (v1 and v2: its table is v2.py's) -> batchd's op dicts (docs/operations.md,
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

The translators of the v1 classes: v1.py. Batch transforms (mixup, cutmix): batch.py.
"""
import torch
from torchvision import transforms as T
from torchvision.transforms.transforms import RandomTransforms as _RandomTransforms

from . import v1, v2
from .._batchd import BatchdError
from .spec import check_op, spec_error

_Refused = v2.Refused  # a transform that cannot be translated: raised as BatchdError with place and class
_TRANSLATORS = dict(v1.TRANSLATORS)
_V2 = v2.translators(v1.HELPERS)
# the nested classes' translators (v2.v2: torchvision.transforms.v2, as v2.py imports it)
_NESTED = v1.NESTED + tuple(_V2[c] for c in (v2.v2.RandomApply, v2.v2.RandomChoice, v2.v2.RandomOrder))
_TRANSLATORS.update(_V2)
_FOLLOW_LIMIT = 8  # .transforms attributes followed before giving up (a cycle, or not a preset)
_COMPOSES = (T.Compose, v2.SEQUENCE)
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
        ops.extend(v2.place_pending(_translate_one(t, state, f"{where}[{i}]"), state))
    return ops


def ops_from_torchvision(transform):
    """The op dicts of `transform` (see the module docstring); BatchdError (code "invalid argument") naming the
    first transform that cannot be translated, its place (transform.transforms[2].transforms[0]), its class and
    why."""
    state = {"tensor": False, "v2_input": "pil", "pending": None, "depth": 0, "translate": _translate_one}
    ops = v2.place_pending(_translate_one(transform, state, "transform"), state)
    return ops + [{"op": state["pending"]}] if state["pending"] else ops
