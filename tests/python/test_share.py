"""batchd.Loader(share=...) against a real daemon: one production read by several Loaders."""
import warnings

import pytest
import torch

import batchd


def loader(sock, share, batch_size=500, **kw):
    return batchd.Loader("fashion-mnist-test", as_dict=True, shuffle=True, pipeline="fmnist", batch_size=batch_size, seed=3, socket=sock,
                         share=share, **kw)


def test_three_loaders_read_the_same_batches_from_one_share(socket_path):
    loaders = [loader(socket_path, "py-three") for _ in range(3)]
    assert all(len(ld) == 20 for ld in loaders)  # 10,000 samples / 500
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # read-only arrays must not warn at every batch
        for epoch in range(2):
            seen = set()
            for a, b, c in zip(*loaders):
                assert torch.equal(a["image"], b["image"]) and torch.equal(a["image"], c["image"])
                assert torch.equal(a["index"], b["index"]) and torch.equal(a["label"], c["label"])
                seen.update(a["index"].tolist())
            assert len(seen) == 10000, f"epoch {epoch}"
    state = loaders[0].state_dict()
    assert state["share"] == "py-three" and state["epoch"] == 1 and state["batches_yielded"] == 20
    for ld in loaders:
        ld.close()


def test_a_late_loader_reads_a_whole_epoch_in_its_own_order(socket_path):
    first = loader(socket_path, "py-late", depth=2, batch_size=100)  # 100 batches per epoch
    first_it = iter(first)
    # A few batches, released as read: the late loader misses fewer than shares.max_lag (8), so the first one never
    # waits on its remade batches long enough to drop it (share.h; the C++ test covers a long catch-up).
    first_batches = [next(first_it)["index"].clone() for _ in range(4)]
    late = loader(socket_path, "py-late", depth=2, batch_size=100)
    late_it = iter(late)
    late_batches = [next(late_it)["index"].clone()]
    joined, n = late.state_dict()["joined_at_batch"], len(late)
    assert 0 < joined < n and late.state_dict()["epoch"] == 0
    # In step with the first loader while reading the production's batches; then its remade ones alone.
    for _ in range(1, n):
        if len(first_batches) < n:
            first_batches.append(next(first_it)["index"].clone())
        late_batches.append(next(late_it)["index"].clone())
    assert len(first_batches) == n and len(late_batches) == n
    assert sorted(torch.cat(late_batches).tolist()) == list(range(10000))
    expected = first_batches[joined:] + first_batches[:joined]  # batches j..99, then 0..j-1 remade
    assert all(torch.equal(x, y) for x, y in zip(late_batches, expected))
    assert late.state_dict()["joined_at_batch"] == joined
    first.close()
    late.close()


def test_a_share_with_other_options_is_refused_naming_the_option(socket_path):
    a = loader(socket_path, "py-strict")
    a_it = iter(a)
    next(a_it)  # a subscribes (and stays: its pass is under way)
    b = batchd.Loader("fashion-mnist-test", as_dict=True, shuffle=True, pipeline="fmnist", batch_size=250, seed=3, socket=socket_path,
                      share="py-strict")
    with pytest.raises(batchd.BatchdError, match="reads batch_size 500; this stream asks for batch_size 250"):
        next(iter(b))
    del a_it
    a.close()


def test_three_loaders_at_one_speed_joined_0_20_40_batches_in_all_finish(socket_path):
    """Issue 43, 9: three trainers reading at the same speed, the second joined 20 batches in and the third 40 (more
    than shares.max_lag = 8 missed each). While the late ones read their remade batches the first waits for them at
    its epoch end; they keep taking batches, so none is dropped (before: the late ones failed "fell N batches behind"
    at the first one's epoch end). Each reads its 2 epochs whole, every sample once an epoch."""
    import threading
    import time

    results, errors = {}, {}
    started = {0: threading.Event(), 20: threading.Event(), 40: threading.Event()}
    progress = [0]
    started[0].set()

    def trainer(join_at):
        started[join_at].wait(60)
        ld = loader(socket_path, "py-equal", depth=2, batch_size=100)  # 100 batches per epoch
        try:
            epochs, joined = [], None
            for _ in range(2):
                seen = []
                for b in ld:
                    if joined is None:
                        joined = ld.state_dict()["joined_at_batch"]
                    seen.extend(b["index"].tolist())
                    time.sleep(0.005)  # the same step time for all three
                    if join_at == 0:
                        progress[0] += 1
                        for at, ev in started.items():
                            if progress[0] >= at:
                                ev.set()
                epochs.append(sorted(seen))
            results[join_at] = (epochs, joined)
        except Exception as e:  # noqa: BLE001 - reported below with the trainer it came from
            errors[join_at] = e
        finally:
            ld.close()

    threads = [threading.Thread(target=trainer, args=(at,)) for at in (0, 20, 40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    assert not errors, errors
    assert sorted(results) == [0, 20, 40]
    for at, (epochs, joined) in results.items():
        assert all(e == list(range(10000)) for e in epochs), f"joined at {at}"
    assert results[20][1] >= 20 - 2 and results[40][1] >= 40 - 2, {at: r[1] for at, r in results.items()}
