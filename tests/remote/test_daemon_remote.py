"""Remote shards through real daemons (issue 28, docs/operations.md "Remote shards"): webdataset shards on s3:// (moto's
S3 server, checking signatures), http:// and https:// (fault_server.py, a test CA) read exactly once per epoch and byte
for byte as the same shards on local disk; prefetch along the sampler's order (the daemon's counters, a slow server);
the bounded shard cache; a daemon SIGKILLed mid-download. Faults and refusals: test_daemon_remote_faults.py. Helpers:
remote_daemon.py.
"""
import hashlib
import os
import signal
import stat
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from remote_daemon import (FaultServer, RemoteDaemon, assert_same_epochs, config_text, epochs, make_shards,
                           make_test_ca, photo_shards, shard_files, webdataset)
from moto_fixture import MotoS3

BRACES = "shard-{000000..000003}.tar"  # the 4 shards of 60 photographs (build/testdata/shards)
N = 60


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    """root/train/shard-00000{0..3}.tar, a copy of the test photographs' shards."""
    root = tmp_path_factory.mktemp("photos")
    photo_shards(root / "train")
    return root


@pytest.fixture(scope="module")
def s3(photos):
    """moto's S3 with bucket "photos" holding train/shard-*.tar."""
    with MotoS3() as server:
        server.create_bucket("photos")
        for p in sorted((photos / "train").glob("*.tar")):
            server.put("photos", f"train/{p.name}", p)
        yield server


def test_exactly_once_over_shuffled_epochs_from_s3_http_and_https_equals_local(tmp_path, photos, s3):
    ca = make_test_ca(tmp_path / "ca")
    with FaultServer(photos) as http, FaultServer(photos, tls_dir=ca) as https:
        datasets = {"local": webdataset(f"{photos}/train/{BRACES}"),
                    "s3": webdataset(f"s3://photos/train/{BRACES}"),
                    "s3glob": webdataset("s3://photos/train/shard-*.tar"),
                    "http": webdataset(http.url(f"train/{BRACES}")),
                    "https": webdataset(https.url(f"train/{BRACES}"))}
        config = config_text({"ca_file": str(ca / "ca.pem")}, datasets)
        with RemoteDaemon(tmp_path, config, env=s3.env()) as d:
            want = epochs(d.sock, "local", 2)
            assert not np.array_equal(want[0][0], want[1][0]), "the reference must shuffle each epoch anew"
            for name in ("s3", "s3glob", "http", "https"):
                assert_same_epochs(epochs(d.sock, name, 2), want, N)
                r = d.remote(name)
                assert (r["shards"], r["shards_here"], r["failed"], r["evicted"]) == (4, 4, 0, 0), (name, r)
            # Fetched once per host: s3 and s3glob name the same objects and share their files.
            cache = d.status()["remote_cache"]
            assert int(cache["totals"]["fetched"]) == 12 and int(cache["files"]) == 12, cache
            assert stat.S_IMODE(os.stat(d.shard_dir).st_mode) == 0o700
            files = shard_files(d.shard_dir)
            assert len(files) == 12 and all(n.endswith(".tar") for n in files), files
            for name in files:
                st = os.stat(d.shard_dir / name)
                assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.geteuid(), name


def test_prefetch_runs_ahead_of_the_tasks_and_without_it_tasks_wait(tmp_path):
    """32 one-sample shards behind a server answering each request after 0.25 s, read in order one per batch by a
    trainer that takes 0.05 s a batch: fetched 32 ahead (8 at once) the tasks wait for few of them; with
    prefetch_shards = 0 (the next 2 batches only) they wait for many more. The index is cached by a first run, and
    the shard files deleted before each timed run, so every shard is fetched while the epoch runs."""
    make_shards(tmp_path / "srv" / "pfs", 32, 1)
    cache = str(tmp_path / "cache")

    def config(prefetch, endpoint):
        return config_text({"prefetch_shards": prefetch, "fetch_concurrency": 8},
                           {"pf": webdataset("s3://pfs/*.tar", endpoint_url=endpoint)})

    with FaultServer(tmp_path / "srv") as fs:
        (tmp_path / "index").mkdir()
        with RemoteDaemon(tmp_path / "index", config(8, fs.endpoint), cache_dir=cache) as d:
            assert d.wait_loaded("pf")["state"] == "available"
            assert d.remote("pf")["fetched"] == 32
        fs.restart(latency=0.25)
        counters = {}
        for prefetch in (32, 0):
            for f in Path(cache, "shards").iterdir():
                f.unlink()
            run = tmp_path / f"prefetch{prefetch}"
            run.mkdir()
            with RemoteDaemon(run, config(prefetch, fs.endpoint), cache_dir=cache) as d:
                assert d.wait_loaded("pf")["state"] == "available"
                assert d.remote("pf")["fetched"] == 0, "the index should come from the index cache"
                started = time.monotonic()
                (indices, _, labels), = epochs(d.sock, "pf", 1, batch_size=1, shuffle=False, sleep=0.05)
                assert indices.tolist() == list(range(32)) and labels.tolist() == [i % 7 for i in range(32)]
                counters[prefetch] = dict(d.remote("pf"), seconds=round(time.monotonic() - started, 2))
    on, off = counters[32], counters[0]
    print("prefetch_shards 32:", on, "\nprefetch_shards 0:", off)
    assert on["fetched"] == 32 and on["prefetched"] >= 24, on
    assert on["waited"] <= 8, on  # the first batches, before the look-ahead is ahead (5 seen under load)
    assert on["seconds"] < off["seconds"], (on, off)
    assert off["waited"] >= 2 * on["waited"] + 6, (on, off)


