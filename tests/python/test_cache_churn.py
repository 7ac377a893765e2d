"""The sample cache under churn (issue 43, 7), against a real daemon: a user who owns a dataset's files touches them
every epoch of a cached stream, so that every entry is dropped (its file changed) and filled again. Before, dropped
entries' address ranges and index rows were never reused: after a few dozen epochs every fill of every user was
refused until restart. Now the cache keeps filling within cache.max_bytes, and a client spec's churn stays charged
to its uid for 10 s (SampleCache kChurnCredit), so that a user refills at most their share per 10 s.
The generated image folder (61 photographs), copied and given to nobody."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

import batchd
from conftest import ROOT, _run_daemon

TESTDATA = os.environ.get("BATCHD_TESTDATA", os.path.join(ROOT, "build", "testdata"))
BATCHCTL = os.path.join(os.path.dirname(os.environ.get("BATCHD_BIN", os.path.join(ROOT, "build", "bin", "batchd"))),
                        "batchctl")
NOBODY = 65534  # Debian's nobody
N = 61
MAX_BYTES = 6 << 20  # the 128-side entries of the folder take about half of it: 8 x 6 MiB of address range
OPS = [{"op": "decode", "max_side": 128}, {"op": "cache"}, {"op": "random_resized_crop", "size": 64},
       {"op": "horizontal_flip"}, {"op": "to_tensor"}]


def cache_of(sock, user=None):
    kw = dict(user=user, group=user, extra_groups=[], cwd="/") if user is not None else {}
    out = subprocess.run([BATCHCTL, "--socket", sock, "cache", "--json"], capture_output=True, text=True, timeout=60,
                         **kw)
    assert out.returncode == 0, out.stderr
    c = json.loads(out.stdout)["cache"]
    return {k: int(v) if isinstance(v, str) and v.isdigit() else v for k, v in c.items()}


def toml_table(op):
    return "{" + ", ".join(f"{k} = {json.dumps(v)}" for k, v in op.items()) + "}"


def touch_all(folder, n):
    """Every image gets another mtime, as a user rewriting their files does: each entry's stamp no longer matches."""
    for d, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(d, name)
            os.utime(path, ns=(n * 1_000_000_000, n * 1_000_000_000))


@pytest.fixture(scope="module")
def daemon():
    with tempfile.TemporaryDirectory(prefix="batchd-py-churn-") as tmp:
        os.chmod(tmp, 0o755)
        folder = os.path.join(tmp, "photos")
        shutil.copytree(os.path.join(TESTDATA, "imagefolder"), folder)
        for d, dirs, files in os.walk(folder):  # nobody owns the dataset's files (and may touch them)
            for name in [d] + [os.path.join(d, f) for f in files]:
                os.chown(name, NOBODY, NOBODY)
                os.chmod(name, 0o755 if os.path.isdir(name) else 0o644)
        config = os.path.join(tmp, "batchd.toml")
        with open(config, "w") as f:
            f.write(f'[daemon]\nsocket_mode = "0666"\n[cache]\nmax_bytes = {MAX_BYTES}\n'
                    f'max_bytes_per_uid = {MAX_BYTES // 2}\n'
                    f'[datasets.photos]\nformat = "imagefolder"\nroot = "{folder}"\n'
                    f'[pipelines.churned]\nops = [{", ".join(toml_table(op) for op in OPS)}]\n')
        for sock in _run_daemon(tmp, ["--config", config, "--cache-dir", ""]):
            yield {"sock": sock, "folder": folder}


def test_files_touched_every_epoch_keep_being_cached_within_the_bound(daemon):
    sock, epochs = daemon["sock"], 80
    loader = batchd.Loader("photos", batch_size=8, pipeline="churned", shuffle=True, seed=1, socket=sock)
    most_live = most_resident = 0
    for epoch in range(epochs):
        if epoch:
            touch_all(daemon["folder"], epoch + 1000)
        assert sum(len(b[1]) for b in loader) == N
        c = cache_of(sock)
        most_live, most_resident = max(most_live, c["live_bytes"]), max(most_resident, c["resident_bytes"])
        assert c["refused_full"] == 0 and c["refused_index"] == 0, (epoch, c)
    loader.close()
    c = cache_of(sock)
    # Each epoch refills what the touch dropped (a Loader's stream makes batches of the next epoch before the touch:
    # those are hits of the old files, refilled an epoch later), and nothing is served uncached but for the fill
    # race (test_cache_admin.py filled_once).
    assert c["fills"] >= 0.5 * N * epochs and c["hits"] + c["fills"] + c["uncached"] >= N * epochs, c
    assert c["uncached"] <= epochs, c
    # Before, the address range (8 x max_bytes) was used up after about 8 x max_bytes dropped, and every fill refused.
    assert c["dropped_bytes"] > 2 * 8 * MAX_BYTES, "the churn went round the whole address range twice"
    assert most_live <= MAX_BYTES and most_resident <= MAX_BYTES, (most_live, most_resident)
    assert c["segments"] == 64 and c["segments_free"] >= 16, c


def test_a_client_specs_churn_stays_charged_to_its_uid_for_a_while(daemon):
    if os.getuid() != 0:
        pytest.skip("needs root, to run a process as nobody")
    sock = daemon["sock"]
    spec = [{"op": "decode", "max_side": 96}, {"op": "cache"}, {"op": "center_crop", "size": 64}, {"op": "to_tensor"}]
    script = ("import sys, json, os, batchd\n"
              "folder, sock, spec = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])\n"
              "loader = batchd.Loader('photos', batch_size=8, transform=spec, socket=sock)\n"
              "for epoch in range(4):\n"
              "    for d, _, files in os.walk(folder):\n"
              "        for f in files: os.utime(os.path.join(d, f), ns=(epoch * 10**9, epoch * 10**9))\n"
              "    assert sum(len(b[1]) for b in loader) == 61\n"
              "loader.close()\n")
    out = subprocess.run([sys.executable, "-c", script, daemon["folder"], sock, json.dumps(spec)],
                         capture_output=True, text=True, timeout=120, user=NOBODY, group=NOBODY, extra_groups=[],
                         cwd="/", env=dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(batchd.__file__))))
    assert out.returncode == 0, out.stdout + out.stderr
    c = cache_of(sock, user=NOBODY)  # the totals are anyone's to see
    assert c["churn_bytes"] > 0, c
    assert c["refused_uid"] > 0, "nobody refilled more than its share within 10 s"
    text = subprocess.run([BATCHCTL, "--socket", sock, "cache"], capture_output=True, text=True, timeout=60).stdout
    assert "segments:" in text and "still charged to its uids" in text, text
    for _ in range(30):  # credited back 10 s after the drops (the cleaner runs every second)
        if cache_of(sock)["churn_bytes"] == 0:
            break
        time.sleep(1)
    assert cache_of(sock)["churn_bytes"] == 0
