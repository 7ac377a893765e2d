"""The cache point (issue 27) against a real daemon: cached and uncached streams give bit-identical batches (val224,
val224_u8 and a train recipe after the point, shuffled, 2 epochs); a random op before `cache` is refused naming it;
a worker SIGKILLed half-way through writing an entry (--fault-crash-in-cache-fill) has its batch redone and its
entry dropped, and no torn entry is ever read.

That the second epoch is served from the cache, and not recomputed, is checked from the outside: between the
epochs every image file of the stream's dataset is overwritten in place with garbage of the same size and its mtime
put back (the same size, mtime and inode: the stamp an entry is checked against). A sample read from its file in
epoch 2 would fail to decode; a sample read from the cache gives epoch 1's pixels."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

import pytest
import torch

import batchd
from conftest import ROOT, _run_daemon

TESTDATA = os.environ.get("BATCHD_TESTDATA", os.path.join(ROOT, "build", "testdata"))
IMAGES = os.path.join(TESTDATA, "imagefolder")
BATCHCTL = os.path.join(os.path.dirname(os.environ.get("BATCHD_BIN", os.path.join(ROOT, "build", "bin", "batchd"))),
                        "batchctl")
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
CRASH_SAMPLE = 17
TRAIN = [{"op": "decode", "max_side": 256}, {"op": "random_resized_crop", "size": 224},
         {"op": "horizontal_flip"}, {"op": "to_tensor"}, {"op": "normalize", "mean": MEAN, "std": STD}]
TRAIN_CACHED = [TRAIN[0], {"op": "cache"}, *TRAIN[1:]]


def _daemon(datasets, extra=()):
    """A daemon over private copies of the test image folder, one per name of `datasets`; yields (socket,
    {dataset: root}, path of its log (--log-level info))."""
    if not os.path.isdir(IMAGES):
        pytest.fail(f"{IMAGES} is missing: make it with tests/data/make_testdata.sh {TESTDATA}")
    with tempfile.TemporaryDirectory(prefix="batchd-py-cache-") as tmp:
        roots = {}
        config = os.path.join(tmp, "batchd.toml")
        with open(config, "w") as f:
            for name in datasets:
                roots[name] = os.path.join(tmp, name)
                shutil.copytree(IMAGES, roots[name])
                f.write(f'[datasets.{name}]\nformat = "imagefolder"\nroot = "{roots[name]}"\n\n')
        log_path = os.path.join(tmp, "batchd.log")
        with open(log_path, "w") as log:
            for sock in _run_daemon(tmp, ["--config", config, "--cache-dir", "", "--log-level", "info", *extra],
                                    stderr=log, stdout=log):
                yield sock, roots, log_path


@pytest.fixture(scope="module")
def daemon():
    """"photos" stays as it is; each garbled_* is garbled after epoch 1 by the test that owns it."""
    yield from _daemon(["photos", "garbled_val", "garbled_u8", "garbled_train"])


def wait_idle(sock):
    """Until the daemon has no stream and every worker is idle. A closed stream's last task (a batch made ahead) may
    still be running after Loader.close(); while garble() writes a file, its mtime is briefly new, and a worker that
    looked the sample up then would rightly drop its entry as changed (sample_cache.h), and epoch 2 would read the
    garbage."""
    deadline = time.monotonic() + 30
    while True:
        out = subprocess.run([BATCHCTL, "--socket", sock, "status", "--json"], capture_output=True, text=True,
                             timeout=30)
        assert out.returncode == 0, out.stderr
        status = json.loads(out.stdout)
        if not status["streams"] and all(w["state"] == "idle" for w in status["workers"]):
            return
        assert time.monotonic() < deadline, f"the daemon did not go idle: {status}"
        time.sleep(0.02)


def garble(root, sock):
    """Every file under root overwritten in place (same inode, same size) and its mtime put back, once the daemon
    at `sock` is idle (wait_idle)."""
    wait_idle(sock)
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            st = os.stat(path)
            with open(path, "r+b") as f:
                f.write(b"\xa5" * st.st_size)
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
            again = os.stat(path)
            assert (again.st_size, again.st_mtime_ns, again.st_ino) == (st.st_size, st.st_mtime_ns, st.st_ino)


def loader(sock, dataset, **kw):
    return batchd.Loader(dataset, socket=sock, as_dict=True, shuffle=True, seed=23, batch_size=8, **kw)


def one_epoch(l):
    return [{k: v.clone() for k, v in batch.items()} for batch in l]


def epochs(make_loader, n=2, between=None):
    """Epochs 0..n-1, each from a Loader of its own (set_epoch(e)): nothing of epoch e is made before between()
    ran, as a Loader's prefetch would make the first batches of its next pass during the last of this one."""
    out = []
    for e in range(n):
        if e == 1 and between is not None:
            between()
        l = make_loader()
        l.set_epoch(e)
        out.append(one_epoch(l))
        l.close()
    return out