def test_a_cache_of_half_the_dataset_stays_within_its_bound_and_serves_every_sample_once(tmp_path, s3):
    paths = make_shards(tmp_path / "shards", 8, 8, seed=5)
    total = sum(os.path.getsize(p) for p in paths)
    bound = total // 2
    s3.create_bucket("bound")
    for p in paths:
        s3.put("bound", f"b/{os.path.basename(p)}", Path(p))
    datasets = {"local": webdataset(f"{tmp_path}/shards/shard-{{000000..000007}}.tar"),
                "bound": webdataset("s3://bound/b/*.tar")}
    with RemoteDaemon(tmp_path, config_text({"cache_max_bytes": bound}, datasets), env=s3.env()) as d:
        assert d.wait_loaded("bound")["state"] == "available"
        want = epochs(d.sock, "local", 2, batch_size=2)
        before = d.remote("bound")
        peak, stop = [0], threading.Event()

        def watch():
            while not stop.is_set():
                files = shard_files(d.shard_dir)
                peak[0] = max(peak[0], sum(v for k, v in files.items() if k.endswith((".tar", ".part"))))
                time.sleep(0.002)

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            got = epochs(d.sock, "bound", 2, batch_size=2)
        finally:
            stop.set()
            watcher.join()
        after = d.remote("bound")
        cache = d.status()["remote_cache"]
    assert_same_epochs(got, want, 64)
    print(f"bound {bound} of {total} bytes; peak on disk {peak[0]}; counters before {before}, after {after}")
    assert 0 < peak[0] <= bound
    assert int(cache["max_bytes"]) == bound and int(cache.get("bytes", 0)) <= bound
    assert after["evicted"] > before["evicted"] and after["fetched"] > before["fetched"], (before, after)
    assert after["failed"] == 0


def _md5(path):
    return hashlib.md5(Path(path).read_bytes()).hexdigest()


def test_a_daemon_killed_mid_download_leaves_only_part_files_which_the_next_start_removes(tmp_path, photos):
    sources = {_md5(p) for p in (photos / "train").glob("*.tar")}
    cache = tmp_path / "cache"
    with FaultServer(photos, bandwidth=1e6) as fs:
        config = config_text({}, {"local": webdataset(f"{photos}/train/{BRACES}"),
                                  "shots": webdataset(fs.url(f"train/{BRACES}"))})
        (tmp_path / "first").mkdir()
        with RemoteDaemon(tmp_path / "first", config, cache_dir=str(cache)) as d:
            deadline = time.monotonic() + 30
            while not any(k.endswith(".part") and v > 0 for k, v in shard_files(d.shard_dir).items()):
                assert time.monotonic() < deadline, "no download started"
                time.sleep(0.005)
            os.kill(d.pid, signal.SIGKILL)
        left = shard_files(cache / "shards")
        parts = [k for k in left if k.endswith(".part")]
        assert parts, left
        for name in left:  # anything but a .part is a whole shard
            assert name.endswith(".part") or _md5(cache / "shards" / name) in sources, name
        # Slow answers: the next daemon's HEADs take 4 x 0.3 s, so no download has begun when it first accepts.
        fs.restart(latency=0.3, bandwidth=0)
        (tmp_path / "second").mkdir()
        with RemoteDaemon(tmp_path / "second", config, cache_dir=str(cache)) as d:
            assert not [k for k in shard_files(d.shard_dir) if k.endswith(".part")], "leftovers not removed at start"
            assert d.wait_loaded("shots")["state"] == "available"
            assert_same_epochs(epochs(d.sock, "shots", 1), epochs(d.sock, "local", 1), N)
            assert not [k for k in shard_files(d.shard_dir) if k.endswith(".part")]
