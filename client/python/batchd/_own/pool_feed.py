"""The WorkerPool's part in a pass whose sampler runs in the trainer (fed_pass.py; the workers' side is
worker_feed.py): the first round of batches made over the pipes, the attachment to the fed stream, and the index
lists (each to the worker that makes its batch: every worker when any may) and the floor, kept until delivered so
that a replacement worker gets them too. A mixin of
WorkerPool (worker_pool.py); it uses its _workers, _count, _await(), _key and _ensure_started()."""
from .._batchd import BatchdError
from .._loader.support import timed_out
from .worker_feed import HELD, MADE


class PoolFeed:
    _feed_state = None  # [stream_id, {j: index list} not yet delivered, floor, routed]

    def make_first(self, lists, timeout=None, reset=None):
        """Batch b of `lists` made by worker b % size, as DataLoader's first round hands them out: their encoded
        bytes, in order. timeout (seconds, None = none): the Loader's, for each batch in turn; past it BatchdError
        code "deadline exceeded" in DataLoader's words. reset: (base seed or None, pass id), the pass's new start
        (feed_reset) to apply first."""
        self._ensure_started()
        self.check()  # a worker that died (in an earlier first round too) is replaced first
        self._round = getattr(self, "_round", 0) + 1  # a batch of an earlier round that timed out comes late: dropped
        for b, indices in enumerate(lists):
            self._send(b % self._count, ("make", (self._round, b), indices, self._key, reset))
        out = []
        for b in range(len(lists)):
            try:
                message = None
                while message is None or message[1] != (self._round, b):
                    message = self._await(b % self._count, (MADE,), timeout, f"make batch {b}")
                out.append(message[2])
            except BatchdError as e:
                if timeout is None or "within" not in str(e):
                    raise
                raise timed_out(timeout, e) from None
        return out

    def take_held(self, worker_id, stream_id, j, timeout=None):
        """The bytes of batch j of the fed stream `stream_id`, which outgrew its slot: worker `worker_id` sent them
        over its pipe (HELD) before it finished the task, so they are here or on their way."""
        while (stream_id, j) not in self.held:
            message = self._await(worker_id, (HELD,), timeout, f"send batch {j}, which outgrew its slot")
            self.held[(message[1], message[2])] = message[3]
        return self.held.pop((stream_id, j))

    def attach_fed(self, stream_id, layout, floor, routed):
        """Every worker attaches to the fed stream `stream_id`, whose slots hold `layout` (a CollatedLayout), tasks
        below `floor` without a list being fillers; `routed`: the daemon gives task j to worker j % size alone
        (ExternalDataset.round_robin), which alone gets its list."""
        self._ensure_started()
        layout.key = self._key
        self._layout, self._stream_id, self._size, self._on_error, self._exceptions = layout, stream_id, None, \
            "fail", {}
        self._feed_state = [stream_id, {}, floor, routed]
        for worker_id in range(self._count):
            self._send(worker_id, self._attach_command())
            self._resend_feed(worker_id)

    def feed(self, stream_id, first, lists, delivered):
        """Index lists of batches first, first + 1, ... of the fed stream, to the workers that make them."""
        window = self._feed_state[1]
        for j in [j for j in window if j < delivered]:
            del window[j]
        window.update(enumerate(lists, first))
        self._send_lists(range(self._count), stream_id, list(enumerate(lists, first)), delivered)

    def _send_lists(self, worker_ids, stream_id, entries, delivered):
        routed = self._feed_state[3]
        for worker_id in worker_ids:
            own = [e for e in entries if e[0] % self._count == worker_id] if routed else entries
            if own:
                self._send(worker_id, ("lists", stream_id, own, delivered))

    def feed_floor(self, stream_id, floor):
        """Tasks of the fed stream below `floor` without a list are fillers (made empty at once)."""
        self._feed_state[2] = floor
        for worker_id in range(self._count):
            self._send(worker_id, ("floor", stream_id, floor))

    def feed_reset(self, stream_id, first, base_seed, pass_id):
        """Pass `pass_id` starts at batch `first`: before making it, each worker starts an IterableDataset's iterator
        anew and, without persistent workers (base_seed not None), reseeds from `base_seed` and runs worker_init_fn
        again; once per pass (a replacement starts with that seed)."""
        if base_seed is not None:
            self._base_seed = base_seed
        for worker_id in range(self._count):
            self._send(worker_id, ("reset", stream_id, first, base_seed, pass_id))

    def close_feed(self, stream_id):
        """The trainer closed the fed stream: workers waiting for its lists make nothing more."""
        for worker_id in range(self._count):
            self._send(worker_id, ("closed", stream_id))
        for key in [key for key in self.held if key[0] == stream_id]:
            del self.held[key]
        if self._stream_id == stream_id:
            self._stream_id = None  # closed: a worker that could not attach to it in time is no failure

    def _resend_feed(self, worker_id):
        """A worker new to the fed stream gets the lists not yet delivered, and the floor."""
        if self._feed_state is None or self._feed_state[0] != self._stream_id:
            return
        stream_id, window, floor, _ = self._feed_state
        if window:
            self._send_lists([worker_id], stream_id, sorted(window.items()), min(window))
        if floor:
            self._send(worker_id, ("floor", stream_id, floor))

    def _send(self, worker_id, message):
        entry = self._workers[worker_id]
        if entry is None:
            return
        try:
            entry[1].send(message)
        except (OSError, ValueError):
            pass  # a dead worker: check() replaces it and resends
