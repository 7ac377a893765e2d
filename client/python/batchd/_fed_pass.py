"""batchd.Loader over your own map-style Dataset with a sampler the daemon does not run (issue 40, items 3 and 6):
`batch_sampler=`, `generator=`, any Sampler or iterable of indices as `sampler=`, RandomSampler with replacement or
num_samples. The trainer then does what DataLoader's main process does, and the daemon carries the batches.

  - The samplers are DataLoader's own objects (index_samplers: RandomSampler(generator=) for shuffle=True,
    BatchSampler(sampler, batch_size, drop_last)); each pass calls iter() on them, then draws the workers' base
    seed from `generator` (as torch's _BaseDataLoaderIter, in that order), so the main process's random state
    moves as DataLoader's does. len(loader) is len() of the batch sampler (TypeError if it has none).
  - Workers are seeded once, at start, as DataLoader seeds its workers (base_seed + worker id for random and torch;
    numpy from torch's _generate_state), and worker_init_fn runs after. persistent_workers=False: new workers for
    every pass, as DataLoader's; True: the first pass's workers serve every pass.
  - First round: batch b < num_workers is made by worker b over its pipe, as DataLoader hands out its first
    batches; all of them at once, so a dataset whose workers wait for each other (a Barrier) runs. Their sizes size
    the slots: twice the largest bytes per sample, times the batch size (at least 64 KiB).
  - The rest go through a stream (a "leg"): batch j of the leg is one whole-batch task of a stream of len(sampler)
    - first-round batches (4096 when the sampler has no len(); then another leg), and the worker that takes it reads
    its index list from what the trainer sends every worker, up to depth + 2 batches ahead of the one awaited
    (_pool_feed.py). Batches arrive in the sampler's order. A loop that keeps every slot's batch (list(loader))
    gets the rest through a new leg: the old one's segment stays mapped while its batches live (_spill).
  - A batch whose dataset or collate_fn raises arrives as a FailedBatch: next() raises that exception (its own type,
    the worker's traceback) and the pass goes on with the next batch, as DataLoader's iterator does; with
    on_error="skip" the batch is left out.
Which worker makes which batch past the first round is the daemon's choice (the first idle one), so random draws
inside __getitem__ match DataLoader's with one worker (num_workers=0 or 1), not batch for batch with more.
"""
import collections

import torch
from torch.utils.data import BatchSampler, DistributedSampler, RandomSampler, SequentialSampler
from torch.utils._pytree import tree_map

from ._batch_codec import ALIGN, decode
from ._batchd import BatchdError
from ._worker_collate import CollatedLayout
from ._worker_feed import FailedBatch
from ._worker_pool import reraise

_LEG = 4096  # batches per stream when the sampler has no len()
_MIN_SLOT = 64 << 10  # bytes: a FailedBatch's traceback fits


def trainer_sampled(sampler, batch_sampler, generator):
    """Whether the trainer must run the sampler: the daemon's sampler serves none of these (_dataloader_args.py)."""
    if batch_sampler is not None or generator is not None:
        return True
    if sampler is None or type(sampler).__name__ in ("RASampler", "RepeatAugSampler"):
        return False
    if type(sampler) is RandomSampler:
        return sampler.replacement or sampler._num_samples is not None or sampler.generator is not None
    return type(sampler) not in (DistributedSampler, SequentialSampler)


def check_fed(share, repeated_aug, rank, world_size, endless):
    """ValueError for batchd's own options that need the daemon's sampler."""
    given = [name for name, value in (("share", share), ("repeated_aug", repeated_aug), ("rank", rank),
                                      ("world_size", world_size)) if value is not None] + (["endless"] if endless
                                                                                           else [])
    if given:
        raise ValueError(f"batchd.Loader: {', '.join(given)}= need batchd's sampler, but this Loader runs yours "
                         f"(batch_sampler=, generator=, or a sampler the daemon does not map): shard with a "
                         f"DistributedSampler instead")


def index_samplers(dataset, batch_size, shuffle, sampler, batch_sampler, drop_last, generator):
    """(sampler, batch_sampler, the sampler a pass iterates, auto_collation), as DataLoader.__init__ makes them."""
    if batch_sampler is None:
        if sampler is None:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
    return sampler, batch_sampler, (batch_sampler if batch_sampler is not None else sampler), \
        batch_sampler is not None


