"""Datasets of the "Your own Dataset" tests (test_own_dataset*.py), in a module so that a spawned worker can import
them (multiprocessing_context="spawn" pickles the dataset by its class's module and name).

Every sample carries its index, so a test can check which indices a pass delivered: field "i" of a dict sample,
the last item of a tuple. Faults (hang, raise) are keyed by an index and, where a test needs to see them happen,
leave a file per occurrence in a directory (the worker processes share nothing else with the test).
"""
import collections
import os
import random
import time

import numpy as np
import torch
from torch.utils.data import Dataset, IterableDataset, get_worker_info


class Squares(Dataset):
    """n samples (x, index): x = full((3, 4), index) float32; `delay` seconds per sample."""

    def __init__(self, n, delay=0.0):
        self.n, self.delay = n, delay

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.delay:
            time.sleep(self.delay)
        return torch.full((3, 4), float(i)), i


class RandomAugment(Dataset):
    """(torch.rand, np.random, random, index): draws of the three global generators in __getitem__, seeded by batchd
    per (seed, epoch, index) whichever worker makes the sample."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.rand(5), np.random.rand(2), random.random(), i


class Batched(Dataset):
    """Deterministic samples {"x": (2, 3) int32 of the index, "i": the index} ("index" is batchd's own name)."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"x": torch.full((2, 3), i, dtype=torch.int32), "i": i}


class BatchedWithGetitems(Batched):
    """Batched with __getitems__: each call leaves a file "<pid>.<ns>" in `calls_dir` that lists its indices."""

    def __init__(self, n, calls_dir):
        super().__init__(n)
        self.calls_dir = calls_dir

    def __getitems__(self, indices):
        with open(os.path.join(self.calls_dir, f"{os.getpid()}.{time.perf_counter_ns()}"), "w") as f:
            f.write(" ".join(map(str, indices)))
        return [self[i] for i in indices]


class WorkerInfoProbe(Dataset):
    """(worker id, num_workers, 1 if info.dataset is this object, the value worker_init_fn left, index)."""

    init_value = -1  # set by init_worker() in the worker process

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        info = get_worker_info()
        if info is None:
            return -1, -1, 0, WorkerInfoProbe.init_value, i
        return info.id, info.num_workers, int(info.dataset is self), WorkerInfoProbe.init_value, i


def init_worker(worker_id):
    """A worker_init_fn: marks the worker (WorkerInfoProbe.init_value) and leaves a file "<id>.<pid>.<ns>" in
    $OWN_INIT_DIR per call."""
    WorkerInfoProbe.init_value = 100 + worker_id
    open(os.path.join(os.environ["OWN_INIT_DIR"], f"{worker_id}.{os.getpid()}.{time.perf_counter_ns()}"), "w").close()


class Faulty(Dataset):
    """Squares whose sample `bad` misbehaves: "hang" sleeps an hour the first `times` times it is made (each time
    leaves "hang.<pid>.<k>" in `marks`), "raise" raises ValueError, "shape" returns x of shape (3, 5)."""

    def __init__(self, n, bad, fault, marks=None, times=1):
        self.n, self.bad, self.fault, self.marks, self.times = n, bad, fault, marks, times

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.bad:
            if self.fault == "raise":
                raise ValueError(f"sample {i} is unreadable (a test's fault)")
            if self.fault == "shape":
                return torch.zeros(3, 5), i
            done = len(os.listdir(self.marks))
            if done < self.times:
                open(os.path.join(self.marks, f"hang.{os.getpid()}.{done}"), "w").close()
                time.sleep(3600)
        return torch.full((3, 4), float(i)), i


Pair = collections.namedtuple("Pair", ["x", "i"])  # at module level: the layout (its type) is pickled to the trainer


class Kinds(Dataset):
    """One sample structure (`kind`: "tensor", "tuple", "list", "namedtuple", "dict") over the dtypes that
    default_collate makes: Python int/float/bool, numpy int16/int8/float16 arrays and a float32 scalar,
    bfloat16/uint8 tensors."""

    def __init__(self, n, kind):
        self.n, self.kind = n, kind

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        x = torch.arange(6, dtype=torch.float32).reshape(2, 3) + i
        if self.kind == "tensor":
            return x
        if self.kind == "namedtuple":
            return Pair(x, i)
        fields = {"x": x, "i": i, "f": i / 4, "b": i % 2 == 0, "i16": np.arange(3, dtype=np.int16) * i,
                  "i8": np.array([[-i, i]], dtype=np.int8), "f16": np.full(2, i / 8, dtype=np.float16),
                  "f32": np.float32(i / 2), "bf16": torch.full((2,), i / 4, dtype=torch.bfloat16),
                  "u8": torch.tensor([i % 256], dtype=torch.uint8)}
        if self.kind == "dict":
            return fields
        return tuple(fields.values()) if self.kind == "tuple" else list(fields.values())


class WithString(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return torch.zeros(2), f"name-{i}"


class LocalPairs(Dataset):
    """Samples of a namedtuple class made inside __getitem__: not importable by name, so not picklable."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return collections.namedtuple("LocalPair", ["x", "i"])(torch.zeros(2), i)


class Resizable(Squares):
    """Squares whose len() is n, plus `in_workers` inside a worker process (where get_worker_info() is set)."""

    def __init__(self, n, in_workers=0):
        super().__init__(n)
        self.in_workers = in_workers

    def __len__(self):
        return self.n + (self.in_workers if get_worker_info() is not None else 0)


class NoLength(Dataset):
    def __getitem__(self, i):
        return torch.zeros(2)


class Stream(IterableDataset):
    def __iter__(self):
        return iter(range(4))


class Huge(Dataset):
    """n samples (index as a 1-element int64 tensor) for any n, up to 2^58: nothing is stored per sample."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.tensor([i], dtype=torch.int64)
