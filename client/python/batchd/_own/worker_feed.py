"""The worker side of a pass whose sampler runs in the trainer (issue 40, items 3 and 6; the trainer's side is
fed_pass.py): as DataLoader's main process does, the trainer iterates the sampler / batch sampler and sends the
index lists to the workers; a worker makes the batches it is given, collates them (worker_collate.fetcher) and
writes them into the stream's slots (batch_codec.encode), DataLoader's per-worker seeding in force.

Messages on the worker's pipe (besides worker_main's commands):
  ("lists", stream_id, [(j, index list)], delivered)     lists of the stream's batches j (this worker's alone
                                                         when the stream is routed); those before `delivered` are
                                                         in the trainer: dropped
  ("floor", stream_id, f)                                 a task below f without a list is a filler between two
                                                         passes: it makes an empty batch (the trainer drops it)
  ("closed", stream_id)                                  the trainer closed the stream: make nothing more
  ("reset", stream_id, first, base_seed, pass_id)        a pass starts at batch first: before it, reseed and run
                                                         worker_init_fn again (no persistent workers; base_seed
                                                         None: not), an IterableDataset's iterator starts anew
  ("make", b, indices, key, reset)                       make batch b now and send it back over the pipe:
                                                         (MADE, b, its encoded bytes), the first round of a pass;
                                                         reset: (base_seed, pass_id) to apply first, or None

The Inbox reads the pipe in a thread, so the trainer never blocks on a worker busy with a batch: the lists go to
the Feed at once, every other command waits for the main loop (get()).

A batch whose dataset or collate_fn raises is written as a FailedBatch (torch's ExceptionWrapper, pickled): the
trainer raises it from that batch's next() and goes on with the next batch, as DataLoader does. A batch that outgrows
its slot goes to the trainer over the pipe (HELD, sent before the task is done) and a Grown takes its place in the
slot: the trainer's next stream has slots that fit (fed_pass.py).
"""
import queue
import threading
import time

import numpy as np
import torch

from .. import _batchd
from .batch_codec import HEADER, TooLarge, encode
from .worker_collate import placed, unplaced

MADE = "made"  # (MADE, b, bytes): batch b of the first round, encoded under the Loader's key
HELD = "held"  # (HELD, stream_id, j, bytes): batch j, which outgrew its slot, encoded under the Loader's key


class Grown:
    """What a slot holds in place of a batch that outgrew it (`needed` bytes encoded): the batch itself went to the
    trainer over worker `worker`'s pipe (HELD), and the trainer's next streams get slots that fit (fed_pass.py)."""

    def __init__(self, needed, worker):
        self.needed, self.worker = needed, worker


class FailedBatch:
    """A batch whose making raised: `wrapped` is worker_main._wrapped's (the ExceptionWrapper pickled, its text)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped


def seed_as_dataloader(base_seed, worker_id):
    """random, torch and numpy seeded as torch's DataLoader seeds worker `worker_id` (torch.utils.data._utils.worker:
    base_seed + worker_id for random and torch, _generate_state(base_seed, worker_id) for numpy); the seed."""
    import random
    from torch.utils.data._utils.worker import _generate_state
    seed = base_seed + worker_id
    random.seed(seed)
    torch.manual_seed(seed)
    np.random.seed(_generate_state(base_seed, worker_id))
    return seed


class Feed:
    """The index lists of the stream being served, as the trainer sends them."""

    def __init__(self, stopping):
        self._cond, self._stopping = threading.Condition(), stopping
        self._stream, self._lists, self._floor, self._closed = None, {}, 0, False
        self._reset, self.applied = None, None  # (stream, first batch, base seed, pass) of the newest reseeding
        # pass; the pass whose reseed this worker applied

    def _switch(self, stream_id):
        if stream_id != self._stream:
            self._stream, self._lists, self._floor, self._closed = stream_id, {}, 0, False

    def reset(self, stream_id, first, base_seed, pass_id):
        with self._cond:
            self._switch(stream_id)
            self._reset = (stream_id, first, base_seed, pass_id)

    def reset_due(self, stream_id, j):
        """(the base seed,) of the newest pass to start anew (None: no reseeding, an IterableDataset's new iterator
        alone) if it starts at or before batch j of `stream_id` and this worker has not applied it (marked applied
        now); else None."""
        with self._cond:
            if self._reset is None:
                return None
            stream, first, base_seed, pass_id = self._reset
            if stream != stream_id or first > j or pass_id == self.applied:
                return None
            self.applied = pass_id
            return (base_seed,)

    def add(self, stream_id, entries, delivered):
        with self._cond:
            self._switch(stream_id)
            for j in [j for j in self._lists if j < delivered]:
                del self._lists[j]
            self._lists.update(entries)
            self._cond.notify_all()

    def floor(self, stream_id, floor):
        with self._cond:
            self._switch(stream_id)
            self._floor = max(self._floor, floor)
            self._cond.notify_all()

    def close(self, stream_id):
        with self._cond:
            self._switch(stream_id)
            self._closed = True
            self._cond.notify_all()

    def get(self, stream_id, j):
        """(the sampler's element for batch j of `stream_id`,); () for a batch below the floor that has no list (a
        filler between two passes); None once the stream is closed or another stream's lists came."""
        with self._cond:
            while True:
                if self._stopping.is_set():
                    return None  # the worker is stopped: the stream is being closed with it
                if self._stream == stream_id:
                    if j in self._lists:
                        return (self._lists[j],)
                    if j < self._floor:
                        return ()
                    if self._closed:
                        return None
                elif self._stream is not None and self._stream > stream_id:
                    return None
                self._cond.wait(1.0)


