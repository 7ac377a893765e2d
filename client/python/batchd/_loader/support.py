"""What batchd.Loader stands on: its rank and world size, the wait while a dataset is indexed, and the two stream
sources (host arrays, or batchd's CUDA path) whose items it turns into tensors."""
import time
import warnings

import torch

from .._batchd import BatchdError


def _rank_and_world_size(rank, world_size):
    """(rank, world_size) of a Loader: the given values, a missing one from torch.distributed when it is initialized,
    else rank 0 of 1 (see the Loader's docstring)."""
    dist = torch.distributed
    initialized = dist.is_available() and dist.is_initialized()
    source = {}
    for name, value, from_dist in (("rank", rank, "get_rank"), ("world_size", world_size, "get_world_size")):
        if value is not None:
            source[name] = (int(value), "given")
        elif initialized:
            source[name] = (getattr(dist, from_dist)(), f"torch.distributed.{from_dist}()")
        else:
            source[name] = (0 if name == "rank" else 1, "the default without torch.distributed")
    (rank, rank_from), (world_size, world_from) = source["rank"], source["world_size"]
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"batchd.Loader: rank {rank} ({rank_from}) is not in [0, world_size) for world_size "
                         f"{world_size} ({world_from}); give both rank= and world_size= consistently, or neither "
                         "to use torch.distributed's")
    return rank, world_size


def _while_indexing(call, timeout):
    """call(), again every 0.1 s while the daemon answers that the dataset is still being indexed, for up to
    `timeout` seconds; the last answer otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return call()
        except BatchdError as e:
            indexing = e.code == "unavailable" and " is indexing (" in str(e)
            if not indexing or time.monotonic() >= deadline:
                raise
        time.sleep(0.1)


def _as_tuple(tensors):
    """(input_ids, targets) for a language-model stream, (image, label) for an image stream."""
    if "input_ids" in tensors:
        return tensors["input_ids"], tensors["targets"]
    return tensors["image"], tensors["label"]


def torch_tensor(array):
    """A torch tensor viewing `array` (a host array of Batch.arrays(), no copy): torch.from_numpy, then, for a bfloat16
    tensor (which numpy lacks: its array is int16 bits whose dtype metadata says {"batchd_dtype": "bfloat16"}), a
    view as torch.bfloat16. Other dtypes map one to one: uint8, int8, int16, int32, int64, float16, float32,
    float64, bool."""
    tensor = torch.from_numpy(array)
    metadata = array.dtype.metadata
    if metadata is not None and metadata.get("batchd_dtype") == "bfloat16":
        tensor = tensor.view(torch.bfloat16)
    return tensor


def device_tensor(array, device):
    """A torch tensor viewing a DeviceArray of batchd's CUDA path (no copy); bfloat16 as for torch_tensor()."""
    tensor = torch.as_tensor(array, device=device)
    if array.batchd_dtype == "bfloat16":
        tensor = tensor.view(torch.bfloat16)
    return tensor


class _HostSource:
    """A host stream: items are (epoch, {name: numpy array}) whose arrays hold the lease; tensors are zero-copy
    views of them (copied to a CUDA device if asked)."""

    def __init__(self, stream, device, readonly=False):
        self._stream, self._device = stream, device if device.type == "cuda" else None
        self._readonly = readonly  # a shared stream's arrays: torch.from_numpy warns about each, by design here
        self.next = stream.next_arrays  # one C++ call per batch
        self.info = stream.info

    def tensors(self, arrays):
        if self._readonly:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                tensors = {name: torch_tensor(array) for name, array in arrays.items()}
        else:
            tensors = {name: torch_tensor(array) for name, array in arrays.items()}
        if self._device is not None:
            tensors = {k: v.to(self._device, non_blocking=True) for k, v in tensors.items()}
        return tensors

    def close(self):
        self._stream.close()


class _PinnedSource(_HostSource):
    """pin_memory=True: a host stream whose segment is page-locked (a PinnedStream): the tensors are pinned where
    the workers wrote them (tensor.is_pinned() is True), so .to(device, non_blocking=True) is an asynchronous DMA.
    A batch's lease goes back to the daemon once its last tensor is freed and an event recorded then on the current
    CUDA stream of `pin_device` has completed: a non_blocking copy enqueued before it may still be reading the slot."""

    def __init__(self, client, pin_device, device, readonly=False, **kw):
        current = lambda: torch.cuda.current_stream(pin_device).cuda_stream  # noqa: E731
        stream = client.open_pinned_stream(pin_device.index, current, **kw)
        super().__init__(stream, device, readonly)
        self.pinned, self.pin_reason = stream.pinned, stream.pin_reason


class _DeviceSource:
    """batchd's CUDA path: items are (epoch, {name: DeviceArray}); tensors view batchd's device buffers."""

    def __init__(self, stream, device):
        self._stream, self._device = stream, device
        self.info = getattr(stream, "info", {})

    def next(self, timeout=None):  # no bounded wait on the CUDA path (Loader's timeout applies to host batches)
        return self._stream.next(torch.cuda.current_stream(self._device).cuda_stream)

    def tensors(self, arrays):
        return {name: device_tensor(array, self._device) for name, array in arrays.items()}

    def close(self):
        self._stream.close()


def timed_out(timeout, error):
    """The BatchdError a wait past the Loader's timeout raises (code "deadline exceeded"): DataLoader's words,
    "DataLoader timed out after N seconds", then batchd's reason (`error`)."""
    out = BatchdError(f"DataLoader timed out after {timeout:g} seconds (batchd.Loader's timeout=: no batch "
                      f"came in that time): {error}")
    out.code = "deadline exceeded"
    return out
