"""torch.utils.data.DataLoader's arguments (torch 2.x's signature, in_order and prefetch_factor=None included) as
batchd.Loader takes them.

Each argument has one decided meaning (the table is docs/python.md's "DataLoader's arguments"):

  mapped    batch_size, shuffle, drop_last, sampler (DistributedSampler, RandomSampler, SequentialSampler, the
            references' RASampler and timm's RepeatAugSampler), num_workers + prefetch_factor (-> the prefetch
            depth), timeout, pin_memory, pin_memory_device
  ignored   persistent_workers (workers persist); multiprocessing_context for the daemon's datasets (forked by
            the daemon, whatever it says; the data are the same); in_order (batches always arrive in the sampler's
            order: what in_order=True promises, and one of the orders in_order=False allows)
  own       for your own Dataset (_own/dataset.py): num_workers processes, multiprocessing_context, worker_init_fn,
            collate_fn (batches of any structure: _own/worker_collate.py); batch_sampler, generator and any other
            sampler: run in the trainer, as DataLoader's main process runs them (_own/fed_pass.py)
  refused   collate_fn (other than default_collate), worker_init_fn, batch_sampler, generator and any other
            sampler for the daemon's datasets: ignoring them would change the data; ValueError saying what to do

resolve() turns them into the stream's sampler fields; refusals and DataLoader's own argument errors raise
ValueError with DataLoader's wording where it has one.
"""
import inspect
import warnings

import torch
from torch.utils.data import DistributedSampler, RandomSampler, SequentialSampler, default_collate
from torch.utils.data.dataloader import _BaseDataLoaderIter

from .. import _batchd

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

# Repeated augmentation's samplers, matched by class name (neither is an installable package: the torchvision
# references' RASampler, references/classification/sampler.py, from DeiT; timm's RepeatAugSampler,
# timm/data/distributed_sampler.py): the attribute holding the repeats (DeiT's own RASampler calls it num_repeats).
_REPEATED_AUG = {"RASampler": ("repetitions", "num_repeats"), "RepeatAugSampler": ("num_repeats",)}
_REPEATED_AUG_ATTRS = ("num_replicas", "rank", "shuffle", "epoch", "num_selected_samples")

_pin_warned = False


def refuse_unmappable(collate_fn, worker_init_fn, batch_sampler, generator, own=False, *pipeline_options):
    """ValueError for the first refused argument that is set (collate_fn=default_collate is the default). own: the
    Loader serves your own Dataset: worker_init_fn and collate_fn are taken, and `pipeline_options`
    (batch_transform, crop_size, resize_size, exact_decode: the daemon's pipelines') are refused."""
    if own and any(v is not None for v in pipeline_options):
        raise ValueError("batchd.Loader: batch_transform=, crop_size=, resize_size= and exact_decode= configure "
                         "the daemon's pipelines; your own Dataset makes its samples itself")
    if own:  # taken: your own Dataset's workers run them, as DataLoader's do; its sampler runs in the trainer
        return  # (_own/fed_pass.py)
    given = {"collate_fn": None if collate_fn is default_collate else collate_fn, "worker_init_fn": worker_init_fn,
             "batch_sampler": batch_sampler, "generator": generator}
    for name, value in given.items():
        if value is not None:
            raise ValueError(f"batchd.Loader: {name}= is not supported: {_REFUSED[name]}")


def from_sampler(sampler, shuffle, drop_last, seed, rank, world_size, repeated_aug=None):
    """The sampler fields of the stream: {"shuffle", "drop_last", "drop_last_batch", "seed", "rank", "world_size",
    "repeated_aug", "selected_samples", "epoch_source"}.

    drop_last_batch is DataLoader's drop_last (the last, shorter batch); drop_last the uneven tail across ranks: a
    DistributedSampler's own drop_last, else DataLoader's too (batchd's implicit sharding drops both or neither).
    rank/world_size None mean "from torch.distributed when iteration starts". repeated_aug: copies of each sample
    per epoch (1 = off); selected_samples: each rank's samples per epoch cut to this (0 = no cut; set for the
    repeated-augmentation samplers only). epoch_source is the sampler object whose .epoch is read at each pass
    (scripts call set_epoch on their own sampler), else None."""
    if repeated_aug is not None and (isinstance(repeated_aug, bool) or not isinstance(repeated_aug, int)
                                     or repeated_aug < 1):
        raise ValueError(f"batchd.Loader: repeated_aug must be an int >= 1 (copies of each sample per epoch; "
                         f"1 = off), not {repeated_aug!r}")
    out = {"shuffle": bool(shuffle) if shuffle is not None else False, "drop_last": bool(drop_last),
           "drop_last_batch": bool(drop_last), "seed": seed, "rank": rank, "world_size": world_size,
           "repeated_aug": repeated_aug or 1, "selected_samples": 0,
           "epoch_source": None}
    if sampler is None:
        return out
    if shuffle:  # DataLoader's own check and words: shuffle=False beside a sampler is accepted (the ImageNet example
        raise ValueError("sampler option is mutually exclusive with shuffle")  # passes shuffle=(sampler is None))
    name = type(sampler).__name__
    if name in _REPEATED_AUG:
        return _from_repeated_aug_sampler(sampler, name, out, repeated_aug)
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


