"""The worker side of a pass whose sampler runs in the trainer (issue 40, items 3 and 6; the trainer's side is
_fed_pass.py): as DataLoader's main process does, the trainer iterates the sampler / batch sampler and sends the
index lists to the workers; a worker makes the batches it is given, collates them (_worker_collate.fetcher) and
writes them into the stream's slots (_batch_codec.encode), DataLoader's per-worker seeding in force.

Messages on the worker's pipe (besides _worker_main's commands):
  ("lists", stream_id, first, [index lists], delivered)  lists of the stream's batches first, first + 1, ...;
                                                         those before `delivered` are in the trainer: dropped
  ("end", stream_id, n)                                  the stream has n batches (0: it is closed): a task past
                                                         them makes an empty batch, or none once closed
  ("make", b, indices)                                   make batch b now and send it back over the pipe:
                                                         (MADE, b, its encoded bytes), the first round of a pass

The Inbox reads the pipe in a thread, so the trainer never blocks on a worker busy with a batch: the lists go to
the Feed at once, every other command waits for the main loop (get()).

A batch whose dataset or collate_fn raises is written as a FailedBatch (torch's ExceptionWrapper, pickled): the
trainer raises it from that batch's next() and goes on with the next batch, as DataLoader does. Only when even that
does not fit the slot does the task fail the stream.
"""
import queue
import threading
import time

import numpy as np
import torch

from . import _batchd
from ._batch_codec import TooLarge, encode
from ._worker_collate import tasks

MADE = "made"  # (MADE, b, bytes): batch b of the first round, encoded under the Loader's key


class FailedBatch:
    """A batch whose making raised: `wrapped` is _worker_main._wrapped's (the ExceptionWrapper pickled, its text)."""

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

    def __init__(self):
        self._cond = threading.Condition()
        self._stream, self._lists, self._end = None, {}, None

    def _switch(self, stream_id):
        if stream_id != self._stream:
            self._stream, self._lists, self._end = stream_id, {}, None

    def add(self, stream_id, first, lists, delivered):
        with self._cond:
            self._switch(stream_id)
            for j in [j for j in self._lists if j < delivered]:
                del self._lists[j]
            self._lists.update(enumerate(lists, first))
            self._cond.notify_all()

    def end(self, stream_id, count):
        with self._cond:
            self._switch(stream_id)
            self._end = count if self._end is None else min(self._end, count)
            self._cond.notify_all()

    def get(self, stream_id, j):
        """(the sampler's element for batch j of `stream_id`,); () past the stream's end; None once it is closed
        or another stream's lists came (nothing to make)."""
        with self._cond:
            while True:
                if self._stream == stream_id:
                    if j in self._lists:
                        return (self._lists[j],)
                    if self._end == 0:
                        return None
                    if self._end is not None and j >= self._end:
                        return ()
                elif self._stream is not None and self._stream > stream_id:
                    return None
                self._cond.wait(1.0)


class Inbox:
    """The worker's pipe, read by a thread (see the module docstring)."""

    def __init__(self, conn):
        self.feed = Feed()
        self._queue = queue.Queue()
        threading.Thread(target=self._read, args=(conn,), name="batchd-inbox", daemon=True).start()

    def _read(self, conn):
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                self._queue.put(("eof",))
                return
            if message[0] == "lists":
                self.feed.add(*message[1:])
            elif message[0] == "end":
                self.feed.end(*message[1:])
            else:
                self._queue.put(message)

    def get(self):
        return self._queue.get()

    def pending(self):
        return not self._queue.empty()


def describe(index):
    """A batch's indices (or its one index, without auto-collation) for a message: at most four of them."""
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


def serve_fed(worker, feed, stream_id, fetch, key, wrap):
    """Makes the tasks of the attached stream (task j: the batch of the Feed's list j) until it is closed."""
    from ._support import torch_tensor
    for task in tasks(worker):
        j = task.indices[0]
        start = time.perf_counter_ns()
        entry = feed.get(stream_id, j)
        if entry is None:
            continue  # the stream is closed: the daemon drops this task with it
        worker.progress(task, j)
        if entry:  # (the sampler's element,)
            batch = make(fetch, entry[0], wrap, f"the batch of {describe(entry[0])}")
        else:
            batch = None  # past the sampler's end: the trainer reads no further
        made = time.perf_counter_ns() - start
        failed = None
        slot = torch_tensor(worker.arrays(task)[0]).reshape(-1)
        try:
            encode(batch, slot, key)
        except TooLarge as e:
            failed = (f"batch {j} collated to {e.needed} bytes, over its slot's {e.capacity} (learned from the "
                      f"pass's first batches: twice their bytes per sample); batchd's slots do not grow yet: make "
                      f"the first batches representative, or use torch.utils.data.DataLoader for this dataset")
        except Exception as e:  # noqa: BLE001 - a leaf pickle refuses: the batch's error, as DataLoader's
            failed = f"batch {j} cannot be sent to the trainer: {type(e).__name__}: {e}"
        del slot, batch
        try:
            if failed is not None:
                worker.fail(task, j, failed)
            else:
                total = time.perf_counter_ns() - start
                worker.done(task, total, made, total - made)
        except _batchd.BatchdError:
            return  # the stream was closed while this task was made
