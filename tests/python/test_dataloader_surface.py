"""batchd.Loader as DataLoader's drop-in (issue 25): its signature, attributes, element, and each row of the table of
DataLoader's arguments (mapped, ignored, refused), against a real daemon. An ImageFolder object as the dataset:
test_loader_image_folder.py."""
import tempfile
import warnings

import pytest
import torch
from torch.utils.data import (DistributedSampler, RandomSampler, SequentialSampler, SubsetRandomSampler,
                              default_collate)

import batchd
import batchd._loader.dataloader_args
from conftest import _run_daemon

N = 10000  # fashion-mnist-test


def make(sock, *args, **kw):
    kw.setdefault("pipeline", "fmnist")
    return batchd.Loader("fashion-mnist-test", *args, socket=sock, **kw)


def order(loader, batches=3):
    """The dataset indices of the first `batches` batches of an as_dict Loader."""
    out = []
    it = iter(loader)
    for _ in range(batches):
        out += next(it)["index"].tolist()
    loader.close()
    return out


def test_batch_size_is_positional_and_the_element_is_dataloaders_tuple(socket_path):
    image, label = next(iter(make(socket_path, 50)))
    assert image.shape == (50, 1, 28, 28) and image.dtype == torch.float32 and label.shape == (50,)
    batch = next(iter(make(socket_path, 50, as_dict=True)))
    assert set(batch) == {"image", "label", "index"}


def test_shuffle_defaults_to_false_as_in_dataloader(socket_path):
    assert order(make(socket_path, 100, as_dict=True)) == list(range(300))


def test_attributes(socket_path):
    loader = make(socket_path, 100, num_workers=3, pin_memory=False, drop_last=True)
    assert (loader.batch_size, loader.num_workers, loader.pin_memory, loader.drop_last) == (100, 3, False, True)
    assert len(loader.dataset) == N and loader.dataset.name == "fashion-mnist-test"
    assert len(loader.sampler) == N and len(loader) == N // 100
    loader.sampler.set_epoch(7)
    assert loader.sampler.epoch == 7 and loader.state_dict()["epoch"] == 0
    with pytest.raises(TypeError, match="read by the daemon"):
        loader.dataset[0]
    # DataLoader's BatchSampler over .sampler, as Lightning's shuffle check and timm's set_epoch helper read it.
    batches = loader.batch_sampler
    assert batches.sampler is loader.sampler and len(batches) == len(loader) and (batches.batch_size,
                                                                                  batches.drop_last) == (100, True)
    assert not hasattr(batches, "set_epoch")  # as BatchSampler: timm then calls loader.sampler.set_epoch


def test_a_distributed_sampler_gives_the_shares_of_rank_and_world_size_and_its_set_epoch_counts(socket_path):
    sampler = DistributedSampler(range(N), num_replicas=2, rank=1, shuffle=True, seed=5)
    by_sampler = make(socket_path, 100, sampler=sampler, as_dict=True)
    assert by_sampler.sampler is sampler and (by_sampler.rank, by_sampler.world_size) == (1, 2)
    by_ranks = make(socket_path, 100, shuffle=True, seed=5, rank=1, world_size=2, as_dict=True)
    assert order(by_sampler) == order(by_ranks)
    sampler.set_epoch(3)  # as scripts do on their own sampler
    by_ranks.set_epoch(3)
    third = order(by_sampler)
    assert third == order(by_ranks) and third != order(make(socket_path, 100, shuffle=True, seed=5, rank=1,
                                                               world_size=2, as_dict=True))


@pytest.mark.parametrize("sampler_drops, loader_drops", [(False, False), (True, False), (False, True), (True, True)])
def test_a_distributed_samplers_drop_last_and_the_loaders_are_each_their_own(socket_path, sampler_drops,
                                                                            loader_drops):
    # The ImageNet example's validation: DistributedSampler(shuffle=False, drop_last=True) in a DataLoader with
    # drop_last=False reads floor(n / w) samples per rank, the last batch short. The batches must be DataLoader's.
    sampler = DistributedSampler(range(N), num_replicas=3, rank=2, shuffle=False, drop_last=sampler_drops)
    expected = [b.tolist() for b in torch.utils.data.DataLoader(range(N), batch_size=128, sampler=sampler,
                                                                drop_last=loader_drops)]
    loader = make(socket_path, 128, sampler=sampler, drop_last=loader_drops, as_dict=True)
    assert [b["index"].tolist() for b in loader] == expected
    assert len(loader) == len(expected) and loader.drop_last == loader_drops


