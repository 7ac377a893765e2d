"""batchd.Loader over your own IterableDataset (issue 40, item 4; client/python/batchd/_own/iterable.py,
_own/worker_iterable.py): each worker iterates its copy as DataLoader's does, and the Loader yields DataLoader's
batches in DataLoader's order (round robin over the workers, a worker whose iterator ended skipped), against a real
daemon and compared with torch's DataLoader in the same process."""
import copy
import multiprocessing
import tempfile
import warnings

import pytest
import torch
from torch.utils.data import DataLoader

import batchd
from collate_datasets import same
from iterable_datasets import Counting, Draws, FailsIn, KillsItsWorker, Sharded


def compare(dataset, sock, epochs=2, **kwargs):
    """Each loader its own copy of the arguments (a generator's state moves as it is drawn from)."""
    ours = batchd.Loader(dataset, socket=sock, **copy.deepcopy(kwargs))
    theirs = DataLoader(dataset, **kwargs)
    try:
        for epoch in range(epochs):
            got = list(zip(ours, theirs, strict=True))
            assert got, "no batch at all"
            for k, (a, b) in enumerate(got):
                same(a, b, f"epoch {epoch} batch {k}")
    finally:
        ours.close()


@pytest.mark.parametrize("workers", [0, 1, 3])
@pytest.mark.parametrize("batch_size,drop_last", [(None, False), (4, False), (4, True)])
def test_batches_are_dataloaders_in_its_order(sock, workers, batch_size, drop_last):
    """Workers end at different batches (worker w yields w more items): the others go on, round robin."""
    compare(Sharded(23), sock, num_workers=workers, batch_size=batch_size, drop_last=drop_last)


@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("context", [None, "forkserver"])
def test_random_draws_in_iter_are_dataloaders_byte_for_byte(sock, persistent, context):
    """DataLoader's base seed (generator=) and per-worker seeding, persistent or not, over three passes."""
    compare(Draws(), sock, epochs=3, num_workers=2, batch_size=3, persistent_workers=persistent,
            multiprocessing_context=context, generator=torch.Generator().manual_seed(11))


def test_an_exception_in_iter_is_raised_with_its_type(sock):
    loader = batchd.Loader(FailsIn("iter"), socket=sock, num_workers=2)
    try:
        with pytest.raises(KeyError, match="no shard list") as raised:
            list(loader)
        assert "Traceback" in str(raised.value)
    finally:
        loader.close()


def test_an_exception_mid_iteration_is_its_batchs_and_its_worker_ends(sock):
    """As DataLoader: the batch the exception interrupted is lost ([2, then the raise]); next() raises it, and the
    next next() goes on (that worker's generator is finished: the pass ends)."""
    for loader in (batchd.Loader(FailsIn("next"), socket=sock, num_workers=1, batch_size=2),
                   DataLoader(FailsIn("next"), num_workers=1, batch_size=2)):
        try:
            it = iter(loader)
            assert next(it).tolist() == [0, 1]
            with pytest.raises(ValueError, match="shard 3 is corrupt"):
                next(it)
            with pytest.raises(StopIteration):
                next(it)
        finally:
            if isinstance(loader, batchd.Loader):
                loader.close()


@pytest.mark.parametrize("batch_size,drop_last,length", [(1, False, 10), (3, False, 4), (3, True, 3), (None, False, 10)])
def test_len_is_dataloaders(sock, batch_size, drop_last, length):
    loader = batchd.Loader(Counting(10), socket=sock, num_workers=2, batch_size=batch_size, drop_last=drop_last)
    try:
        assert len(loader) == length == len(DataLoader(Counting(10), batch_size=batch_size, drop_last=drop_last))
    finally:
        loader.close()
    with pytest.raises(TypeError):
        len(batchd.Loader(Draws(), socket=sock, num_workers=1))


@pytest.mark.parametrize("batch_size,length", [(1, 10), (None, 10)])
def test_a_pass_past_len_warns_as_dataloaders(sock, batch_size, length):
    """DataLoader compares the batches yielded with len(dataset), once len(loader) was asked before iter()."""
    loader = batchd.Loader(Counting(10), socket=sock, num_workers=2, batch_size=batch_size)
    try:
        next(iter(loader))
        assert len(loader) == length
        it = iter(loader)  # each of the 2 workers yields all 10: twice the length
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for _ in range(length):
                next(it)
        with pytest.warns(UserWarning, match=r"but [0-9]+ samples have been fetched\. For multiprocessing"):
            next(it)
    finally:
        loader.close()


def test_a_killed_worker_ends_the_pass_naming_it_and_the_next_pass_runs(sock):
    with tempfile.TemporaryDirectory() as marks:
        loader = batchd.Loader(KillsItsWorker(marks), socket=sock, num_workers=2, batch_size=None)
        try:
            it = iter(loader)
            with pytest.raises(batchd.BatchdError, match=r"worker 1 \(pid \d+\) was killed by signal SIGKILL while "
                                                         r"iterating your IterableDataset"):
                list(it)
            with pytest.raises(batchd.BatchdError, match="was killed by signal SIGKILL"):
                next(it)  # again, as DataLoader's iterator: the pass is over
            assert sorted(loader) == sorted(w * 100 + k for w in (0, 1) for k in range(10))
        finally:
            loader.close()


def test_in_order_false_gives_the_same_batches(sock):
    loader = batchd.Loader(Sharded(30), socket=sock, num_workers=3, batch_size=2, in_order=False)
    try:
        for _ in range(2):
            assert sorted(i for b in loader for i in b["i"].tolist()) == \
                sorted(i for b in DataLoader(Sharded(30), num_workers=3, batch_size=2) for i in b["i"].tolist())
    finally:
        loader.close()


@pytest.mark.parametrize("kwargs,words", [
    ({"seeding": "per_sample"}, "seeding='per_sample' needs batchd's sampler"),
    ({"rank": 0, "world_size": 2}, "rank, world_size= need batchd's sampler"),
    ({"shuffle": True}, "expected unspecified shuffle option"),
])
def test_batchds_sampler_options_and_dataloaders_refusals(sock, kwargs, words):
    with pytest.raises(ValueError, match=words):
        batchd.Loader(Sharded(8), socket=sock, **kwargs)


def test_workers_attribute_lists_processes_that_exit_cleanly(sock):
    """PyTorch's own test reads iterator._workers and joins them after `del`: they exit with status 0."""
    loader = batchd.Loader(Counting(6), socket=sock, num_workers=2)
    it = iter(loader)
    assert sorted(int(x) for x in it) == sorted(list(range(6)) * 2)
    workers = it._workers
    assert len(workers) == 2 and all(isinstance(w, multiprocessing.process.BaseProcess) for w in workers)
    del it, loader
    for w in workers:
        w.join(10)
        assert w.exitcode == 0
