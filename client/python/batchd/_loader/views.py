"""What batchd.Loader shows as DataLoader's .dataset, .sampler and .batch_sampler when the trainer did not pass objects
of its own.

DaemonDataset stands for a dataset named by string (one the daemon declares): len() is its sample count, and for an
imagefolder dataset .classes / .class_to_idx are torchvision ImageFolder's (the class directories sorted, label i =
classes[i]), as the daemon's dry run of the stream reports them (StreamOpened.num_classes / .classes).
StreamSampler is the daemon's sampler for this Loader's stream, with DistributedSampler's attributes: len() is this
rank's samples per epoch, set_epoch() forwards to the Loader. StreamBatchSampler stands where DataLoader keeps its
BatchSampler (.batch_sampler): .sampler, .batch_size, .drop_last, len() = batches per epoch, so code that probes it
(Lightning's shuffle check, timm's set_epoch helper) finds what it looks for. None yields samples: the daemon reads
them (iterate the Loader).
"""


class DaemonDataset:
    """A dataset the daemon serves by name. len() asks the daemon (once); name is the config's dataset name.

    classes (list of str) and class_to_idx ({name: label}) for an imagefolder dataset, as torchvision's ImageFolder
    over the same root has them. A dataset without class names (idx, tokens, webdataset: integer labels) has neither
    attribute (AttributeError, so hasattr() is False, as for a Dataset that has none); nor has an imagefolder whose
    names the daemon left out of its reply (over 512 KiB of names: the AttributeError says how many classes)."""

    def __init__(self, loader, name):
        self._loader, self.name = loader, name

    def __len__(self):
        return self._loader._plan()["dataset_size"]

    @property
    def classes(self):
        plan = self._loader._plan()
        names, count = plan["classes"], plan["num_classes"]
        if count == 0:
            raise AttributeError(f"batchd: dataset {self.name!r} has no class names (only an imagefolder dataset "
                                 f"has them; this one's labels are stored integers)")
        if len(names) != count:
            raise AttributeError(f"batchd: dataset {self.name!r} has {count} classes whose names take over 512 KiB, "
                                 f"more than the daemon sends; read them with torchvision.datasets.folder."
                                 f"find_classes(root) on the dataset's root")
        return list(names)

    @property
    def class_to_idx(self):
        return {name: i for i, name in enumerate(self.classes)}

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


class StreamBatchSampler:
    """DataLoader's .batch_sampler (a BatchSampler over .sampler) for a Loader: sampler (the Loader's .sampler),
    batch_size, drop_last, len() = batches per epoch. No set_epoch, as BatchSampler has none (set it on .sampler)."""

    def __init__(self, loader):
        self._loader = loader

    sampler = property(lambda self: self._loader.sampler)
    batch_size = property(lambda self: self._loader.batch_size)
    drop_last = property(lambda self: self._loader.drop_last)

    def __len__(self):
        return len(self._loader)

    def __iter__(self):
        raise TypeError("batchd: the daemon batches the sample order; iterate the Loader (as_dict=True gives each "
                        "batch's dataset indices as 'index')")

    def __repr__(self):
        return f"batchd.StreamBatchSampler(batch_size={self.batch_size}, drop_last={self.drop_last})"