def assert_same(a, b, what):
    assert len(a) == len(b), what
    for e, (ea, eb) in enumerate(zip(a, b)):
        assert len(ea) == len(eb), (what, e)
        for i, (x, y) in enumerate(zip(ea, eb)):
            assert x.keys() == y.keys(), what
            for k in x:
                assert x[k].dtype == y[k].dtype and x[k].shape == y[k].shape, (what, e, i, k)
                assert torch.equal(x[k], y[k]), f"{what}: epoch {e} batch {i} tensor {k} differs"
    assert sum(len(b["index"]) for b in a[0]) == 61


@pytest.mark.parametrize("preset,garbled", [("val224", "garbled_val"), ("val224_u8", "garbled_u8")])
def test_cached_and_uncached_presets_give_the_same_batches(daemon, preset, garbled):
    sock, roots, _ = daemon
    uncached = epochs(lambda: loader(sock, "photos", pipeline=preset))
    cached = epochs(lambda: loader(sock, "photos", pipeline=preset + "_cached"))
    assert_same(uncached, cached, f"{preset} vs {preset}_cached")
    assert not torch.equal(uncached[0][0]["index"], uncached[1][0]["index"]), "the epochs are shuffled apart"
    # Epoch 2 from the cache: the files under it are garbage by then.
    served = epochs(lambda: loader(sock, garbled, pipeline=preset + "_cached"),
                    between=lambda: garble(roots[garbled], sock))
    assert_same(uncached, served, f"{preset}_cached with epoch 2 from the cache")


def test_a_train_recipe_after_the_point_makes_what_it_makes_without_it(daemon):
    sock, roots, _ = daemon
    uncached = epochs(lambda: loader(sock, "photos", transform=TRAIN))
    cached = epochs(lambda: loader(sock, "photos", transform=TRAIN_CACHED))
    assert_same(uncached, cached, "train recipe vs the same with a cache point")
    first = {int(i): n for n, i in enumerate(uncached[0][0]["index"])}
    again = [(n, first[int(i)]) for n, i in enumerate(uncached[1][0]["index"]) if int(i) in first]
    assert all(not torch.equal(uncached[1][0]["image"][n], uncached[0][0]["image"][m]) for n, m in again), \
        "the random ops after the point draw anew each epoch"
    served = epochs(lambda: loader(sock, "garbled_train", transform=TRAIN_CACHED),
                    between=lambda: garble(roots["garbled_train"], sock))
    assert_same(uncached, served, "train recipe with epoch 2's pixels from the cache")


def test_a_random_op_before_the_cache_is_refused_naming_it(daemon):
    sock, _, _ = daemon
    bad = [{"op": "random_resized_crop", "size": 224}, {"op": "cache"}, {"op": "to_tensor"}]
    with pytest.raises(batchd.BatchdError, match=r"ops\[1\] \(cache\): ops\[0\] \(random_resized_crop\) before it "
                                                 r"is random") as e:
        len(loader(sock, "photos", transform=bad))
    assert e.value.code == "invalid argument"


def test_a_worker_killed_mid_fill_has_its_batch_redone_and_its_entry_never_read():
    for sock, roots, log_path in _daemon(["photos", "garbled"], ["--fault-crash-in-cache-fill", str(CRASH_SAMPLE)]):
        uncached = epochs(lambda: loader(sock, "photos", pipeline="val224"))
        served = epochs(lambda: loader(sock, "garbled", pipeline="val224_cached"),
                        between=lambda: garble(roots["garbled"], sock))
        assert_same(uncached, served, "val224_cached after a worker died filling an entry")
        with open(log_path) as f:
            log = f.read()
    killed = re.findall(r"worker \d+ \(pid (\d+)\) died \(killed by signal Killed", log)
    assert len(killed) == 1, f"the injected fault killed one worker, once; the daemon's log:\n{log[-3000:]}"
    dropped = re.findall(r"worker \(pid (\d+)\) ended while filling a cache entry: its (\d+) bytes were dropped", log)
    # val224_cached's entry is the uint8 image before to_tensor: 224 x 224 x 3 bytes.
    assert dropped == [(killed[0], str(224 * 224 * 3))], f"the dead worker's entry was dropped:\n{log[-3000:]}"
