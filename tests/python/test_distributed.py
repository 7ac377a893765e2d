"""batchd.Loader under torch.distributed: rank and world size come from the process group when not given.

Two real daemons stand for two nodes; world_size 4 across them (ranks 0,1 on daemon A, ranks 2,3 on daemon B), as 4
processes with a gloo process group (distributed_rank.py) that construct the Loader without rank/world_size.
"""
import json
import os
import subprocess
import sys
import tempfile
from contextlib import ExitStack

import pytest
import torch.utils.data

import batchd
from conftest import _run_daemon

HERE = os.path.dirname(os.path.abspath(__file__))
WORLD, N = 4, 10000  # fashion-mnist-test: 10,000 samples, 2,500 per rank
SEED, EPOCH = 11, 2  # as distributed_rank.py


@pytest.fixture(scope="module")
def ranks():
    """Runs the 4 ranks; yields (their JSON results by rank, daemon A's socket, daemon B's socket)."""
    with ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="batchd-py-dist-"))
        sockets = []
        for node in ("a", "b"):  # each daemon: its own socket directory, instance id and segments
            os.mkdir(os.path.join(tmp, node))
            runner = _run_daemon(os.path.join(tmp, node))
            sockets.append(next(runner))
            stack.callback(runner.close)
        procs = []
        for rank in range(WORLD):
            env = dict(os.environ, BATCHD_SOCKET=sockets[rank // 2], GLOO_SOCKET_IFNAME="lo")
            procs.append(subprocess.Popen(
                [sys.executable, os.path.join(HERE, "distributed_rank.py"), str(rank), str(WORLD),
                 os.path.join(tmp, "rendezvous"), os.path.join(tmp, f"rank{rank}.json")],
                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        outputs = [p.communicate(timeout=300)[0] for p in procs]
        for rank, (p, out) in enumerate(zip(procs, outputs)):
            assert p.returncode == 0, f"rank {rank} exited with {p.returncode}:\n{out}"
        results = []
        for rank in range(WORLD):
            with open(os.path.join(tmp, f"rank{rank}.json")) as f:
                results.append(json.load(f))
        yield results, sockets[0], sockets[1]


def test_ranks_on_two_daemons_read_disjoint_shares_whose_union_is_the_epoch_exactly_once(ranks):
    results, _, _ = ranks
    shares = [r["shuffled"]["indices"] for r in results]
    union = sorted(i for share in shares for i in share)
    assert len(union) == N and union == list(range(N)), \
        f"every index exactly once: {len(union)} read, {len(set(union))} distinct"
    for a in range(WORLD):
        for b in range(a + 1, WORLD):
            assert not set(shares[a]) & set(shares[b]), f"ranks {a} and {b} overlap"
    for rank, r in enumerate(results):
        assert (r["shuffled"]["rank"], r["shuffled"]["world_size"]) == (rank, WORLD)
        assert r["shuffled"]["len"] == N // WORLD // 100 and len(shares[rank]) == N // WORLD


def test_a_loader_built_before_init_process_group_reads_its_ranks_share(ranks):
    results, _, _ = ranks
    for rank, r in enumerate(results):
        assert (r["early"]["rank"], r["early"]["world_size"]) == (rank, WORLD)
        assert r["early"]["indices"] == r["shuffled"]["indices"], f"rank {rank}: same share as a Loader built after"


def test_ranks_0_1_used_daemon_a_and_ranks_2_3_daemon_b(ranks):
    results, a, b = ranks
    instance = {sock: batchd._batchd.status(sock)["instance_id"] for sock in (a, b)}
    assert instance[a] != instance[b]
    assert [r["instance"] for r in results] == [instance[a]] * 2 + [instance[b]] * 2


def test_each_rank_reads_distributed_samplers_share_of_the_permutation(ranks):
    """Shuffled: rank r reads perm[r::4] (DistributedSampler's rule) of the permutation that a single process reads
    for the same (seed, epoch) — the same on both daemons. In order: exactly DistributedSampler's indices."""
    results, a, b = ranks
    perms = []
    for sock in (a, b):
        single = batchd.Loader("fashion-mnist-test", as_dict=True, shuffle=True, pipeline="fmnist_u8", batch_size=100, seed=SEED, socket=sock)
        assert (single.rank, single.world_size) == (0, 1), "no torch.distributed here: rank 0 of 1"
        single.set_epoch(EPOCH)
        perms.append([i for batch in single for i in batch["index"].tolist()])
    assert perms[0] == perms[1], "two daemons, same (seed, epoch): the same permutation"
    for rank, r in enumerate(results):
        assert r["shuffled"]["indices"] == perms[0][rank::WORLD]
        sampler = torch.utils.data.DistributedSampler(range(N), num_replicas=WORLD, rank=rank, shuffle=False)
        assert r["ordered"]["indices"] == list(sampler)


def test_a_given_value_wins_and_the_other_comes_from_torch_distributed(ranks):
    results, _, _ = ranks
    for rank, r in enumerate(results):
        assert r["only_rank"] == [(rank + 1) % WORLD, WORLD]
    assert [results[0]["only_world_size"], results[1]["only_world_size"]] == [[0, 2], [1, 2]]
    for rank in (2, 3):
        message = results[rank]["only_world_size"]
        assert f"rank {rank} (torch.distributed.get_rank())" in message and "world_size 2 (given)" in message


def test_without_torch_distributed_a_bad_rank_is_a_clear_error(socket_path):
    assert not torch.distributed.is_initialized()
    l = batchd.Loader("fashion-mnist-test", as_dict=True, shuffle=True, pipeline="fmnist", batch_size=100, socket=socket_path)
    assert (l.rank, l.world_size, len(l)) == (0, 1, 100)
    with pytest.raises(ValueError, match=r"rank 4 \(given\) is not in \[0, world_size\) for world_size 4 \(given\)"):
        batchd.Loader("fashion-mnist-test", as_dict=True, shuffle=True, pipeline="fmnist", rank=4, world_size=4, socket=socket_path)
    early = batchd.Loader("fashion-mnist-test", pipeline="fmnist", rank=1, socket=socket_path)  # a group may follow
    with pytest.raises(ValueError, match=r"rank 1 \(given\) .* world_size 1 \(the default without torch"):
        len(early)  # resolved when used: still no process group
