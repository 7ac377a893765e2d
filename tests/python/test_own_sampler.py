"""Your own Dataset with a sampler the daemon does not run (issue 40, items 3 and 6;
client/python/batchd/_own/fed_pass.py): batch_sampler=, generator=, any Sampler or iterable as sampler=, run in the
trainer as DataLoader's main process runs them, against a real daemon. Each test compares with torch's DataLoader in
the same process where DataLoader's result is defined."""
import copy
import multiprocessing
import os
import signal
import tempfile
import warnings

import pytest
import torch
from torch.utils.data import DataLoader, Dataset, SubsetRandomSampler, WeightedRandomSampler

import batchd
from collate_datasets import Tokens, pad_collate, same
from own_datasets import Faulty, RandomAugment, Squares


def compare(dataset, sock, epochs=2, **kwargs):
    """batchd.Loader's batches against DataLoader's, `epochs` passes, each batch as it comes. Each loader gets its
    own copy of the arguments: a sampler's or generator's state moves as it is iterated."""
    ours, theirs = batchd.Loader(dataset, socket=sock, **copy.deepcopy(kwargs)), DataLoader(dataset, **kwargs)
    try:
        assert len(ours) == len(theirs)
        for epoch in range(epochs):
            count = 0
            for k, (a, b) in enumerate(zip(ours, theirs, strict=True)):
                same(a, b, f"epoch {epoch} batch {k}")
                count += 1
            assert count == len(theirs)
    finally:
        ours.close()


def buckets(n, seed):
    """A bucketing batch sampler's output: batches of 1 to 5 indices, shuffled."""
    g = torch.Generator().manual_seed(seed)
    order = torch.randperm(n, generator=g).tolist()
    out, k = [], 0
    while k < n:
        size = 1 + (k * 7 + seed) % 5
        out.append(order[k:k + size])
        k += size
    return out


@pytest.mark.parametrize("workers", [0, 2])
def test_a_batch_sampler_of_uneven_batches_gives_dataloaders_batches(sock, workers):
    compare(Tokens(40), sock, batch_sampler=buckets(40, 3), collate_fn=pad_collate, num_workers=workers)
    loader = batchd.Loader(Squares(10), socket=sock, batch_sampler=[[0, 1], [2, 3, 4]])
    assert loader.batch_size is None and loader.drop_last is False and len(loader) == 2  # as DataLoader's
    loader.close()


@pytest.mark.parametrize("context", ["spawn", "forkserver"])
def test_workers_started_by_spawn_or_forkserver_are_fed_too(sock, context):
    compare(Tokens(24), sock, epochs=2, batch_sampler=buckets(24, 5), collate_fn=pad_collate, num_workers=2,
            multiprocessing_context=context)


@pytest.mark.parametrize("make", [
    lambda n: range(3, n - 2),  # any iterable of indices
    lambda n: SubsetRandomSampler(list(range(0, n, 2)), generator=torch.Generator().manual_seed(5)),
    lambda n: WeightedRandomSampler([1.0] * n, 2 * n, generator=torch.Generator().manual_seed(6)),
])
def test_any_sampler_gives_dataloaders_order(sock, make):
    compare(Squares(30), sock, sampler=make(30), batch_size=4, num_workers=2)


def test_generator_shuffles_as_dataloader_and_each_pass_differs(sock):
    ours = batchd.Loader(Squares(24), socket=sock, shuffle=True, batch_size=5, num_workers=2,
                         generator=torch.Generator().manual_seed(11))
    theirs = DataLoader(Squares(24), shuffle=True, batch_size=5, num_workers=2,
                        generator=torch.Generator().manual_seed(11))
    try:
        passes = []
        for _ in range(2):
            mine = [b[1].tolist() for b in ours]
            assert mine == [b[1].tolist() for b in theirs]
            passes.append(mine)
        assert passes[0] != passes[1]
    finally:
        ours.close()


