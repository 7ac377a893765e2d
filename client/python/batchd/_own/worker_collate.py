"""A worker of your own Dataset that collates whole batches itself (issue 40, item 1): what DataLoader's workers do
(torch's own _MapDatasetFetcher: __getitems__ where the dataset has it, else __getitem__ per index, then the
collate_fn: the user's or default_collate; with batch_size=None one sample and default_convert), the batch then
written into the stream's slot by batch_codec.encode (tensor bytes at aligned offsets, the structure pickled).

Used when a collate_fn is given, or when sample 0 does not fit a fixed layout (a str, a nested container): the
stream is then opened with whole_batches (one task per batch) and one uint8 field whose rows are the slot's bytes.
The slot's size is learned before the stream opens, from the first batch (and the last, shorter one) collated in a
worker: twice the largest bytes per sample of those. A batch that does not fit is a per-batch error naming both
sizes (slots do not grow yet).

Seeding: random, numpy and torch are seeded per batch from (seed, epoch, the batch's first index), as the
__getitems__ path of the fixed layout is.
"""
import time

from torch.utils.data import default_convert
from torch.utils.data._utils.fetch import _MapDatasetFetcher

from .. import _batchd
from .batch_codec import ALIGN, TooLarge, encode
from .dataset import sample_seed, seed_all
from .slot_collate import SlotAllocator, SlotCollate

FIELD = "batch"  # the stream's one field: uint8 [K] per sample, the rows together the slot's bytes


class CollatedLayout:
    """The stream layout of collated batches: K bytes per sample (a batch of B samples has B * K bytes)."""

    kind = "collated"

    def __init__(self, bytes_per_sample):
        self.bytes_per_sample = bytes_per_sample
        self.key = b""  # the Loader's key (WorkerPool): the workers sign each batch's skeleton, the trainer checks it

    def external_options(self):
        return {"fields": [(FIELD, "uint8", [self.bytes_per_sample])], "whole_batches": True}

    def collate(self, tensors):
        from .batch_codec import decode
        return decode(tensors[FIELD].reshape(-1), self.key)

    convert = collate  # batch_size=None: the one sample's bytes, decoded the same way


def fetcher(dataset, collate_fn, auto_collation):
    """torch's own fetcher of a map-style dataset, as DataLoader's worker makes it; default_collate is SlotCollate's
    (it stacks into the slot while a task's allocator is set: placed())."""
    if collate_fn is None:
        collate_fn = SlotCollate() if auto_collation else default_convert
    return _MapDatasetFetcher(dataset, auto_collation, collate_fn, False)


def placed(fetch, slot):
    """Lets default_collate (SlotCollate) stack the next batch straight into `slot`; the allocator, whose .offset
    encode() takes as `placed` (None-safe: a user's collate_fn gets none)."""
    allocator = SlotAllocator(slot)
    if isinstance(fetch.collate_fn, SlotCollate):
        fetch.collate_fn.allocator = allocator
    return allocator


def unplaced(fetch):
    if isinstance(fetch.collate_fn, SlotCollate):
        fetch.collate_fn.allocator = None


def probe_batches(fetch, index_lists, auto_collation):
    """The bytes per sample a slot needs: twice the largest encoded size per sample over `index_lists` (the first
    batch, the last one), aligned; or raises the dataset's / collate_fn's exception."""
    need = ALIGN
    for indices in index_lists:
        batch = fetch.fetch(indices if auto_collation else indices[0])
        need = max(need, -(-2 * encode(batch) // len(indices)))
    return -(-need // ALIGN) * ALIGN


def _culprit(worker, task, dataset, indices):
    """The first index whose __getitem__ raises (the collate_fn's failure otherwise: None); each on the progress
    page while it runs, so a crash or hang here blames that sample."""
    for index in indices:
        worker.progress(task, index)
        try:
            dataset[index]
        except Exception:  # noqa: BLE001
            return index
    return None


def tasks(worker):
    """The tasks of the attached stream, until it is closed (next_task() is None)."""
    while True:
        task = worker.next_task()
        if task is None:
            return
        yield task


def serve_collated(worker, fetch, auto_collation, report, last_line, key):
    """Makes the tasks (whole batches) of the attached stream until it is closed; each batch's skeleton is signed
    with `key`."""
    from .._loader.support import torch_tensor
    seed = worker.seed
    for task in tasks(worker):
        start = time.perf_counter_ns()
        indices, copies = list(task.indices), task.copies
        seed_all(sample_seed(seed, task.epoch, indices[0], copies[0] if copies else 0))
        worker.progress(task, indices[0])
        failed, batch, used = None, None, 0
        slot = torch_tensor(worker.arrays(task)[0]).reshape(-1)
        allocator = placed(fetch, slot)
        try:
            batch = fetch.fetch(indices if auto_collation else indices[0])
        except Exception as e:
            what = "collate_fn" if auto_collation else "the sample"
            culprit = _culprit(worker, task, fetch.dataset, indices)  # the original exception is handled again after
            where = (f"in {type(fetch.dataset).__name__}.__getitem__({culprit})" if culprit is not None
                     else f"in {what} of the batch of samples {indices[0]}..{indices[-1]}")
            failed = (indices[0] if culprit is None else culprit, f"{last_line(e)} ({where})")
            report(failed[0], f"the batch of samples {indices[0]}..{indices[-1]}, {where[3:]}")
        unplaced(fetch)
        in_dataset = time.perf_counter_ns() - start
        if failed is None:
            try:
                used = encode(batch, slot, key, allocator.offset)
            except TooLarge as e:
                failed = (indices[0], f"the batch of samples {indices[0]}..{indices[-1]} collated to {e.needed} bytes, "
                                      f"over its slot's {e.capacity} (learned from the first batch: twice its bytes "
                                      f"per sample); batchd's slots do not grow yet: make the first batch "
                                      f"representative (e.g. sort so a long sample comes first) or use "
                                      f"torch.utils.data.DataLoader for this dataset")
            except Exception as e:  # noqa: BLE001 - a leaf pickle refuses: the batch's error, as DataLoader's
                failed = (indices[0], f"the collated batch cannot be sent to the trainer: {last_line(e)}")
        del slot, batch
        try:
            if failed is not None:
                worker.fail(task, failed[0], failed[1])
            else:
                total = time.perf_counter_ns() - start
                worker.done(task, total, in_dataset, total - in_dataset, [max(used, allocator.offset)])  # bytes written
        except _batchd.BatchdError:
            return  # the stream was closed while this task was made: the daemon has dropped it


def is_collated(layout):
    return getattr(layout, "kind", None) == "collated"
