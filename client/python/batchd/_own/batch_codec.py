"""A collated batch of any structure in a slot's bytes, and back (issue 40, item 1): what a collate_fn returns
(tensors, numpy arrays, dicts, lists, tuples, namedtuples, strings, numbers, None, any picklable object, nested
as deep as it likes), written by the worker that collated it and rebuilt in the trainer with zero-copy tensor views.

Layout of a slot (little-endian, the machine's own: both sides are processes of one host):

    [0, 64)          header: magic b"BATCHD\\x02\\x00", u64 bytes used, u64 skeleton offset, u64 skeleton length,
                     32 bytes HMAC-SHA256 of those four and the skeleton under the Loader's key
    [64, ...)        every tensor's and array's bytes, each at a 64-byte-aligned offset, C-contiguous
    [skeleton, ...)  the batch pickled (protocol 5) with each tensor and array replaced by a reference
                     (offset, dtype, shape, kind): the "small per-batch description" of the issue

The trainer unpickles only a skeleton whose HMAC checks: the key (32 random bytes per Loader) goes from the trainer
to its own workers over their pipes and never to the daemon. The segment is writable by the trainer's uid alone
among users, but also by the daemon's uid (and root), which reads untrusted files: without the key a daemon, or an
impostor on the socket, could make the trainer unpickle code of its choosing (docs/security.md).

Plain torch.Tensors (dense, on the CPU) and plain numpy arrays of native byte order are the bytes; anything else,
subclasses included (torchvision's tv_tensors, masked arrays), is pickled as DataLoader's workers pickle batches.
A tensor that appears twice in the batch is written once and comes back as one tensor. One copy per tensor in the
worker (into the slot), none in the trainer: a rebuilt tensor is a view of the slot, and holds the slot's lease as
long as it lives.
"""
import hashlib
import hmac
import io
import math
import pickle
import struct

import numpy as np
import torch

MAGIC = b"BATCHD\x02\x00"
HEADER = 64
ALIGN = 64
_FIELDS = "<8sQQQ"  # magic, used, skeleton offset, skeleton length; the 32-byte MAC follows
_FIELDS_SIZE = struct.calcsize(_FIELDS)
_NATIVE = "=|" + ("<" if struct.pack("=H", 1)[0] == 1 else ">")  # numpy byteorder chars of native-order arrays


def _mac(key, fields, skeleton):
    return hmac.new(key, fields + skeleton, hashlib.sha256).digest()


class TooLarge(Exception):
    """The batch needs more bytes than the slot has: .needed, .capacity."""

    def __init__(self, needed, capacity):
        super().__init__(f"the collated batch needs {needed} bytes, the slot has {capacity}")
        self.needed, self.capacity = needed, capacity