@pytest.mark.parametrize("persistent", [False, True])
def test_one_workers_random_draws_are_dataloaders_byte_for_byte(sock, persistent):
    """DataLoader's per-worker seeding (base seed from the generator; random, numpy, torch): with one worker every
    batch is made by the worker DataLoader would use, so torch.rand, np.random and random draw the same."""
    compare(RandomAugment(12), sock, epochs=3, batch_size=3, num_workers=1, persistent_workers=persistent,
            generator=torch.Generator().manual_seed(21), sampler=range(12))


class CountsInits(Dataset):
    def __init__(self, marks):
        self.marks = marks

    def __len__(self):
        return 6

    def __getitem__(self, i):
        return torch.tensor(i)


def count_init(worker_id):
    info = torch.utils.data.get_worker_info()
    open(os.path.join(info.dataset.marks, f"{worker_id}.{os.getpid()}.{info.seed}"), "w").close()


@pytest.mark.parametrize("persistent", [False, True])
def test_worker_init_fn_runs_per_pass_unless_workers_persist(sock, persistent):
    with tempfile.TemporaryDirectory() as marks:
        loader = batchd.Loader(CountsInits(marks), socket=sock, sampler=range(6), batch_size=2, num_workers=2,
                               worker_init_fn=count_init, persistent_workers=persistent,
                               generator=torch.Generator().manual_seed(1))
        try:
            for _ in range(3):
                assert [b.tolist() for b in loader] == [[0, 1], [2, 3], [4, 5]]
        finally:
            loader.close()
        inits = os.listdir(marks)
        assert len(inits) == (2 if persistent else 6), inits
        assert len({m.split(".")[2] for m in inits}) == len(inits), "each worker start has its own seed"


def test_an_exception_is_raised_for_its_batch_and_the_pass_goes_on(sock):
    """As DataLoader: next() raises the dataset's exception (its type, the worker's traceback), the next next()
    gives the next batch; on_error="skip" leaves the batch out."""
    dataset = Faulty(20, 9, "raise")
    for workers in (1, 2):
        it = iter(batchd.Loader(dataset, socket=sock, sampler=range(20), batch_size=4, num_workers=workers))
        got, errors = [], []
        while True:
            try:
                got.append(next(it)[1].tolist())
            except ValueError as e:
                errors.append(str(e))
            except StopIteration:
                break
        assert got == [[0, 1, 2, 3], [4, 5, 6, 7], [12, 13, 14, 15], [16, 17, 18, 19]]
        assert len(errors) == 1 and "sample 9 is unreadable" in errors[0] and "Traceback" in errors[0]
    skipped = batchd.Loader(dataset, socket=sock, sampler=range(20), batch_size=4, on_error="skip", num_workers=2)
    assert [b[1].tolist()[0] for b in skipped] == [0, 4, 12, 16]
    skipped.close()


def test_holding_every_batch_as_list_does_works(sock):
    """list(loader) over more batches than the stream has slots: the rest go through new streams."""
    loader = batchd.Loader(Squares(50), socket=sock, sampler=range(50), batch_size=2, num_workers=2)
    try:
        batches = list(loader)
        assert [b[1].tolist() for b in batches] == [[i, i + 1] for i in range(0, 50, 2)]
        assert all(torch.equal(b[0][0], torch.full((3, 4), float(b[1][0]))) for b in batches)
    finally:
        loader.close()


def endless_like(n):
    yield from range(n)  # no len(): DataLoader's len() raises TypeError, iteration works


def test_a_sampler_without_len_is_served(sock):
    loader = batchd.Loader(Squares(29), socket=sock, sampler=endless_like(29), batch_size=2, num_workers=2)
    try:
        with pytest.raises(TypeError):
            len(loader)
        assert [b[1].tolist() for b in loader] == [list(range(i, min(i + 2, 29))) for i in range(0, 29, 2)]
    finally:
        loader.close()


def test_passes_share_one_stream_and_a_pass_left_early_costs_nothing_after(sock):
    """Consecutive passes read one stream (the fillers between them dropped); a pass left early closes it, and
    the next pass gets every batch of its own."""
    loader = batchd.Loader(Squares(30), socket=sock, sampler=range(30), batch_size=3, num_workers=2,
                           persistent_workers=True)
    try:
        expected = [[i, i + 1, i + 2] for i in range(0, 30, 3)]
        assert [b[1].tolist() for b in loader] == expected
        first = loader._fed_stream.id
        assert [b[1].tolist() for b in loader] == expected
        assert loader._fed_stream.id == first
        for k, b in enumerate(loader):
            if k == 4:
                break
        del b
        assert [b[1].tolist() for b in loader] == expected
        assert loader._fed_stream.id != first
    finally:
        loader.close()


