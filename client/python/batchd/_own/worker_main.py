"""The body of one worker process of a trainer's own Dataset (started by worker_pool.WorkerPool, under the trainer's
uid): it holds the dataset object as DataLoader's workers do, takes commands from the trainer over a pipe, read by
a thread (worker_feed.Inbox: "probe" the layout of a sample, "make" a batch of a fed pass's first round, "attach"
to a stream; the index lists of a fed stream), and while attached makes the samples of its tasks straight into the
stream's slots through _batchd.AttachedWorker (one copy per field, no pickling). A fed pass's worker (the trainer
runs the sampler: fed_pass.py) is seeded once at start as DataLoader's, and makes whole batches (worker_feed.py).

Per sample: seed random/numpy/torch from (stream seed, epoch, index, copy) (dataset.sample_seed), name the
sample on the progress page, call dataset[index] (or dataset.__getitems__(indices) once per task when the dataset
defines it, seeded from the task's first sample), check it against the layout, copy its fields into the rows. An
exception or a sample that does not fit is a per-sample error with the traceback's last line and the index (the
stream's on_error decides). The process exits when the trainer goes (follow_parent; while attached the client
library watches the parent too) or when the daemon detaches it past a deadline (_batchd's exit status 75).
"""
import os
import pickle
import signal
import time
import traceback

import numpy as np
import torch
from torch._utils import ExceptionWrapper

from .. import _batchd
from .dataset import check_field, sample_seed, seed_all
from .worker_collate import CollatedLayout, fetcher, is_collated, probe_batches, serve_collated, tasks
from .worker_feed import MADE, Inbox, describe, encoded, make, seed_as_dataloader, serve_fed
from .worker_iterable import IterableFetch
from .worker_process import follow_parent, set_worker_info

READY, ERROR, LAYOUT, ATTACHED, DETACHED = "ready", "error", "layout", "attached", "detached"
ATTACH_FAILED = "attach_failed"  # (ATTACH_FAILED, stream_id, message): fatal only for the trainer's current stream
EXCEPTION = "exception"  # (EXCEPTION, stream_id, index, wrapper): sent before the sample's failure reaches the daemon
UNBATCHABLE = "unbatchable"  # (UNBATCHABLE, why): sample 0 fits no fixed layout; the trainer takes the collated path


def _last_line(e):
    return traceback.format_exception_only(type(e), e)[-1].strip()


def _wrapped(worker_id, what):
    """The exception being handled, as DataLoader's workers send theirs (torch._utils.ExceptionWrapper: its type
    and the whole traceback's text; reraise() raises the same type, "Caught X in batchd.Loader worker process N
    (what).\nOriginal Traceback ..."). Its type must reach the trainer by pickle: a class that cannot (defined
    inside a function) arrives as RuntimeError with the same text. Returned as (the wrapper pickled, its text)."""
    wrapper = ExceptionWrapper(where=f"in batchd.Loader worker process {worker_id} ({what})")
    try:
        pickle.dumps(wrapper.exc_type)
    except Exception:  # noqa: BLE001
        wrapper.where += f"; its class, {wrapper.exc_type.__name__}, cannot be pickled to the trainer"
        wrapper.exc_type = RuntimeError
    # Pickled here, so that a class the trainer cannot import costs the exception's type, not the message
    # (worker_pool.reraise).
    return pickle.dumps(wrapper), f"Caught {wrapper.exc_type.__name__} {wrapper.where}.\nOriginal {wrapper.exc_msg}"


class _Writer:
    """Writes samples into one task's rows: fields as torch views of the rows (bfloat16 viewed from its bits)."""

    def __init__(self, worker, task, layout):
        from .._loader.support import torch_tensor
        self.rows = [torch_tensor(a) for a in worker.arrays(task)]
        self.layout = layout

    def write(self, position, index, sample):
        """None when written, else the per-sample error message."""
        try:
            values = self.layout.values(sample)
        except TypeError as e:
            return f"sample {index}: {e}"
        for field, value, rows in zip(self.layout.fields, values, self.rows):
            problem = check_field(field, value, index)
            if problem is not None:
                return problem
            try:  # by the value's own kind: a later sample may give an ndarray where sample 0 gave a tensor
                if isinstance(value, torch.Tensor):
                    rows[position].copy_(value)
                elif isinstance(value, (np.ndarray, np.generic)):
                    rows[position].copy_(torch.as_tensor(np.asarray(value)))
                else:
                    rows[position].fill_(value)
            except Exception as e:  # noqa: BLE001 (a per-sample error, never a dead worker)
                return f"sample {index}: field {field[0]!r} could not be written: {_last_line(e)}"
        return None