class FedPass:
    """One pass (see the module docstring): an iterator, as DataLoader's, whose next() may raise a batch's
    exception and be called again."""

    def __init__(self, loader):
        self._loader, self._pool = loader, loader._own
        self._it = iter(loader._index_sampler)
        base_seed = torch.empty((), dtype=torch.int64).random_(generator=loader.generator).item()
        if not loader.persistent_workers or not self._pool.started:
            self._pool.close()
            self._pool.start(base_seed)
        self._drawn = collections.deque()  # the sampler's elements drawn, not yet sent
        self._made = collections.deque()  # the first round's batches (encoded bytes), in order
        self._exhausted = self._started = self._done = False
        self._source = self._leg = self._layout = None
        self._batches = 0  # batches handed to streams or the first round, this pass
        loader._state = {"epoch": loader._epoch, "batches_yielded": 0}

    def __iter__(self):
        return self

    def __next__(self):
        while True:
            batch = self._next()
            self._loader._state["batches_yielded"] += 1
            if not isinstance(batch, FailedBatch):
                return batch
            if self._loader._options["on_error"] != "skip":
                reraise(batch.wrapped)

    def _draw(self, count):
        while len(self._drawn) < count and not self._exhausted:
            try:
                self._drawn.append(next(self._it))
            except StopIteration:
                self._exhausted = True

    def _count(self, element):
        return len(element) if self._loader._auto_collation else 1

    def _first_round(self):
        self._draw(self._pool.size)
        lists = list(self._drawn)
        self._drawn.clear()
        if not lists:
            return
        made = self._pool.make_first(lists)
        self._made.extend(made)
        self._batches = len(lists)
        per_sample = max(len(m) / self._count(e) for m, e in zip(made, lists))
        most = max(self._count(e) for e in lists)
        if self._loader._auto_collation:
            most = max(most, getattr(self._loader.batch_sampler, "batch_size", None) or 0)
        need = max(_MIN_SLOT, int(2 * per_sample * most))
        self._layout = CollatedLayout(-(-need // ALIGN) * ALIGN)
        self._draw(1)
        if self._drawn:
            self._open_leg()

    def _open_leg(self):
        try:
            total = len(self._loader._index_sampler)
        except TypeError:
            total = None
        size = total - self._batches if total is not None and total > self._batches else _LEG
        self._source = self._loader._open_fed(size, self._layout)
        self._leg = {"id": self._source.info["id"], "size": size, "sent": 0, "delivered": 0, "end": None,
                     "depth": int(self._source.info.get("depth", 0) or 5), "lists": {}}
        self._pool.attach_fed(self._leg["id"], self._layout)
        self._feed()

    def _feed(self):
        """Sends the index lists up to depth + 2 batches past the one awaited; the end once the sampler has none."""
        leg = self._leg
        target = min(leg["size"], leg["delivered"] + leg["depth"] + 2)
        self._draw(target - leg["sent"])
        count = min(len(self._drawn), target - leg["sent"])
        if count > 0:
            lists = [self._drawn.popleft() for _ in range(count)]
            self._pool.feed(leg["id"], leg["sent"], lists, leg["delivered"])
            leg["lists"].update(enumerate(lists, leg["sent"]))
            leg["sent"] += count
            self._batches += count
        if self._exhausted and not self._drawn and leg["end"] is None and leg["sent"] < leg["size"]:
            leg["end"] = leg["sent"]
            self._pool.end_feed(leg["id"], leg["sent"])

    def _next(self):
        if self._done:
            raise StopIteration
        if not self._started:
            self._started = True
            self._first_round()
        if self._made:
            payload = self._made.popleft()
            return self._finish_batch(decode(torch.frombuffer(bytearray(payload), dtype=torch.uint8),
                                             self._pool._key))
        while self._leg is not None:
            leg = self._leg
            self._feed()
            last = leg["end"] if leg["end"] is not None else leg["size"]
            if leg["delivered"] >= last:
                self._close_leg()
                self._draw(1)
                if self._drawn:
                    self._open_leg()
                continue
            try:
                item = self._loader._timed(self._source.next)(self._loader.timeout or None)
            except BatchdError as e:
                if "are held by Batches" not in str(e):
                    raise
                self._spill()  # every slot is held by a batch the loop kept: the rest go through a new stream
                continue
            if item is None:
                raise BatchdError(f"batchd.Loader: the stream ended after {leg['delivered']} of its {last} batches")
            leg["lists"].pop(leg["delivered"], None)
            leg["delivered"] += 1
            batch = self._layout.collate(self._source.tensors(item[1]))
            del item
            return self._finish_batch(batch)
        self.close()
        raise StopIteration

    def _spill(self):
        """The loop holds every slot of the leg (list(loader), batches kept in a list), as DataLoader allows: the
        leg is closed (the batches held keep its segment mapped) and the batches sent but not delivered go first
        in a new leg, so holding more batches costs one segment of `depth` slots per `depth` batches held."""
        leg = self._leg
        pending = [leg["lists"][j] for j in range(leg["delivered"], leg["sent"])]
        self._close_leg()
        self._drawn.extendleft(reversed(pending))
        self._batches -= len(pending)
        self._open_leg()

    def _finish_batch(self, batch):
        device = self._loader.device
        if device.type == "cuda" and not isinstance(batch, FailedBatch):
            batch = tree_map(lambda x: x.to(device, non_blocking=True) if isinstance(x, torch.Tensor) else x, batch)
        return batch

    def _close_leg(self):
        if self._leg is not None:
            self._pool.end_feed(self._leg["id"], 0)
            self._leg = None
        if self._source is not None:
            source, self._source = self._source, None
            source.close()

    def close(self):
        """Ends the pass: its stream closed; workers that do not persist are stopped, as DataLoader's are."""
        if self._done:
            return
        self._done = True
        self._close_leg()
        current = self._loader._fed_pass() if self._loader._fed_pass is not None else None
        if not self._loader.persistent_workers and current is self:  # not once a newer pass has the workers
            self._pool.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
