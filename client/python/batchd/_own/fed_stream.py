"""The stream of batchd.Loader's fed passes (fed_pass.py): one stream for the Loader's life whose task j is one whole
batch (FedStream), and the size of its slots (slot_bytes)."""
from .batch_codec import ALIGN

_STREAM_BATCHES = 1 << 40  # tasks of a fed stream: more than any Loader reads (the daemon never builds the order)
_MIN_SLOT = 64 << 10  # bytes: a FailedBatch's traceback fits


def slot_bytes(sizes, counts, most):
    """The slot size for batches of up to `most` samples, from the first round's good batches (`sizes` bytes, of
    `counts` samples each): their bytes per sample times `most`, plus 64 KiB, when two or more batches had the same
    bytes per sample (fixed shapes); twice the largest otherwise; at least _MIN_SLOT, 64-byte aligned."""
    per_sample = [size / c for size, c in zip(sizes, counts)]
    fixed = len(per_sample) > 1 and max(per_sample) <= min(per_sample) * 1.01
    need = max(per_sample) * most + _MIN_SLOT if fixed else 2 * max(per_sample) * most
    need = max(_MIN_SLOT, int(need))
    return -(-need // ALIGN) * ALIGN


def first_layout(loader, lists, made, batches, skip):
    """The slots' CollatedLayout from the first round: the sampler's `lists`, their batches' encoded bytes `made` and
    decoded `batches`, those of a class in `skip` (failed, ended) left out; None if every one is."""
    from .worker_collate import CollatedLayout
    count = len if loader._auto_collation else (lambda element: 1)
    good = [(len(m), count(e)) for m, e, b in zip(made, lists, batches) if not isinstance(b, skip)]
    if not good:
        return None
    most = max(count(e) for e in lists)
    if loader._auto_collation:
        most = max(most, getattr(loader.batch_sampler, "batch_size", None) or 0)
    return CollatedLayout(slot_bytes([g[0] for g in good], [g[1] for g in good], most))


def grown_slot(needed):
    """The slot size after a batch of `needed` bytes (encoded) outgrew its slot: twice that, 64-byte aligned."""
    return -(-2 * needed // ALIGN) * ALIGN


class FedStream:
    """The Loader's one stream for fed passes: task j is global batch j; `sent` lists have gone to the workers,
    `received` batches came back (fillers included); tasks below `floor` without a list are fillers.

    With in_order=True (DataLoader's default) the stream is routed (ExternalDataset.round_robin): the daemon gives task
    j to worker j % num_workers alone, and only that worker gets list j. A pass's batch k is then made by worker
    k % num_workers, as DataLoader's round robin does (which starts each pass at worker 0), because every pass starts
    at a task that is a multiple of num_workers: the first pass's stream at num_workers (its first round went over the
    pipes), the next passes at a floor rounded up to a multiple, a spill's new stream at the floor that keeps the
    task's residue."""

    def __init__(self, loader, layout, floor=0):
        self.layout, self._pool = layout, loader._own
        self.routed = bool(loader.in_order)
        self.source = loader._open_fed(_STREAM_BATCHES, layout)
        self.id = self.source.info["id"]
        self.depth = int(self.source.info.get("depth", 0) or 5)
        self.received = 0
        self.sent = self.floor = floor
        self.lists = {}  # j -> the sampler's element, sent and not yet received
        self.timed = None  # source.next under the Loader's timeout (FedPass._receive)
        self._pool.attach_fed(self.id, layout, floor, self.routed)

    def attach(self):
        """Workers started since (a new pass's) attach, and get the floor."""
        self._pool.attach_fed(self.id, self.layout, self.floor, self.routed)

    def send(self, elements, pool):
        # Every task below the lowest list not received came (in task order that is `received`; with completion
        # order a later one may come first): the workers drop the lists below it, and only those.
        pool.feed(self.id, self.sent, elements, min(self.lists, default=self.sent))
        self.lists.update(enumerate(elements, self.sent))
        self.sent += len(elements)

    def end_pass(self):
        """After a pass's last batch: every task the daemon may have claimed past it is a filler (the floor was
        raised when the sampler ran out), and the next pass's lists start above them."""
        self.raise_floor(self.received + self.depth)
        self.sent = self.floor

    def raise_floor(self, floor):
        floor = -(-floor // self._pool.size) * self._pool.size  # the next pass starts at worker 0 (see above)
        if floor > self.floor:
            self.floor = floor
            self._pool.feed_floor(self.id, floor)

    def close(self):
        self._pool.close_feed(self.id)
        self.source.close()
