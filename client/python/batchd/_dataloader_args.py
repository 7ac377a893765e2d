"""torch.utils.data.DataLoader's arguments (torch 1.13's signature) as batchd.Loader takes them.

Each argument has one decided meaning (the table is docs/python.md's "DataLoader's arguments"):

  mapped    batch_size, shuffle, drop_last, sampler (DistributedSampler, RandomSampler, SequentialSampler),
            num_workers + prefetch_factor (-> the prefetch depth), timeout, pin_memory, pin_memory_device
  ignored   persistent_workers, multiprocessing_context: the daemon's workers are persistent and forked by the
            daemon, whatever these say (the data are the same)
  refused   collate_fn (other than default_collate), worker_init_fn, batch_sampler, generator, any other sampler:
            ignoring them would change the data; ValueError saying what to do instead

resolve() turns them into the stream's sampler fields; refusals and DataLoader's own argument errors raise
ValueError with DataLoader's wording where it has one.
"""
import warnings

import torch
from torch.utils.data import DistributedSampler, RandomSampler, SequentialSampler, default_collate

from . import _batchd

_REFUSED = {
    "collate_fn": "batchd collates in the daemon, straight into shared memory: give mixup/cutmix as "
                  "batch_transform= (op dicts or the references' RandomMixup/RandomCutmix), and post-process each "
                  "batch in your loop",
    "worker_init_fn": "the daemon's workers run no Python: seed with seed= (every sample's draws come from "
                      "(seed, epoch, index))",
    "batch_sampler": "batchd batches the sampler's order itself: give batch_size=, shuffle=/sampler= and drop_last=",
    "generator": "the daemon's sampler does not use torch's generator: give seed= (the permutation is fixed by "
                 "(seed, epoch), the same on every rank)",
}

# The references' RASampler and timm's RepeatAugSampler (repeated augmentation) by class name: not served yet.
_REPEATED_AUG = {"RASampler", "RepeatAugSampler"}

_pin_warned = False


def refuse_unmappable(collate_fn, worker_init_fn, batch_sampler, generator):
    """ValueError for the first refused argument that is set (collate_fn=default_collate is the default)."""
    given = {"collate_fn": None if collate_fn is default_collate else collate_fn, "worker_init_fn": worker_init_fn,
             "batch_sampler": batch_sampler, "generator": generator}
    for name, value in given.items():
        if value is not None:
            raise ValueError(f"batchd.Loader: {name}= is not supported: {_REFUSED[name]}")


def from_sampler(sampler, shuffle, drop_last, seed, rank, world_size):
    """The sampler fields of the stream: {"shuffle", "drop_last", "drop_last_batch", "seed", "rank", "world_size",
    "epoch_source"}.

    drop_last_batch is DataLoader's drop_last (the last, shorter batch); drop_last the uneven tail across ranks: a
    DistributedSampler's own drop_last, else DataLoader's too (batchd's implicit sharding drops both or neither).
    rank/world_size None mean "from torch.distributed when iteration starts". epoch_source is the DistributedSampler
    whose .epoch is read at each pass (scripts call set_epoch on their own sampler), else None."""
    out = {"shuffle": bool(shuffle) if shuffle is not None else False, "drop_last": bool(drop_last),
           "drop_last_batch": bool(drop_last), "seed": seed, "rank": rank, "world_size": world_size,
           "epoch_source": None}
    if sampler is None:
        return out
    if shuffle:  # DataLoader's own check and words: shuffle=False beside a sampler is accepted (the ImageNet example
        raise ValueError("sampler option is mutually exclusive with shuffle")  # passes shuffle=(sampler is None))
    name = type(sampler).__name__
    if name in _REPEATED_AUG:
        raise ValueError(f"batchd.Loader: sampler={name} (repeated augmentation) is not served yet; use "
                         "DistributedSampler, or torch.utils.data.DataLoader for this recipe")
    if type(sampler) is DistributedSampler:
        if rank is not None or world_size is not None:
            raise ValueError("batchd.Loader: give the ranks once: in the DistributedSampler or as rank=/world_size=")
        out.update(shuffle=sampler.shuffle, seed=sampler.seed, rank=sampler.rank, world_size=sampler.num_replicas,
                   drop_last=sampler.drop_last, epoch_source=sampler)
        return out
    # A sampler that is not a DistributedSampler reads the whole dataset on every rank, as in DataLoader: given
    # explicitly, it is not sharded by the process group (rank=/world_size= still shard it when given).
    if type(sampler) in (RandomSampler, SequentialSampler) and rank is None and world_size is None:
        out.update(rank=0, world_size=1)
    if type(sampler) is RandomSampler:
        if sampler.replacement or sampler._num_samples is not None or sampler.generator is not None:
            raise ValueError("batchd.Loader: RandomSampler with replacement, num_samples or a generator is not "
                             "served: the daemon draws a permutation per (seed, epoch); use shuffle=True, seed=")
        out["shuffle"] = True
        return out
    if type(sampler) is SequentialSampler:
        return out
    raise ValueError(f"batchd.Loader: sampler={name} is not supported: the daemon samples (DistributedSampler, "
                     "RandomSampler and SequentialSampler are mapped to its sampler); for another order, use "
                     "torch.utils.data.DataLoader")


def prefetch_depth(num_workers, prefetch_factor, depth):
    """The stream's depth (slots): depth= wins; else num_workers * prefetch_factor + 1 (the batches DataLoader keeps
    in flight, plus the one the loop body holds) when num_workers > 0; else None (the daemon's default + 1)."""
    if num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
    if prefetch_factor is not None and prefetch_factor < 1:
        raise ValueError(f"batchd.Loader: prefetch_factor must be at least 1, not {prefetch_factor}")
    if depth is not None:
        return depth
    if num_workers > 0:
        return num_workers * (prefetch_factor or 2) + 1
    return None


def pin_device(pin_memory_device):
    """The CUDA device whose page-locked memory pin_memory=True gives (pin_memory_device: "" = the current device,
    as DataLoader's), or None where batchd cannot pin: torch without CUDA, or batchd built without its CUDA path."""
    if not torch.cuda.is_available() or not _batchd.has_cuda:
        return None
    device = torch.device(pin_memory_device or "cuda")
    if device.type != "cuda":
        raise ValueError(f"batchd.Loader: pin_memory_device must name a CUDA device ('cuda', 'cuda:1'), not "
                         f"{pin_memory_device!r}")
    return device if device.index is not None else torch.device("cuda", torch.cuda.current_device())


def check_pin_memory(pin_memory, pin_memory_device=""):
    """pin_memory=True: batches are page-locked where batchd can pin (pin_device()); elsewhere warn once per
    process, as DataLoader warns when there is no accelerator, and go on unpinned."""
    global _pin_warned
    if not pin_memory or pin_device(pin_memory_device) is not None or _pin_warned:
        return
    _pin_warned = True
    why = ("CUDA is not available" if not torch.cuda.is_available() else _batchd.cuda_unavailable_reason)
    warnings.warn(f"batchd: pin_memory=True, but {why}: batches stay in (unpinned) shared memory",
                  RuntimeWarning, stacklevel=3)
