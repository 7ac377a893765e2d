"""batchd.Loader over your own Dataset with DataLoader's sampler (issue 40; docs/python.md, "Your sampler, run in the
trainer" and "Your own IterableDataset", says what a user sees): the default (seeding="dataloader"), and the only
way for batch_sampler=, generator=, a sampler the daemon does not map, and an IterableDataset. The trainer does
what DataLoader's main process does, and the daemon carries the batches.

  - The samplers are DataLoader's own objects (fed_args.index_samplers); each pass calls iter() on them, then draws
    the workers' base seed from `generator`, in torch's order. Workers are seeded as DataLoader's; without
    persistent_workers each pass reseeds them and reruns worker_init_fn ("reset", before the pass's first batch).
  - First round (first pass, in_order=True): batch b < num_workers is made by worker b over its pipe, all at once (a
    Barrier dataset runs); their sizes size the slots (slot_bytes). in_order=False has none (batches come as made,
    ExternalDataset.completion_order, task j by its "index"): slots start at 1 MiB and grow. The rest go through one
    stream for the Loader's life (FedStream: task j is one whole batch; worker k % num_workers makes batch k with
    in_order=True), the lists sent up to depth + 2 batches ahead. Between passes the tasks past a pass's end are
    fillers, dropped unread.
  - A loop that keeps every slot's batch gets the rest through a new stream (_spill); a batch that outgrows its slot
    comes over its worker's pipe and the next stream's slots fit (_grown, _renew).
  - A FailedBatch is raised by next() with its own type and traceback, and the pass goes on; an IterableDataset's
    EndedBatch counts its worker ended; a dead worker of an IterableDataset ends the pass (lost_iteration).
"""
import collections
import itertools

import torch
from torch.utils._pytree import tree_map

from .batch_codec import decode_bytes
from .._batchd import BatchdError
from .worker_collate import CollatedLayout
from .fed_stream import FedStream, first_layout, grown_slot
from .iterable import past_length_warning
from .worker_feed import FailedBatch, Grown
from .worker_iterable import EndedBatch
from .worker_errors import reraise

_PASS_IDS = itertools.count(1)  # a pass's reseed is applied once per worker, whatever stream carries it
_NOT_SENT = object()
_UNKNOWN_SLOT = 1 << 20  # bytes: a pass whose first batches all failed (its stream only; the next pass learns)


