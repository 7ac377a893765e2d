"""nanoGPT-style token sampling through batchd.Loader against a real daemon (token_daemon): seq_len chosen per
stream (tiled and random windows equal to the np.memmap slices), random windows per rank and per step, resumed by
load_state_dict, and endless iteration past the end of an epoch."""
import numpy as np
import pytest
import torch

import batchd


def lm_loader(daemon, dataset="text16", **kw):
    kw.setdefault("batch_size", 16)
    kw.setdefault("as_dict", True)
    return batchd.Loader(dataset, socket=daemon.sock, pipeline="lm", **kw)


def check_rows(daemon, name, batch, t, stride):
    """Every row is the memmap window of T + 1 tokens at index * stride, split into inputs and targets."""
    mm, _ = daemon.memmap(name)
    b = batch["index"].shape[0]
    assert batch["input_ids"].shape == (b, t) and batch["targets"].shape == (b, t)
    assert batch["input_ids"].dtype == torch.int64 and batch["targets"].dtype == torch.int64
    assert torch.equal(batch["input_ids"][:, 1:], batch["targets"][:, :-1]), "targets are the inputs shifted by one"
    for k, i in enumerate(batch["index"].tolist()):
        w = torch.from_numpy(mm[i * stride: i * stride + t + 1].astype(np.int64))
        assert torch.equal(batch["input_ids"][k], w[:-1]) and torch.equal(batch["targets"][k], w[1:]), (name, i)


def take(loader, batches, each=lambda batch: batch["index"].tolist()):
    """each(batch) of the first `batches` batches of one iteration (no batch is held: the slots go back)."""
    it = iter(loader)
    return [each(next(it)) for _ in range(batches)]


def first_indices(loader, batches):
    return take(loader, batches)


