"""How batchd.Loader's passes read its stream: one stream serves consecutive epochs (the daemon prefetches across
the boundary), a pass yields its epoch's batches as tensors (zero-copy views that hold the slot's lease), and the
stream is opened on the host or through batchd's CUDA path. StreamPasses is the Loader's base; it uses the Loader's
_client, _plan(), device, as_dict and timeout, and keeps _stream, _pending (the next epoch's first batch) and
_next_epoch."""
import warnings

from . import _batchd
from ._batchd import BatchdError
from ._dataloader_args import pin_device
from ._support import _DeviceSource, _HostSource, _PinnedSource, _as_tuple


class StreamPasses:
    def _pass(self, epoch):
        """The batches of `epoch` from the open stream, the kept first batch (self._pending) first; the first batch
        of the next epoch is kept for the next pass. A pass abandoned before its last batch (not one left after it,
        as zip() leaves the longer iterators) closes the stream: the next pass opens, or joins, again."""
        stream, self._next_epoch = self._stream, None
        next_item, to_tensors, timeout = stream.next, stream.tensors, self.timeout or None
        finished = False
        try:
            while True:
                item, self._pending = (self._pending, None) if self._pending is not None else (next_item(timeout), None)
                if item is None:
                    break
                if item[0] != epoch:  # the first batch of the next epoch: keep it for the next pass
                    self._pending, self._next_epoch = item, item[0]
                    break
                tensors = to_tensors(item[1])
                del item  # the tensors alone hold the lease now
                self._state["batches_yielded"] += 1
                out = tensors if self.as_dict else _as_tuple(tensors)
                del tensors
                yield out
                del out  # the generator must not keep the previous batch (and its slot) while making the next
            finished = True
        finally:
            if not finished and self._state["batches_yielded"] < len(self):
                self._close_stream()

    def _open(self, **kw):
        self._plan()  # waits while the dataset is being indexed (index_timeout), before either path opens
        if "depth" not in kw:  # the daemon's default + 1 (see the class docstring), within its limits.max_depth
            kw["depth"] = self._plan()["depth"] + 1
            try:
                return self._open_with(**kw)
            except BatchdError as e:
                if "exceeds limits.max_depth" not in str(e):
                    raise
                del kw["depth"]
        return self._open_with(**kw)

    def _open_with(self, **kw):
        if self.device.type == "cuda" and self._device_path is not False:
            reason = _batchd.cuda_unavailable_reason
            if _batchd.has_cuda:
                try:
                    source = _DeviceSource(self._client.open_device_stream(self.device.index, **kw), self.device)
                    self._device_path = True
                    return source
                except BatchdError as e:
                    if e.code != "unavailable":
                        raise
                    reason = str(e)
            warnings.warn(f"batchd: batches for {self.device} are copied with .to(non_blocking=True), not through "
                          f"batchd's pinned CUDA path: {reason}", RuntimeWarning, stacklevel=3)
            self._device_path = False
        readonly = not kw.get("writable")
        if self.pin_memory and self.device.type == "cpu":
            device = pin_device(self.pin_memory_device)
            if device is not None:
                source = _PinnedSource(self._client, device, self.device, readonly, **kw)
                if not source.pinned:
                    warnings.warn(f"batchd: pin_memory=True, but the stream's segment could not be page-locked, so "
                                  f".to(non_blocking=True) copies synchronously: {source.pin_reason}",
                                  RuntimeWarning, stacklevel=3)
                return source
        return _HostSource(self._client.open_stream(**kw), self.device, readonly=readonly)

    def _close_stream(self):
        self._pending, self._next_epoch = None, None
        if self._stream is not None:
            stream, self._stream = self._stream, None
            stream.close()

    def close(self):
        """Closes the daemon stream now (it is also closed when the Loader is garbage-collected)."""
        self._close_stream()

    def __del__(self):
        try:
            self._close_stream()
        except Exception:  # interpreter shutdown
            pass