def _from_repeated_aug_sampler(sampler, name, out, repeated_aug):
    """RASampler / RepeatAugSampler: their repeats, num_replicas, rank, shuffle, seed (RASampler's; timm's has none:
    the Loader's seed=) and .epoch at each pass (set_epoch), and their epoch length: each rank reads the first
    num_selected_samples of its share, as they do, so len(loader) and a schedule built on it are DataLoader's. The
    order within the epoch is the daemon's permutation (fixed by seed and epoch), not torch.randperm's."""
    if out["rank"] is not None or out["world_size"] is not None:
        raise ValueError(f"batchd.Loader: give the ranks once: in the {name} or as rank=/world_size=")
    if repeated_aug is not None:
        raise ValueError(f"batchd.Loader: give the repeats once: in the {name} or as repeated_aug=")
    repeats = next((getattr(sampler, a) for a in _REPEATED_AUG[name] if hasattr(sampler, a)), None)
    missing = [a for a in _REPEATED_AUG_ATTRS if not hasattr(sampler, a)] + ([] if repeats is not None else
                                                                             ["/".join(_REPEATED_AUG[name])])
    if missing:
        raise ValueError(f"batchd.Loader: sampler={name} has no {', '.join(missing)}: batchd reads the "
                         "references' RASampler and timm's RepeatAugSampler by these attributes; give "
                         "repeated_aug=K with shuffle=, rank= and world_size= instead")
    selected = int(sampler.num_selected_samples)
    if selected <= 0:
        raise ValueError(f"batchd.Loader: sampler={name} selects no samples per epoch (num_selected_samples is 0: "
                         "its dataset is smaller than its rounding, 256 by default), so DataLoader would read nothing; "
                         f"give repeated_aug={repeats} with shuffle=, rank= and world_size= to read every sample "
                         f"{repeats} times per epoch")
    out.update(shuffle=bool(sampler.shuffle), seed=getattr(sampler, "seed", out["seed"]), rank=int(sampler.rank),
               world_size=int(sampler.num_replicas), repeated_aug=int(repeats), selected_samples=selected,
               epoch_source=sampler)
    return out


def prefetch_depth(num_workers, prefetch_factor, depth):
    """The stream's depth (slots): depth= wins; else num_workers * prefetch_factor + 1 (the batches DataLoader keeps
    in flight, plus the one the loop body holds; prefetch_factor None means DataLoader's 2) when num_workers > 0;
    else None (the daemon's default + 1). DataLoader's own argument errors are dataloader_checks.check_arguments'
    (run before); this adds the one DataLoader raises only at iter(): prefetch_factor=0 with workers."""
    if num_workers > 0 and prefetch_factor == 0:  # DataLoader accepts it, then fails at iter() (AssertionError)
        raise ValueError("prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter")
    if depth is not None:
        return depth
    if num_workers > 0:
        return num_workers * (2 if prefetch_factor is None else prefetch_factor) + 1
    return None


def _pin_memory_device_deprecated():
    """Whether the installed torch's DataLoader ignores pin_memory_device (torch 2.x: its iterator warns "the current
    accelerator will be used"; torch 1.x pinned on the device it names). Read from the iterator's source, which
    python -OO keeps (it drops docstrings)."""
    try:
        return "pin_memory_device is deprecated" in inspect.getsource(_BaseDataLoaderIter.__init__)
    except (OSError, TypeError):  # no source installed: the warning's torch versions are 2.x
        return int(torch.__version__.split(".")[0]) >= 2


_PIN_MEMORY_DEVICE_DEPRECATED = _pin_memory_device_deprecated()


def pin_device(pin_memory_device):
    """The CUDA device whose page-locked memory pin_memory=True gives, or None where batchd cannot pin: torch without
    CUDA, or batchd built without its CUDA path. The current device, or (a torch whose DataLoader still honours
    pin_memory_device) the one pin_memory_device names ("" = the current device)."""
    if not torch.cuda.is_available() or not _batchd.has_cuda:
        return None
    device = torch.device("cuda" if _PIN_MEMORY_DEVICE_DEPRECATED else (pin_memory_device or "cuda"))
    if device.type != "cuda":
        raise ValueError(f"batchd.Loader: pin_memory_device must name a CUDA device ('cuda', 'cuda:1'), not "
                         f"{pin_memory_device!r}")
    return device if device.index is not None else torch.device("cuda", torch.cuda.current_device())


def check_pin_memory(pin_memory, pin_memory_device=""):
    """pin_memory=True: batches are page-locked where batchd can pin (pin_device()); elsewhere warn once per
    process, as DataLoader warns when there is no accelerator, and go on unpinned. A pin_memory_device that the
    installed torch deprecates gets DataLoader's warning and is ignored."""
    global _pin_warned
    if pin_memory and pin_memory_device and _PIN_MEMORY_DEVICE_DEPRECATED:
        warnings.warn("pin_memory_device is deprecated, the current accelerator will be used as the device,"
                      f"ignore pin_memory_device='{pin_memory_device}'.", UserWarning, stacklevel=3)
    if not pin_memory or pin_device(pin_memory_device) is not None or _pin_warned:
        return
    _pin_warned = True
    why = ("CUDA is not available" if not torch.cuda.is_available() else _batchd.cuda_unavailable_reason)
    warnings.warn(f"batchd: pin_memory=True, but {why}: batches stay in (unpinned) shared memory",
                  RuntimeWarning, stacklevel=3)


def resolve_device(device):
    """The torch.device of the Loader's device= argument; a CUDA device gets its index (the current one if none);
    BatchdError if CUDA is asked for where torch has none."""
    resolved = torch.device(device)
    if resolved.type == "cuda":
        if not torch.cuda.is_available():
            raise _batchd.BatchdError(f"device={device!r} needs a CUDA GPU, but torch.cuda.is_available() is False; "
                                      "use device='cpu'")
        if resolved.index is None:
            resolved = torch.device("cuda", torch.cuda.current_device())
    return resolved
