"""Your own IterableDataset, in a worker (issue 40, item 4): the worker iterates its copy of the dataset as
DataLoader's worker does (torch's own _IterableDatasetFetcher: batch_size items per batch, the last one shorter
unless drop_last, the collate_fn or default_collate; one item and default_convert with batch_size=None), with
get_worker_info() giving its id, num_workers, seed and dataset.

Where DataLoader's worker sends _IterableDatasetStopIteration once its iterator is exhausted (and ignores the tasks
it gets after), this one makes an EndedBatch for each task it gets after: the trainer counts a worker ended at the
first, drops the others, and ends the pass when every worker has ended (fed_pass.py). A new pass starts a new
iterator (restart(): the trainer's "reset" message, with or without reseeding), as DataLoader's _ResumeIteration
or its new workers do.
"""
from torch.utils.data import default_convert
from torch.utils.data._utils.fetch import _IterableDatasetFetcher

from .slot_collate import SlotCollate


class EndedBatch:
    """What a task gets from a worker whose iterator is exhausted for this pass (see the module docstring)."""

    def __init__(self, worker):
        self.worker = worker


class IterableFetch:
    """fetch(index) -> the next batch of this worker's iterator (index: the trainer's element, batch_size Nones or
    None, as DataLoader's _InfiniteConstantSampler gives), or EndedBatch once it is exhausted. iter(dataset) is
    called at the pass's first fetch; an exception there (or in next()) is that batch's, as in DataLoader."""

    def __init__(self, dataset, collate_fn, auto_collation, drop_last, worker):
        if collate_fn is None:
            collate_fn = SlotCollate() if auto_collation else default_convert
        self.dataset, self.collate_fn, self.auto_collation = dataset, collate_fn, auto_collation
        self.drop_last, self.worker = drop_last, worker
        self._fetcher, self._ended = None, False

    def restart(self):
        """A new pass: the next fetch starts a new iterator."""
        self._fetcher, self._ended = None, False

    def fetch(self, index):
        if self._ended:
            return EndedBatch(self.worker)
        if self._fetcher is None:
            try:
                self._fetcher = _IterableDatasetFetcher(self.dataset, self.auto_collation, self.collate_fn,
                                                        self.drop_last)
            except Exception:
                self._ended = True  # as DataLoader's worker, whose fetcher never came: the pass ends after it
                raise
        try:
            return self._fetcher.fetch(index)
        except StopIteration:
            self._ended = True
            return EndedBatch(self.worker)
