"""The sample cache seen and run by its users (issue 27): per-stream hit counts, `batchctl cache` and `--drop`, the
batchd_cache_* metrics, two trainers with different seeds sharing one cached prefix (each sample decoded once), a
reload that changes a dataset dropping its entries, and the per-uid bound of a client-sent spec run as another uid.
Against one real daemon on a copy of the generated image folder (61 images)."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np
import pytest

import batchd
from conftest import ROOT, _run_daemon

TESTDATA = os.environ.get("BATCHD_TESTDATA", os.path.join(ROOT, "build", "testdata"))
BATCHCTL = os.path.join(os.path.dirname(os.environ.get("BATCHD_BIN", os.path.join(ROOT, "build", "bin", "batchd"))),
                        "batchctl")
NOBODY = 65534  # Debian's nobody
PER_UID = 2 << 20  # cache.max_bytes_per_uid: about 13 of the 150,528-byte 224x224 crops
N = 61  # images in the generated folder


def filled_once(count, n=N):
    """Each of n samples filled (or held) once, give or take the race SampleCache::begin_fill documents: a sample
    whose entry is claimed but not yet keyed by one worker may be claimed by another (a Loader's stream prefetches
    the next epoch while this one's last samples are filled), so two entries may hold it, harmlessly."""
    return n <= count <= n + 2


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def daemon():
    with tempfile.TemporaryDirectory(prefix="batchd-py-cache-") as tmp:
        os.chmod(tmp, 0o755)  # nobody reaches the socket
        folder = os.path.join(tmp, "photos")
        shutil.copytree(os.path.join(TESTDATA, "imagefolder"), folder)
        for d, _, _ in os.walk(tmp):
            os.chmod(d, 0o755)
        port = _free_port()
        config = os.path.join(tmp, "batchd.toml")
        with open(config, "w") as f:
            f.write(f'[daemon]\nsocket_mode = "0666"\n[cache]\nmax_bytes = {64 << 20}\nmax_bytes_per_uid = {PER_UID}\n'
                    f'[metrics]\nlisten = "127.0.0.1:{port}"\nper_stream = true\n'
                    f'[datasets.photos]\nformat = "imagefolder"\nroot = "{folder}"\n'
                    f'[datasets.again]\nformat = "imagefolder"\nroot = "{folder}"\n')
        for sock in _run_daemon(tmp, ["--config", config, "--cache-dir", ""]):
            yield {"sock": sock, "folder": folder, "port": port, "config": config}


def ctl(daemon, *args, user=None):
    kw = dict(user=user, group=user, extra_groups=[], cwd="/") if user is not None else {}
    out = subprocess.run([BATCHCTL, "--socket", daemon["sock"], *args], capture_output=True, text=True, timeout=60,
                         **kw)
    return out


def cache_status(daemon):
    out = ctl(daemon, "cache", "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["cache"]


def group(daemon, dataset, prefix):
    for g in cache_status(daemon).get("groups", []):
        if g["dataset"] == dataset and g["prefix"] == prefix and g.get("current"):
            return {k: int(v) if isinstance(v, str) and v.isdigit() else v for k, v in g.items()}
    return None


def epochs(daemon, pipeline, n, seed=0, dataset="photos", **kw):
    loader = batchd.Loader(dataset, batch_size=8, pipeline=pipeline, shuffle=True, seed=seed,
                           socket=daemon["sock"], **kw)
    out = []
    for _ in range(n):
        out.append(np.concatenate([b[0].numpy().copy() for b in loader]))  # copies: each slot goes back
    return loader, out


VAL = "decode -> resize -> center_crop"


def test_stream_hit_counts_batchctl_cache_and_metrics(daemon):
    loader, _ = epochs(daemon, "val224_u8_cached", 2)
    try:
        streams = json.loads(ctl(daemon, "streams", "--json").stdout)["streams"]
        mine = [s for s in streams if s["pipeline"] == "val224_u8_cached"]
        assert mine, streams
        stages = mine[0]["stages"]
        assert int(stages.get("cache_fills", 0)) >= N and int(stages.get("cache_hits", 0)) >= N, stages
        assert "cache:" in ctl(daemon, "streams").stdout
        g = group(daemon, "photos", VAL + " -> pil_to_tensor")
        assert g is not None and filled_once(g["entries"]) and g["dataset_samples"] == N and g["hits"] >= N, g
        # The groups are a scan of the whole index: batchctl cache asks for them; status (and the metrics) never do.
        status = json.loads(ctl(daemon, "status", "--json").stdout)["cache"]
        assert int(status["hits"]) >= N and not status.get("groups"), status
        text = ctl(daemon, "cache").stdout
        row = [line.split() for line in text.splitlines() if line.startswith("photos ") and "pil_to_tensor" in line]
        assert row, text
        filled = [float(f[:-1]) for f in row[0] if f.endswith("%")]  # FILLED: entries / samples, as filled_once
        assert filled and 100.0 <= filled[0] <= 100.0 * (N + 2) / N, text
        body = urllib.request.urlopen(f"http://127.0.0.1:{daemon['port']}/metrics", timeout=10).read().decode()
        hits = [line for line in body.splitlines() if line.startswith("batchd_cache_hits_total ")]
        assert hits and int(hits[0].split()[1]) >= N, body
        assert f"batchd_cache_max_bytes {64 << 20}" in body
        assert "batchd_stream_cache_hits_total{stream=" in body
        assert "batchd_stream_cache_uncached_total{stream=" in body
    finally:
        loader.close()


def test_drop_empties_a_dataset_and_the_next_epoch_fills_again(daemon):
    epochs(daemon, "val224_u8_cached", 1)[0].close()
    before = group(daemon, "photos", VAL + " -> pil_to_tensor")
    assert filled_once(before["entries"])
    out = ctl(daemon, "cache", "--drop", "photos")
    assert out.returncode == 0 and f"dropped {before['entries']} entries" in out.stdout, out.stdout + out.stderr
    assert group(daemon, "photos", VAL + " -> pil_to_tensor")["entries"] == 0
    assert int(cache_status(daemon)["dropped_bytes"]) >= N * 150528
    epochs(daemon, "val224_u8_cached", 1)[0].close()
    after = group(daemon, "photos", VAL + " -> pil_to_tensor")
    # Every sample refilled; two workers that missed one sample at the same moment (the next epoch's prefetch) may
    # both have kept it (the issue allows "harmlessly twice"; begin_fill's check narrows it to its own duration).
    assert filled_once(after["entries"]) and after["fills"] >= before["fills"] + N, (before, after)


def test_two_trainers_with_different_seeds_share_the_prefix_each_sample_decoded_once(daemon):
    a_loader, a = epochs(daemon, "val224_cached", 1, seed=1, dataset="again")
    a_loader.close()
    g = group(daemon, "again", VAL)
    assert filled_once(g["fills"]) and filled_once(g["entries"]), g
    b_loader, b = epochs(daemon, "val224_cached", 1, seed=2, dataset="again")
    b_loader.close()
    g2 = group(daemon, "again", VAL)
    assert filled_once(g2["fills"]), "the second trainer decoded nothing"
    assert g2["hits"] >= g["hits"] + N
    plain_loader, plain = epochs(daemon, "val224", 1, seed=2, dataset="again")
    plain_loader.close()
    assert np.array_equal(b[0], plain[0]), "the cached batches are the uncached ones, bit for bit"
    assert not np.array_equal(a[0], b[0]), "another seed, another order"


def test_per_uid_bound_of_a_client_spec_as_another_uid(daemon):
    if os.getuid() != 0:
        pytest.skip("needs root, to run a process as nobody")
    spec = [{"op": "resize", "size": 256}, {"op": "center_crop", "size": 224}, {"op": "cache"},
            {"op": "horizontal_flip"}, {"op": "pil_to_tensor"}]
    script = ("import sys, json, batchd\n"
              "loader = batchd.Loader('photos', batch_size=8, transform=json.loads(sys.argv[2]), socket=sys.argv[1])\n"
              "print(sum(len(b[1]) for b in loader)); loader.close()\n")
    out = subprocess.run([sys.executable, "-c", script, daemon["sock"], json.dumps(spec)], capture_output=True,
                         text=True, timeout=120, user=NOBODY, group=NOBODY, extra_groups=[], cwd="/",
                         env=dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(batchd.__file__))))
    assert out.returncode == 0 and out.stdout.strip() == str(N), out.stdout + out.stderr
    g = group(daemon, "photos", VAL)  # the same prefix as val224_cached's: one group, whoever filled it
    status = cache_status(daemon)
    assert int(status["refused_uid"]) > 0, status
    assert g["bytes"] <= PER_UID and 0 < g["entries"] < N and g["uncached"] > 0, g
    # As nobody: the totals, not the groups; --drop refused.
    mine = json.loads(ctl(daemon, "cache", "--json", user=NOBODY).stdout)["cache"]
    assert "groups" not in mine or not mine["groups"]
    refused = ctl(daemon, "cache", "--drop", user=NOBODY)
    assert refused.returncode == 1 and "admin request" in refused.stderr, refused.stderr
    # The daemon's preset draws on the whole cache: the same prefix fills every sample for root.
    epochs(daemon, "val224_cached", 1)[0].close()
    assert filled_once(group(daemon, "photos", VAL)["entries"])


