"""batchd.Loader: torch.utils.data.DataLoader's interface over a batchd stream (see the package docstring)."""
import typing
import warnings

import torch
from torch.utils.data import default_collate

from .. import _batchd
from .passes import StreamPasses
from .source import resolve_source
from .._transforms.spec import pipeline_spec
from .dataloader_args import check_pin_memory, from_sampler, prefetch_depth, refuse_unmappable, resolve_device
from .dataloader_checks import check_arguments, check_worker_number
from .._own.fed_args import index_samplers, runs_dataloaders_sampler, trainer_sampled
from .plan import LoaderPlan
from .lm_args import lm_options
from .support import _rank_and_world_size
from .views import DaemonDataset, StreamBatchSampler, StreamSampler
from .._own.worker_pool import WorkerPool

_MANY_EPOCHS = 1 << 30  # a Loader's stream runs on until the Loader moves elsewhere or is closed
T_co = typing.TypeVar("T_co", covariant=True)


class Loader(LoaderPlan, StreamPasses, typing.Generic[T_co]):
    """torch.utils.data.DataLoader's interface over a stream of batchd's daemon: rename DataLoader( to batchd.Loader(.

    DataLoader's arguments keep their meaning (torch 2.x's signature, batch_size positional); the table of what
    each one does here is docs/python.md, "DataLoader's arguments" (dataloader_args.py). Like DataLoader, a Loader
    yields (image, label) for image pipelines and (input_ids, targets) for "lm", does not shuffle unless asked, and
    has .dataset, .sampler, .batch_sampler, .batch_size, .drop_last, .num_workers, .pin_memory and len().

    Args (DataLoader's):
        dataset: a dataset name from the daemon's config ("fashion-mnist", ...; .dataset is then a DaemonDataset,
            len() = its samples), or a torchvision ImageFolder / DatasetFolder with the default loader (or a Subset
            of one; .dataset is the object): the daemon serves it natively if it declares that folder (matched by
            root, classes and sample list; it never opens a path the trainer names), its transform translated to
            ops; with no daemon answering and no socket given, a daemon private to this trainer is started for it
            (private=; docs/operations.md "A private daemon"). Any other map-style Dataset (subclasses, a custom
            loader or is_valid_file, a target_transform, your own class), an IterableDataset too, is your own
            Dataset (docs/python.md, "Your sampler, run in the trainer", "Your own IterableDataset"): num_workers
            processes the Loader starts under your uid (at least one) make its batches as DataLoader's workers do
            (DataLoader's sampler run here, its per-worker seeding, your collate_fn or default_collate) and write
            them into the daemon's slots (tensors come back as zero-copy views). An exception in the dataset or
            collate_fn is raised with its own type and the worker's traceback, as DataLoader raises it. With
            device="cuda" its batches are host batches copied with .to(non_blocking=True).
        batch_size: samples per batch.
        shuffle: a permutation per (seed, epoch), the same on every rank (RandomSampler); default False.
        sampler, num_workers, prefetch_factor, pin_memory, pin_memory_device, drop_last, timeout, in_order, and the
            others: as docs/python.md's table says (for the daemon's datasets DistributedSampler, RandomSampler,
            SequentialSampler, RASampler and RepeatAugSampler mapped, a sampler's .epoch read at each pass, other
            samplers, batch_sampler, generator, collate_fn and worker_init_fn refused with ValueError saying what to
            do instead); num_workers * prefetch_factor + 1 slots (prefetch_factor None: 2; given with num_workers=0:
            DataLoader's ValueError), depth= wins; in_order=True: batch k of a pass made by worker
            k % num_workers, as DataLoader (False: by the first idle worker, delivered as made);
            timeout > 0: BatchdError code "deadline exceeded", a RuntimeError, "DataLoader timed out after N
            seconds ..."; pin_memory=True: the tensors are page-locked where the workers wrote them (is_pinned();
            without CUDA, a warning); multiprocessing_context ("fork" by default, "spawn", "forkserver") starts
            your own Dataset's workers. DataLoader's own argument
            checks run first, in its words; batch_size=None yields samples without a batch dimension.

    Args (batchd's, keyword only):
        private: None = a private daemon for a dataset object when no daemon answers; True = always; False = never.
        as_dict: yield each batch as a dict of tensors with "index" int64 [B] (the dataset indices of its samples)
            instead of the tuple.
        rank, world_size: which share of each epoch this process reads (DistributedSampler semantics); None = from
            torch.distributed when iteration starts (see below).
        repeated_aug: K >= 2: every sample K times per epoch across ranks (an epoch K times as long), each copy
            with its own augmentation, on K ranks when world_size >= K; None = off (docs/operations.md).
        pipeline: a pipeline by name: "fmnist", "fmnist_u8", "train224", "train224_u8", "val224", "val224_u8",
            "val224_cached", "val224_u8_cached" (image datasets; the _cached ones keep each sample's result in the
            daemon's host-wide cache: docs/operations.md, "Cache"), "lm" (token datasets) or a [pipelines.NAME] of
            the daemon's config. Give exactly one of
            pipeline= and transform= (BatchdError otherwise). A batch's tensors (as_dict=True adds "index" int64 [B]):
              fmnist            "image" float32 [B,1,28,28], "label" int64 [B]
              fmnist_u8         "image" uint8 [B,1,28,28], "label" int64 [B]
              train224, val224(_cached)  "image" float32 [B,3,C,C], "label" int64 [B]
              train224_u8, val224_u8(_cached)  "image" uint8 [B,3,C,C], "label" int64 [B]
              lm                "input_ids" int64 [B,T] = w[:-1], "targets" int64 [B,T] = w[1:], where
                                w = tokens[i*T : i*T+T+1] (tiled) or tokens[i : i+T+1] (random) is sample i's
                                window and T the stream's seq_len
        transform: the per-sample recipe as data, run by the daemon's native ops (docs/operations.md,
            "Pipelines"): a list of op dicts ([{"op": "resize", "size": 232, "interpolation": "bicubic"}, ...]), or
            a torchvision.transforms.Compose of torchvision 0.14 classes, or an object whose .transforms is one (the
            references' ClassificationPresetTrain/Eval); batchd._transforms.translate documents what maps to what. A
            transform that cannot be translated (Lambda, a transforms.v2 object, your own class, an unsupported
            value) raises BatchdError naming its place and class: none is dropped. The daemon checks the ops when
            the stream is planned (len(), the first iteration): an unknown op, key or value raises BatchdError
            naming the op's position and key. Batches: "image" as the ops make it ([B,3,H,W] float32 after
            to_tensor/normalize, uint8 after pil_to_tensor), "label" int64 [B] (float32 one-hot [B, classes] with
            batch_transform), "index". .spec is the canonical form the daemon runs.
        batch_transform: with transform=, ops on each collated batch: op dicts (mixup, cutmix, random_choice) or
            the torchvision references' RandomMixup/RandomCutmix objects (a torchvision RandomChoice of them), as
            references/classification/train.py builds them for its collate_fn.
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
        device: "cpu", or a CUDA device: batches then arrive as CUDA tensors through batchd's CUDA path (the
            stream's shared memory page-locked once, each batch copied asynchronously one batch ahead, ordered
            before later work on torch.cuda.current_stream(); see batchd/cuda.h). Where that path is missing
            (batchd built without CUDA, or its runtime finds no usable driver), a warning says why and each batch
            is copied with .to(device, non_blocking=True) instead. Needs torch with CUDA and a GPU.
        on_error: "fail" (a bad sample raises BatchdError naming the file; your own Dataset's exception is raised with
            its own type) or "skip" (it is replaced and counted).
        seeding: your own Dataset only. "dataloader" (default): DataLoader's sampler run in the trainer with its
            per-worker seeds, its batch order, an exception raised for its batch and the pass going on
            (docs/python.md, "Your sampler, run in the trainer"); share=, repeated_aug=, rank=/world_size=,
            endless=True and on_error="skip" still take batchd's sampler, which they need. "per_sample": batchd's
            sampler (seed=), each sample's draws seeded by (seed, epoch, index) whichever worker makes it and
            however often it is redone, state_dict() resumption. batch_sampler=, generator= and a sampler batchd
            does not map take DataLoader's whatever this says.
        seq_len, sampling, endless: token streams (docs/python.md, "Token files"): seq_len = T (None = the
            dataset's); sampling = "tiled" (default) or "random" (nanoGPT's get_batch: B offsets per batch, uniform
            in [0, N - T - 1], from (seed, rank, step)); endless=True: one iteration never ends (it = iter(loader);
            x, y = next(it)) and state_dict() records "step" as well.
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

    Ranks: rank/world_size (or a DistributedSampler's) win; else they come from torch.distributed (get_rank() and
    get_world_size() of the default group: the GLOBAL rank and world size, as torchrun/SLURM set them) when
    iteration starts, so a Loader built before init_process_group still reads this rank's share. .rank and
    .world_size are the values in use (resolved when read). ValueError unless 0 <= rank < world_size.
    Epochs: with set_epoch(e) before iterating (on the Loader, its .sampler, or the DistributedSampler given), that
    epoch's order is used; without it, each complete pass of a Loader without a DistributedSampler advances to the
    next epoch, so a shuffled order changes every pass (RandomSampler).
    Errors from the daemon are raised as batchd.BatchdError with its message.
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True, pipeline=None, transform=None, batch_transform=None, seed=0,
                 rank=None, world_size=None, repeated_aug=None, depth=None, socket=None, as_dict=False, as_tuple=None,
                 device="cpu", on_error="fail", crop_size=None, resize_size=None, exact_decode=None, strategy=None,
                 index_timeout=600.0, share=None, request_timeout=None, expected_owner=None, private=None,
                 seq_len=None, sampling=None, endless=False, seeding="dataloader"):
        check_arguments(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, drop_last, timeout,
                        multiprocessing_context, prefetch_factor, persistent_workers)
        self.persistent_workers = bool(persistent_workers)  # the workers persist either way (docs/python.md)
        self.in_order = bool(in_order)  # your own Dataset: which worker makes a batch (_own/fed_stream.py)
        fed = trainer_sampled(dataset, sampler, batch_sampler, generator)  # own Dataset: the trainer runs the sampler
        sampler_fields = from_sampler(*((None,) * 2 if fed else (sampler, shuffle)), drop_last, seed,
                                      *((None,) * 3 if fed else (rank, world_size, repeated_aug)))
        depth = prefetch_depth(num_workers, prefetch_factor, depth)
        check_pin_memory(pin_memory, pin_memory_device)
        if as_tuple is not None:
            warnings.warn("batchd.Loader: as_tuple= is deprecated: the tuple is the default now; as_dict=True gives "
                          "the dict", DeprecationWarning, stacklevel=2)
            as_dict = not as_tuple
        source, transform, socket = resolve_source(dataset, socket, private, num_workers, transform, pipeline)
        own = "external" in source  # your own Dataset (_own/dataset.py)
        refuse_unmappable(collate_fn, worker_init_fn, batch_sampler, generator, own, batch_transform, crop_size,
                          resize_size, exact_decode)
        if fed and not own:  # the daemon's datasets: its sampler's refusal
            from_sampler(sampler, shuffle, drop_last, seed, rank, world_size, repeated_aug)
        self.generator, self._auto_collation = generator, batch_size is not None
        self._fed = own and runs_dataloaders_sampler(fed, seeding, sampler, share, repeated_aug, rank, world_size,
                                                     endless, on_error)
        if self._fed:  # the pass's sampler, its stream and its slots' layout (_own/fed_pass.py)
            batch_size, sampler, batch_sampler, self._index_sampler, self._auto_collation = index_samplers(
                dataset, batch_size, shuffle, sampler, batch_sampler, drop_last, generator)
        self._fed_pass = self._fed_stream = self._fed_layout = None
        spec = None if own else pipeline_spec(pipeline, transform, batch_transform, crop_size, resize_size,
                                              exact_decode)
        self.device = resolve_device(device)
        self._device_path = None  # CUDA: True = batchd's pinned DeviceStream, False = .to() copies (decided once)
        self.as_dict = bool(as_dict)
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2  # as DataLoader stores it
        self.batch_size, self.num_workers, self.prefetch_factor = batch_size, num_workers, prefetch_factor
        self.pin_memory, self.pin_memory_device, self.timeout = bool(pin_memory), pin_memory_device, float(timeout)
        self.dataset = DaemonDataset(self, dataset) if isinstance(dataset, str) else dataset
        if self._fed:  # DataLoader's own sampler objects, and its batch_size=None beside a batch_sampler
            self.sampler, self.batch_sampler = sampler, batch_sampler
        else:
            self.sampler = sampler if sampler is not None else StreamSampler(self)
            self.batch_sampler = StreamBatchSampler(self) if batch_size is not None else None  # as DataLoader
        self._epoch_source = sampler_fields["epoch_source"]
        self._given_ranks = (sampler_fields["rank"], sampler_fields["world_size"])
        if None not in self._given_ranks:
            _rank_and_world_size(*self._given_ranks)  # both given: a bad pair is refused now
        self._ranks = None  # (rank, world_size) of the current plan and stream
        # writable=True: DataLoader's tensors may be modified in place, and a copy per batch is what batchd avoids;
        # only this uid gets rw- on the segment (docs/security.md). A share is read-only: every subscriber's segment.
        self._share = share
        # batch_size=None: DataLoader's samples without auto-batching; the stream makes batches of 1, whose rows
        # the passes yield without the batch dimension (passes._element).
        self._options = dict(source, pipeline=pipeline or "", batch_size=1 if batch_size is None else batch_size,
                             shuffle=sampler_fields["shuffle"], seed=sampler_fields["seed"],
                             drop_last=sampler_fields["drop_last"], drop_last_batch=sampler_fields["drop_last_batch"],
                             on_error=on_error, writable=share is None, **lm_options(seq_len, sampling))
        self._endless = bool(endless)
        if share is not None:
            self._options["share"] = share
        if sampler_fields["repeated_aug"] != 1 or sampler_fields["selected_samples"]:
            self._options.update(repeated_aug=sampler_fields["repeated_aug"],
                                 selected_samples=sampler_fields["selected_samples"])
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
        self._own = WorkerPool(  # your own Dataset's worker processes, started at the first pass
            dataset, num_workers, multiprocessing_context, worker_init_fn, sampler_fields["seed"], socket or "",
            {"request_timeout": request_timeout, "expected_owner": expected_owner}, None if collate_fn is
            default_collate else collate_fn, (1 if self._auto_collation else None) if self._fed else batch_size,
            drop_last, fed=self._fed) if own else None
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
        self._initialized = True  # from here on, DataLoader's FROZEN attributes refuse to be set
        check_worker_number(self)

    def __iter__(self):
        """An iterator over one pass (DataLoader's iter()): a generator over the stream's epoch, or, when the
        trainer runs the sampler, a FedPass (_own/fed_pass.py)."""
        return self._fed_iter() if self._fed else self._passes()

    def _passes(self):
        options = self._stream_options()  # ranks resolved now: a process group made after __init__ counts
        if self._epoch_source is not None and not self._explicit_epoch:
            self._epoch = self._epoch_source.epoch  # the script's own DistributedSampler.set_epoch
        if self._endless:
            yield from self._endless_pass(options)
            return
        if self._share is not None:  # the production's next epoch, whole, wherever it is
            if self._stream is None:
                self._stream = self._open(epoch=self._epoch, start_batch=0, num_epochs=_MANY_EPOCHS, **options)
                self._joined_at = self._stream.info.get("joined_at_batch", 0)
            if self._pending is None:
                self._pending = self._stream.next(self.timeout or None)
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
            self._stream = self._open(epoch=epoch, start_batch=start, num_epochs=_MANY_EPOCHS, **options)
        yield from self._pass(epoch)
        self._advance(epoch, explicit)

    def _advance(self, epoch, explicit):
        """After a complete pass: the next pass reads the next epoch, unless set_epoch() was called meanwhile."""
        if not self._explicit_epoch and self._epoch_source is None:
            self._epoch = epoch + 1