@pytest.mark.parametrize("t", [1, 5, 64, 128, 1000, 4097])
def test_any_seq_len_gives_rows_of_t_equal_to_the_memmap_tiled_or_at_random_offsets(token_daemon, t):
    mm, _ = token_daemon.memmap("text16")
    n = len(mm)
    tiled = lm_loader(token_daemon, seq_len=t, shuffle=True, seed=1)
    assert len(tiled.dataset) == (n - 1) // t, "the windows of this T, not of the dataset's seq_len (128)"
    assert len(tiled) == -(-((n - 1) // t) // 16)
    take(tiled, min(3, len(tiled)), lambda batch: check_rows(token_daemon, "text16", batch, t, stride=t))
    random = lm_loader(token_daemon, seq_len=t, sampling="random", seed=1)
    assert len(random.dataset) == n - t, "one sample per offset 0 .. N - T - 1"
    assert len(random) == max(1, (n - 1) // t // 16)
    drawn = take(random, min(3, len(random)), lambda batch: check_rows(token_daemon, "text16", batch, t, stride=1)
                 or batch["index"].tolist())
    assert all(0 <= i <= n - t - 1 for batch in drawn for i in batch)


def test_the_last_offset_is_drawn_and_its_last_target_is_the_last_token(token_daemon):
    # rand32: N = 19218; T = 19214 leaves offsets 0..3: all four are drawn, and offset 3 ends at token N - 1.
    mm, _ = token_daemon.memmap("rand32")
    t = len(mm) - 4
    loader = lm_loader(token_daemon, "rand32", seq_len=t, sampling="random", batch_size=4, endless=True)
    drawn = take(loader, 8, lambda batch: check_rows(token_daemon, "rand32", batch, t, stride=1)
                 or batch["index"].tolist())
    assert {i for batch in drawn for i in batch} == {0, 1, 2, 3}


def test_random_windows_differ_per_rank_and_per_step_and_repeat_for_the_same_seed(token_daemon):
    per_rank = [first_indices(lm_loader(token_daemon, sampling="random", seq_len=64, seed=5, rank=r, world_size=4), 3)
                for r in range(4)]
    flat = [i for rank in per_rank for batch in rank for i in batch]
    assert len(set(flat)) >= len(flat) - 4, "ranks draw their own windows (a few may meet by chance)"
    assert per_rank[0][0] != per_rank[0][1], "each step draws anew"
    again = first_indices(lm_loader(token_daemon, sampling="random", seq_len=64, seed=5, rank=2, world_size=4), 3)
    assert again == per_rank[2], "(seed, rank, step) fixes the draws"
    other_seed = first_indices(lm_loader(token_daemon, sampling="random", seq_len=64, seed=6, rank=2, world_size=4), 1)
    assert other_seed[0] != per_rank[2][0]
    n = len(token_daemon.memmap("text16")[0])
    l = lm_loader(token_daemon, sampling="random", seq_len=64, rank=1, world_size=4)
    assert len(l) == (n - 1) // 64 // (16 * 4), "an epoch: one pass of the file shared by the ranks"


@pytest.mark.parametrize("endless", [False, True])
def test_load_state_dict_resumes_with_the_same_random_windows(token_daemon, endless):
    # rand32 with T = 48: 400 windows, 12 batches of 32 an epoch; 20 batches cross an epoch boundary when endless.
    kw = dict(seq_len=48, sampling="random", batch_size=32, seed=3, endless=endless)
    steps = 20 if endless else 12  # not endless: the resumed pass reads to the end of epoch 0
    full = first_indices(lm_loader(token_daemon, "rand32", **kw), steps)
    first = lm_loader(token_daemon, "rand32", **kw)
    it = iter(first)
    head = [next(it)["index"].tolist() for _ in range(7)]
    state = first.state_dict()
    assert (state["epoch"], state["batches_yielded"], state["seed"]) == (0, 7, 3)
    assert state.get("step") == (7 if endless else None)
    del it
    resumed = lm_loader(token_daemon, "rand32", **kw)
    resumed.load_state_dict(state)
    rest = first_indices(resumed, steps - 7) if endless else [b["index"].tolist() for b in resumed]
    assert head + rest == full
    if endless:
        assert resumed.state_dict()["step"] == steps and resumed.state_dict()["epoch"] == 1


def test_an_endless_loader_goes_past_its_epochs_and_a_new_iter_continues(token_daemon):
    # Tiled, in order: 400 windows in 13 batches of 32 (the last has 16); endless, one iterator reads on.
    l = lm_loader(token_daemon, "rand32", batch_size=32, endless=True)
    assert len(l) == 13
    it = iter(l)
    sizes, indices = [], []
    for _ in range(30):
        batch = next(it)
        check_rows(token_daemon, "rand32", batch, 48, stride=48)
        sizes.append(batch["index"].shape[0])
        indices.append(batch["index"].tolist())
    assert sizes[12] == 16 and sizes[25] == 16, "each epoch still ends with its short batch"
    assert indices[13] == list(range(32)) and indices[26] == list(range(32)), "then the next epoch starts"
    assert l.state_dict() == {"epoch": 2, "batches_yielded": 4, "seed": 0, "step": 30}
    del it
    batch = next(iter(l))  # a new iteration continues where the last one stopped
    assert batch["index"].tolist() == list(range(4 * 32, 5 * 32)) and l.state_dict()["step"] == 31
    random = lm_loader(token_daemon, "rand32", sampling="random", seq_len=48, batch_size=32, endless=True,
                       as_dict=False)
    it = iter(random)
    for _ in range(3 * 12 + 1):  # three epochs of 12 and one more batch, with nanoGPT's unpacking
        x, y = next(it)
    assert x.shape == (32, 48) and torch.equal(x[:, 1:], y[:, :-1])
    assert random.state_dict()["epoch"] == 3 and random.state_dict()["step"] == 37


def test_bad_lm_options_are_refused_naming_the_cause(token_daemon):
    n = len(token_daemon.memmap("text16")[0])
    with pytest.raises(batchd.BatchdError, match=f"seq_len {n} needs windows of {n + 1} tokens, and 'text16' holds "
                       f"{n}: lower seq_len to at most {n - 1}"):
        len(lm_loader(token_daemon, seq_len=n))
    for bad in (0, -3, 2.5, True, 1 << 25):
        with pytest.raises(ValueError, match="seq_len must be an int in"):
            lm_loader(token_daemon, seq_len=bad)
    with pytest.raises(ValueError, match="sampling must be one of 'tiled'"):
        lm_loader(token_daemon, sampling="shuffled")
    with pytest.raises(batchd.BatchdError, match="seq_len and sampling are options of pipeline 'lm'"):
        len(batchd.Loader("fashion-mnist-test", 8, pipeline="fmnist", sampling="random", socket=token_daemon.sock))
    with pytest.raises(batchd.BatchdError, match="an endless stream must be private"):
        next(iter(lm_loader(token_daemon, endless=True, share="lm-endless")))