def test_reload_that_changes_a_dataset_drops_its_entries(daemon):
    epochs(daemon, "val224_cached", 1, dataset="again")[0].close()
    old = group(daemon, "again", VAL)
    assert filled_once(old["entries"])
    dropped = int(cache_status(daemon)["dropped_bytes"])
    # The config now declares `again` at a copy of the folder with one image more: a changed dataset, a new key.
    moved = daemon["folder"] + "-more"
    shutil.copytree(daemon["folder"], moved)
    cls = sorted(os.listdir(moved))[0]
    first = sorted(os.listdir(os.path.join(moved, cls)))[0]
    shutil.copy(os.path.join(moved, cls, first), os.path.join(moved, cls, "zz-new.jpg"))
    for d, _, files in os.walk(moved):
        os.chmod(d, 0o755)
        for f in files:
            os.chmod(os.path.join(d, f), 0o644)
    with open(daemon["config"]) as f:
        text = f.read()
    with open(daemon["config"], "w") as f:
        f.write(text.replace(f'[datasets.again]\nformat = "imagefolder"\nroot = "{daemon["folder"]}"',
                             f'[datasets.again]\nformat = "imagefolder"\nroot = "{moved}"'))
    pid = int(json.loads(ctl(daemon, "status", "--json").stdout)["daemon_pid"])
    os.kill(pid, signal.SIGHUP)
    for _ in range(200):
        groups = [g for g in cache_status(daemon).get("groups", []) if g["dataset"] == "again" and g["prefix"] == VAL]
        if groups and all(not g.get("current") for g in groups):
            break
        time.sleep(0.05)
    stale = [g for g in groups if not g.get("current")]
    assert stale and all(int(g.get("entries", 0)) == 0 for g in stale), groups
    assert int(cache_status(daemon)["dropped_bytes"]) > dropped
    epochs(daemon, "val224_cached", 1, dataset="again")[0].close()
    assert filled_once(group(daemon, "again", VAL)["entries"], N + 1), "the new load fills its own entries"