def _serve(worker, dataset, layout, use_getitems, report):
    """Makes the tasks of the attached stream until it is closed (next_task() is None). report(index, what), called
    while the exception is handled, sends it to the trainer before the sample's failure goes to the daemon (or does
    nothing)."""
    seed = worker.seed
    for task in tasks(worker):
        start = time.perf_counter_ns()
        in_dataset = in_collate = 0
        writer = _Writer(worker, task, layout)
        indices, copies = task.indices, task.copies
        positions = range(task.made, len(indices))
        failed = None  # (index, message)
        samples = None
        # A task redone after a death (attempt > 0) goes sample by sample: a crash or hang inside __getitems__ would
        # otherwise be blamed on the task's first sample.
        if use_getitems and len(positions) > 1 and task.attempt == 0:
            first = indices[task.made]
            seed_all(sample_seed(seed, task.epoch, first, copies[task.made] if copies else 0))
            worker.progress(task, first)
            try:
                t0 = time.perf_counter_ns()
                samples = dataset.__getitems__([indices[p] for p in positions])
                in_dataset += time.perf_counter_ns() - t0
                if len(samples) != len(positions):
                    raise TypeError(f"__getitems__ returned {len(samples)} samples for {len(positions)} indices")
            except Exception:  # find the culprit sample by sample, as __getitem__ would have
                samples = None
        for k, p in enumerate(positions):
            index = indices[p]
            if samples is not None:
                sample = samples[k]
            else:
                seed_all(sample_seed(seed, task.epoch, index, copies[p] if copies else 0))
                worker.progress(task, index)
                try:
                    t0 = time.perf_counter_ns()
                    sample = dataset[index]
                    in_dataset += time.perf_counter_ns() - t0
                except Exception as e:
                    where = f"in {type(dataset).__name__}.__getitem__({index})"
                    report(index, f"sample {index}, {where[3:]}")
                    failed = (index, f"{_last_line(e)} ({where})")
                    break
            t0 = time.perf_counter_ns()
            problem = writer.write(p, index, sample)
            in_collate += time.perf_counter_ns() - t0
            if problem is not None:
                failed = (index, problem)
                break
        del writer
        try:
            if failed is not None:
                worker.fail(task, failed[0], failed[1])
            else:
                worker.done(task, time.perf_counter_ns() - start, in_dataset, in_collate)
        except _batchd.BatchdError:
            return  # the stream was closed while this task was made: the daemon has dropped it


def _probe(conn, dataset, index, base_seed, worker_id):
    """Sends the trainer the Layout of sample `index`, or the reason there is none: an exception in __getitem__, a
    sample that cannot be batched, or a layout that cannot be pickled back (a namedtuple class that is not
    importable by name)."""
    from .dataset import layout_of
    where = f"{type(dataset).__name__}.__getitem__({index}), the sample whose layout the stream takes"
    try:
        seed_all(sample_seed(base_seed, 0, index))
        sample = dataset[index]
    except Exception as e:  # the dataset's own exception: raised in the trainer with its type, as DataLoader does
        conn.send((ERROR, f"{_last_line(e)} (in {where})", _wrapped(worker_id, where)))
        return
    try:
        layout = layout_of(sample)
    except Exception as e:  # not fixed-shape fields: the trainer collates it as DataLoader does (worker_collate.py)
        conn.send((UNBATCHABLE, f"{_last_line(e)} (in {where})"))
        return
    try:
        conn.send((LAYOUT, layout))
    except Exception as e:  # pickling fails before anything is written to the pipe
        conn.send((ERROR, f"the layout of sample {index} ({layout.sample_type.__qualname__}) cannot be sent to the "
                          f"trainer: {_last_line(e)}; a namedtuple sample's class must be picklable: define it at "
                          f"the top level of a module (DataLoader's workers pickle their batches too)"))


def _reseed(conn, dataset, worker_id, num_workers, worker_init_fn, base_seed, fetch):
    """A new pass: an IterableDataset's iterator starts anew (DataLoader's _ResumeIteration); without persistent
    workers (base_seed not None) seeded and worker_init_fn run again, as DataLoader's new workers (the process, and
    so the dataset's state, persists). False, the trainer told, if worker_init_fn raised."""
    if isinstance(fetch, IterableFetch):
        fetch.restart()
    if base_seed is None:
        return True
    set_worker_info(worker_id, num_workers, seed_as_dataloader(base_seed, worker_id), dataset)
    try:
        if worker_init_fn is not None:
            worker_init_fn(worker_id)
        return True
    except Exception as e:
        conn.send((ERROR, f"worker_init_fn({worker_id}) raised {_last_line(e)}",
                   _wrapped(worker_id, f"worker_init_fn({worker_id})")))
        return False


