"""Which sampler a batchd.Loader over your own map-style Dataset runs (issue 40, items 3 and 5): DataLoader's, in the
trainer (fed_pass.py), by default and for every sampler argument batchd's own sampler cannot serve; or batchd's
(seeding="per_sample", and the options that need it). index_samplers() builds DataLoader's sampler objects as
DataLoader.__init__ does."""
from torch.utils.data import BatchSampler, DistributedSampler, RandomSampler, SequentialSampler

from .iterable import is_iterable, iterable_samplers


def trainer_sampled(dataset, sampler, batch_sampler, generator):
    """Whether the trainer must run the sampler: the daemon's sampler serves none of these (_loader/dataloader_args.py),
    nor an IterableDataset (iterable.py)."""
    if batch_sampler is not None or generator is not None or is_iterable(dataset):
        return True
    if sampler is None or type(sampler).__name__ in ("RASampler", "RepeatAugSampler"):
        return False
    if type(sampler) is RandomSampler:
        return sampler.replacement or sampler._num_samples is not None or sampler.generator is not None
    return type(sampler) not in (DistributedSampler, SequentialSampler)


def runs_dataloaders_sampler(given, seeding, sampler, share, repeated_aug, rank, world_size, endless, on_error):
    """Whether your own Dataset gets DataLoader's sampler and seeding: `given` (trainer_sampled: the arguments need
    it; then ValueError for batchd's options that need batchd's sampler), else seeding="dataloader" (the default)
    unless such an option is given. seeding="per_sample" is batchd's sampler with a seed per sample; taken too for
    share=, repeated_aug= or a repeated-augmentation sampler, rank=/world_size=, endless=True, on_error="skip" (a bad
    sample replaced)."""
    if seeding not in ("dataloader", "per_sample"):
        raise ValueError(f"batchd.Loader: seeding must be 'dataloader' (DataLoader's sampler and per-worker seeds) "
                         f"or 'per_sample' (batchd's sampler; each sample's draws seeded by (seed, epoch, index)), "
                         f"not {seeding!r}")
    needs_batchd = [name for name, value in (("share", share), ("repeated_aug", repeated_aug), ("rank", rank),
                                             ("world_size", world_size)) if value is not None] + \
        (["endless"] if endless else [])
    if given and needs_batchd:
        raise ValueError(f"batchd.Loader: {', '.join(needs_batchd)}= need batchd's sampler, but this Loader runs "
                         f"yours (batch_sampler=, generator=, a sampler the daemon does not map, or an "
                         f"IterableDataset's own iteration): shard with a DistributedSampler, or in the "
                         f"IterableDataset, instead")
    if given and seeding == "per_sample":
        raise ValueError("batchd.Loader: seeding='per_sample' needs batchd's sampler, but this Loader runs yours "
                         "(batch_sampler=, generator=, a sampler the daemon does not map, or an IterableDataset): "
                         "leave seeding= unset")
    return given or (seeding == "dataloader" and not needs_batchd and on_error != "skip"
                     and type(sampler).__name__ not in ("RASampler", "RepeatAugSampler"))


def index_samplers(dataset, batch_size, shuffle, sampler, batch_sampler, drop_last, generator):
    """(batch_size, sampler, batch_sampler, the sampler a pass iterates, auto_collation), as DataLoader.__init__
    makes them: batch_size is None beside a batch_sampler given."""
    if is_iterable(dataset):
        return iterable_samplers(batch_size, drop_last)
    if batch_sampler is not None:
        batch_size = None  # as DataLoader sets it (drop_last is False: _loader.dataloader_checks refuses it)
    if batch_sampler is None:
        if sampler is None:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
    return batch_size, sampler, batch_sampler, (batch_sampler if batch_sampler is not None else sampler), \
        batch_sampler is not None
