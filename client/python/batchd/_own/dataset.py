"""A trainer's own map-style Dataset served through batchd (docs/operations.md, "Your own Dataset"): the fixed layout
of a sample as default_collate would batch it, the check of every later sample against it, the write of a sample
into its rows of a slot, the per-sample seeding rule, and the batch's structure rebuilt as default_collate returns
it.

A sample fits a fixed layout when it is a tensor, a numpy array, a Python/numpy scalar (int -> int64, float ->
float64, bool -> bool, as default_collate makes them), or a tuple / list / namedtuple / dict (str keys) of those,
one level deep. Its fields are named "0", "1", ... for a sequence and by key for a dict. Rows are then written in
place, sample by sample. A sample 0 that does not fit (strings, None, nested containers) is collated whole by the
workers instead, as DataLoader collates it (worker_collate.py); layout_of's TypeError says why.
"""
import collections.abc
import random

import numpy as np
import torch

_TORCH_DTYPES = {torch.uint8: "uint8", torch.int8: "int8", torch.int16: "int16", torch.int32: "int32",
                 torch.int64: "int64", torch.float16: "float16", torch.bfloat16: "bfloat16",
                 torch.float32: "float32", torch.float64: "float64", torch.bool: "bool"}
_NUMPY_DTYPES = {np.dtype(k): v for k, v in (("uint8", "uint8"), ("int8", "int8"), ("int16", "int16"),
                                             ("int32", "int32"), ("int64", "int64"), ("float16", "float16"),
                                             ("float32", "float32"), ("float64", "float64"), ("bool", "bool"))}
_MASK64 = (1 << 64) - 1


def _describe(value):
    if isinstance(value, torch.Tensor):
        return f"a torch.{str(value.dtype).split('.')[-1]} tensor of shape {tuple(value.shape)}"
    if isinstance(value, np.ndarray):
        return f"a numpy {value.dtype} array of shape {value.shape}"
    return f"a {type(value).__name__}"


def field_of(value, where):
    """(dtype name, sample_shape, kind) of one field's value; TypeError naming `where` for what cannot be batched."""
    if isinstance(value, torch.Tensor):
        if value.dtype not in _TORCH_DTYPES:
            raise TypeError(f"{where} is {_describe(value)}: batchd carries {sorted(set(_TORCH_DTYPES.values()))}")
        return _TORCH_DTYPES[value.dtype], tuple(value.shape), "tensor"
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        if array.dtype not in _NUMPY_DTYPES:
            raise TypeError(f"{where} is {_describe(array)}: strings, objects and complex numbers cannot be "
                            f"batched into a slot (a later batchd may carry variable-length fields)")
        return _NUMPY_DTYPES[array.dtype], array.shape, "numpy"
    if isinstance(value, bool):
        return "bool", (), "bool"
    if isinstance(value, int):
        return "int64", (), "int"
    if isinstance(value, float):
        return "float64", (), "float"
    raise TypeError(f"{where} is {_describe(value)}: the first sample's fields were tensors, numpy arrays, ints, "
                    f"floats or bools, so every sample's must be (default_collate could not batch them either)")


class Layout:
    """The structure and fields of a dataset's samples, taken from its first sample (layout_of)."""

    def __init__(self, kind, names, fields, sample_type):
        self.kind = kind  # "single", "tuple", "list", "namedtuple", "dict"
        self.names = names  # field names (the stream's tensors), in order
        self.fields = fields  # [(name, dtype name, sample_shape, value kind)]
        self.sample_type = sample_type

    def wire_fields(self):
        return [(name, dtype, list(shape)) for name, dtype, shape, _ in self.fields]

    def external_options(self):
        """The stream's ExternalDataset fields for this layout (rows written in place, batches cut into chunks)."""
        return {"fields": self.wire_fields()}

    def values(self, sample):
        """The field values of `sample` in layout order; TypeError if its structure differs."""
        if self.kind == "single":
            return (sample,)
        if self.kind == "dict":
            if not isinstance(sample, collections.abc.Mapping) or list(sample.keys()) != self.names:
                raise TypeError(f"the sample is {_describe(sample)} with keys "
                                f"{list(sample.keys()) if isinstance(sample, collections.abc.Mapping) else '-'}, "
                                f"expected a dict with keys {self.names} (the first sample's)")
            return tuple(sample.values())
        if not isinstance(sample, (tuple, list)) or len(sample) != len(self.names):
            raise TypeError(f"the sample is {_describe(sample)}"
                            f"{f' of {len(sample)} items' if isinstance(sample, (tuple, list)) else ''}, expected "
                            f"a {self.kind} of {len(self.names)} (the first sample's)")
        return sample

    def collate(self, tensors):
        """The batch as default_collate returns it for this structure: a tensor, a list (for tuples and lists), a
        namedtuple, or a dict."""
        return self._structure([tensors[name] for name in self.names])

    def convert(self, tensors):
        """One sample without a batch dimension (batch_size=None), as default_convert returns it: tensors and numpy
        values as tensors (views of the slot), Python ints, floats and bools as Python values, a tuple as a list."""
        return self._structure([tensors[name].item() if kind in ("int", "float", "bool") else tensors[name]
                                for name, _, _, kind in self.fields])

    def _structure(self, values):
        if self.kind == "single":
            return values[0]
        if self.kind == "dict":
            return dict(zip(self.names, values))
        if self.kind == "namedtuple":
            return self.sample_type(*values)
        return values


