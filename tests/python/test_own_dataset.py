"""Your own Dataset (issue 26) against a real daemon: what a pass delivers, as DataLoader would.

Exactly once per epoch (4 workers, shuffled or not, drop_last, two ranks together), the same batches with 1 and 4
workers when __getitem__ draws from random / numpy / torch (batchd seeds them per sample: batchd._own.dataset's
sample_seed), get_worker_info() and worker_init_fn in the workers, __getitems__ used when defined, the spawn
context, the structures and dtypes default_collate makes, and what is refused (IterableDataset, a string field).
Faults (dead, hung and failing workers, a killed trainer, another uid) are test_own_dataset_faults.py's.
"""
import os

import pytest
import torch
from torch.utils.data import default_collate

import batchd
from batchd._own.dataset import sample_seed, seed_all
from own_datasets import (Batched, BatchedWithGetitems, Kinds, LocalPairs, NoLength, RandomAugment, Resizable,
                          Squares, Stream, WithString, WorkerInfoProbe, init_worker)


def _indices(batch):
    """The indices of a batch whose samples end with their index (a list) or carry it as "i" (a dict)."""
    return (batch["i"] if isinstance(batch, dict) else batch[-1]).tolist()


def _kept(batch):
    """A copy of `batch` that does not hold its slot (a test that keeps more batches than the stream's depth)."""
    if isinstance(batch, dict):
        return {key: value.clone() for key, value in batch.items()}
    return [value.clone() for value in batch]


def _worker_pids(loader):
    return sorted(process.pid for process, _ in loader._own._workers)


@pytest.mark.parametrize("shuffle", [False, True])
def test_every_index_once_per_epoch_with_4_workers(socket_path, shuffle):
    n = 103
    loader = batchd.Loader(Squares(n), batch_size=8, num_workers=4, shuffle=shuffle, socket=socket_path)
    try:
        assert len(loader) == 13
        orders = []
        for _ in range(3):
            order = []
            for x, i in loader:
                assert x.shape[1:] == (3, 4) and x.dtype == torch.float32 and i.dtype == torch.int64
                assert torch.equal(x[:, 1, 2], i.float()), "each row holds its own sample"
                order += i.tolist()
            assert sorted(order) == list(range(n))
            orders.append(order)
        if shuffle:
            assert orders[0] != orders[1] != orders[2] and orders[0] != list(range(n))
        else:
            assert orders == [list(range(n))] * 3
        assert loader._own.replaced == 0
    finally:
        loader.close()


def test_drop_last_leaves_out_the_partial_batch_and_repeats_nothing(socket_path):
    loader = batchd.Loader(Squares(103), batch_size=10, num_workers=4, shuffle=True, drop_last=True,
                           socket=socket_path)
    try:
        assert len(loader) == 10
        for _ in range(2):
            batches = [_indices(b) for b in loader]
            assert [len(b) for b in batches] == [10] * 10
            flat = sum(batches, [])
            assert len(set(flat)) == 100 and set(flat) <= set(range(103))
    finally:
        loader.close()


def test_two_ranks_together_cover_every_index_once(socket_path):
    loaders = [batchd.Loader(Squares(100), batch_size=7, num_workers=2, shuffle=True, rank=r, world_size=2,
                             socket=socket_path) for r in (0, 1)]
    try:
        for _ in range(2):
            shares = [sum((_indices(b) for b in loader), []) for loader in loaders]
            assert len(shares[0]) == len(shares[1]) == 50
            assert sorted(shares[0] + shares[1]) == list(range(100))
    finally:
        for loader in loaders:
            loader.close()