def test_an_explicit_non_distributed_sampler_reads_everything_on_every_rank(socket_path, monkeypatch):
    """DataLoader with a SequentialSampler/RandomSampler reads the whole dataset on each rank of a process group (the
    ImageNet example's leftover-samples loader relies on it); with no sampler, batchd shards by the group (rank 1 of
    2 here: torch.distributed's answers replaced, the daemon and stream real)."""
    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.distributed, "get_rank", lambda *a, **k: 1)
    monkeypatch.setattr(torch.distributed, "get_world_size", lambda *a, **k: 2)
    sharded = make(socket_path, 100, as_dict=True)
    assert len(sharded) == N // 2 // 100 and order(sharded) == list(range(1, 600, 2))
    whole = make(socket_path, 100, sampler=SequentialSampler(range(N)), as_dict=True)
    assert len(whole) == N // 100 and order(whole) == list(range(300))
    assert len(make(socket_path, 100, sampler=RandomSampler(range(N)))) == N // 100
    given = make(socket_path, 100, sampler=SequentialSampler(range(N)), rank=1, world_size=2, as_dict=True)
    assert len(given) == N // 2 // 100 and order(given) == list(range(1, 600, 2))


def test_random_and_sequential_samplers_map_to_shuffle(socket_path):
    assert order(make(socket_path, 100, sampler=SequentialSampler(range(N)), as_dict=True)) == list(range(300))
    shuffled = order(make(socket_path, 100, sampler=RandomSampler(range(N)), as_dict=True))
    assert shuffled != list(range(300)) and len(set(shuffled)) == 300
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        make(socket_path, sampler=SequentialSampler(range(N)), shuffle=True)
    # shuffle=False beside a sampler is DataLoader's no-op (the ImageNet example passes shuffle=(sampler is None)).
    torch.utils.data.DataLoader(range(N), sampler=SequentialSampler(range(N)), shuffle=False)
    sampler = DistributedSampler(range(N), num_replicas=2, rank=1, shuffle=True, seed=5)
    assert order(make(socket_path, 100, sampler=sampler, shuffle=False, as_dict=True)) == \
        order(make(socket_path, 100, shuffle=True, seed=5, rank=1, world_size=2, as_dict=True))


class RASampler(torch.utils.data.Sampler):  # named as the references' sampler, without its attributes
    pass


@pytest.mark.parametrize("kw, message", [
    ({"collate_fn": lambda b: b}, "collate_fn= is not supported: .*batch_transform="),
    ({"worker_init_fn": lambda w: None}, "worker_init_fn= is not supported: .*seed="),
    ({"batch_sampler": [[0, 1]]}, "batch_sampler option is mutually exclusive with batch_size"),  # DataLoader's check
    ({"generator": torch.Generator()}, "generator= is not supported: .*seed="),
    ({"sampler": SubsetRandomSampler([1, 2])}, "sampler=SubsetRandomSampler is not supported"),
    ({"sampler": RASampler()}, "sampler=RASampler has no num_replicas, rank, shuffle, epoch"),
    ({"sampler": RandomSampler(range(N), replacement=True)}, "RandomSampler with replacement"),
    ({"num_workers": -1}, "num_workers option should be non-negative"),
])
def test_arguments_that_would_change_the_data_are_refused_saying_what_to_do(socket_path, kw, message):
    with pytest.raises(ValueError, match=message):
        make(socket_path, 10, **kw)


def test_moot_arguments_are_accepted_and_change_nothing(socket_path):
    plain = order(make(socket_path, 100, shuffle=True, as_dict=True))
    moot = make(socket_path, 100, shuffle=True, as_dict=True, persistent_workers=True, num_workers=2,
                multiprocessing_context="spawn", collate_fn=default_collate)  # DataLoader wants num_workers > 0
    assert order(moot) == plain


def test_a_batch_sampler_dataloader_accepts_is_refused_saying_what_to_do(socket_path):
    with pytest.raises(ValueError, match="batch_sampler= is not supported: batchd batches the sampler's order"):
        make(socket_path, batch_sampler=[[0, 1]])


@pytest.mark.parametrize("prefetch_factor, depth", [(3, 2 * 3 + 1), (None, 2 * 2 + 1)])
def test_num_workers_and_prefetch_factor_set_the_depth(socket_path, prefetch_factor, depth):
    loader = make(socket_path, 10, num_workers=2, prefetch_factor=prefetch_factor)  # None: DataLoader 2.x's default
    assert loader.prefetch_factor == (prefetch_factor or 2)  # as DataLoader stores it
    it = iter(loader)
    next(it)
    assert loader._stream.info["depth"] == depth
    loader.close()


