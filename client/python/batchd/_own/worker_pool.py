"""The trainer's side of its own Dataset's workers (docs/operations.md, "Your own Dataset"): num_workers processes
started under the trainer's uid (fork by default, as DataLoader; spawn or forkserver by multiprocessing_context),
each holding the dataset, told over a pipe which stream to attach to (worker_main.py). They persist for the
Loader's life, from one stream (pass) to the next, as persistent_workers=True.

check() runs between batches (and while a batch is awaited): a worker that died (killed, crashed, or ended by its
client library when the daemon detached it past the watchdog's deadline) is replaced and the replacement attaches
to the current stream; the daemon has already given its task to another worker. A worker that cannot start (an
exception in worker_init_fn, a dataset that spawn cannot unpickle or import) fails the Loader with the reason.

layout() asks worker 0 how the slots hold batches (sample 0's fixed fields, else whole batches collated: see
worker_collate.py). A worker's exception (in the dataset, collate_fn or worker_init_fn) comes over its pipe as
torch's ExceptionWrapper and is raised in the trainer with its own type, as DataLoader raises it; a sample's,
when the daemon then fails the stream naming that sample (raise_sample_exception).
"""
import multiprocessing
import os
import re
import threading
import time
import warnings

from .._batchd import BatchdError
from .iterable import is_iterable
from .pool_feed import PoolFeed
from .worker_errors import lost_iteration, raise_worker_error, reraise
from .worker_feed import HELD, MADE
from .worker_main import (ATTACH_FAILED, ATTACHED, DETACHED, ERROR, EXCEPTION, LAYOUT, READY, UNBATCHABLE,
                           worker_main)

_START_TIMEOUT = 120.0  # seconds a worker may take to start (import torch under spawn, worker_init_fn)
_FAILED_SAMPLE = re.compile(r"\bsample (\d+) of dataset '")  # the daemon's words (daemon/streams/error_policy.cc)