def layout_of(sample):
    """The Layout of `sample` (the first one); TypeError naming the field that cannot be batched."""
    if isinstance(sample, collections.abc.Mapping):
        names = list(sample.keys())
        for key in names:
            if not isinstance(key, str) or not key or len(key) > 64 or key == "index" or not all(
                    c.isascii() and (c.isalnum() or c in "._-") for c in key):
                raise TypeError(f"the sample's key {key!r} cannot name a batch tensor: keys must be 1 to 64 of "
                                f"A-Z a-z 0-9 . _ - and not 'index' (batchd's own)")
        kind, values = "dict", list(sample.values())
    elif isinstance(sample, tuple) and hasattr(sample, "_fields"):
        kind, names, values = "namedtuple", [str(i) for i in range(len(sample))], list(sample)
    elif isinstance(sample, (tuple, list)):
        kind, names, values = ("tuple" if isinstance(sample, tuple) else "list"), \
            [str(i) for i in range(len(sample))], list(sample)
    else:
        kind, names, values = "single", ["0"], [sample]
    if not values:
        raise TypeError("the sample is empty: nothing to batch")
    if len(values) > 64:
        raise TypeError(f"the sample has {len(values)} fields, over the 64 batchd carries")
    fields = []
    for name, value in zip(names, values):
        dtype, shape, value_kind = field_of(value, f"field {name!r} of the first sample")
        fields.append((name, dtype, shape, value_kind))
    return Layout(kind, names, fields, type(sample))


def check_field(field, value, index):
    """None if `value` fits `field` (name, dtype, shape, kind) exactly; else the per-sample error message."""
    name, dtype, shape, _ = field
    try:
        found_dtype, found_shape, _ = field_of(value, f"field {name!r} of sample {index}")
    except TypeError as e:
        return str(e)
    if found_dtype != dtype or tuple(found_shape) != tuple(shape):
        return (f"sample {index}: field {name!r} is {found_dtype} of shape {tuple(found_shape)}, expected {dtype} of "
                f"shape {tuple(shape)} (the layout of the first sample: every sample of a batch must be alike)")
    return None


def sample_seed(seed, epoch, index, copy=0):
    """The seed of sample `index` of `epoch` (its repeated-augmentation `copy`): splitmix64 over the four, so
    whichever worker makes a sample, and however often, its random draws are the same."""
    x = (seed * 0x9E3779B97F4A7C15 + (epoch + 1) * 0xBF58476D1CE4E5B9 + (index + 1) * 0x94D049BB133111EB
         + copy * 0xD6E8FEB86659FD93) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def seed_all(seed):
    """Python's random, numpy's global generator and torch's default (CPU) generator, as DataLoader's workers seed
    them (torch.utils.data._utils.worker: random.seed, torch.manual_seed, numpy from the same seed). The seed is cut
    to 63 bits: DataLoader's worker seeds are an int64 base seed plus the worker id, so torch.initial_seed() in a
    sample (a seed a dataset returns) fits an int64 as it does under DataLoader. Only the CPU generator: a forked
    worker cannot use CUDA, and torch.manual_seed's CUDA part costs ~25 us a call (measured: 28 us against 2 us
    here)."""
    seed &= _MASK64 >> 1
    random.seed(seed)
    torch.default_generator.manual_seed(seed)
    np.random.seed(seed & 0xFFFFFFFF)