class FedPass:
    """One pass (see the module docstring): an iterator, as DataLoader's, whose next() may raise a batch's
    exception and be called again."""

    def __init__(self, loader):
        self._loader, self._pool = loader, loader._own
        self._it = iter(loader._index_sampler)
        self._reseed = None  # the base seed each worker reseeds from before this pass (persistent_workers=False)
        started = self._pool.started
        if loader.persistent_workers and started:
            base_seed = None  # DataLoader's persistent iterator draws its base seed once, at the first pass
        else:
            base_seed = torch.empty((), dtype=torch.int64).random_(generator=loader.generator).item()
        if not self._pool.started:
            self._pool.start(base_seed)
            if loader._fed_stream is not None:
                loader._fed_stream.attach()
        elif not loader.persistent_workers:
            self._reseed = base_seed
        # Workers start this pass anew (feed_reset): reseeded, or an IterableDataset's iterator only.
        self._new_pass = self._reseed is not None or (started and self._pool.iterable)
        self._ended = set()  # an IterableDataset's workers whose iterator is exhausted in this pass
        self._reported = getattr(loader, "_IterableDataset_len_called", None)  # for past_length_warning
        self._yielded, self._lost = 0, None  # batches returned (not raised); the error that ended the pass
        self._drawn = collections.deque()  # the sampler's elements drawn, not yet sent
        self._made = collections.deque()  # the first round's batches (decoded), in order
        self._layout_once = None  # this pass's slots when its first round learned no size (every batch failed)
        self._pass_id = next(_PASS_IDS)
        self._exhausted = self._started = self._done = self._complete = False
        loader._state = {"epoch": loader._epoch, "batches_yielded": 0}

    def __iter__(self):
        return self

    @property
    def _workers(self):  # the worker processes: DataLoader's iterator attribute, which PyTorch's own tests read
        return [entry[0] for entry in self._pool._workers if entry is not None]

    def __next__(self):
        while True:
            try:
                batch = self._next()
            except BatchdError as e:
                if getattr(e, "lost_iteration", False):  # an IterableDataset's worker died: the pass ends here,
                    self._lost = e  # and every later next() raises it again, as DataLoader's
                    self.close()
                raise
            self._loader._state["batches_yielded"] += 1
            if not isinstance(batch, FailedBatch):
                self._yielded += 1
                if self._pool.iterable:
                    past_length_warning(self._loader, self._reported, self._yielded)
                return batch
            if self._loader._options["on_error"] != "skip":
                reraise(batch.wrapped)

    def _draw(self, count):
        while len(self._drawn) < count and not self._exhausted:
            try:
                self._drawn.append(next(self._it))
            except StopIteration:
                self._exhausted = True

    def _first_round(self):
        """The first pass's first batches, over the pipes (decoded into self._made); the slots are sized by those
        that did not fail (a pass whose every first batch failed sizes nothing: the next pass tries again)."""
        self._draw(self._pool.size)
        lists = list(self._drawn)
        self._drawn.clear()
        if not lists:
            return
        try:
            made = self._pool.make_first(lists, self._loader.timeout or None,
                                         (self._reseed, self._pass_id) if self._new_pass else None)
        except BatchdError:
            self._drawn.extendleft(reversed(lists))  # a next() after a timeout asks for them again
            raise
        batches = [decode_bytes(m, self._pool._key) for m in made]
        self._made.extend(batches)
        if len({b.worker for b in batches if isinstance(b, EndedBatch)}) == self._pool.size:
            self._exhausted = True  # every worker's iterator is: this pass has no more batches, and needs no stream
            return
        self._loader._fed_layout = first_layout(self._loader, lists, made, batches, (FailedBatch, EndedBatch))
        if self._loader._fed_layout is None:
            self._layout_once = CollatedLayout(_UNKNOWN_SLOT)

    def _setup(self):
        """The pass's first round (the first pass only), its stream (the last pass's fillers dropped), its reseed,
        and the index lists the stream's first tasks wait for (sent before any batch is returned: a task waiting
        for its list runs on the daemon's task deadline)."""
        loader = self._loader
        if self._pool.iterable:  # a worker that died between passes is replaced quietly first
            self._pool.check()
            self._pool.iterating = set(range(self._pool.size))
        stream = loader._fed_stream
        if stream is not None and (loader._fed_layout is None or stream.layout is not loader._fed_layout or
                                   stream.routed != bool(loader.in_order)):
            loader._fed_stream = None  # sized by a pass that learned nothing, or in_order changed: closed
            stream.close()  # before a first round, whose workers must not be serving it
        if loader._fed_layout is None and not self._made and not loader.in_order:
            # in_order=False: no first round (it waits for every worker's first batch, a slow one included); the
            # slots start at _UNKNOWN_SLOT and grow with the first batch that outgrows them (_grown).
            loader._fed_layout = CollatedLayout(_UNKNOWN_SLOT)
        if loader._fed_layout is None and not self._made:
            self._first_round()
            if self._exhausted and not self._drawn:
                return
        layout = loader._fed_layout or self._layout_once
        if loader._fed_stream is None and layout is not None:
            loader._fed_stream = FedStream(loader, layout)
        if loader._fed_stream is not None:
            stream = self._stream()
            if self._new_pass:
                self._pool.feed_reset(stream.id, stream.sent, self._reseed, self._pass_id)
            self._feed(stream)

    def _stream(self):
        stream = self._loader._fed_stream
        while stream.received < stream.floor:  # the last pass's fillers: dropped unread
            try:
                self._receive(stream)
            except BatchdError as e:
                if "are held by Batches" not in str(e):
                    raise
                stream = self._replace(stream, stream.floor % self._pool.size)  # held slots: a new stream
                continue
            stream.received += 1
        return stream

    def _receive(self, stream):
        if stream.timed is None:  # made once per stream: this is the per-batch path
            stream.timed = self._loader._timed(stream.source.next)
        return stream.timed(self._loader.timeout or None)

    def _feed(self, stream):
        """Sends the index lists up to depth + 2 batches past the one awaited; none to a stream whose slots are too
        small now (_grown)."""
        ahead = 0 if self._outdated(stream) else stream.received + stream.depth + 2 - stream.sent
        self._draw(ahead)
        count = min(len(self._drawn), ahead)
        if count > 0:
            stream.send([self._drawn.popleft() for _ in range(count)], self._pool)
        if self._exhausted and not self._drawn and stream.floor < stream.sent + stream.depth:
            stream.raise_floor(stream.sent + stream.depth)  # the tasks past the pass's end: fillers now

    def _next(self):
        """The pass's next batch (a FailedBatch too); an IterableDataset's EndedBatch counts its worker ended, and
        once every worker has, the pass draws nothing more and ends after the batches already asked for."""
        while True:
            batch = self._take()
            if not isinstance(batch, EndedBatch):
                return batch
            self._ended.add(batch.worker)
            self._pool.iterating.discard(batch.worker)
            if len(self._ended) == self._pool.size:
                self._exhausted = True
                self._drawn.clear()

    def _take(self):
        if self._lost is not None:
            raise self._lost
        if self._done:
            raise StopIteration
        if not self._started:
            self._setup()
            self._started = True  # only once set up: a next() after its exception (a timeout) sets up again
        if self._made:
            return self._finish_batch(self._made.popleft())
        stream = self._loader._fed_stream
        while stream is not None:
            self._feed(stream)
            if not stream.lists and self._outdated(stream) and not (self._exhausted and not self._drawn):
                stream = self._renew(stream)  # its slots are too small, its batches came: the next stream's fit
                continue
            if not stream.lists:  # the sampler is exhausted and every batch came
                stream.end_pass()
                self._complete = True
                break
            try:
                item = self._receive(stream)
            except BatchdError as e:
                if "are held by Batches" not in str(e):
                    raise
                stream = self._spill(stream)  # every slot holds a batch the loop kept: a new stream for the rest
                continue
            if item is None:
                raise BatchdError(f"batchd.Loader: the stream ended after {stream.received} batches")
            stream.received += 1
            j = int(item[1]["index"][0])  # task j (in task order: received - 1; in_order=False: any sent)
            if stream.lists.pop(j, _NOT_SENT) is _NOT_SENT:  # (a list may be None: an IterableDataset's)
                if j >= stream.floor:  # not a filler: the stream's bytes are not what this Loader's workers wrote
                    raise BatchdError(f"batchd.Loader: stream {stream.id} delivered task {j}, which it was not sent")
                del item  # its slot goes back before the next wait
                continue  # in_order=False: a filler past the pass's end, made before the pass's last batches
            batch = stream.layout.collate(stream.source.tensors(item[1]))
            del item
            return self._finish_batch(self._grown(stream, j, batch) if isinstance(batch, Grown) else batch)
        self.close()
        raise StopIteration

    def _spill(self, stream):
        """The loop holds every slot (list(loader), batches kept in a list), as DataLoader allows: the stream is
        closed (the batches held keep its segment mapped) and the batches sent but not received go first in a new
        one, so holding more batches costs one segment of `depth` slots per `depth` batches held."""
        self._drawn.extendleft(reversed([stream.lists[j] for j in sorted(stream.lists)]))
        return self._renew(stream)

    def _renew(self, stream):
        """Closes `stream` and goes on in a new one, with the Loader's slot size: its first task keeps the residue of
        the first batch not received (FedStream), the fillers below it dropped first."""
        self._replace(stream, stream.received % self._pool.size)
        stream = self._stream()
        if self._new_pass:  # a worker that has not started this pass anew yet does so first
            self._pool.feed_reset(stream.id, stream.sent, self._reseed, self._pass_id)
        return stream

    def _replace(self, stream, floor):
        """Closes `stream` (held batches keep its segment mapped); the Loader's next one, its slot size, at `floor`."""
        stream.close()
        self._loader._fed_stream = FedStream(self._loader, self._loader._fed_layout or stream.layout, floor)
        return self._loader._fed_stream

    def _outdated(self, stream):
        layout = self._loader._fed_layout
        return layout is not None and stream.layout is not layout

    def _grown(self, stream, j, marker):
        """Batch j outgrew its slot: it came over its worker's pipe (decoded here: one copy, this batch only), and the
        Loader's slots grow to grown_slot() of it: the lists not yet sent go to a new stream of that size once this
        one has delivered the batches it was sent (_renew), nothing lost, repeated or reordered."""
        blob = self._pool.take_held(marker.worker, stream.id, j, self._loader.timeout or None)
        size = grown_slot(marker.needed)
        layout = self._loader._fed_layout
        if layout is None or size > layout.bytes_per_sample:
            self._loader._fed_layout = CollatedLayout(size)
            self._pool.slot_growths += 1
        return decode_bytes(blob, self._pool._key)

    def _finish_batch(self, batch):
        device = self._loader.device
        if device.type == "cuda" and not isinstance(batch, FailedBatch):
            batch = tree_map(lambda x: x.to(device, non_blocking=True) if isinstance(x, torch.Tensor) else x, batch)
        return batch

    def close(self):
        """Ends the pass. A pass left before its end closes the stream (the next pass opens another)."""
        if self._done:
            return
        self._done = True
        self._pool.iterating = set()
        stream = self._loader._fed_stream
        if stream is not None and not self._complete:
            self._loader._fed_stream = None
            stream.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
