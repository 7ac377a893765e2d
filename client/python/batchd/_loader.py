"""batchd.Loader: torch.utils.data.DataLoader's interface over a batchd stream (see the package docstring)."""
import warnings

import torch

from . import _batchd
from ._batchd import BatchdError
from ._spec import pipeline_spec
from ._support import _DeviceSource, _HostSource, _as_tuple, _rank_and_world_size, _while_indexing

_MANY_EPOCHS = 1 << 30  # a Loader's stream runs on until the Loader moves elsewhere or is closed


class Loader:
    """An iterable over a dataset served by batchd, with torch.utils.data.DataLoader's interface.

    Args:
        dataset: a dataset name from the daemon's config ("fashion-mnist", ...).
        pipeline: a pipeline by name: "fmnist", "fmnist_u8", "train224", "train224_u8", "val224", "val224_u8" (image
            datasets),
            "lm" (token datasets; see the batchd README) or a [pipelines.NAME] of the daemon's config. Give exactly
            one of pipeline= and transform= (BatchdError otherwise). Each batch is a dict of tensors, every one with "index" int64 [B]
            (the dataset indices of its samples):
              fmnist            "image" float32 [B,1,28,28], "label" int64 [B]
              fmnist_u8         "image" uint8 [B,1,28,28], "label" int64 [B]
              train224, val224  "image" float32 [B,3,C,C], "label" int64 [B]
              train224_u8, val224_u8  "image" uint8 [B,3,C,C], "label" int64 [B]
              lm                "input_ids" int64 [B,T] = w[:-1], "targets" int64 [B,T] = w[1:], where
                                w = tokens[i*T : i*T+T+1] is sample i's window and T the dataset's seq_len
        transform: the per-sample recipe as data, run by the daemon's native ops (docs/operations.md,
            "Pipelines"): a list of op dicts ([{"op": "resize", "size": 232, "interpolation": "bicubic"}, ...]), or
            a torchvision.transforms.Compose of torchvision 0.14 classes, or an object whose .transforms is one (the
            references' ClassificationPresetTrain/Eval); batchd._transforms documents what maps to what. A
            transform that cannot be translated (Lambda, a transforms.v2 object, your own class, an unsupported
            value) raises BatchdError naming its place and class: none is dropped. The daemon checks the ops when
            the stream is planned (len(), the first iteration): an unknown op, key or value raises BatchdError
            naming the op's position and key. Batches: "image" as the ops make it ([B,3,H,W] float32 after
            to_tensor/normalize, uint8 after pil_to_tensor), "label" int64 [B] (float32 one-hot [B, classes] with
            batch_transform), "index". .spec is the canonical form the daemon runs.
        batch_transform: with transform=, ops on each collated batch: op dicts (mixup, cutmix, random_choice) or
            the torchvision references' RandomMixup/RandomCutmix objects (a torchvision RandomChoice of them), as
            references/classification/train.py builds them for its collate_fn.
        batch_size: samples per batch.
        shuffle, seed: a permutation per (seed, epoch), the same on every rank (RandomSampler semantics).
        rank, world_size: which share of each epoch this process reads, with DistributedSampler semantics (rank r
            of w gets the permutation's samples r, r+w, r+2w, ..., padded by repeating the head so every rank gets
            ceil(n/w); the shares of all ranks are disjoint and cover the epoch). None (the default) takes the
            value from torch.distributed when it is initialized (get_rank() and get_world_size() of the default
            group: the GLOBAL rank and world size, as torchrun/SLURM set them, so ranks on different nodes, each
            with its own daemon, read disjoint shares), else rank 0 of 1. A value given wins; giving one of
            them takes the other from torch.distributed when initialized. ValueError unless
            0 <= rank < world_size. The values used are the Loader's .rank and .world_size.
        drop_last: DistributedSampler semantics (floor(n/w) per rank), and a short last batch is dropped too.
        depth: batches prefetched by the daemon (slots); None = the daemon's default (4) plus one, because a for
            loop's variable still holds the previous batch while the next one is fetched: with the extra slot the
            daemon reads as far ahead as for a C++ loop that releases each batch first (measured on fmnist: the
            Python loop's throughput went from ~0.88 to ~1.0 of the C++ loop's). Holding more than depth
            batches at once makes the next one fail with a BatchdError instead of waiting forever.
        socket: the daemon's socket; None = $BATCHD_SOCKET or /run/batchd/batchd.sock.
        request_timeout: seconds the daemon has to answer each request (connecting, planning and opening the
            stream, closing it); None = $BATCHD_TIMEOUT, else 30; 0 = no deadline. Past it BatchdError (code
            "unavailable") names the socket and the request, and this Loader's connection is closed: make a new
            Loader. Waiting for the next batch has no deadline (DataLoader's `timeout`, 0 = forever, is a different
            setting: the daemon may take long to make a batch). An indexing dataset is waited for by index_timeout.
        expected_owner: the user the daemon must run as, a uid or a user name ("batchd"); None =
            $BATCHD_EXPECT_OWNER, else any. A daemon of another uid (e.g. another user's batchd on a shared path
            such as /tmp/batchd.sock) raises BatchdError (code "permission denied") naming both. Without it, a
            daemon that is neither root nor you, on a socket in a directory others can write, gets a RuntimeWarning.
        as_tuple: yield a tuple instead of the dict: (input_ids, targets) for "lm", (image, label) for the image
            pipelines (decided from the stream's tensor names).
        device: "cpu", or a CUDA device: batches then arrive as CUDA tensors through batchd's CUDA path (the
            stream's shared memory page-locked once, each batch copied asynchronously one batch ahead, ordered
            before later work on torch.cuda.current_stream(); see batchd/cuda.h). Where that path is missing
            (batchd built without CUDA, or its runtime finds no usable driver), a warning says why and each batch
            is copied with .to(device, non_blocking=True) instead. Needs torch with CUDA and a GPU.
        on_error: "fail" (a bad sample raises BatchdError naming the file) or "skip" (it is replaced and counted).
        crop_size, resize_size, exact_decode: options of the vision pipelines (train224, train224_u8, val224);
            None = the daemon's default (224, 256, False). Refused for the other pipelines. With transform=,
            exact_decode=True/False puts {"op": "decode", "exact_decode": ...} first (decode as PIL does: with it
            an eval recipe is bit-identical to torchvision's); crop_size and resize_size are refused.
        index_timeout: seconds to wait, when the stream is first planned or opened, while the daemon is still
            indexing the dataset (a webdataset's shards, in the background after the daemon starts or reloads;
            `batchctl datasets` shows "indexing (k of n shards)"); then BatchdError. 0 = raise at once. Any other
            error is raised at once.
        share: a share name (1-64 of A-Z a-z 0-9 . _ -): join the daemon's shared production of that name, or
            create it: trainers on one host that ask for the same dataset, pipeline, options, seed, batch size,
            sampler and depth under one name read ONE decode (docs/operations.md, "Shared streams"). The batches
            are then read-only (the segment is shared: writing to a tensor kills the trainer with SIGSEGV; .clone()
            a batch to modify it). Epochs follow the production, not set_epoch(): a Loader that joins mid-epoch e
            at batch j yields, for its first pass, batches j..end of e then 0..j-1 (made again for it alone), so
            each pass is still one whole epoch, and later passes are in step with the others. len() is the
            batches per epoch; state_dict() records the epoch, the batches yielded and "joined_at_batch" (j for
            the first pass, else 0). load_state_dict() cannot position a shared production: it warns and
            the Loader joins where the production is. A trainer that keeps the others waiting (shares.max_lag
            batches behind them, or stopped) gets a BatchdError naming its lag (the others go on); the batches it
            still holds may then be overwritten: do not use them. Share names are per uid.

    Epochs: with set_epoch(e) before iterating, that epoch's order is used (DistributedSampler); without it, each
    complete pass advances to the next epoch, so the order changes every pass (RandomSampler).
    Errors from the daemon are raised as batchd.BatchdError with its message.
    """

    def __init__(self, dataset, *, pipeline=None, transform=None, batch_transform=None, batch_size=1, shuffle=True,
                 seed=0, rank=None, world_size=None, drop_last=False, depth=None, socket=None, as_tuple=False,
                 device="cpu", on_error="fail", crop_size=None, resize_size=None, exact_decode=None, strategy=None,
                 index_timeout=600.0, share=None, request_timeout=None, expected_owner=None):
        spec = pipeline_spec(pipeline, transform, batch_transform, crop_size, resize_size, exact_decode)
        self.device = torch.device(device)
        if self.device.type == "cuda":
            if not torch.cuda.is_available():
                raise BatchdError(f"device={device!r} needs a CUDA GPU, but torch.cuda.is_available() is False; "
                                  "use device='cpu'")
            if self.device.index is None:
                self.device = torch.device("cuda", torch.cuda.current_device())
        self._device_path = None  # CUDA: True = batchd's pinned DeviceStream, False = .to() copies (decided once)
        self.as_tuple = as_tuple
        self.rank, self.world_size = _rank_and_world_size(rank, world_size)
        rank, world_size = self.rank, self.world_size
        # writable=True: the Loader's promise is DataLoader's, tensors that training code may modify in place
        # (x.sub_(mean), mixup's x[i] = ...). PyTorch has no read-only tensor: torch.from_numpy of a read-only array
        # warns that writing is undefined, and on a PROT_READ mapping a write kills the trainer with SIGSEGV; the
        # only read-only alternative is a copy of every batch, which is what batchd exists to avoid. Writable costs
        # no isolation: only this user's uid gets rw- on the segment (a memfd fd, or one ACL entry on a file_system
        # name), so a write reaches only this stream's own slots, which the workers overwrite with each new batch.
        # A share is read-only: its segment is every subscriber's.
        self._share = share
        self._options = dict(dataset=dataset, pipeline=pipeline or "", batch_size=batch_size, shuffle=shuffle,
                             seed=seed, rank=rank, world_size=world_size, drop_last=drop_last, on_error=on_error,
                             writable=share is None)
        if share is not None:
            self._options["share"] = share
        if spec is not None:
            self._options["spec"] = spec
        else:
            for key, value in (("crop_size", crop_size), ("resize_size", resize_size),
                               ("exact_decode", exact_decode)):
                if value is not None:
                    self._options[key] = value
        if depth is not None:
            self._options["depth"] = depth
        if strategy is not None:
            self._options["strategy"] = strategy
        self._client = _batchd.Client(socket or "", request_timeout=request_timeout, expected_owner=expected_owner)
        if self._client.daemon["warning"]:
            warnings.warn(f"batchd: {self._client.daemon['warning']}", RuntimeWarning, stacklevel=2)
        self._index_timeout = float(index_timeout)
        self._epoch = 0
        self._explicit_epoch = False
        self._resume_batch = 0
        self._state = {"epoch": 0, "batches_yielded": 0}
        self._plan_info = None
        self._stream, self._pending, self._next_epoch = None, None, None
        self._joined_at = 0  # a shared stream's joined_at_batch, for its first pass

    def set_epoch(self, epoch):
        """Use `epoch` for the next pass (as DistributedSampler.set_epoch)."""
        self._epoch = int(epoch)
        self._explicit_epoch = True

    def __len__(self):
        """Batches per epoch for this rank, as len(DataLoader)."""
        return self._plan()["batches_per_epoch"]

    def _plan(self):
        """The daemon's dry run of this loader's stream (sizes, the depth it would get), once."""
        if self._plan_info is None:
            self._plan_info = _while_indexing(lambda: self._client.plan_stream(**self._options), self._index_timeout)
        return self._plan_info

    @property
    def spec(self):
        """The stream's pipeline as the daemon runs it, from its dry run: {"ops": [...], "batch_ops": [...]} in
        canonical form (every parameter with its default, keys sorted, numbers as floats; the decode op first).
        Empty lists for fmnist, fmnist_u8 and lm."""
        return self._plan()["spec"]

    def state_dict(self):
        """Where the current (or last) pass is: {"epoch", "batches_yielded", "seed"} (torchdata's StatefulDataLoader
        pattern), and for a shared Loader "share" and "joined_at_batch". load_state_dict() of it resumes after the
        last batch yielded (a private Loader)."""
        state = dict(self._state, seed=self._options["seed"])
        if self._share is not None:
            state.setdefault("joined_at_batch", 0)
            state["share"] = self._share
        return state

    def load_state_dict(self, state):
        if self._share is not None:
            warnings.warn(f"batchd: Loader(share={self._share!r}) reads where the shared production is; "
                          "load_state_dict() does not reposition it (open a private Loader to resume exactly)",
                          RuntimeWarning, stacklevel=2)
            return
        if state.get("seed", self._options["seed"]) != self._options["seed"]:
            raise ValueError(f"state was saved with seed {state['seed']}, this loader has {self._options['seed']}")
        self.set_epoch(state["epoch"])
        self._resume_batch = int(state["batches_yielded"])

    def __iter__(self):
        if self._share is not None:  # the production's next epoch, whole, wherever it is
            if self._stream is None:
                self._stream = self._open(epoch=self._epoch, start_batch=0, num_epochs=_MANY_EPOCHS, **self._options)
                self._joined_at = self._stream.info.get("joined_at_batch", 0)
            if self._pending is None:
                self._pending = self._stream.next()
            if self._pending is None:
                return
            epoch, joined, self._joined_at = self._pending[0], self._joined_at, 0
            self._state = {"epoch": epoch, "batches_yielded": 0, "joined_at_batch": joined}
            yield from self._pass(epoch)
            return
        epoch, start = self._epoch, self._resume_batch
        explicit, self._explicit_epoch, self._resume_batch = self._explicit_epoch, False, 0  # noqa: F841
        self._state = {"epoch": epoch, "batches_yielded": start}
        if start >= len(self):
            self._advance(epoch, explicit)
            return
        # One stream serves consecutive epochs, so the daemon prefetches across epoch boundaries as it does for
        # the C++ client; a pass that does not continue where the last one ended opens a new stream.
        if self._stream is None or start != 0 or self._next_epoch != epoch:
            self._close_stream()
            self._stream = self._open(epoch=epoch, start_batch=start, num_epochs=_MANY_EPOCHS, **self._options)
        yield from self._pass(epoch)
        self._advance(epoch, explicit)

    def _pass(self, epoch):
        """The batches of `epoch` from the open stream, the kept first batch (self._pending) first; the first batch
        of the next epoch is kept for the next pass. A pass abandoned before its last batch (not one left after it,
        as zip() leaves the longer iterators) closes the stream: the next pass opens, or joins, again."""
        stream, self._next_epoch = self._stream, None
        next_item, to_tensors = stream.next, stream.tensors
        finished = False
        try:
            while True:
                item, self._pending = (self._pending, None) if self._pending is not None else (next_item(), None)
                if item is None:
                    break
                if item[0] != epoch:  # the first batch of the next epoch: keep it for the next pass
                    self._pending, self._next_epoch = item, item[0]
                    break
                tensors = to_tensors(item[1])
                del item  # the tensors alone hold the lease now
                self._state["batches_yielded"] += 1
                out = _as_tuple(tensors) if self.as_tuple else tensors
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
        return _HostSource(self._client.open_stream(**kw), self.device, readonly=not kw.get("writable"))

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

    def _advance(self, epoch, explicit):
        """After a complete pass: the next pass reads the next epoch, unless set_epoch() was called meanwhile."""
        if not self._explicit_epoch:
            self._epoch = epoch + 1
