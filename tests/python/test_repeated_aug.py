"""Repeated augmentation (issue 25, item 7) against a real daemon: Loader(repeated_aug=K) reads every index K times
per epoch across ranks, its copies on different ranks, each copy with its own augmentation; the references'
RASampler and timm's RepeatAugSampler (stand-ins in references_like.py) map to the same shares, cut to their own
epoch length, in their own order when they do not shuffle; what is refused, and why."""
import math
from collections import Counter, defaultdict

import pytest
import torch

import batchd
from references_like import RASampler, RepeatAugSampler
from test_spec_streams import _daemon_with_pipelines

N = 10000  # fashion-mnist-test


def make(sock, *args, **kw):
    kw.setdefault("pipeline", "fmnist")
    return batchd.Loader("fashion-mnist-test", *args, socket=sock, as_dict=True, **kw)


def indices(loader):
    """The dataset indices of one whole pass, in order."""
    return [i for batch in loader for i in batch["index"].tolist()]


def test_every_index_k_times_per_epoch_across_ranks_its_copies_on_k_ranks(socket_path):
    k, world = 3, 4
    counts, ranks = Counter(), defaultdict(set)
    for rank in range(world):
        loader = make(socket_path, 500, shuffle=True, seed=2, repeated_aug=k, rank=rank, world_size=world)
        assert len(loader.sampler) == N * k // world and len(loader) == N * k // world // 500
        mine = indices(loader)
        assert len(mine) == N * k // world
        counts.update(mine)
        for i in mine:
            ranks[i].add(rank)
    assert set(counts) == set(range(N)) and set(counts.values()) == {k}
    assert all(len(on) == k for on in ranks.values()), "the K copies of a sample are read by K different ranks"


@pytest.mark.parametrize("make_sampler", [
    lambda rank: RASampler(range(N), num_replicas=2, rank=rank, shuffle=True, seed=5, repetitions=3),
    lambda rank: RepeatAugSampler(range(N), num_replicas=2, rank=rank, shuffle=True, num_repeats=3),
], ids=["RASampler", "RepeatAugSampler"])
def test_a_repeated_aug_sampler_gives_the_shares_of_repeated_aug_cut_to_its_own_epoch(socket_path, make_sampler):
    for rank in range(2):
        sampler = make_sampler(rank)
        seed = getattr(sampler, "seed", 0)
        by_sampler = make(socket_path, 100, sampler=sampler)
        assert by_sampler.sampler is sampler and (by_sampler.rank, by_sampler.world_size) == (rank, 2)
        assert len(by_sampler) == math.ceil(len(sampler) / 100) == 50  # 4992 = 10000 // 256 * 256 / 2 samples
        by_keyword = make(socket_path, 100, shuffle=True, seed=seed, repeated_aug=3, rank=rank, world_size=2)
        assert len(by_keyword.sampler) == 15000
        whole = indices(by_keyword)
        assert indices(by_sampler) == whole[:len(sampler)]
        sampler.set_epoch(4)  # as scripts do on their own sampler: read at the next pass
        by_keyword.set_epoch(4)
        fourth = indices(by_sampler)
        assert fourth == indices(by_keyword)[:len(sampler)] and fourth != whole[:len(sampler)]


@pytest.mark.parametrize("sampler", [
    RASampler(range(N), num_replicas=3, rank=2, shuffle=False, repetitions=2),
    RepeatAugSampler(range(N), num_replicas=3, rank=1, shuffle=False, num_repeats=4, selected_round=0),
], ids=["RASampler", "RepeatAugSampler-no-round"])
def test_without_shuffle_the_order_is_the_samplers_own(socket_path, sampler):
    assert indices(make(socket_path, 64, sampler=sampler)) == list(iter(sampler))


def test_what_cannot_be_mapped_is_refused_saying_what_to_do(socket_path):
    sampler = RASampler(range(N), num_replicas=2, rank=0)
    with pytest.raises(ValueError, match="give the ranks once: in the RASampler or as rank=/world_size="):
        make(socket_path, 10, sampler=sampler, rank=0, world_size=2)
    with pytest.raises(ValueError, match="give the repeats once: in the RASampler or as repeated_aug="):
        make(socket_path, 10, sampler=sampler, repeated_aug=3)
    with pytest.raises(ValueError, match="selects no samples per epoch .* give repeated_aug=3"):
        make(socket_path, 10, sampler=RASampler(range(200), num_replicas=2, rank=0))
    with pytest.raises(ValueError, match="repeated_aug must be an int >= 1"):
        make(socket_path, 10, repeated_aug=0)
    with pytest.raises(batchd.BatchdError, match=r"repeated_aug 17 is out of range \[1, 16\]"):
        len(make(socket_path, 10, repeated_aug=17))


@pytest.fixture(scope="module")
def photos_socket():
    yield from _daemon_with_pipelines({})


def test_two_copies_of_a_sample_get_different_augmentations_and_copy_0_is_the_plain_streams(photos_socket):
    crop = [{"op": "random_resized_crop", "size": 48, "scale": [0.05, 1.0]}, {"op": "pil_to_tensor"}]
    repeated = batchd.Loader("photos", 4, transform=crop, socket=photos_socket, seed=3, repeated_aug=2,
                             as_dict=True)
    batch = next(iter(repeated))
    assert batch["index"].tolist() == [0, 0, 1, 1]  # no shuffle: each index twice in a row (one rank)
    image = batch["image"].clone()
    repeated.close()
    assert not torch.equal(image[0], image[1]) and not torch.equal(image[2], image[3])
    plain = batchd.Loader("photos", 2, transform=crop, socket=photos_socket, seed=3, as_dict=True)
    first = next(iter(plain))
    assert torch.equal(first["image"][0], image[0]) and torch.equal(first["image"][1], image[2])
    plain.close()
