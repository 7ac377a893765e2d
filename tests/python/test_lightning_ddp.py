"""Lightning's DDP over 2 CPU processes with batchd.Loader from train_dataloader() (issue 40, item 8;
tests/python/lightning_ddp.py; docs/switching.md). Lightning injects a DistributedSampler only into
torch.utils.data.DataLoader instances (its data connector checks isinstance), so with batchd.Loader the script gives
the DistributedSampler itself; without one, as with DataLoader outside Lightning, every rank reads every sample."""
import json
import os
import subprocess
import sys
import tempfile

import pytest

pytest.importorskip("lightning")  # pinned in tests/requirements.txt: absent only outside the project's venv
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lightning_ddp.py")


def run(sock, mode):
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(20000 + os.getpid() % 20000))
        done = subprocess.run([sys.executable, SCRIPT, sock, out, mode], env=env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        return [json.load(open(os.path.join(out, f"rank-{r}.json"))) for r in range(2)]


def test_ranks_read_disjoint_halves_with_a_distributed_sampler(sock):
    ranks = run(sock, "sampler")
    assert all(r["world_size"] == 2 for r in ranks)
    assert len(ranks[0]["seen"]) == len(ranks[1]["seen"]) == 32
    assert sorted(ranks[0]["seen"] + ranks[1]["seen"]) == list(range(64))
    assert all(r["loss"] is not None for r in ranks)


def test_without_one_every_rank_reads_every_sample(sock):
    ranks = run(sock, "plain")
    assert [sorted(r["seen"]) for r in ranks] == [list(range(64))] * 2
