"""IterableDatasets for the tests of batchd.Loader over your own IterableDataset (test_own_iterable.py), in a module of
their own so that spawn and forkserver workers can import them."""
import os
import random
import time

import numpy as np
import torch
from torch.utils.data import IterableDataset, get_worker_info


class Sharded(IterableDataset):
    """Items {"x": a float tensor of shape (3,), "name": "item-i", "i": i}; worker w of n yields its own
    share, worker w's longer by w items so that workers end at different batches (shards of a streaming dataset)."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        w, count = (info.id, info.num_workers) if info is not None else (0, 1)
        for i in range(w, self.n + w * count, count):
            yield {"x": torch.full((3,), float(i)), "name": f"item-{i}", "i": i}


class Draws(IterableDataset):
    """(torch.rand(3), np.random.rand(), random.random(), the worker's seed): random draws inside __iter__, as an
    augmenting streaming dataset makes them; worker w yields 4 + w items."""

    def __iter__(self):
        info = get_worker_info()
        for _ in range(4 + info.id):
            yield torch.rand(3), float(np.random.rand()), random.random(), info.seed


class Counting(IterableDataset):
    """range(n) in every worker (no sharding), with a length: DataLoader's len() and its warning past it."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


class FailsIn(IterableDataset):
    """where="iter": __iter__ raises; where="next": the generator raises after yielding 3 items."""

    def __init__(self, where):
        self.where = where

    def __iter__(self):
        if self.where == "iter":
            raise KeyError("no shard list")
        return self._items()

    def _items(self):
        yield from range(3)
        raise ValueError("shard 3 is corrupt")


class KillsItsWorker(IterableDataset):
    """Worker 1 kills itself (SIGKILL) at its 3rd item, the first time only (a marker file in `marks`)."""

    def __init__(self, marks):
        self.marks = marks

    def __iter__(self):
        info = get_worker_info()
        for k in range(10):
            if info.id == 1 and k == 3 and not os.path.exists(os.path.join(self.marks, "killed")):
                open(os.path.join(self.marks, "killed"), "w").close()
                os.kill(os.getpid(), 9)
            time.sleep(0.01)
            yield info.id * 100 + k