def test_random_transforms_give_the_same_batches_with_1_and_4_workers(socket_path):
    runs = []
    for workers in (1, 4):
        loader = batchd.Loader(RandomAugment(30), batch_size=4, num_workers=workers, shuffle=True, seed=5,
                               socket=socket_path, seeding="per_sample")  # the option that keeps this rule
        try:
            runs.append([[_kept(b) for b in loader] for _ in range(2)])
        finally:
            loader.close()
    for epoch, (one, four) in enumerate(zip(*runs)):
        assert len(one) == len(four) == 8
        for a, b in zip(one, four):
            for x, y in zip(a, b):
                assert torch.equal(x, y), f"epoch {epoch}: 1 and 4 workers differ"
        for t, npy, py, i in one:  # the seeding rule: random, numpy and torch seeded from (seed, epoch, index)
            for k, index in enumerate(i.tolist()):
                seed_all(sample_seed(5, epoch, index))
                expected = RandomAugment(30)[index]
                assert torch.equal(t[k], expected[0]) and npy[k].tolist() == expected[1].tolist()
                assert py[k].item() == expected[2]
    first = {int(i): t[k] for t, _, _, idx in runs[0][0] for k, i in enumerate(idx)}
    second = {int(i): t[k] for t, _, _, idx in runs[0][1] for k, i in enumerate(idx)}
    assert not torch.equal(first[3], second[3]), "another epoch draws anew"
    assert not torch.equal(first[3], first[4]), "another index draws anew"


def test_get_worker_info_and_worker_init_fn_in_the_workers(socket_path, tmp_path, monkeypatch):
    monkeypatch.setenv("OWN_INIT_DIR", str(tmp_path))
    loader = batchd.Loader(WorkerInfoProbe(40), batch_size=5, num_workers=4, socket=socket_path,
                           worker_init_fn=init_worker, persistent_workers=True)  # worker_init_fn once per worker
    try:
        ids = set()
        for _ in range(2):
            for worker_id, num_workers, is_dataset, init_value, _ in loader:
                assert set(worker_id.tolist()) <= set(range(4))
                assert num_workers.tolist() == [4] * 5 and is_dataset.tolist() == [1] * 5
                assert init_value.tolist() == [100 + w for w in worker_id.tolist()], "worker_init_fn ran first"
                ids |= set(worker_id.tolist())
        assert len(ids) >= 2
        calls = sorted(os.listdir(tmp_path))  # "<worker id>.<pid>.<ns>", one per worker_init_fn call
        assert [c.split(".")[0] for c in calls] == ["0", "1", "2", "3"], "worker_init_fn runs once per worker"
        assert sorted(int(c.split(".")[1]) for c in calls) == _worker_pids(loader)
    finally:
        loader.close()


def test_getitems_is_used_when_defined_and_gives_the_same_batches(socket_path, tmp_path):
    runs = []
    for dataset in (Batched(64), BatchedWithGetitems(64, str(tmp_path))):
        loader = batchd.Loader(dataset, batch_size=8, num_workers=4, socket=socket_path)
        try:
            runs.append([_kept(b) for _ in range(2) for b in loader])
            pids = _worker_pids(loader)
        finally:
            loader.close()
    for a, b in zip(*runs):
        assert a.keys() == b.keys() == {"x", "i"}
        assert torch.equal(a["x"], b["x"]) and torch.equal(a["i"], b["i"])
    assert len(runs[0]) == len(runs[1]) == 16
    calls = {name: (tmp_path / name).read_text().split() for name in os.listdir(tmp_path)}  # "<pid>.<ns>": indices
    assert calls, "__getitems__ was never called"
    assert {int(name.split(".")[0]) for name in calls} <= set(pids), "in the workers"
    assert all(len(indices) > 1 for indices in calls.values())
    assert {int(i) for indices in calls.values() for i in indices} == set(range(64))


@pytest.mark.parametrize("context", ["spawn", "forkserver"])
def test_spawn_and_forkserver_contexts_with_a_dataset_from_a_module(socket_path, context):
    loader = batchd.Loader(Squares(37), batch_size=5, num_workers=2, shuffle=True, socket=socket_path,
                           multiprocessing_context=context)
    try:
        for _ in range(2):
            order = sum((_indices(b) for b in loader), [])
            assert sorted(order) == list(range(37))
    finally:
        loader.close()


def test_an_iterable_dataset_is_served_each_worker_iterating_its_copy(socket_path):
    """Once refused (TypeError); now DataLoader's batches (tests/python/test_own_iterable.py has the rest)."""
    loader = batchd.Loader(Stream(), batch_size=2, num_workers=2, socket=socket_path)
    try:
        assert [b.tolist() for b in loader] == [[0, 1], [0, 1], [2, 3], [2, 3]]
    finally:
        loader.close()


