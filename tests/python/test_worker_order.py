"""Which worker makes which batch (issue 40, item 5; ExternalDataset.round_robin): with in_order=True, as DataLoader,
the pass's batch k is made by worker k % num_workers, every pass starting at worker 0, so random draws inside
__getitem__ are DataLoader's batch for batch whatever num_workers; in_order=False gives a batch to the first idle
worker. Against a real daemon, compared with torch's DataLoader in the same process."""

import pytest
import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info

import batchd
from own_datasets import RandomAugment
from test_own_sampler import compare

pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create")


class WhoMakes(Dataset):
    """(the id of the worker that made the sample, the index)."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return get_worker_info().id, i


@pytest.mark.parametrize("workers", [2, 3])
@pytest.mark.parametrize("persistent", [False, True])
def test_random_draws_are_dataloaders_byte_for_byte_with_several_workers(sock, workers, persistent):
    compare(RandomAugment(29), sock, epochs=3, batch_size=3, num_workers=workers, persistent_workers=persistent,
            shuffle=True, generator=torch.Generator().manual_seed(7 + workers))


@pytest.mark.parametrize("workers", [1, 3, 4])
def test_batch_k_of_each_pass_is_made_by_worker_k_mod_num_workers(sock, workers):
    """As PyTorch's TestIndividualWorkerQueue, over passes whose length is not a multiple of num_workers (each
    pass starts at worker 0 again), one of them held whole (list(loader): its batches spill to new streams)."""
    loader = batchd.Loader(WhoMakes(23), socket=sock, batch_size=2, num_workers=workers)
    try:
        passes = [list(loader)] + [[(w.clone(), i.clone()) for w, i in loader] for _ in range(2)]
        for p, batches in enumerate(passes):
            assert len(batches) == 12
            for k, (made_by, index) in enumerate(batches):
                assert index.tolist() == [i for i in (2 * k, 2 * k + 1) if i < 23], (p, k)
                assert made_by.tolist() == [k % workers] * len(index), (p, k, made_by.tolist())
    finally:
        loader.close()


def test_in_order_false_still_gives_every_batch_once(sock):
    loader = batchd.Loader(WhoMakes(40), socket=sock, batch_size=4, num_workers=3, in_order=False)
    theirs = DataLoader(WhoMakes(40), batch_size=4, num_workers=3, in_order=False)
    try:
        for _ in range(2):
            ours = sorted(i.tolist() for _, i in loader)
            assert ours == sorted(i.tolist() for _, i in theirs)
    finally:
        loader.close()
