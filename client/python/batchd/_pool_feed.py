"""The WorkerPool's part in a pass whose sampler runs in the trainer (_fed_pass.py; the workers' side is
_worker_feed.py): the first round of batches made over the pipes, the attachment to a fed stream, and the index
lists sent to every worker, kept until delivered so that a replacement worker gets them too. A mixin of WorkerPool
(_worker_pool.py); it uses its _workers, _count, _await(), _key, _connect and _ensure_started()."""
from ._worker_feed import MADE


class PoolFeed:
    _feed_state = None  # (stream_id, {j: index list} not yet delivered, end or None)

    def make_first(self, lists):
        """Batch b of `lists` made by worker b % size, as DataLoader's first round hands them out: their encoded
        bytes, in order."""
        self._ensure_started()
        for b, indices in enumerate(lists):
            self._workers[b % self._count][1].send(("make", b, indices, self._key))
        out = []
        for b in range(len(lists)):
            message = self._await(b % self._count, (MADE,), None, f"make batch {b}")
            out.append(message[2])
        return out

    def attach_fed(self, stream_id, layout):
        """Every worker attaches to the fed stream `stream_id`, whose slots hold `layout` (a CollatedLayout)."""
        self._ensure_started()
        layout.key = self._key
        self._layout, self._stream_id, self._size, self._on_error, self._exceptions = layout, stream_id, None, \
            "fail", {}
        self._feed_state = (stream_id, {}, None)
        for worker_id in range(self._count):
            self._send(worker_id, self._attach_command())

    def feed(self, stream_id, first, lists, delivered):
        """Index lists of batches first, first + 1, ... of the fed stream, to every worker."""
        _, window, end = self._feed_state
        for j in [j for j in window if j < delivered]:
            del window[j]
        window.update(enumerate(lists, first))
        for worker_id in range(self._count):
            self._send(worker_id, ("lists", stream_id, first, lists, delivered))

    def end_feed(self, stream_id, count):
        """The fed stream has `count` batches (0: it is closed)."""
        if self._feed_state is not None and self._feed_state[0] == stream_id:
            self._feed_state = (stream_id, self._feed_state[1], count)
        if count == 0 and self._stream_id == stream_id:
            self._stream_id = None  # closed: a worker that could not attach to it in time is no failure
        for worker_id in range(self._count):
            self._send(worker_id, ("end", stream_id, count))

    def _resend_feed(self, worker_id):
        """A replacement worker of the fed stream gets the lists not yet delivered (and the end)."""
        if self._feed_state is None or self._feed_state[0] != self._stream_id:
            return
        stream_id, window, end = self._feed_state
        if window:
            first = min(window)
            self._send(worker_id, ("lists", stream_id, first, [window[j] for j in range(first, max(window) + 1)
                                                               if j in window], first))
        if end is not None:
            self._send(worker_id, ("end", stream_id, end))

    def _send(self, worker_id, message):
        entry = self._workers[worker_id]
        if entry is None:
            return
        try:
            entry[1].send(message)
        except (OSError, ValueError):
            pass  # a dead worker: check() replaces it and resends
