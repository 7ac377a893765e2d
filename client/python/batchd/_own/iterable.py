"""batchd.Loader over your own IterableDataset (issue 40, item 4), the trainer's side: DataLoader's sampler objects
for it (an endless _InfiniteConstantSampler, batched by BatchSampler: the elements only say "one batch of
batch_size"), its len() and the warning DataLoader gives past that length. The passes are fed passes (fed_pass.py):
each worker iterates its own copy (worker_iterable.py), batch k of a pass comes from worker k % num_workers with
in_order=True (a worker whose iterator is exhausted skipped), and the pass ends when every worker's is."""
import math
import warnings

from torch.utils.data import BatchSampler, IterableDataset
from torch.utils.data.dataloader import _InfiniteConstantSampler


def is_iterable(dataset):
    return isinstance(dataset, IterableDataset)


def iterable_samplers(batch_size, drop_last):
    """(batch_size, sampler, batch_sampler, the sampler a pass iterates, auto_collation), as DataLoader.__init__
    makes them for an IterableDataset."""
    sampler = _InfiniteConstantSampler()
    batch_sampler = BatchSampler(sampler, batch_size, drop_last) if batch_size is not None else None
    return batch_size, sampler, batch_sampler, batch_sampler if batch_sampler is not None else sampler, \
        batch_sampler is not None


def iterable_len(loader):
    """len(DataLoader) of an IterableDataset: len(dataset) (TypeError without __len__) in batches, rounded down with
    drop_last, up otherwise; kept for the warning below (DataLoader's _IterableDataset_len_called)."""
    length = len(loader.dataset)
    loader._IterableDataset_len_called = length
    if loader.batch_size is not None:
        length = length // loader.batch_size if loader.drop_last else math.ceil(length / loader.batch_size)
    return length


def past_length_warning(loader, reported, yielded):
    """DataLoader's UserWarning when a pass of an IterableDataset yields more than the len(dataset) that len(loader)
    reported before the pass began (`reported`; None: len() was not called)."""
    if reported is None or yielded <= reported:
        return
    message = (f"Length of IterableDataset {loader.dataset} was reported to be {reported}(when accessing "
               f"len(dataloader)), but {yielded} samples have been fetched. ")
    if loader.num_workers > 0:
        message += ("For multiprocessing data-loading, this could be caused by not properly configuring the "
                    "IterableDataset replica at each worker. Please see "
                    "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset for examples.")
    warnings.warn(message)
