"""A collated batch of any structure in a slot's bytes, and back (issue 40, item 1): what a collate_fn returns
(tensors, numpy arrays, dicts, lists, tuples, namedtuples, strings, numbers, None, any picklable object, nested
as deep as it likes), written by the worker that collated it and rebuilt in the trainer with zero-copy tensor views.

Layout of a slot (little-endian, the machine's own: both sides are processes of one host):

    [0, 64)          header: magic b"BATCHD\\x01\\x00", u64 bytes used, u64 skeleton offset, u64 skeleton length
    [64, ...)        every tensor's and array's bytes, each at a 64-byte-aligned offset, C-contiguous
    [skeleton, ...)  the batch pickled (protocol 5) with each tensor and array replaced by a reference
                     (offset, dtype, shape, kind): the "small per-batch description" of the issue

Tensors (dense, strided, on the CPU) and numeric numpy arrays are the bytes; anything else, including a sparse or
nested tensor, is pickled as DataLoader's workers pickle batches. One copy per tensor in the worker (into the slot),
none in the trainer: a rebuilt tensor is a view of the slot, and holds the slot's lease as long as it lives.
"""
import io
import pickle
import struct

import numpy as np
import torch

MAGIC = b"BATCHD\x01\x00"
HEADER = 64
ALIGN = 64
_HEADER_FORMAT = "<8sQQQ"


class TooLarge(Exception):
    """The batch needs more bytes than the slot has: .needed, .capacity."""

    def __init__(self, needed, capacity):
        super().__init__(f"the collated batch needs {needed} bytes, the slot has {capacity}")
        self.needed, self.capacity = needed, capacity


def _align(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _is_bytes_array(value):
    if isinstance(value, torch.Tensor):
        return value.layout == torch.strided and value.device.type == "cpu" and not value.is_nested
    return isinstance(value, np.ndarray) and value.dtype.kind in "biufc" and not value.dtype.hasobject


class _Writer(pickle.Pickler):
    """Pickles the batch's structure; writes each tensor's bytes at the next aligned offset of `slot` (a flat uint8
    tensor), or only counts them when `slot` is None."""

    def __init__(self, file, slot):
        super().__init__(file, protocol=5)
        self.slot, self.offset = slot, HEADER

    def persistent_id(self, value):
        if not _is_bytes_array(value):
            return None
        if isinstance(value, np.ndarray):
            kind, tensor = "numpy", torch.from_numpy(np.ascontiguousarray(value))
        else:
            kind, tensor = "tensor", value
        offset, nbytes = self.offset, tensor.numel() * tensor.element_size()
        self.offset = _align(offset + nbytes)
        if self.slot is not None:
            if self.offset > self.slot.numel():
                raise TooLarge(self.offset, self.slot.numel())
            if nbytes:
                self.slot[offset:offset + nbytes].view(tensor.dtype).view(tensor.shape).copy_(tensor)
        dtype = str(value.dtype) if kind == "numpy" else str(value.dtype).split(".")[-1]
        return (offset, dtype, tuple(value.shape), kind)


def encode(batch, slot=None):
    """Writes `batch` into `slot` (a writable flat uint8 tensor over the slot's bytes) and returns the bytes used;
    with slot=None only measures them. TooLarge if it does not fit (nothing is valid in the slot then); a value
    pickle refuses raises pickle's error."""
    skeleton = io.BytesIO()
    writer = _Writer(skeleton, slot)
    writer.dump(batch)
    data = skeleton.getbuffer()
    start = writer.offset
    used = start + len(data)
    if slot is None:
        return used
    if used > slot.numel():
        raise TooLarge(used, slot.numel())
    slot[start:used].copy_(torch.frombuffer(data, dtype=torch.uint8))
    header = struct.pack(_HEADER_FORMAT, MAGIC, used, start, len(data))
    slot[:len(header)].copy_(torch.frombuffer(bytearray(header), dtype=torch.uint8))
    return used


class _Reader(pickle.Unpickler):
    def __init__(self, file, slot):
        super().__init__(file)
        self.slot = slot

    def persistent_load(self, ref):
        offset, dtype, shape, kind = ref
        if kind == "numpy":
            dt = np.dtype(dtype)
            count = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
            return self.slot[offset:offset + count].numpy().view(dt).reshape(shape)
        dt = getattr(torch, dtype)
        count = int(np.prod(shape, dtype=np.int64)) * torch.empty((), dtype=dt).element_size()
        return self.slot[offset:offset + count].view(dt).view(shape)


def decode(slot):
    """The batch written by encode() into `slot` (a flat uint8 tensor over the slot): tensors and arrays are views of
    it. ValueError if the slot holds no encoded batch."""
    magic, used, start, length = struct.unpack(_HEADER_FORMAT,
                                               slot[:struct.calcsize(_HEADER_FORMAT)].numpy().tobytes())
    if magic != MAGIC or start + length != used or used > slot.numel():
        raise ValueError("batchd.Loader: a slot holds no collated batch (its header is not batchd's): a worker wrote "
                         "something else there")
    return _Reader(io.BytesIO(slot[start:used].numpy().tobytes()), slot).load()
