"""default_collate, stacking each batch tensor straight into the slot it will travel in (issue 40, item 1: "at most
one copy in the worker"): torch's own collate() with its default_collate_fn_map, whose torch.Tensor entry is
replaced by a torch.stack(out=) into the slot's next free aligned bytes (SlotAllocator). batch_codec.encode then
references those tensors where they lie instead of copying them.

What default_collate does in DataLoader's workers is the same move, into a new shared-memory object per tensor;
here the slot is already shared memory, recycled. Everything else is default_collate's own code: numpy arrays
become tensors and come back here, numbers become tensors (copied by encode: a few bytes), strings stay lists, and
its errors are its own. A tensor that is not a plain dense CPU tensor (a subclass such as torchvision's tv_tensors,
nested or sparse) is collated by torch's collate_tensor_fn, as before. Without an allocator (the first round of a
fed pass, over the pipes) SlotCollate is default_collate.
"""
import torch
from torch.utils.data import default_collate
from torch.utils.data._utils.collate import collate, collate_tensor_fn, default_collate_fn_map

from .batch_codec import HEADER, _align


class SlotAllocator:
    """Hands out aligned views of a flat uint8 `slot` from HEADER on; None once it has no room (the tensor is then
    stacked as default_collate stacks it, and encode copies it or reports the batch too large)."""

    def __init__(self, slot):
        self.slot, self.offset = slot, HEADER

    def __call__(self, shape, dtype):
        nbytes = torch.Size(shape).numel() * torch.empty((), dtype=dtype).element_size()
        if _align(self.offset + nbytes) > self.slot.numel():
            return None
        view = self.slot[self.offset:self.offset + nbytes].view(dtype).view(shape)
        self.offset = _align(self.offset + nbytes)
        return view


class SlotCollate:
    """default_collate, into the slot of `allocator` while one is set (see the module docstring)."""

    def __init__(self):
        self.allocator = None
        self._map = dict(default_collate_fn_map)
        self._map[torch.Tensor] = self._tensors

    def __call__(self, batch):
        if self.allocator is None:
            return default_collate(batch)
        return collate(batch, collate_fn_map=self._map)

    def _tensors(self, batch, *, collate_fn_map=None):
        elem = batch[0]
        if type(elem) is not torch.Tensor or elem.layout != torch.strided or elem.is_nested or elem.is_cuda:
            return collate_tensor_fn(batch, collate_fn_map=collate_fn_map)
        out = self.allocator((len(batch),) + tuple(elem.shape), elem.dtype)
        return torch.stack(batch, 0, out=out)
