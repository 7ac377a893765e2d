"""batchd.Loader against a real daemon: shapes, values, sampler semantics, resume, leases, errors."""
import gc
import gzip
import math
import warnings

import numpy as np
import pytest
import torch

import batchd

FMNIST = "/usr/share/datasets/fashion-mnist"


def loader(sock, dataset="fashion-mnist-test", **kw):
    kw.setdefault("pipeline", "fmnist")
    kw.setdefault("batch_size", 100)
    return batchd.Loader(dataset, socket=sock, **{"as_dict": True, "shuffle": True, **kw})


def indices(batches):
    return [i for b in batches for i in b["index"].tolist()]


def test_shapes_dtypes_and_len_like_dataloader(socket_path):
    l = loader(socket_path, "fashion-mnist", batch_size=256)
    assert len(l) == math.ceil(60000 / 256)
    batch = next(iter(l))
    assert set(batch) == {"image", "label", "index"}
    assert batch["image"].dtype == torch.float32 and batch["image"].shape == (256, 1, 28, 28)
    assert batch["label"].dtype == torch.int64 and batch["label"].shape == (256,)
    assert batch["index"].dtype == torch.int64
    image, label = next(iter(loader(socket_path, as_dict=False)))
    assert image.shape == (100, 1, 28, 28) and label.shape == (100,)


def test_values_equal_torchvision_to_tensor_and_normalize(socket_path):
    import torchvision.transforms as tv  # the project venv has it: a missing reference fails, never skips
    with gzip.open(f"{FMNIST}/t10k-images-idx3-ubyte.gz") as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28).copy()
    with gzip.open(f"{FMNIST}/t10k-labels-idx1-ubyte.gz") as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    transform = tv.Compose([tv.ToTensor(), tv.Normalize((0.2860,), (0.3530,))])
    for n, batch in enumerate(loader(socket_path)):
        for k, i in enumerate(batch["index"].tolist()[:10]):
            assert torch.equal(batch["image"][k], transform(images[i])), f"sample {i}"
            assert batch["label"][k].item() == labels[i]
        if n == 3:
            break


def test_the_fmnist_preset_is_a_spec_and_the_same_ops_sent_as_a_spec_make_the_same_batches(socket_path):
    preset = loader(socket_path, shuffle=False)
    assert [op["op"] for op in preset.spec["ops"]] == ["idx_image", "to_tensor", "normalize"]
    assert preset.spec["ops"][2]["mean"] == [0.286] and preset.spec["ops"][2]["std"] == [0.353]
    ops = [{"op": "idx_image"}, {"op": "to_tensor"}, {"op": "normalize", "mean": [0.2860], "std": [0.3530]}]
    own = batchd.Loader("fashion-mnist-test", transform=ops, batch_size=100, as_dict=True, shuffle=False,
                        socket=socket_path)
    assert own.spec == preset.spec
    a, b = next(iter(preset)), next(iter(own))
    assert torch.equal(a["image"], b["image"]) and torch.equal(a["label"], b["label"])
    assert [op["op"] for op in loader(socket_path, pipeline="fmnist_u8").spec["ops"]] == ["idx_image", "pil_to_tensor"]


def test_every_index_once_per_epoch_and_set_epoch_controls_order(socket_path):
    l = loader(socket_path, seed=7)
    l.set_epoch(3)
    first = indices(l)
    assert sorted(first) == list(range(10000))
    l.set_epoch(3)
    assert indices(l) == first, "same (seed, epoch): same order"
    l.set_epoch(4)
    assert indices(l) != first
    auto = loader(socket_path, seed=7)
    a, b = indices(auto), indices(auto)
    assert a != b, "without set_epoch every complete pass reshuffles, like RandomSampler"


def test_ranks_shard_exactly_like_distributed_sampler(socket_path):
    seen = []
    for rank in range(4):
        l = loader(socket_path, seed=1, rank=rank, world_size=4)
        assert len(l) == 25
        seen += indices(l)
    assert sorted(seen) == list(range(10000))