class Inbox:
    """The worker's pipe, read by a thread (see the module docstring)."""

    def __init__(self, conn):
        self.stopping = threading.Event()  # "stop" came: a fed worker leaves its stream between tasks
        self.feed = Feed(self.stopping)
        self._queue = queue.Queue()
        threading.Thread(target=self._read, args=(conn,), name="batchd-inbox", daemon=True).start()

    def _read(self, conn):
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                self.stopping.set()
                self._queue.put(("eof",))
                return
            if message[0] == "lists":
                self.feed.add(*message[1:])
            elif message[0] == "floor":
                self.feed.floor(*message[1:])
            elif message[0] == "closed":
                self.feed.close(*message[1:])
            elif message[0] == "reset":
                self.feed.reset(*message[1:])
            else:
                if message[0] == "stop":
                    self.stopping.set()
                self._queue.put(message)

    def get(self):
        return self._queue.get()

    def pending(self):
        return not self._queue.empty()


def describe(index):
    """A batch's indices (or its one index, without auto-collation) for a message: at most four of them; an
    IterableDataset's (Nones: DataLoader's _InfiniteConstantSampler) as its iterator's next items."""
    if index is None or (isinstance(index, (list, tuple)) and index and index[0] is None):
        return "its iterator's next items"
    if isinstance(index, (list, tuple)):
        return f"samples {list(index[:4])}{'...' if len(index) > 4 else ''}"
    return f"sample {index!r}"


def make(fetch, index, wrap, what):
    """The batch of `index` (the sampler's element: a list of indices with auto-collation, else one index) as
    DataLoader's worker makes it, or a FailedBatch of the exception it raised."""
    try:
        return fetch.fetch(index)
    except Exception:  # noqa: BLE001 - the dataset's or collate_fn's: raised in the trainer with its own type
        return FailedBatch(wrap(what))


def encoded(batch, key):
    """`batch` encoded into bytes of its own (the first round's batches travel over the pipe)."""
    buffer = torch.empty(encode(batch), dtype=torch.uint8)
    encode(batch, buffer, key)
    return buffer.numpy().tobytes()


def _tasks(worker, stopping):
    """The tasks of the attached stream until it is closed, or until `stopping` is set (checked every 0.2 s while
    no task comes: the fed stream outlives a pass, and a worker that does not persist leaves it between tasks, so
    the daemon has no task of its to redo)."""
    while not stopping.is_set():
        try:
            task = worker.next_task(0.2)
        except _batchd.BatchdError as e:
            if e.code == "deadline exceeded":
                continue
            raise
        if task is None:
            return
        yield task


def serve_fed(worker, inbox, stream_id, fetch, key, wrap, reseed, send):
    """Makes the tasks of the attached stream (task j: the batch of the Feed's list j) until it is closed or the
    worker is stopped. reseed(base_seed) starts a new pass as DataLoader's new workers would, or only a new iterator
    with base_seed None (False if worker_init_fn raised: the trainer has been told, and this worker stops serving).
    send(message): to the trainer's pipe. A batch that outgrows its slot goes there (HELD), a Grown in its slot."""
    from .._loader.support import torch_tensor
    feed = inbox.feed
    for task in _tasks(worker, inbox.stopping):
        j = task.indices[0]
        start = time.perf_counter_ns()
        entry = feed.get(stream_id, j)
        if entry is None:
            continue  # the stream is closed: the daemon drops this task with it
        due = feed.reset_due(stream_id, j) if entry else None
        if due is not None and not reseed(due[0]):
            return
        worker.progress(task, j)
        slot = torch_tensor(worker.arrays(task)[0]).reshape(-1)
        allocator = placed(fetch, slot)
        if entry:  # (the sampler's element,)
            batch = make(fetch, entry[0], wrap, f"the batch of {describe(entry[0])}")
        else:
            batch = None  # a filler: the trainer drops it
        unplaced(fetch)
        made = time.perf_counter_ns() - start
        failed, used = None, 0
        try:
            used = encode(batch, slot, key, HEADER if isinstance(batch, FailedBatch) else allocator.offset)
        except TooLarge as e:  # sent whole over the pipe (before the task is done), a Grown in its place
            held = encoded(batch, key)
            send((HELD, stream_id, j, held))
            try:
                used = encode(Grown(len(held), torch.utils.data.get_worker_info().id), slot, key, HEADER)
            except Exception as e2:  # noqa: BLE001 - a slot under 64 KiB: the stream fails with the message
                failed = f"batch {j} collated to {e.needed} bytes, over its slot's {e.capacity}: {e2}"
        except Exception as e:  # noqa: BLE001 - a leaf pickle refuses: the batch's error, as DataLoader's
            failed = f"batch {j} cannot be sent to the trainer: {type(e).__name__}: {e}"
        del slot, batch
        try:
            if failed is not None:
                worker.fail(task, j, failed)
            else:
                total = time.perf_counter_ns() - start
                # The bytes written (the daemon checks them): tensors placed while collating, or the encoded batch.
                worker.done(task, total, made, total - made, [max(used, allocator.offset)])
        except _batchd.BatchdError:
            return  # the stream was closed while this task was made
