"""batchd.Loader on token datasets (format "tokens", pipeline "lm") against a real daemon: windows equal the
np.memmap slices, sampler semantics (every window once per epoch, ranks, resume), as_tuple, and bad token files
refused alone with their reasons."""
import math
import os

import numpy as np
import pytest
import torch

import batchd


def lm_loader(daemon, dataset, **kw):
    kw.setdefault("pipeline", "lm")
    kw.setdefault("batch_size", 32)
    return batchd.Loader(dataset, socket=daemon.sock, **{"as_dict": True, "shuffle": True, **kw})


def windows(daemon, name):
    mm, t = daemon.memmap(name)
    return (len(mm) - 1) // t


def indices(batches):
    return [i for b in batches for i in b["index"].tolist()]


def assert_windows_equal_memmap(daemon, name, batch):
    mm, t = daemon.memmap(name)
    for k, i in enumerate(batch["index"].tolist()):
        expected = torch.from_numpy(mm[i * t: i * t + t + 1].astype(np.int64))
        assert torch.equal(batch["input_ids"][k], expected[:-1]), f"{name} sample {i}: input_ids"
        assert torch.equal(batch["targets"][k], expected[1:]), f"{name} sample {i}: targets"


@pytest.mark.parametrize("name", ["text16", "rand32"])
def test_every_window_equals_the_memmap_slices_once_per_epoch(token_daemon, name):
    n = windows(token_daemon, name)
    l = lm_loader(token_daemon, name, seed=3)
    assert len(l) == math.ceil(n / 32)
    seen = []
    for batch in l:
        assert set(batch) == {"input_ids", "targets", "index"}
        b, t = batch["input_ids"].shape
        assert t == token_daemon.datasets[name][2] and batch["targets"].shape == (b, t)
        assert batch["input_ids"].dtype == torch.int64 and batch["targets"].dtype == torch.int64
        assert batch["index"].dtype == torch.int64 and batch["index"].shape == (b,)
        assert_windows_equal_memmap(token_daemon, name, batch)
        seen += batch["index"].tolist()
    assert sorted(seen) == list(range(n)), "every window exactly once"
    assert seen != sorted(seen), "shuffled"


def test_uint32_tokens_keep_values_above_uint16(token_daemon):
    batch = next(iter(lm_loader(token_daemon, "rand32", batch_size=64)))
    assert batch["input_ids"].max().item() > 2**31, "uint32 values must not be truncated or sign-extended"
    assert batch["input_ids"].min().item() >= 0


def test_ranks_read_every_window_exactly_once_like_distributed_sampler(token_daemon):
    n = windows(token_daemon, "rand32")
    assert n == 400
    seen = []
    for rank in range(4):
        l = lm_loader(token_daemon, "rand32", seed=9, rank=rank, world_size=4, batch_size=16)
        l.set_epoch(2)
        assert len(l) == math.ceil(100 / 16)
        mine = []
        for batch in l:
            assert_windows_equal_memmap(token_daemon, "rand32", batch)
            mine += batch["index"].tolist()
        assert len(mine) == 100
        seen += mine
    assert sorted(seen) == list(range(400))


def test_state_dict_resumes_mid_epoch_with_the_same_windows(token_daemon):
    full = indices(lm_loader(token_daemon, "text16", seed=4))
    l = lm_loader(token_daemon, "text16", seed=4)
    it = iter(l)
    head = [i for _ in range(3) for i in next(it)["index"].tolist()]
    state = l.state_dict()
    assert state == {"epoch": 0, "batches_yielded": 3, "seed": 4}
    del it
    resumed = lm_loader(token_daemon, "text16", seed=4)
    resumed.load_state_dict(state)
    rest = []
    for batch in resumed:
        assert_windows_equal_memmap(token_daemon, "text16", batch)
        rest += batch["index"].tolist()
    assert head + rest == full


def test_as_tuple_yields_input_ids_and_targets(token_daemon):
    as_dict = next(iter(lm_loader(token_daemon, "rand32", shuffle=False)))
    x, y = next(iter(lm_loader(token_daemon, "rand32", shuffle=False, as_dict=False)))
    assert torch.equal(x, as_dict["input_ids"]) and torch.equal(y, as_dict["targets"])
    assert torch.equal(x[:, 1:], y[:, :-1]), "targets are the inputs shifted by one"
    image, label = next(iter(batchd.Loader("fashion-mnist-test", pipeline="fmnist", batch_size=8,
                                           socket=token_daemon.sock)))
    assert image.shape == (8, 1, 28, 28) and label.shape == (8,), "image streams still yield (image, label)"


def test_bad_token_files_are_refused_alone_with_their_reasons(token_daemon):
    bad_size = token_daemon.datasets["bad-size"][0]
    with pytest.raises(batchd.BatchdError, match="could not be opened: " + bad_size +
                       r" holds 7 bytes, not a whole number of uint16 tokens \(2 bytes each\)"):
        len(lm_loader(token_daemon, "bad-size"))
    too_short = token_daemon.datasets["too-short"][0]
    with pytest.raises(batchd.BatchdError, match="datasets.too-short.seq_len = 64 is not smaller than the 10 tokens "
                       "in " + too_short):
        len(lm_loader(token_daemon, "too-short"))
    # The others serve meanwhile.
    assert len(indices(lm_loader(token_daemon, "rand32"))) == 400


def test_pipelines_and_datasets_of_other_kinds_are_refused_by_name(token_daemon):
    with pytest.raises(batchd.BatchdError, match="pipeline 'lm' needs a token dataset .* 'fashion-mnist-test' is idx"):
        next(iter(batchd.Loader("fashion-mnist-test", as_dict=True, shuffle=True, pipeline="lm", socket=token_daemon.sock)))
    with pytest.raises(batchd.BatchdError, match="pipeline 'fmnist' needs an idx dataset; 'rand32' is tokens"):
        next(iter(lm_loader(token_daemon, "rand32", pipeline="fmnist")))
    with pytest.raises(batchd.BatchdError, match="pipeline 'lm' takes no vision options"):
        len(lm_loader(token_daemon, "rand32", crop_size=128))


def test_a_file_truncated_while_served_fails_or_skips_the_windows_it_lost_without_crashing_workers(token_daemon):
    path = token_daemon.datasets["cut16"][0]
    assert len(indices(lm_loader(token_daemon, "cut16"))) == 100
    os.truncate(path, 2 * (64 * 50 + 1))  # windows 0..49 remain
    # The workers check the file's size per batch: a window past the end is a per-sample error naming the file (a
    # read of it would have killed the worker with SIGBUS: "crashed 2 workers (killed by signal Bus error ...)").
    with pytest.raises(batchd.BatchdError, match=path + r": tokens \[\d+, \d+\) is no longer in the file: it was "
                       "truncated to 6402 bytes"):
        indices(lm_loader(token_daemon, "cut16", shuffle=False))
    skipping = lm_loader(token_daemon, "cut16", on_error="skip", batch_size=10)
    seen = []
    for batch in skipping:
        assert_windows_equal_memmap(token_daemon, "cut16", batch)
        seen += batch["index"].tolist()
    assert len(seen) == 100 and set(seen) == set(range(50)), "lost windows are replaced by windows still there"


def test_the_lm_preset_is_a_token_window_spec_with_the_streams_seq_len(token_daemon):
    assert lm_loader(token_daemon, "rand32").spec["ops"] == [{"op": "token_window", "sampling": "tiled", "seq_len": 48}]
    assert lm_loader(token_daemon, "rand32", seq_len=16, sampling="random").spec["ops"] == [
        {"op": "token_window", "sampling": "random", "seq_len": 16}]
