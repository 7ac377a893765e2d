"""What batchd.Loader shows as DataLoader's .dataset and .sampler when the trainer did not pass objects of its own.

DaemonDataset stands for a dataset named by string (one the daemon declares): len() is its sample count, as the
daemon's dry run of the stream reports it. StreamSampler is the daemon's sampler for this Loader's stream, with
DistributedSampler's attributes: len() is this rank's samples per epoch, set_epoch() forwards to the Loader. Neither
yields samples: the daemon reads them (iterate the Loader).
"""


class DaemonDataset:
    """A dataset the daemon serves by name. len() asks the daemon (once); name is the config's dataset name."""

    def __init__(self, loader, name):
        self._loader, self.name = loader, name

    def __len__(self):
        return self._loader._plan()["dataset_size"]

    def __getitem__(self, index):
        raise TypeError(f"batchd: dataset {self.name!r} is read by the daemon, not by index; iterate the Loader "
                        "(each batch's samples are its dataset indices: Loader(..., as_dict=True)['index'])")

    def __repr__(self):
        return f"batchd.DaemonDataset({self.name!r})"


class StreamSampler:
    """The daemon's sampler for one Loader: RandomSampler / SequentialSampler / DistributedSampler semantics (see
    batchd.Loader). Attributes as DistributedSampler's: num_replicas, rank, shuffle, seed, drop_last, epoch."""

    def __init__(self, loader):
        self._loader = loader

    num_replicas = property(lambda self: self._loader.world_size)
    rank = property(lambda self: self._loader.rank)
    shuffle = property(lambda self: self._loader._options["shuffle"])
    seed = property(lambda self: self._loader._options["seed"])
    drop_last = property(lambda self: self._loader._options["drop_last"])
    epoch = property(lambda self: self._loader._epoch)

    def set_epoch(self, epoch):
        """As DistributedSampler.set_epoch: the next pass reads this epoch's order."""
        self._loader.set_epoch(epoch)

    def __len__(self):
        """This rank's samples per epoch (DistributedSampler: ceil(n / w), or floor with drop_last)."""
        return self._loader._plan()["samples_per_epoch"]

    def __iter__(self):
        raise TypeError("batchd: the daemon draws the sample order; iterate the Loader (as_dict=True gives each "
                        "batch's dataset indices as 'index')")

    def __repr__(self):
        return f"batchd.StreamSampler(shuffle={self.shuffle}, rank={self.rank}, num_replicas={self.num_replicas})"