class WorkerPool(PoolFeed):
    def __init__(self, dataset, num_workers, context, worker_init_fn, base_seed, socket, connect, collate_fn=None,
                 batch_size=1, drop_last=False, fed=False):
        if isinstance(context, str) or context is None:
            context = multiprocessing.get_context(context or "fork")
        self._context, self._dataset, self._init = context, dataset, worker_init_fn
        self._count, self._base_seed, self._socket, self._connect = max(1, num_workers), base_seed, socket, connect
        self._workers = [None] * self._count  # (process, conn) per worker id
        self._stream_id, self._layout, self._fatal = None, None, None
        self._on_error, self._exceptions = "fail", {}  # the current stream's: {sample index: ExceptionWrapper}
        self.replaced = 0  # workers started again after one was lost
        self.slot_growths, self.held = 0, {}  # fed streams: times slots grew; {(stream, j): a batch's bytes} (HELD)
        # collate_fn None: default_collate (default_convert with batch_size None), on fixed rows when sample 0 fits
        self._collate_fn, self._batch_size, self._drop_last = collate_fn, batch_size, drop_last
        self._key = os.urandom(32)  # signs collated batches: the trainer's workers have it, the daemon never does
        self.fed = fed  # the trainer runs the sampler (fed_pass.py): workers seeded as DataLoader's, at start
        self.iterable = is_iterable(dataset)  # each worker iterates it (worker_iterable.py)
        self.iterating = set()  # an IterableDataset's workers whose iterator the current pass is reading

    @property
    def size(self):
        return self._count

    @property
    def started(self):
        return all(entry is not None for entry in self._workers)

    def _spawn(self, worker_id):
        parent_end, child_end = self._context.Pipe()
        # The process a worker follows (worker_process.follow_parent): this one, or under forkserver the server
        # (None: its parent), which exits with this process; the server's main thread forks.
        forkserver = self._context.get_start_method() == "forkserver"
        process = self._context.Process(
            target=worker_main, daemon=True, name=f"batchd-worker-{worker_id}",
            args=(self._dataset, self._socket, worker_id, self._count, self._base_seed, self._init, child_end,
                  None if forkserver else os.getpid(),
                  forkserver or threading.current_thread() is threading.main_thread(), self._collate_fn,
                  self._batch_size is not None, self.fed, self.iterable, self._drop_last))
        process.start()
        child_end.close()
        self._workers[worker_id] = (process, parent_end)

    def _await(self, worker_id, kinds, timeout, what):
        """The next message of `kind` from worker `worker_id` (other messages are bookkept); BatchdError if it dies
        or reports an error first, or after `timeout` seconds (None: as long as it lives)."""
        process, conn = self._workers[worker_id]
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait = 0.2 if deadline is None else max(0.0, min(0.2, deadline - time.monotonic()))
            if conn.poll(wait):
                try:
                    message = conn.recv()
                except (EOFError, OSError):
                    message = None
                if message is not None and message[0] in kinds:
                    return message
                if message is not None and message[0] == ERROR:
                    raise_worker_error(worker_id, message)
                if message is not None:
                    self._bookkeep(message)
                    continue
            if not process.is_alive():
                process.join(0)
                raise BatchdError(self._death(worker_id, process.exitcode, what))
            if deadline is not None and time.monotonic() >= deadline:
                raise BatchdError(f"batchd.Loader: worker {worker_id} did not {what} within {timeout:.0f} s")

    def _death(self, worker_id, code, what):
        how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with status {code}"
        hint = ""
        if self._context.get_start_method() != "fork":
            hint = (f"; with multiprocessing_context={self._context.get_start_method()!r} the dataset is pickled to "
                    f"each worker and its class must be importable there (defined in a module, not in __main__ "
                    f"of an interactive session): the worker's stderr says why")
        return f"batchd.Loader: worker {worker_id} {how} before it could {what}{hint}"

    def start(self, base_seed=None):
        """Starts the workers (seeded from `base_seed` if given) and waits until each is ready (worker_init_fn
        done)."""
        if base_seed is not None:
            self._base_seed = base_seed
        for worker_id in range(self._count):
            self._spawn(worker_id)
        for worker_id in range(self._count):
            self._await(worker_id, (READY,), _START_TIMEOUT, "start")

    def layout(self):
        """How the stream's slots hold batches, found by worker 0 (the dataset's code never runs in the trainer's
        process): the Layout of sample 0's fixed fields (default collation, sample 0 fits one), else the
        CollatedLayout of the first (and last) batch collated as DataLoader collates them."""
        if self._layout is None:
            self._ensure_started()
            conn = self._workers[0][1]
            if self._collate_fn is None:
                conn.send(("probe", 0))
                message = self._await(0, (LAYOUT, UNBATCHABLE), None, "make sample 0")
                if message[0] == LAYOUT:
                    self._layout = message[1]
                    return self._layout
            conn.send(("probe_batches", self._probe_batches()))
            self._layout = self._await(0, (LAYOUT,), None, "collate the first batch")[1]
            self._layout.key = self._key  # to the workers in the attach command, over their pipes
        return self._layout

    def _probe_batches(self):
        """The index lists whose collated size sizes the slots: the first batch, and the last when it is shorter."""
        n, b = len(self._dataset), self._batch_size
        if b is None:
            return [[0]]
        lists = [list(range(min(b, n)))]
        if n % b and n > b and not self._drop_last:
            lists.append(list(range(n - n % b, n)))
        return lists

    def _ensure_started(self):
        if any(entry is None for entry in self._workers):  # first use, or after close()
            self._fatal = None
            self.start()

    def attach(self, stream_id, size, on_error):
        """Every worker attaches to `stream_id` (the stream this Loader just opened for `size` samples, its
        on_error). A worker that died since the last check() is replaced by the next one, which attaches it to this
        stream."""
        self._ensure_started()
        self._stream_id, self._size, self._on_error, self._exceptions = stream_id, size, on_error, {}
        for worker_id in range(self._count):
            try:
                self._workers[worker_id][1].send(self._attach_command())
            except OSError:
                pass

    def _attach_command(self):
        return ("attach", self._stream_id, self._layout, self._connect, self._size, self._on_error)

    def _bookkeep(self, message):
        """Keeps a sample's exception of the current stream, for raise_sample_exception(); a batch that outgrew
        its slot, for take_held()."""
        if message[0] == EXCEPTION and message[1] == self._stream_id:
            self._exceptions[message[2]] = message[3]
        elif message[0] == HELD and message[1] == self._stream_id:  # a closed stream's: nobody will take it
            self.held[(message[1], message[2])] = message[3]

    def raise_sample_exception(self, error):
        """If `error` (a BatchdError of the stream) is a sample's failure whose worker sent its exception, raises
        that exception (its own type, the worker's traceback in the message; `error` as its cause)."""
        match = _FAILED_SAMPLE.search(str(error))
        if match is None:
            return
        self._drain()
        wrapper = self._exceptions.get(int(match.group(1)))
        if wrapper is None:
            return
        try:
            reraise(wrapper)
        except Exception as e:  # noqa: BLE001 - re-raised with the daemon's error as its cause
            raise e from error

    def _drain(self):
        for worker_id, entry in enumerate(self._workers):
            if entry is None:
                continue
            try:
                while entry[1].poll():
                    self._check_message(worker_id, entry[1].recv())
            except (EOFError, OSError):
                pass

    def _check_message(self, worker_id, message):
        if message[0] == ATTACH_FAILED and (message[1] != self._stream_id or "has ended or failed" in message[-1]):
            return  # a stream closed, ended or failed before this worker got to it (the stream says why): it waits
        if message[0] in (ERROR, ATTACH_FAILED):
            self._fatal = (worker_id, message if message[0] == ERROR else (ERROR, message[-1]))
            raise_worker_error(*self._fatal)
        assert message[0] in (ATTACHED, DETACHED, LAYOUT, READY, EXCEPTION, HELD, MADE), message
        self._bookkeep(message)  # MADE: a first-round batch that came after its round timed out, dropped

    def check(self):
        """Replaces dead workers (attached to the current stream); raises a worker's fatal error. An IterableDataset's
        worker that died while its iterator was in use (in `iterating`) ends the pass: one error naming every such
        worker, their replacements left for the next pass's stream; one that died between passes or after its
        iterator ended is replaced quietly."""
        if self._fatal is not None:
            raise_worker_error(*self._fatal)
        self._drain()
        lost = []
        for worker_id, entry in enumerate(self._workers):
            if entry is None or entry[0].is_alive():
                continue
            process, conn = entry
            process.join(0)
            if self.iterable and worker_id in self.iterating:  # where its iterator stood is lost with it
                lost.append((worker_id, process))
            elif not self.iterable:
                how = ("was ended by its client library (status 75: the daemon detached it, e.g. past its task's "
                       "deadline, or its connection to the daemon was lost)" if process.exitcode == 75
                       else f"exited (status {process.exitcode})")
                warnings.warn(f"batchd.Loader: worker {worker_id} (pid {process.pid}) {how}; its task is redone by "
                              f"its replacement (by another worker with in_order=False)", RuntimeWarning)
            conn.close()
            self._spawn(worker_id)
            self.replaced += 1
            self._await(worker_id, (READY,), _START_TIMEOUT, "start again")
            if self._stream_id is not None and not lost:
                self._workers[worker_id][1].send(self._attach_command())
                self._resend_feed(worker_id)
        if lost:
            self.iterating, self._stream_id = set(), None  # the replacements wait for the next pass's stream
            raise lost_iteration(lost)

    def close(self):
        """Stops every worker (they also exit by themselves when the trainer goes)."""
        for entry in self._workers:
            if entry is None:
                continue
            process, conn = entry
            try:
                conn.send(("stop",))
            except (OSError, ValueError):
                pass
        deadline = time.monotonic() + 2.0  # one deadline for all: a worker still attached exits when detached
        for entry in self._workers:
            if entry is None:
                continue
            process, conn = entry
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.kill()
                process.join(1.0)
            conn.close()
        self._workers = [None] * self._count
        self._stream_id = None


class OwnSource:
    """A stream of your own Dataset: the stream's source (host, pinned or CUDA), whose waits for a batch check the
    workers every 0.5 s (check(): replacements, a fatal error) and keep the Loader's timeout (0: none) overall."""

    _POLL = 0.5
    _CHECK_EVERY = 0.05  # seconds: the workers are checked at most this often while batches flow

    def __init__(self, source, pool, timeout):
        self._source, self._pool, self._timeout = source, pool, timeout or None
        self.info, self.tensors, self.close = source.info, source.tensors, source.close
        self._checked = 0.0

    def next(self, timeout=None):
        timeout = timeout or self._timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            now = time.monotonic()
            if now - self._checked >= self._CHECK_EVERY:
                self._pool.check()
                self._checked = now
            wait = self._POLL if deadline is None else max(0.001, min(self._POLL, deadline - time.monotonic()))
            try:
                return self._source.next(wait)
            except BatchdError as e:
                if e.code != "deadline exceeded":
                    self._pool.raise_sample_exception(e)
                    raise
                if deadline is not None and time.monotonic() >= deadline:
                    raise