def _align(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _is_bytes_array(value):
    """Whether `value` travels as bytes in the slot (exact types only: a subclass carries more than its bytes)."""
    if type(value) is torch.Tensor:
        return value.layout == torch.strided and value.device.type == "cpu" and not value.is_nested
    return (type(value) is np.ndarray and value.dtype.kind in "biufc" and value.dtype.byteorder in _NATIVE
            and value.dtype not in (np.dtype(np.longdouble), np.dtype(np.clongdouble)))


class _Writer(pickle.Pickler):
    """Pickles the batch's structure; writes each tensor's bytes at the next aligned offset of `slot` (a flat uint8
    tensor), or only counts them when `slot` is None."""

    def __init__(self, file, slot, start=HEADER):
        super().__init__(file, protocol=5)
        self.slot, self.offset, self.placed = slot, start, start  # [HEADER, placed): tensors already in the slot
        self.written = {}  # id(value) -> (value, its reference): a tensor that appears twice is written once

    def persistent_id(self, value):
        if not _is_bytes_array(value):
            return None
        if id(value) in self.written:
            return self.written[id(value)][1]
        in_place = self._in_place(value)
        if in_place is not None:
            ref = (in_place, str(value.dtype).split(".")[-1], tuple(value.shape), "tensor")
            self.written[id(value)] = (value, ref)
            return ref
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
        ref = (offset, dtype, tuple(value.shape), kind)
        self.written[id(value)] = (value, ref)
        return ref


    def _in_place(self, value):
        """The offset of a plain tensor that already lies, contiguous, in the slot's placed bytes (stacked there by
        slot_collate.SlotCollate), else None."""
        if self.slot is None or type(value) is not torch.Tensor or not value.is_contiguous():
            return None
        offset = value.data_ptr() - self.slot.data_ptr()
        end = offset + value.numel() * value.element_size()
        return offset if HEADER <= offset and end <= self.placed and offset % ALIGN == 0 else None


def encode(batch, slot=None, key=b"", placed=HEADER):
    """Writes `batch` into `slot` (a writable flat uint8 tensor over the slot's bytes), its skeleton signed with
    `key`, and returns the bytes used; with slot=None only measures them. TooLarge if it does not fit (nothing is
    valid in the slot then); a value pickle refuses raises pickle's error. placed: the slot's bytes [HEADER, placed)
    hold tensors of the batch already (slot_collate.SlotAllocator.offset): they are referenced, not copied, and the
    rest is written after them."""
    skeleton = io.BytesIO()
    writer = _Writer(skeleton, slot, placed if slot is not None else HEADER)
    writer.dump(batch)
    data = skeleton.getbuffer()
    start = writer.offset
    used = start + len(data)
    if slot is None:
        return used
    if used > slot.numel():
        raise TooLarge(used, slot.numel())
    slot[start:used].copy_(torch.frombuffer(data, dtype=torch.uint8))
    fields = struct.pack(_FIELDS, MAGIC, used, start, len(data))
    header = bytearray(fields + _mac(key, fields, data))
    slot[:len(header)].copy_(torch.frombuffer(header, dtype=torch.uint8))
    return used


class _Reader(pickle.Unpickler):
    def __init__(self, file, slot):
        super().__init__(file)
        self.slot, self.views = slot, {}

    def persistent_load(self, ref):
        if ref not in self.views:  # one view per tensor written, however often the batch refers to it
            self.views[ref] = self._view(*ref)
        return self.views[ref]

    def _view(self, offset, dtype, shape, kind):
        if kind == "numpy":
            dt = np.dtype(dtype)
            count = math.prod(shape) * dt.itemsize
            return self.slot[offset:offset + count].numpy().view(dt).reshape(shape)
        dt = getattr(torch, dtype)
        count = math.prod(shape) * dt.itemsize  # Python ints: no overflow (the shape is the signed skeleton's)
        return self.slot[offset:offset + count].view(dt).view(shape)


def decode(slot, key=b""):
    """The batch written by encode() into `slot` (a flat uint8 tensor over the slot) under `key`: tensors and arrays
    are views of it. ValueError, before anything is unpickled, if the slot holds no batch signed with `key`."""
    header = slot[:_FIELDS_SIZE + 32].numpy().tobytes()
    magic, used, start, length = struct.unpack(_FIELDS, header[:_FIELDS_SIZE])
    if magic != MAGIC or start + length != used or not HEADER <= start <= used <= slot.numel():
        raise ValueError("batchd.Loader: a slot holds no collated batch (its header is not batchd's): something "
                         "other than this Loader's workers wrote there")
    skeleton = slot[start:used].numpy().tobytes()
    if not hmac.compare_digest(header[_FIELDS_SIZE:], _mac(key, header[:_FIELDS_SIZE], skeleton)):
        raise ValueError("batchd.Loader: a collated batch's signature does not check: something other than this "
                         "Loader's workers (the daemon's uid, or root) wrote its slot; it was not unpickled")
    return _Reader(io.BytesIO(skeleton), slot).load()


def decode_bytes(blob, key=b""):
    """decode() of a batch that came as bytes (over a worker's pipe: a first round's, or one that outgrew its slot):
    its tensors are views of a copy of those bytes."""
    return decode(torch.frombuffer(bytearray(blob), dtype=torch.uint8), key)
