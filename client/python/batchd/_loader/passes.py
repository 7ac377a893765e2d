"""How batchd.Loader's passes read its stream: one stream serves consecutive epochs (the daemon prefetches across
the boundary), a pass yields its epoch's batches as tensors (zero-copy views that hold the slot's lease), and the
stream is opened on the host or through batchd's CUDA path. An endless Loader's one pass reads an endless stream.
state_dict()/load_state_dict() say and set where the next pass starts. StreamPasses is the Loader's base; it uses
the Loader's _client, _plan(), device, as_dict and timeout, and keeps _stream, _pending (the next epoch's first
batch), _next_epoch, and for endless passes _epoch / _resume_batch."""
import warnings
import weakref

import torch
from torch.utils._pytree import tree_map

from .. import _batchd
from .._batchd import BatchdError
from .dataloader_args import pin_device
from .._own.fed_pass import FedPass
from .support import _DeviceSource, _HostSource, _PinnedSource, _as_tuple, timed_out
from .._own.worker_pool import OwnSource


class StreamPasses:
    def _fed_iter(self):
        """A pass whose sampler runs here (_own/fed_pass.py); the previous one, if still open, is closed first."""
        previous = self._fed_pass() if self._fed_pass is not None else None
        if previous is not None:
            previous.close()
        current = FedPass(self)
        self._fed_pass = weakref.ref(current)
        return current

    @property
    def slot_growths(self):
        """How often your own Dataset's slots grew for a batch that outgrew them (docs/python.md); 0 otherwise."""
        return self._own.slot_growths if self._own is not None else 0

    def _open_fed(self, size, layout):
        """A stream of `size` whole-batch tasks whose slots hold `layout` (a CollatedLayout), for a FedPass: one
        "sample" per batch, in order, one epoch; wrapped in an OwnSource (the workers checked while waiting)."""
        external = dict(self._options["external"], size=size, **layout.external_options())
        external["round_robin"] = self.in_order  # batch j to worker j % num_workers, as DataLoader's in_order
        external["completion_order"] = not self.in_order  # in_order=False: each batch as soon as it is made
        kw = dict(self._options, external=external, batch_size=1, shuffle=False, drop_last=False,
                  drop_last_batch=False, on_error="fail", seed=0, rank=0, world_size=1, epoch=0, start_batch=0,
                  num_epochs=1)
        kw.setdefault("depth", 5)  # the daemon's default depth + 1, as for the other streams (_open)
        if self.device.type == "cuda":  # bytes to decode on the host
            inner = _HostSource(self._client.open_stream(**kw), torch.device("cpu"), readonly=False)
        else:
            inner = self._open_source(kw, device_stream=False)
        return OwnSource(inner, self._own, self.timeout)

    def _pass(self, epoch):
        """The batches of `epoch` from the open stream, the kept first batch (self._pending) first; the first batch
        of the next epoch is kept for the next pass. A pass abandoned before its last batch (not one left after it,
        as zip() leaves the longer iterators) closes the stream: the next pass opens, or joins, again."""
        stream, self._next_epoch = self._stream, None
        next_item, to_tensors, timeout = self._timed(stream.next), stream.tensors, self.timeout or None
        finished = False
        try:
            while True:
                item, self._pending = (self._pending, None) if self._pending is not None else (next_item(timeout), None)
                if item is None:
                    break
                if item[0] != epoch:  # the first batch of the next epoch: keep it for the next pass
                    self._pending, self._next_epoch = item, item[0]
                    break
                out = self._element(item, to_tensors)
                del item  # the tensors alone hold the lease now
                yield out
                del out  # the generator must not keep the previous batch (and its slot) while making the next
            finished = True
        finally:
            if not finished and self._state["batches_yielded"] < len(self):
                self._close_stream()

    def _timed(self, next_item):
        """next_item, whose wait past the Loader's timeout (> 0) raises BatchdError (a RuntimeError, code "deadline
        exceeded") in DataLoader's words, "DataLoader timed out after N seconds", and batchd's reason after them."""
        if not self.timeout:
            return next_item

        def timed(timeout):
            try:
                return next_item(timeout)
            except BatchdError as e:
                if e.code != "deadline exceeded":
                    raise
                raise timed_out(self.timeout, e) from None
        return timed

    def _element(self, item, to_tensors):
        """What a pass yields for `item` ((epoch, arrays) from the stream): its tensors as a dict or DataLoader's
        tuple, counted in _state["batches_yielded"]."""
        tensors = to_tensors(item[1])
        self._state["batches_yielded"] += 1
        unbatched = self.batch_size is None  # DataLoader's batch_size=None: one sample at a time, no batch dimension
        if unbatched:
            tensors = {name: tensor[0] for name, tensor in tensors.items()}
        layout = self._own.layout() if self._own is not None else None
        if layout is not None and layout.kind == "collated":  # the collate_fn's batch, rebuilt
            batch = layout.collate(tensors)
            if self.device.type == "cuda":  # decoded on the host; its tensors go to the device as DataLoader's would
                batch = tree_map(lambda x: x.to(self.device, non_blocking=True) if isinstance(x, torch.Tensor) else x,
                                 batch)
            return {"batch": batch, "index": tensors["index"]} if self.as_dict else batch
        if self.as_dict:
            return tensors
        if layout is not None:  # your own Dataset's batch, as default_collate (default_convert) returns it
            return layout.convert(tensors) if unbatched else layout.collate(tensors)
        return _as_tuple(tensors)

    def state_dict(self):
        """Where the current (or last) pass is: {"epoch", "batches_yielded", "seed"} (torchdata's StatefulDataLoader
        pattern); for an endless Loader also "step" = epoch * len(loader) + batches_yielded, the batches read since
        epoch 0 (the random windows of step s are drawn from (seed, rank, s)); for a shared Loader "share" and
        "joined_at_batch". load_state_dict() of it resumes after the last batch yielded (a private Loader)."""
        state = dict(self._state, seed=self._options["seed"])
        if self._endless:
            state["step"] = state["epoch"] * len(self) + state["batches_yielded"]
        if self._share is not None:
            state.setdefault("joined_at_batch", 0)
            state["share"] = self._share
        return state

    def load_state_dict(self, state):
        """Resume where state_dict() was taken: the next iter() starts after its last batch (same windows, same
        order), at (epoch, batches_yielded)."""
        if self._share is not None:
            warnings.warn(f"batchd: Loader(share={self._share!r}) reads where the shared production is; "
                          "load_state_dict() does not reposition it (open a private Loader to resume exactly)",
                          RuntimeWarning, stacklevel=2)
            return
        if state.get("seed", self._options["seed"]) != self._options["seed"]:
            raise ValueError(f"state was saved with seed {state['seed']}, this loader has {self._options['seed']}")
        self.set_epoch(state["epoch"])
        self._resume_batch = int(state["batches_yielded"])

    def _endless_pass(self, options):
        """An endless Loader's iteration: from the kept position (_epoch, _resume_batch: set_epoch, load_state_dict
        or where the last iteration stopped) on, epoch after epoch, until the iterator is dropped; then the position
        is kept for the next iter(). _state follows the batches yielded (its epoch changes with theirs)."""
        per_epoch = len(self)
        epoch = self._epoch + self._resume_batch // per_epoch
        start, self._resume_batch = self._resume_batch % per_epoch, 0
        self._state = {"epoch": epoch, "batches_yielded": start}
        self._close_stream()
        self._stream = self._open(epoch=epoch, start_batch=start, endless=True, **options)
        next_item, to_tensors, timeout = self._timed(self._stream.next), self._stream.tensors, self.timeout or None
        try:
            while True:
                item = next_item(timeout)
                if item is None:  # the stream ended: an endless one does not, unless the daemon stops it
                    return
                if item[0] != self._state["epoch"]:
                    self._state = {"epoch": item[0], "batches_yielded": 0}
                out = self._element(item, to_tensors)
                del item  # the tensors alone hold the lease now
                yield out
                del out
        finally:
            self._epoch, self._resume_batch = self._state["epoch"], self._state["batches_yielded"]
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
        if self._own is None:
            return self._open_source(kw)
        # Your own Dataset: its layout (taken from sample 0 by a worker) sizes the slots; its workers attach.
        size = len(self.dataset)
        if size != kw["external"]["size"]:
            raise BatchdError(f"batchd.Loader: len({type(self.dataset).__name__}) is {size} now, "
                              f"{kw['external']['size']} when the Loader was made: a Dataset's length must not change "
                              f"while a Loader reads it (make a new Loader)")
        kw["external"] = dict(kw["external"], **self._own.layout().external_options())
        # Never batchd's CUDA stream (its waits are unbounded, and the workers must be checked while a batch is
        # awaited): host batches, copied to a CUDA device with .to(non_blocking=True) (pinned with pin_memory=True).
        if self._own.layout().kind == "collated" and self.device.type == "cuda":  # bytes to decode on the host
            inner = _HostSource(self._client.open_stream(**kw), torch.device("cpu"), readonly=not kw.get("writable"))
        else:
            inner = self._open_source(kw, device_stream=False)
        source = OwnSource(inner, self._own, self.timeout)
        try:
            self._own.attach(source.info["id"], size, self._options["on_error"])
        except BaseException:
            source.close()
            raise
        return source

    def _open_source(self, kw, device_stream=True):
        if self.device.type == "cuda" and self._device_path is not False and device_stream:
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
                          f"batchd's pinned CUDA path: {reason}", RuntimeWarning, stacklevel=4)
            self._device_path = False
        readonly = not kw.get("writable")
        if self.pin_memory and self.device.type == "cpu":
            device = pin_device(self.pin_memory_device)
            if device is not None:
                source = _PinnedSource(self._client, device, self.device, readonly, **kw)
                if not source.pinned:
                    warnings.warn(f"batchd: pin_memory=True, but the stream's segment could not be page-locked, so "
                                  f".to(non_blocking=True) copies synchronously: {source.pin_reason}",
                                  RuntimeWarning, stacklevel=4)
                return source
        return _HostSource(self._client.open_stream(**kw), self.device, readonly=readonly)

    def _close_stream(self):
        self._pending, self._next_epoch = None, None
        if self._stream is not None:
            stream, self._stream = self._stream, None
            stream.close()

    def close(self):
        """Closes the daemon stream now, and stops your own Dataset's workers (both are also closed when the Loader
        is garbage-collected)."""
        try:
            current = self._fed_pass() if getattr(self, "_fed_pass", None) is not None else None
            if current is not None:
                current.close()
            if getattr(self, "_fed_stream", None) is not None:
                stream, self._fed_stream = self._fed_stream, None
                stream.close()
            self._close_stream()
        finally:
            if getattr(self, "_own", None) is not None:
                self._own.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass
