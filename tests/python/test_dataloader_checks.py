"""batchd.Loader as DataLoader is, beyond the batches (issue 40, items 3 and 6): DataLoader's own argument checks
in its words, its refusal to reassign attributes, Loader[T] in type hints, batch_size=None (no auto-batching), a
dataset's exception raised with its own type and the worker's traceback, worker_init_fn's too, and `timeout` in
DataLoader's words. Each is checked against torch's DataLoader itself where it has the behaviour."""
import multiprocessing
import typing

import pytest
import torch
from torch.utils.data import BatchSampler, DataLoader, SequentialSampler, TensorDataset

import batchd
from own_datasets import Faulty, Kinds, Squares, Stream


SQUARES = Squares(10)
SEQUENTIAL = SequentialSampler(SQUARES)
BAD_ARGUMENTS = [  # (dataset, kwargs): combinations DataLoader refuses, in the order its checks run
    (SQUARES, dict(num_workers=-1)),
    (SQUARES, dict(timeout=-1)),
    (SQUARES, dict(prefetch_factor=2)),
    (SQUARES, dict(num_workers=1, prefetch_factor=-1)),
    (SQUARES, dict(persistent_workers=True)),
    (SQUARES, dict(multiprocessing_context="fork")),
    (SQUARES, dict(num_workers=1, multiprocessing_context="bad")),
    (SQUARES, dict(num_workers=1, multiprocessing_context=object())),
    (SQUARES, dict(batch_size=11, sampler=SEQUENTIAL, shuffle=True)),
    (SQUARES, dict(batch_sampler=BatchSampler(SEQUENTIAL, 3, False), sampler=SEQUENTIAL, shuffle=3)),
    (SQUARES, dict(batch_size=11, batch_sampler=BatchSampler(SEQUENTIAL, 3, False))),
    (SQUARES, dict(drop_last=True, batch_sampler=BatchSampler(SEQUENTIAL, 3, False))),
    (SQUARES, dict(batch_size=None, drop_last=True)),
    (Stream(), dict(shuffle=True)),
    (Stream(), dict(sampler=3)),
    (Stream(), dict(batch_sampler=3)),
]


@pytest.mark.parametrize("dataset,kwargs", BAD_ARGUMENTS, ids=[str(k) for _, k in BAD_ARGUMENTS])
def test_a_combination_dataloader_refuses_is_refused_in_its_words(dataset, kwargs):
    with pytest.raises((ValueError, TypeError)) as theirs:
        DataLoader(dataset, **kwargs)
    with pytest.raises((ValueError, TypeError)) as ours:  # before any daemon is reached: no socket needed
        batchd.Loader(dataset, socket="/nonexistent/batchd.sock", **kwargs)
    assert type(ours.value) is type(theirs.value) and str(ours.value) == str(theirs.value)


def test_dataloaders_attributes_cannot_be_set_after_construction(sock):
    loader = batchd.Loader(Squares(8), batch_size=2, socket=sock)
    for attr in ("batch_size", "sampler", "batch_sampler", "drop_last", "dataset", "persistent_workers"):
        with pytest.raises(ValueError, match=f"{attr} attribute should not be set after Loader is initialized"):
            setattr(loader, attr, {})
    loader.num_workers = loader.num_workers  # the others can, as in DataLoader
    loader.close()


def test_loader_is_generic_as_dataloader_is():
    def make(train: bool) -> batchd.Loader[typing.List[torch.Tensor]]:
        return None

    assert typing.get_type_hints(make)["return"] == batchd.Loader[typing.List[torch.Tensor]]


def test_too_many_workers_warn_as_dataloader_does(sock):
    with pytest.warns(UserWarning, match="This DataLoader will create 1000 worker processes in total"):
        DataLoader(SQUARES, num_workers=1000)
    with pytest.warns(UserWarning, match="This DataLoader will create 1000 worker processes in total"):
        batchd.Loader(SQUARES, num_workers=1000, socket=sock).close()


@pytest.mark.parametrize("kind", ["tensor", "tuple", "namedtuple", "dict"])
def test_batch_size_none_yields_the_samples_dataloader_yields(sock, kind):
    dataset = Kinds(6, kind)
    expected = list(DataLoader(dataset, batch_size=None, shuffle=False))
    loader = batchd.Loader(dataset, batch_size=None, num_workers=2, socket=sock)
    assert loader.batch_size is None and loader.batch_sampler is None and len(loader) == 6
    count = 0  # compared as they come: a batchd batch holds its slot while it lives (depth= of them at once)
    for ours, theirs in zip(loader, expected):
        count += 1
        assert type(ours) is type(theirs)
        ours_items = ours.values() if isinstance(ours, dict) else ours if isinstance(ours, (list, tuple)) else [ours]
        theirs_items = (theirs.values() if isinstance(theirs, dict) else theirs if isinstance(theirs, (list, tuple))
                        else [theirs])
        for a, b in zip(ours_items, theirs_items):
            assert type(a) is type(b), (a, b)
            if isinstance(b, torch.Tensor):
                assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
            else:
                assert a == b
    loader.close()
    assert count == len(expected)


def test_batch_size_none_over_a_tensor_dataset(sock):
    data = torch.randn(12, 2, 3)
    labels = torch.randperm(12)
    loader = batchd.Loader(TensorDataset(data, labels), batch_size=None, socket=sock)
    for i, (x, y) in enumerate(loader):
        assert torch.equal(x, data[i]) and torch.equal(y, labels[i])
    assert i == 11
    loader.close()


def test_a_dataset_exception_is_raised_with_its_own_type_and_traceback(sock):
    loader = batchd.Loader(Faulty(40, 13, "raise"), batch_size=4, num_workers=3, socket=sock, timeout=30,
                           seeding="per_sample")  # names the sample: seeding="dataloader" names its batch (test_own_sampler.py)
    try:
        with pytest.raises(ValueError) as failed:
            for _ in loader:
                pass
        message = str(failed.value)
        assert message.startswith("Caught ValueError in batchd.Loader worker process "), message
        assert "Faulty.__getitem__(13)" in message and "Original Traceback (most recent call last)" in message
        assert 'in __getitem__\n    raise ValueError(f"sample {i} is unreadable (a test\'s fault)")' in message
        assert isinstance(failed.value.__cause__, batchd.BatchdError)
        assert "sample 13 of dataset" in str(failed.value.__cause__)
    finally:
        loader.close()


def _raise_in_init(worker_id):
    raise KeyError(f"no config for worker {worker_id}")


def test_worker_init_fn_exception_is_raised_with_its_own_type(sock):
    loader = batchd.Loader(Squares(8), batch_size=2, num_workers=2, worker_init_fn=_raise_in_init, socket=sock)
    with pytest.raises(KeyError, match="Caught KeyError in batchd.Loader worker process 0"):
        list(loader)
    loader.close()


def test_an_exception_class_that_cannot_be_pickled_arrives_as_runtime_error(sock):
    class Local(torch.utils.data.Dataset):  # its exception class is local too: pickle cannot name it
        def __len__(self):
            return 4

        def __getitem__(self, i):
            class Unpicklable(Exception):
                pass
            raise Unpicklable(f"bad {i}")

    loader = batchd.Loader(Local(), batch_size=2, num_workers=1, socket=sock,
                           multiprocessing_context=multiprocessing.get_context("fork"))
    with pytest.raises(RuntimeError, match="Caught RuntimeError in batchd.Loader worker process 0") as failed:
        list(loader)
    assert type(failed.value) is RuntimeError
    assert "its class, Unpicklable, cannot be pickled to the trainer" in str(failed.value)
    assert "Unpicklable: bad 0" in str(failed.value), "the worker's traceback"
    loader.close()


def test_timeout_raises_in_dataloaders_words(sock):
    loader = batchd.Loader(Squares(8, delay=3.0), batch_size=4, num_workers=1, timeout=1, socket=sock)
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after \d+ seconds"):
        next(iter(loader))
    loader.close()
