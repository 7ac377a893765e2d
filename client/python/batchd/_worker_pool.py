"""The trainer's side of its own Dataset's workers (docs/operations.md, "Your own Dataset"): num_workers processes
started under the trainer's uid (fork by default, as DataLoader; spawn or forkserver by multiprocessing_context),
each holding the dataset, told over a pipe which stream to attach to (_worker_main.py). They persist for the
Loader's life, from one stream (pass) to the next, as persistent_workers=True.

check() runs between batches (and while a batch is awaited): a worker that died (killed, crashed, or ended by its
client library when the daemon detached it past the watchdog's deadline) is replaced and the replacement attaches
to the current stream; the daemon has already given its task to another worker. A worker that cannot start (an
exception in worker_init_fn, a dataset that spawn cannot unpickle or import) fails the Loader with the reason.
"""
import multiprocessing
import os
import threading
import time
import warnings

from ._batchd import BatchdError
from ._worker_main import ATTACH_FAILED, ATTACHED, DETACHED, ERROR, LAYOUT, READY, worker_main

_START_TIMEOUT = 120.0  # seconds a worker may take to start (import torch under spawn, worker_init_fn)


class WorkerPool:
    def __init__(self, dataset, num_workers, context, worker_init_fn, base_seed, socket, connect):
        if isinstance(context, str) or context is None:
            context = multiprocessing.get_context(context or "fork")
        self._context, self._dataset, self._init = context, dataset, worker_init_fn
        self._count, self._base_seed, self._socket, self._connect = max(1, num_workers), base_seed, socket, connect
        self._workers = [None] * self._count  # (process, conn) per worker id
        self._stream_id, self._layout, self._fatal = None, None, None
        self.replaced = 0  # workers started again after one was lost

    @property
    def size(self):
        return self._count

    def _spawn(self, worker_id):
        parent_end, child_end = self._context.Pipe()
        # The process a worker follows (_worker_main._follow_parent): this one, or under forkserver the server
        # (None: its parent), which exits with this process; the server's main thread forks.
        forkserver = self._context.get_start_method() == "forkserver"
        process = self._context.Process(
            target=worker_main, daemon=True, name=f"batchd-worker-{worker_id}",
            args=(self._dataset, self._socket, worker_id, self._count, self._base_seed, self._init, child_end,
                  None if forkserver else os.getpid(),
                  forkserver or threading.current_thread() is threading.main_thread()))
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
                    raise BatchdError(f"batchd.Loader: worker {worker_id}: {message[1]}")
                if message is not None:
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

    def start(self):
        """Starts the workers and waits until each is ready (worker_init_fn done)."""
        for worker_id in range(self._count):
            self._spawn(worker_id)
        for worker_id in range(self._count):
            self._await(worker_id, (READY,), _START_TIMEOUT, "start")

    def layout(self):
        """The Layout of sample 0, made by worker 0 (the dataset's code never runs in the trainer's process)."""
        if self._layout is None:
            self._ensure_started()
            self._workers[0][1].send(("probe", 0))
            self._layout = self._await(0, (LAYOUT,), None, "make sample 0")[1]
        return self._layout

    def _ensure_started(self):
        if any(entry is None for entry in self._workers):  # first use, or after close()
            self._fatal = None
            self.start()

    def attach(self, stream_id, size):
        """Every worker attaches to `stream_id` (the stream this Loader just opened for `size` samples). A worker
        that died since the last check() is replaced by the next one, which attaches it to this stream."""
        self._ensure_started()
        self._stream_id, self._size = stream_id, size
        for worker_id in range(self._count):
            try:
                self._workers[worker_id][1].send(("attach", stream_id, self._layout, self._connect, size))
            except OSError:
                pass

    def check(self):
        """Replaces dead workers (attached to the current stream); raises a worker's fatal error."""
        if self._fatal is not None:
            raise BatchdError(self._fatal)
        for worker_id, entry in enumerate(self._workers):
            if entry is None:
                continue
            process, conn = entry
            try:
                while conn.poll():
                    message = conn.recv()
                    if message[0] == ATTACH_FAILED and message[1] != self._stream_id:
                        continue  # a stream closed before this worker got to it: it waits for the next
                    if message[0] in (ERROR, ATTACH_FAILED):
                        self._fatal = f"batchd.Loader: worker {worker_id}: {message[-1]}"
                        raise BatchdError(self._fatal)
                    assert message[0] in (ATTACHED, DETACHED, LAYOUT, READY), message
            except (EOFError, OSError):
                pass
            if process.is_alive():
                continue
            process.join(0)
            how = ("was ended by its client library (status 75: the daemon detached it, e.g. past its task's "
                   "deadline, or its connection to the daemon was lost)" if process.exitcode == 75
                   else f"exited (status {process.exitcode})")
            warnings.warn(f"batchd.Loader: worker {worker_id} (pid {process.pid}) {how}; its task is redone by "
                          f"another worker, and a replacement starts", RuntimeWarning)
            conn.close()
            self._spawn(worker_id)
            self.replaced += 1
            self._await(worker_id, (READY,), _START_TIMEOUT, "start again")
            if self._stream_id is not None:
                self._workers[worker_id][1].send(("attach", self._stream_id, self._layout, self._connect,
                                                  self._size))

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

    def __init__(self, source, pool, timeout):
        self._source, self._pool, self._timeout = source, pool, timeout or None
        self.info, self.tensors, self.close = source.info, source.tensors, source.close

    def next(self, timeout=None):
        timeout = timeout or self._timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self._pool.check()
            wait = self._POLL if deadline is None else max(0.001, min(self._POLL, deadline - time.monotonic()))
            try:
                return self._source.next(wait)
            except BatchdError as e:
                if e.code != "deadline exceeded" or (deadline is not None and time.monotonic() >= deadline):
                    raise