def worker_main(dataset, socket, worker_id, num_workers, base_seed, worker_init_fn, conn, parent_pid,
                forked_by_main_thread, collate_fn=None, auto_collation=True, fed=False, iterable=False,
                drop_last=False):
    """The worker process: see the module docstring. `conn` is its end of the trainer's pipe. parent_pid: the
    trainer's pid, or None under forkserver (the parent is then the server, which exits with the trainer). fed: the
    trainer runs the sampler (worker_feed.py): seeded once here as DataLoader seeds its workers, not per sample.
    iterable: an IterableDataset, iterated here (worker_iterable.py; fed, drop_last DataLoader's)."""
    if parent_pid is None:
        parent_pid = os.getppid()
    elif os.getppid() != parent_pid:
        return  # the trainer is gone already
    follow_parent(parent_pid, forked_by_main_thread)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the trainer's to handle; a worker dying on it would be
    # blamed on its sample
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a handler forked from the trainer (Lightning logs SIGTERM and
    # goes on) would keep the worker alive when the trainer's exit terminates its children: it would wait forever
    torch.set_num_threads(1)  # as DataLoader's workers
    seed = seed_as_dataloader(base_seed, worker_id) if fed else base_seed + worker_id
    set_worker_info(worker_id, num_workers, seed, dataset)
    use_getitems = callable(getattr(dataset, "__getitems__", None))
    fetch = IterableFetch(dataset, collate_fn, auto_collation, drop_last, worker_id) if iterable else \
        fetcher(dataset, collate_fn, auto_collation)  # the collated path's (worker_collate.py)
    new_pass = lambda base: _reseed(conn, dataset, worker_id, num_workers, worker_init_fn, base, fetch)  # noqa: E731
    try:
        if worker_init_fn is not None:
            worker_init_fn(worker_id)
    except Exception as e:
        conn.send((ERROR, f"worker_init_fn({worker_id}) raised {_last_line(e)}",
                   _wrapped(worker_id, f"worker_init_fn({worker_id})")))
        return
    conn.send((READY, os.getpid()))
    inbox = Inbox(conn)
    layout = None
    while True:
        command = inbox.get()
        while command[0] == "attach" and inbox.pending():  # only the newest stream matters: skip closed ones
            command = inbox.get()
        if command[0] in ("stop", "eof"):
            return  # asked to, or the trainer is gone
        if command[0] == "make":  # (make, b, indices, key, reset): a fed pass's first round, back over the pipe
            what = f"the batch of {describe(command[2])}"
            if command[4] is not None and inbox.feed.applied != command[4][1]:
                inbox.feed.applied = command[4][1]
                if not new_pass(command[4][0]):
                    continue
            batch = make(fetch, command[2], lambda w: _wrapped(worker_id, w), what)
            try:
                conn.send((MADE, command[1], encoded(batch, command[3])))
            except Exception as e:  # noqa: BLE001 - a leaf pickle refuses
                conn.send((ERROR, f"batch {command[1]} cannot be sent to the trainer: {_last_line(e)}",
                           _wrapped(worker_id, f"sending {what}")))
            del batch
            continue
        if command[0] == "probe":  # the layout of sample command[1]
            _probe(conn, dataset, command[1], base_seed, worker_id)
        elif command[0] == "probe_batches":  # the collated layout from the batches of index lists command[1]
            try:
                seed_all(sample_seed(base_seed, 0, command[1][0][0]))
                conn.send((LAYOUT, CollatedLayout(probe_batches(fetch, command[1], auto_collation))))
            except Exception as e:
                where = f"the batch of samples {command[1][0][:3]}..., whose size the stream's slots take"
                conn.send((ERROR, f"{_last_line(e)} (in {where})", _wrapped(worker_id, where)))
        elif command[0] == "attach":  # (attach, stream_id, layout, socket options, len(dataset), on_error)
            layout = command[2]
            try:
                size = len(dataset) if command[4] is not None else None  # None: a fed pass, any length
            except Exception as e:
                size = f"an error ({_last_line(e)})"
            if size != command[4]:
                conn.send((ERROR, f"len({type(dataset).__name__}) is {size} in worker {worker_id}, but the stream "
                                  f"was opened for {command[4]} samples: a Dataset's length must not change "
                                  f"while a Loader reads it"))
                continue
            try:
                worker = _batchd.AttachedWorker(socket, command[1], parent_pid=parent_pid, worker=worker_id,
                                                **command[3])
            except _batchd.BatchdError as e:  # fatal for the trainer only if that stream is still its current one
                conn.send((ATTACH_FAILED, command[1], f"worker {worker_id} cannot attach to stream {command[1]}: {e}"))
                continue
            conn.send((ATTACHED, worker.worker))
            stream_id = command[1]
            # Only when a sample's error fails the stream: under on_error="skip" the trainer raises none, and
            # unread reports would fill the pipe.
            report = ((lambda index, what: conn.send((EXCEPTION, stream_id, index, _wrapped(worker_id, what))))
                      if command[5] == "fail" else (lambda index, what: None))
            if command[4] is None:
                serve_fed(worker, inbox, stream_id, fetch, layout.key, lambda what: _wrapped(worker_id, what),
                          new_pass, conn.send)
            elif is_collated(layout):
                serve_collated(worker, fetch, auto_collation, report, _last_line, layout.key)
            else:
                _serve(worker, dataset, layout, use_getitems, report)
            del worker
            conn.send((DETACHED, command[1]))