def test_a_dataset_without_len_is_refused(socket_path):
    with pytest.raises(TypeError, match=r"len\(NoLength\) raised TypeError: .* a map-style Dataset needs __len__"):
        batchd.Loader(NoLength(), batch_size=2, num_workers=2, socket=socket_path)


def test_a_dataset_whose_len_changes_is_refused_in_the_trainer_and_in_the_workers(socket_path):
    dataset = Resizable(20)
    loader = batchd.Loader(dataset, batch_size=4, num_workers=2, socket=socket_path, seeding="per_sample")
    try:
        dataset.n = 21  # batchd's sampler refuses it; DataLoader's (seeding="dataloader") reads the new length
        with pytest.raises(batchd.BatchdError, match=r"len\(Resizable\) is 21 now, 20 when the Loader was made: "
                                                     r"a Dataset's length must not change"):
            next(iter(loader))
    finally:
        loader.close()
    message = _first_pass_error(Resizable(20, in_workers=1), socket_path)
    assert "len(Resizable) is 21 in worker 0, but the stream was opened for 20 samples" in message, message


def _first_pass_error(dataset, socket_path):
    """The BatchdError message of the first next() of a Loader over `dataset` (the first pass takes the layout)."""
    loader = batchd.Loader(dataset, batch_size=2, num_workers=1, socket=socket_path, seeding="per_sample")
    try:
        with pytest.raises(batchd.BatchdError) as refused:
            next(iter(loader))
        return str(refused.value)
    finally:
        loader.close()


def test_a_string_field_is_collated_as_dataloader_collates_it(socket_path):
    """Issue 40: sample 0 fits no fixed layout, so the workers collate whole batches (test_collate.py has more)."""
    expected = list(torch.utils.data.DataLoader(WithString(), batch_size=3))
    loader = batchd.Loader(WithString(), batch_size=3, num_workers=1, socket=socket_path)
    try:
        count = 0  # compared as they come: each batch holds its slot while it lives
        for (x, names), (x_expected, names_expected) in zip(loader, expected):
            assert torch.equal(x, x_expected) and names == names_expected
            count += 1
    finally:
        loader.close()
    assert count == len(expected) == 3


def test_a_namedtuple_that_cannot_be_pickled_is_named_at_the_first_pass(socket_path):
    message = _first_pass_error(LocalPairs(), socket_path)
    assert "the layout of sample 0 (LocalPair) cannot be sent to the trainer: " in message, message
    assert "define it at the top level of a module" in message, message
    assert "__getitem__" not in message, "__getitem__ made the sample: it did not fail"


def _same(ours, theirs, where):
    """ours (a batchd batch) is default_collate's batch `theirs`: same structure, dtypes, shapes and values."""
    assert type(ours) is type(theirs), f"{where}: {type(ours).__name__}, default_collate: {type(theirs).__name__}"
    if isinstance(theirs, torch.Tensor):
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, (where, ours, theirs)
        assert torch.equal(ours, theirs), (where, ours, theirs)
    elif isinstance(theirs, dict):
        assert list(ours.keys()) == list(theirs.keys())
        for key in theirs:
            _same(ours[key], theirs[key], f"{where}[{key!r}]")
    else:
        assert len(ours) == len(theirs)
        for k, (a, b) in enumerate(zip(ours, theirs)):
            _same(a, b, f"{where}[{k}]")


@pytest.mark.parametrize("kind", ["tensor", "tuple", "list", "namedtuple", "dict"])
def test_batches_are_structured_and_typed_as_default_collate_makes_them(socket_path, kind):
    dataset = Kinds(10, kind)
    loader = batchd.Loader(dataset, batch_size=4, num_workers=2, socket=socket_path)
    try:
        batches = list(loader)
        assert len(batches) == 3
        for b, batch in enumerate(batches):
            _same(batch, default_collate([dataset[i] for i in range(4 * b, min(4 * b + 4, 10))]), f"batch {b}")
        if kind == "dict":
            dtypes = {key: value.dtype for key, value in batches[0].items()}
            assert dtypes == {"x": torch.float32, "i": torch.int64, "f": torch.float64, "b": torch.bool,
                              "i16": torch.int16, "i8": torch.int8, "f16": torch.float16, "f32": torch.float32,
                              "bf16": torch.bfloat16, "u8": torch.uint8}
    finally:
        loader.close()
