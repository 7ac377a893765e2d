"""Slots that fit the batches (issue 40, item 2; client/python/batchd/_own/fed_pass.py, _grown): a batch that outgrows
its slot comes to the trainer over its worker's pipe, and the Loader's next stream gets slots twice its size, once
the current one has delivered what it was sent: nothing lost, repeated or reordered, and no batch made again, so the
random draws stay DataLoader's. Against a real daemon, compared with torch's DataLoader."""
import copy

import pytest
import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info

import batchd
from collate_datasets import same

pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create")


def size_of(i):
    """Small for the first batches (the first round sizes the slots from them), then two jumps."""
    return 4 if i < 24 else 40_000 if i < 48 else 160_000


class Growing(Dataset):
    """(torch.rand(size_of(i)) float32, i): random draws whose batches outgrow the slots twice mid-pass."""

    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.rand(size_of(i)), i


class GrowingStream(IterableDataset):
    """Worker w of n yields items i = w, w + n, ... < 64 as Growing's: an IterableDataset cannot make a batch again."""

    def __iter__(self):
        info = get_worker_info()
        for i in range(info.id, 64, info.num_workers):
            yield torch.rand(size_of(i)), i


def compare(dataset, sock, epochs=2, hold=False, **kwargs):
    ours = batchd.Loader(dataset, socket=sock, **copy.deepcopy(kwargs))
    theirs = DataLoader(dataset, **kwargs)
    try:
        for epoch in range(epochs):
            mine = list(ours) if hold else ours  # hold: every batch kept until the pass ends
            got = list(zip(mine, theirs, strict=True))
            for k, (a, b) in enumerate(got):
                same(a, b, f"epoch {epoch} batch {k}")
        return ours.slot_growths
    finally:
        ours.close()


@pytest.mark.parametrize("workers", [1, 3])
def test_batches_that_outgrow_their_slots_are_dataloaders_in_order(sock, workers):
    growths = compare(Growing(), sock, batch_size=4, num_workers=workers, generator=torch.Generator().manual_seed(3))
    assert growths == 2, "grown at each jump, in the first pass only: the second pass's slots fit"


def test_growth_while_the_loop_holds_every_batch(sock):
    assert compare(Growing(), sock, hold=True, batch_size=4, num_workers=2,
                   generator=torch.Generator().manual_seed(5)) == 2


@pytest.mark.parametrize("persistent", [False, True])
def test_an_iterable_datasets_batches_outgrow_their_slots_and_none_is_lost(sock, persistent):
    assert compare(GrowingStream(), sock, batch_size=4, num_workers=2, persistent_workers=persistent,
                   generator=torch.Generator().manual_seed(8)) == 2
