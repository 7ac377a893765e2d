"""DataLoader's own argument checks and object rules, in DataLoader's words (torch 2.x's DataLoader.__init__, its
multiprocessing_context setter, __setattr__ and check_worker_number_rationality), applied by batchd.Loader before
anything reaches the daemon: a script or test that relies on DataLoader refusing a combination gets the same
exception type and message from batchd.Loader.

check_arguments() runs first in Loader.__init__, in DataLoader's order; what batchd itself cannot serve is refused
after it (dataloader_args.refuse_unmappable), so a combination DataLoader refuses is reported as DataLoader reports
it. FROZEN are the attributes DataLoader refuses to reassign after construction (ValueError).
"""
import multiprocessing

import torch
from torch.utils.data import IterableDataset
from torch.utils.data.dataloader import DataLoader as _TorchDataLoader  # bound at import: tests may rebind the name

FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")


def check_arguments(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, drop_last, timeout,
                    multiprocessing_context, prefetch_factor, persistent_workers):
    """DataLoader's ValueError / TypeError for a combination it refuses, in its order and words; None otherwise."""
    if num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                         "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None.")
    if prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")
    check_context(multiprocessing_context, num_workers)
    if isinstance(dataset, IterableDataset):
        if shuffle not in {False, None}:
            raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                             f"shuffle={shuffle}")
        if sampler is not None:
            raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                             f"sampler={sampler}")
        if batch_sampler is not None:
            raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but got "
                             f"batch_sampler={batch_sampler}")
    else:
        shuffle = bool(shuffle)
    if sampler is not None and shuffle:
        raise ValueError("sampler option is mutually exclusive with shuffle")
    if batch_sampler is not None:
        if batch_size != 1 or shuffle or sampler is not None or drop_last:
            raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                             "drop_last")
    elif batch_size is None and drop_last:
        raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")


def check_context(context, num_workers):
    """The multiprocessing context object (or None) for `context` as DataLoader's setter checks it: a start method's
    name or a context object, only with num_workers > 0."""
    if context is None:
        return None
    if num_workers <= 0:
        raise ValueError(f"multiprocessing_context can only be used with multi-process loading (num_workers > 0), "
                         f"but got num_workers={num_workers}")
    if isinstance(context, str):
        valid = torch.multiprocessing.get_all_start_methods()
        if context not in valid:
            raise ValueError(f"multiprocessing_context option should specify a valid start method in {valid!r}, "
                             f"but got multiprocessing_context={context!r}")
        context = torch.multiprocessing.get_context(context)
    if not isinstance(context, multiprocessing.context.BaseContext):
        raise TypeError(f"multiprocessing_context option should be a valid context object or a string specifying "
                        f"the start method, but got multiprocessing_context={context}")
    return context


def check_worker_number(loader):
    """DataLoader's warning when num_workers exceeds the CPUs this process may use (torch's own check, run on the
    Loader: it reads .num_workers only)."""
    _TorchDataLoader.check_worker_number_rationality(loader)


def refuse_reassign(loader, attr):
    """ValueError, as DataLoader's __setattr__, for a FROZEN attribute set after construction."""
    if attr in FROZEN and loader.__dict__.get("_initialized", False):
        raise ValueError(f"{attr} attribute should not be set after {type(loader).__name__} is initialized")