def test_the_signature_is_the_installed_dataloaders():
    """Every parameter of the installed torch's DataLoader, with its default (batchd's own come after them)."""
    import inspect
    theirs = inspect.signature(torch.utils.data.DataLoader.__init__).parameters
    ours = inspect.signature(batchd.Loader.__init__).parameters
    for name, p in theirs.items():
        assert name in ours, f"DataLoader's {name}= is missing"
        assert ours[name].default == p.default, f"{name}: {ours[name].default!r} != DataLoader's {p.default!r}"
        assert ours[name].kind == p.kind, name


def test_prefetch_factor_with_num_workers_0_is_dataloaders_value_error(socket_path):
    for loader in (torch.utils.data.DataLoader, batchd.Loader):
        with pytest.raises(ValueError, match="prefetch_factor option could only be specified in multiprocessing"):
            loader(range(10) if loader is torch.utils.data.DataLoader else "fashion-mnist-test", 10, num_workers=0,
                   prefetch_factor=2, **({} if loader is torch.utils.data.DataLoader else
                                         {"socket": socket_path, "pipeline": "fmnist"}))


def test_prefetch_factor_0_with_workers_is_refused_at_once(socket_path):
    with pytest.raises(ValueError, match="prefetch_factor must be greater than 0"):
        make(socket_path, 10, num_workers=2, prefetch_factor=0)


@pytest.mark.parametrize("in_order", [True, False])
def test_in_order_is_accepted_and_batches_arrive_in_the_samplers_order(socket_path, in_order):
    plain = order(make(socket_path, 100, shuffle=True, as_dict=True))
    loader = make(socket_path, 100, shuffle=True, as_dict=True, num_workers=2, in_order=in_order)
    assert loader.in_order is in_order
    assert order(loader) == plain


def test_pin_memory_without_cuda_warns_once(socket_path, monkeypatch):
    monkeypatch.setattr(batchd._loader.dataloader_args, "_pin_warned", False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.warns(RuntimeWarning, match="pin_memory=True, but CUDA is not available"):
        make(socket_path, 10, pin_memory=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert make(socket_path, 10, pin_memory=True).pin_memory


@pytest.mark.skipif(not (torch.cuda.is_available() and batchd._batchd.has_cuda),
                    reason="needs a CUDA GPU, a CUDA build of torch and batchd's CUDA path")
def test_pin_memory_tensors_are_pinned_and_no_slot_is_refilled_under_a_copy(socket_path):
    """The tutorials' pattern: pin_memory=True, then .to("cuda", non_blocking=True). The tensors are page-locked
    where the workers wrote them; a batch freed while its copy still waits on the GPU (held up by torch.cuda._sleep)
    keeps its slot until the copy has run, even when the next batches need that slot (depth 2)."""
    loader = make(socket_path, 100, pin_memory=True, shuffle=True, depth=2, as_dict=True)
    it = iter(loader)
    first = next(it)
    assert first["image"].is_pinned() and first["label"].is_pinned()
    want = first["image"].clone()
    torch.cuda._sleep(1 << 31)  # about a second of GPU clock cycles on the current stream, before the copy
    on_gpu = first["image"].to("cuda", non_blocking=True)
    del first
    held = [next(it), next(it)]  # the second needs the first batch's slot
    torch.cuda.synchronize()
    assert torch.equal(on_gpu.cpu(), want), "the copy read a refilled slot"
    assert len(held) == 2
    loader.close()


@pytest.fixture(scope="module")
def hanging_daemon():
    """Every worker hangs at sample 5 until the watchdog (1 s) kills it; twice is a bad sample."""
    with tempfile.TemporaryDirectory(prefix="batchd-py-hang-") as tmp:
        yield from _run_daemon(tmp, ["--fault-hang-on-sample", "5", "--task-timeout-min-s", "1"])


def test_timeout_raises_as_dataloader_and_the_stream_goes_on(hanging_daemon):
    loader = make(hanging_daemon, 10, timeout=0.3, on_error="skip")
    with pytest.raises(RuntimeError, match="within the timeout") as e:
        next(iter(loader))
    assert e.value.code == "deadline exceeded"
    stream = batchd._batchd.Client(hanging_daemon).open_stream(dataset="fashion-mnist-test", pipeline="fmnist",
                                                               batch_size=10, shuffle=False, on_error="skip")
    with pytest.raises(batchd.BatchdError, match="within the timeout"):
        stream.next_arrays(timeout=0.3)
    epoch, arrays = stream.next_arrays()  # the same stream, later: the batch (sample 5 replaced)
    assert epoch == 0 and len(arrays["index"]) == 10
    stream.close()
