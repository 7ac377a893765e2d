"""in_order=False (issue 40, item 4; ExternalDataset.completion_order): batches come as they are made, as DataLoader's
in_order=False gives them, so a slow batch holds back none after it; each still comes once, and slots still grow.
Against a real daemon, compared with torch's DataLoader in the same process."""
import math
import time

import pytest
import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info

import batchd

pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create")


class SlowIndex(Dataset):
    """Sample i is i; sample `slow` takes `seconds` (PyTorch's TestSlowIndexDataset)."""

    def __init__(self, n, slow, seconds):
        self.n, self.slow, self.seconds = n, slow, seconds

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.slow:
            time.sleep(self.seconds)
        return i


class SlowSecondHalf(IterableDataset):
    """Worker w of W yields its share of 0..n-1 in order; items of the second half take `seconds` each (PyTorch's
    TestSlowIterableDataset: with 2 workers, worker 1 is the slow one)."""

    def __init__(self, n, seconds):
        self.n, self.seconds = n, seconds

    def __iter__(self):
        info = get_worker_info()
        share = math.ceil(self.n / info.num_workers)
        for i in range(info.id * share, min(self.n, (info.id + 1) * share)):
            if i >= math.ceil(self.n / 2):
                time.sleep(self.seconds)
            yield i


class Big(Dataset):
    """Samples of 256 KiB (float32): batches of 8 are 2 MiB, past the first slots' 1 MiB."""

    def __len__(self):
        return 21

    def __getitem__(self, i):
        return {"x": torch.full((65536,), float(i)), "i": i}


def test_a_slow_batch_holds_back_none_after_it(sock):
    ours = batchd.Loader(SlowIndex(12, slow=2, seconds=1.5), socket=sock, num_workers=2, in_order=False)
    try:
        got = [b.item() for b in ours]
        assert sorted(got) == list(range(12))
        assert got.index(2) > 2, f"batch 2 came in task order: {got}"
        in_order = batchd.Loader(SlowIndex(12, slow=2, seconds=0.3), socket=sock, num_workers=2)
        try:
            assert [b.item() for b in in_order] == list(range(12)), "in_order=True keeps the sampler's order"
        finally:
            in_order.close()
    finally:
        ours.close()


def test_an_iterable_datasets_fast_worker_comes_first(sock):
    """PyTorch's test_out_of_order_iterable_ds: worker 0's items (0..4) before worker 1's slow ones, but the first."""
    ours = batchd.Loader(SlowSecondHalf(10, seconds=1.0), socket=sock, num_workers=2, in_order=False)
    try:
        got = [b.item() for b in ours]
        assert sorted(got) == list(range(10))
        assert set(got[:4]) <= set(range(5)), got
        assert got != [0, 5, 1, 6, 2, 7, 3, 8, 4, 9], "round robin"
    finally:
        ours.close()


@pytest.mark.parametrize("workers", [1, 3])
def test_slots_grow_and_every_batch_comes_once_each_pass(sock, workers):
    """Batches of 2 MiB outgrow the first slots: they come over the workers' pipes, then the slots fit; over three
    passes of 3 batches (not a multiple of the task's slots), each pass gives DataLoader's batches, in some order."""
    ours = batchd.Loader(Big(), socket=sock, batch_size=8, num_workers=workers, in_order=False)
    theirs = DataLoader(Big(), batch_size=8, num_workers=workers, in_order=False)
    try:
        for _ in range(3):
            got = sorted(([b["i"].tolist(), b["x"].sum().item(), list(b["x"].shape)] for b in ours))
            assert got == sorted([b["i"].tolist(), b["x"].sum().item(), list(b["x"].shape)] for b in theirs)
        assert ours.slot_growths >= 1
    finally:
        ours.close()


def test_a_batch_that_outgrew_the_slot_of_a_pass_left_early_is_not_kept(sock):
    """Batches sent over the pipes for a stream the trainer closed (a pass left after one batch) are dropped, not
    kept for a take that never comes (2 MiB each)."""
    ours = batchd.Loader(Big(), socket=sock, batch_size=8, num_workers=2, in_order=False)
    try:
        it = iter(ours)
        next(it)
        del it  # the pass is left: its stream closed while the other worker's batch may be on its way
        time.sleep(0.5)
        assert sorted(b["i"][0].item() for b in ours) == [0, 8, 16]
        assert ours._own.held == {}, f"kept: {sorted(ours._own.held)}"
    finally:
        ours.close()