class Meets(Dataset):
    """Every worker waits at a Barrier of `parties` in its first batch: DataLoader's workers all start at once."""

    def __init__(self, parties):
        self.barrier = multiprocessing.get_context("fork").Barrier(parties, timeout=30)

    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i < 4 and i % 2 == 0:
            self.barrier.wait()
        return torch.tensor(i)


def test_workers_that_must_meet_do(sock):
    loader = batchd.Loader(Meets(2), socket=sock, batch_sampler=[[0, 1], [2, 3], [4, 5], [6, 7]], num_workers=2)
    try:
        assert [b.tolist() for b in loader] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    finally:
        loader.close()


class KillsOnce(Dataset):
    """Sample `victim`'s first making SIGKILLs its worker (a mark file says it happened)."""

    def __init__(self, marks, victim):
        self.marks, self.victim = marks, victim

    def __len__(self):
        return 40

    def __getitem__(self, i):
        if i == self.victim and not os.listdir(self.marks):
            open(os.path.join(self.marks, "killed"), "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
        return torch.tensor(i)


def test_a_killed_worker_loses_no_batch(sock):
    with tempfile.TemporaryDirectory() as marks:
        loader = batchd.Loader(KillsOnce(marks, 23), socket=sock, sampler=range(40), batch_size=4, num_workers=2)
        try:
            with warnings.catch_warnings():  # the replacement's warning comes when the Loader notices the death:
                warnings.simplefilter("ignore", RuntimeWarning)  # maybe only after the pass
                got = [b.tolist() for b in loader]
            assert got == [list(range(i, i + 4)) for i in range(0, 40, 4)]
            assert os.listdir(marks) == ["killed"]
        finally:
            loader.close()


def test_batchds_own_sampler_options_are_refused_beside_yours(sock):
    with pytest.raises(ValueError, match="share= need batchd's sampler"):
        batchd.Loader(Squares(8), socket=sock, batch_sampler=[[0, 1]], share="s")


def test_seeding_dataloader_gives_dataloaders_shuffle_from_torch_manual_seed(sock):
    """seeding="dataloader" without any sampler argument: shuffle=True draws from torch's global generator in the
    trainer, as DataLoader's RandomSampler does, so torch.manual_seed(s) gives DataLoader's order, pass after pass."""
    ours = batchd.Loader(Squares(26), socket=sock, shuffle=True, batch_size=4, num_workers=2, seeding="dataloader")
    theirs = DataLoader(Squares(26), shuffle=True, batch_size=4, num_workers=2)
    try:
        for _ in range(2):
            torch.manual_seed(3)
            mine = [b[1].tolist() for b in ours]
            torch.manual_seed(3)
            assert mine == [b[1].tolist() for b in theirs]
    finally:
        ours.close()
    with pytest.raises(ValueError, match="seeding must be 'dataloader'"):
        batchd.Loader(Squares(8), socket=sock, seeding="per_worker")


def test_a_pass_begun_while_the_last_ones_batches_hold_every_slot(sock):
    """b = list(loader) while a = list(loader) of the pass before still holds every slot of the stream."""
    loader = batchd.Loader(Squares(54), socket=sock, sampler=range(54), batch_size=2, num_workers=2)
    try:
        a = list(loader)
        b = list(loader)
        assert [x[1].tolist() for x in a] == [x[1].tolist() for x in b] == [[i, i + 1] for i in range(0, 54, 2)]
    finally:
        loader.close()


def test_persistent_workers_draw_no_second_base_seed(sock):
    """DataLoader's persistent iterator draws its base seed once: pass 2's shuffle must not shift."""
    compare(Squares(20), sock, epochs=3, shuffle=True, batch_size=3, num_workers=2, persistent_workers=True,
            generator=torch.Generator().manual_seed(4))
