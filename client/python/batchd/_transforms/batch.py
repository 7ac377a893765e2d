"""A Loader's batch_transform= (ops on each collated batch) -> batchd's batch op dicts (docs/operations.md,
"Pipelines": mixup, cutmix, random_choice).

  RandomMixup(num_classes, p, alpha, inplace)  -> mixup {alpha, p, num_classes}
  RandomCutmix(num_classes, p, alpha, inplace) -> cutmix {alpha, p, num_classes}
      (the torchvision references' classes, references/classification/transforms.py, which users copy into their
      project: recognised by class name and the attributes num_classes, p, alpha and inplace; inplace changes no
      output value and is not carried)
  torchvision.transforms.v2 MixUp(alpha, num_classes), CutMix(alpha, num_classes)
                                               -> mixup / cutmix {alpha, p: 1, num_classes} (v2 mixes every batch:
                                                  lam ~ Beta(alpha, alpha) with the batch rolled by one, CutMix's box
                                                  as the references'; num_classes=None, labels already one-hot, is
                                                  refused: batchd makes the one-hot label itself)
  torchvision RandomChoice(transforms, p), v1 or v2
                                               -> random_choice {ops, p} (references/classification/train.py's
                                                  RandomChoice([mixup, cutmix]) in its collate_fn; v2's
                                                  RandomChoice([CutMix(...), MixUp(...)]) of its docs)
  a list, tuple or Compose (v1 or v2) of them  -> the ops in order
  op dicts                                     -> checked for form (spec.py)

Anything else is refused with BatchdError (code "invalid argument") naming its place (batch_transform[1]) and
class. The label becomes a float32 one-hot [B, num_classes] whenever there are batch ops (the references'
one_hot); label smoothing, which the references do in the loss, is the op's label_smoothing parameter.
"""
from torchvision import transforms as T
from torchvision.transforms import v2

from .spec import check_op, check_value, spec_error

_BATCH_OPS = {"RandomMixup": "mixup", "RandomCutmix": "cutmix"}
_V2_BATCH_OPS = {v2.MixUp: "mixup", v2.CutMix: "cutmix"}


def _batch_one(t, where):
    if isinstance(t, dict):
        return [check_op(t, where)]
    name = _BATCH_OPS.get(type(t).__name__)
    if name is not None and all(hasattr(t, key) for key in ("num_classes", "p", "alpha", "inplace")):
        return [{"op": name, "alpha": float(t.alpha), "p": float(t.p), "num_classes": int(t.num_classes)}]
    if type(t) in _V2_BATCH_OPS:
        if t.num_classes is None:
            raise spec_error(f"batchd cannot translate {where}: {type(t).__name__} with num_classes=None (labels "
                             "already one-hot): give num_classes=, batchd makes the one-hot label from the class")
        return [{"op": _V2_BATCH_OPS[type(t)], "alpha": float(t.alpha), "p": 1.0, "num_classes": int(t.num_classes)}]
    if type(t) in (T.RandomChoice, v2.RandomChoice):
        op = {"op": "random_choice", "ops": _batch_all(t.transforms, where + ".transforms")}
        if t.p is not None:
            op["p"] = check_value(t.p, "p")
        return [op]
    if isinstance(t, (list, tuple, T.Compose, v2.Compose)):
        return _batch_all(t, where)
    cls = type(t)
    raise spec_error(f"batchd cannot translate {where}: {cls.__module__}.{cls.__qualname__} ({t!r}) is not a batch "
                     "transform batchd has: RandomMixup / RandomCutmix of the torchvision references (num_classes, p, "
                     "alpha, inplace), torchvision.transforms.v2's MixUp / CutMix, a torchvision RandomChoice of them, "
                     "or op dicts (mixup, cutmix, random_choice)")


def _batch_all(transforms, where):
    if isinstance(transforms, (T.Compose, v2.Compose)):
        transforms, where = transforms.transforms, where + ".transforms"
    ops = []
    for i, t in enumerate(transforms):
        ops.extend(_batch_one(t, f"{where}[{i}]"))
    return ops


def batch_ops_from_torchvision(batch_transform):
    """The batch op dicts of `batch_transform` (see the module docstring); BatchdError naming what is refused."""
    return _batch_one(batch_transform, "batch_transform")
