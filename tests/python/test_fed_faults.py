"""Faults of the passes whose sampler runs in the trainer (client/python/batchd/_own/fed_pass.py), each once a hang
or a wrong error (a review of issue 40's round robin and IterableDataset): a pass after one whose first batches all
raised, a first round past the Loader's timeout, an IterableDataset's worker that died between passes or during one.
Against a real daemon."""
import os
import tempfile
import time

import pytest
import torch
from torch.utils.data import Dataset, IterableDataset, get_worker_info

import batchd

pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create")


class FirstBatchesRaise(Dataset):
    def __len__(self):
        return 20

    def __getitem__(self, i):
        if i < 4:
            raise ValueError(f"sample {i} is bad")
        return torch.tensor([i])


def one_pass(loader):
    """(the batches, the number of exceptions) of a pass that goes on after each exception."""
    it, got, errors = iter(loader), [], 0
    while True:
        try:
            got.append(next(it).flatten().tolist())
        except StopIteration:
            return got, errors
        except ValueError:
            errors += 1


@pytest.mark.parametrize("workers", [0, 2])
def test_a_pass_after_one_whose_first_batches_all_raised_runs(sock, workers):
    """Its first round learned no slot size; the next pass's first round must not wait on workers serving the
    stream the last pass left open."""
    loader = batchd.Loader(FirstBatchesRaise(), socket=sock, batch_size=2, num_workers=workers, timeout=60)
    try:
        for _ in range(2):
            assert one_pass(loader) == ([[i, i + 1] for i in range(4, 20, 2)], 2)
    finally:
        loader.close()


class SlowFirstSample(Dataset):
    def __init__(self, mark):
        self.mark = mark

    def __len__(self):
        return 12

    def __getitem__(self, i):
        if i == 0 and not os.path.exists(self.mark):
            open(self.mark, "w").close()
            time.sleep(3)
        return torch.tensor([i])


def test_a_first_round_past_the_timeout_is_asked_again_by_the_next_next(sock):
    with tempfile.TemporaryDirectory() as tmp:
        loader = batchd.Loader(SlowFirstSample(os.path.join(tmp, "slow")), socket=sock, batch_size=2, num_workers=2,
                               timeout=1)
        try:
            it, got, timeouts = iter(loader), [], 0
            while True:
                try:
                    got.append(next(it).flatten().tolist())
                except StopIteration:
                    break
                except RuntimeError as e:
                    assert "DataLoader timed out after 1 seconds" in str(e), e
                    timeouts += 1
                    assert timeouts < 5
            assert got == [[i, i + 1] for i in range(0, 12, 2)] and timeouts >= 1
        finally:
            loader.close()


class Shards(IterableDataset):
    """Worker w yields 100 * w + k for k < 6."""

    def __iter__(self):
        w = get_worker_info().id
        return iter(range(100 * w, 100 * w + 6))


@pytest.mark.parametrize("persistent", [False, True])
def test_an_iterable_datasets_worker_dead_between_passes_is_replaced_quietly(sock, persistent):
    loader = batchd.Loader(Shards(), socket=sock, batch_size=2, num_workers=2, persistent_workers=persistent)
    try:
        first = [b.tolist() for b in loader]
        assert first == [[0, 1], [100, 101], [2, 3], [102, 103], [4, 5], [104, 105]]
        for entry in loader._own._workers:
            os.kill(entry[0].pid, 9)
        time.sleep(0.5)
        assert [b.tolist() for b in loader] == first
    finally:
        loader.close()


def test_a_worker_too_late_for_a_stream_that_failed_is_no_failure_of_the_loader(sock):
    """A stream can fail (a bad sample) before its last worker attaches: that worker's attach error is not the
    Loader's (the stream's own failure says why), where one for a stream that is still open is (it raised in CI as
    "worker 2 cannot attach to stream 6: stream 6 has ended or failed" instead of the sample's ValueError)."""
    from batchd._own.worker_main import ATTACH_FAILED
    from batchd._own.worker_pool import WorkerPool
    pool = WorkerPool(FirstBatchesRaise(), 3, None, None, 0, sock, {})
    pool._stream_id = 6
    pool._check_message(2, (ATTACH_FAILED, 6, "worker 2 cannot attach to stream 6: stream 6 has ended or failed"))
    pool._check_message(2, (ATTACH_FAILED, 5, "worker 2 cannot attach to stream 5: no stream 5 of uid 0"))
    with pytest.raises(batchd.BatchdError, match="already has 64 attached workers"):
        pool._check_message(2, (ATTACH_FAILED, 6, "worker 2 cannot attach to stream 6: stream 6 already has 64 "
                                                  "attached workers (limits.max_attached_workers)"))


def test_a_batchd_error_made_in_python_has_code_none():
    """The Loader raises BatchdErrors of its own (a lost worker, a timeout's wrapper): every BatchdError has .code,
    None for those, so code that tells errors apart by it never meets an AttributeError."""
    assert batchd.BatchdError("batchd.Loader: worker 1 was killed").code is None
    with pytest.raises(batchd.BatchdError) as caught:
        batchd.Loader([1, 2, 3], socket="/nonexistent/batchd.sock", batch_size=2, num_workers=1).__iter__()
    assert caught.value.code is not None  # the client library's: it has its class
