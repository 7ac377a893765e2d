"""A dataset larger than the cache (issue 27): the cache admits until cache.max_bytes, never past it, and serves the
rest uncached, so that under per-epoch reshuffles the hit rate is cache size / dataset size (CoorDL's fill-once,
never-evict policy: the entries admitted first stay, whatever order later epochs read). Two real daemons on the
generated image folder: one with room for everything measures the working set, one with room for half of it."""
import json
import os
import subprocess
import tempfile

import batchd
from conftest import ROOT, _run_daemon

TESTDATA = os.environ.get("BATCHD_TESTDATA", os.path.join(ROOT, "build", "testdata"))
BATCHCTL = os.path.join(os.path.dirname(os.environ.get("BATCHD_BIN", os.path.join(ROOT, "build", "bin", "batchd"))),
                        "batchctl")
OPS = [{"op": "decode", "max_side": 128}, {"op": "cache"}, {"op": "random_resized_crop", "size": 64},
       {"op": "horizontal_flip"}, {"op": "to_tensor"}]
N = 61


def cache_of(sock):
    out = subprocess.run([BATCHCTL, "--socket", sock, "cache", "--json"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    c = json.loads(out.stdout)["cache"]
    return {k: int(v) if isinstance(v, str) and v.isdigit() else v for k, v in c.items()}


def run(max_bytes, epochs):
    """The cache's counts after `epochs` epochs of one stream (reshuffled each epoch), and the most live bytes seen
    after each epoch."""
    with tempfile.TemporaryDirectory(prefix="batchd-py-bound-") as tmp:
        config = os.path.join(tmp, "batchd.toml")
        with open(config, "w") as f:
            f.write(f'[cache]\nmax_bytes = {max_bytes}\nmax_bytes_per_uid = {max_bytes}\n[datasets.photos]\nformat = "imagefolder"\n'
                    f'root = "{os.path.join(TESTDATA, "imagefolder")}"\n')
        for sock in _run_daemon(tmp, ["--config", config, "--cache-dir", ""]):
            if epochs == 0:
                return cache_of(sock), 0
            loader = batchd.Loader("photos", batch_size=8, transform=OPS, shuffle=True, seed=5, socket=sock)
            most = 0
            for epoch in range(epochs):
                assert sum(len(b[1]) for b in loader) == N
                counts = cache_of(sock)
                most = max(most, counts["live_bytes"])
                if epoch == 0:
                    first = counts
            loader.close()
            return cache_of(sock), most, first


def test_a_dataset_twice_the_cache_gets_half_its_samples_from_it_and_the_bound_holds():
    empty, _ = run(8 << 20, 0)  # the index alone (1,024 slots for any max_bytes below 8 MiB)
    roomy, _, _ = run(8 << 20, 1)
    assert int(roomy["groups"][0]["entries"]) == N, roomy  # every sample admitted
    working_set = roomy["live_bytes"] - empty["live_bytes"]
    assert working_set > N * 1000
    half = empty["live_bytes"] + working_set // 2  # room for half the entries' bytes
    counts, most, first = run(half, 6)
    assert most <= half and counts["live_bytes"] <= half, "never past cache.max_bytes"
    assert first["refused_full"] > 0 and 0 < first["fills"] < N, first
    assert counts["fills"] == first["fills"], "fill once, never evict: nothing admitted after the first pass"
    # After the first pass (N samples, no hit) every sample is a hit if it was admitted, else served uncached.
    later = counts["hits"] + counts["fills"] + counts["uncached"] - N
    rate = counts["hits"] / later
    expected = first["fills"] / N  # the cache's share of the dataset, as admitted
    assert abs(rate - expected) <= 0.05, (rate, expected, counts)
    assert abs(rate - 0.5) <= 0.1, (rate, counts)