def test_state_dict_resumes_after_the_last_batch_yielded(socket_path):
    full = indices(loader(socket_path, seed=5))
    l = loader(socket_path, seed=5)
    it = iter(l)
    head = []
    for _ in range(37):
        head += next(it)["index"].tolist()
    state = l.state_dict()
    assert state == {"epoch": 0, "batches_yielded": 37, "seed": 5}
    del it
    resumed = loader(socket_path, seed=5)
    resumed.load_state_dict(state)
    assert head + indices(resumed) == full


def test_a_held_tensor_stays_intact_past_later_batches(socket_path):
    it = iter(loader(socket_path, depth=2, shuffle=False))
    first = next(it)
    kept, copy = first["image"], first["image"].clone()
    del first
    for _ in range(5):  # the other slot is recycled five times meanwhile
        next(it)
    assert torch.equal(kept, copy), "the slot of a held tensor must not be reused"


def test_slots_are_recycled_as_soon_as_tensors_are_freed(socket_path):
    # depth 2 and 100 batches: only works if each batch's slot returns when its tensors go away.
    assert len(indices(loader(socket_path, depth=2))) == 10000


def test_holding_every_slot_raises_instead_of_hanging(socket_path):
    it = iter(loader(socket_path, depth=2))
    held = [next(it), next(it)]
    with pytest.raises(batchd.BatchdError, match="slots .* are held"):
        next(it)
    del held
    gc.collect()


def test_default_depth_is_one_more_than_the_daemons(socket_path):
    # The daemon's default is 4 slots; the loop variable holds one batch while the next is fetched, so a Loader
    # without depth asks for 5: five batches can be held at once, a sixth cannot.
    it = iter(loader(socket_path))
    held = [next(it) for _ in range(5)]
    with pytest.raises(batchd.BatchdError, match="5 slots .* are held"):
        next(it)
    del held
    gc.collect()


@pytest.mark.parametrize("strategy", ["file_descriptor", "file_system"])
def test_tensors_are_writable_views_of_ones_own_batch(socket_path, strategy):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch.from_numpy warns on a read-only array: the Loader's must be writable
        batch = next(iter(loader(socket_path, strategy=strategy)))
    batch["image"].sub_(1.0)  # in place: changes only this batch
    assert batch["image"].min() < -1.0


def test_daemon_errors_become_batchd_errors_with_the_message(socket_path):
    with pytest.raises(batchd.BatchdError, match="not declared in the daemon's config"):
        iter(loader(socket_path, "imagenet")).__next__()
    with pytest.raises(batchd.BatchdError, match="unknown pipeline 'resnet'"):
        len(loader(socket_path, pipeline="resnet"))
    with pytest.raises(batchd.BatchdError, match="no batchd is listening"):
        batchd.Loader("x", as_dict=True, shuffle=True, pipeline="fmnist", socket="/tmp/batchd-nowhere/batchd.sock")


def test_cuda_device_without_a_gpu_is_a_clear_error(socket_path):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(batchd.BatchdError, match="needs a CUDA GPU"):
        loader(socket_path, device="cuda")


def test_device_stream_without_a_gpu_is_unavailable_and_the_host_path_still_works(socket_path):
    from batchd import _batchd
    if not _batchd.has_cuda:
        assert "built without its CUDA path" in _batchd.cuda_unavailable_reason
        pytest.skip("batchd was built without its CUDA path")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    client = _batchd.Client(socket_path)
    with pytest.raises(batchd.BatchdError, match="no CUDA device") as err:
        client.open_device_stream(0, dataset="fashion-mnist-test", pipeline="fmnist", batch_size=100)
    assert err.value.code == "unavailable"
    # The host path still serves this connection.
    stream = client.open_stream(dataset="fashion-mnist-test", pipeline="fmnist", batch_size=100)
    assert stream.info["id"] > 0 and stream.next().size == 100
    stream.close()
