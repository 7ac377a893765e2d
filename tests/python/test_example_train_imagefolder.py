"""examples/train_imagefolder.py run as a user runs it (a subprocess; one short epoch on the CPU over the test images,
DATA/train and DATA/val both that folder): with torch.utils.data.DataLoader; with batchd.Loader and no daemon
running beforehand (the Loader starts a private daemon, which must serve the trainer and be gone, with its
directory, once the trainer exits); and with batchd.Loader and a daemon started here that declares the folder
($BATCHD_SOCKET; no private daemon then). Each run must print its epoch's train and val lines with a finite loss and
each sample seen once: S == len(loader.dataset) == the folder's images. batchd's pin_memory=True warns once (no
CUDA here), DataLoader's not at all. And two ranks (gloo), each with its private daemon, through the example's
DistributedSampler path (the ImageNet example's samplers and its Subset of the validation tail). Run by ctest as
example_train_imagefolder."""
import glob
import math
import os
import re
import socket as socket_module
import subprocess
import sys
import tempfile
import time

import pytest

from batchd import _batchd
from batchd._daemon.private import no_daemon_answers
from conftest import ROOT, _run_daemon
from test_private_daemon import running, wait_until

TESTDATA = os.environ.get("BATCHD_TESTDATA", os.path.join(ROOT, "build", "testdata"))
IMAGES = os.path.join(TESTDATA, "imagefolder")
BINARY = os.path.realpath(os.environ.get("BATCHD_BIN", os.path.join(ROOT, "build", "bin", "batchd")))
EXAMPLE = os.path.join(ROOT, "examples", "train_imagefolder.py")
SMALL = ["--epochs", "1", "-b", "16", "-j", "1", "--train-crop-size", "64", "--val-resize-size", "73",
         "--val-crop-size", "64", "--device", "cpu", "--lr", "0.01"]
LINE = re.compile(r"^epoch 0 (train|val): (\d+) samples of (\d+) \(len\(loader\.dataset\)\), loss (\S+), "
                  r"acc@1 ([0-9.]+)%", re.M)
PIN_WARNING = "pin_memory=True, but CUDA is not available"


@pytest.fixture(scope="module")
def data():
    """DATA/{train,val} -> the test images; yields (DATA, the number of images)."""
    if not os.path.isdir(IMAGES):
        pytest.fail(f"no test images at {IMAGES}: run ctest's make_testdata (BATCHD_TESTDATA)")
    images = [f for f in glob.glob(os.path.join(IMAGES, "*", "*")) if f.endswith((".jpg", ".png"))]
    with tempfile.TemporaryDirectory(prefix="batchd-example-data-") as tmp:
        for split in ("train", "val"):
            os.symlink(IMAGES, os.path.join(tmp, split))
        yield tmp, len(images)


def children_named_batchd(pid):
    """The pids of `pid`'s child processes that run the batchd binary."""
    found = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and os.path.realpath(os.path.dirname(stat) + "/exe") == BINARY:
                found.append(int(os.path.basename(os.path.dirname(stat))))
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
    return found


def train(data_dir, loader, runtime_dir, socket=None):
    """Runs the example to its end; returns (stdout, stderr, the batchd children seen, the most streams the daemon
    at `socket` had open at once while it ran)."""
    env = {k: v for k, v in os.environ.items() if k != "BATCHD_SOCKET"}
    env.update(XDG_RUNTIME_DIR=runtime_dir, TMPDIR=runtime_dir, BATCHD_BIN=BINARY, OMP_NUM_THREADS="1")
    if socket:
        env["BATCHD_SOCKET"] = socket
    proc = subprocess.Popen([sys.executable, EXAMPLE, data_dir, "--loader", loader, *SMALL], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    daemons, streams = set(), 0
    deadline = time.monotonic() + 400
    while proc.poll() is None and time.monotonic() < deadline:  # the pipes hold far more than the example prints
        daemons.update(children_named_batchd(proc.pid))
        if socket:
            streams = max(streams, _batchd.status(socket)["streams"])
        time.sleep(0.02)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, f"the example failed:\n{out}\n{err[-4000:]}"
    return out, err, daemons, streams


def check_epoch(out, images, train_seen=None):
    """Both lines there, len(loader.dataset) the folder's images, each read once (train: train_seen if given)."""
    lines = {m[0]: m for m in LINE.findall(out)}
    assert set(lines) == {"train", "val"}, f"no epoch lines in:\n{out}"
    for split, seen, size, loss, acc in lines.values():
        expected = train_seen if split == "train" and train_seen is not None else images
        assert int(size) == images, f"{split}: len(loader.dataset) is {size}, the folder has {images} images"
        assert int(seen) == expected, f"{split}: the epoch read {seen} samples, not {expected}"
        assert math.isfinite(float(loss)) and 0.0 <= float(acc) <= 100.0, f"{split}: loss {loss}, acc@1 {acc}"


def test_with_dataloader(data, tmp_path):
    out, err, daemons, _ = train(data[0], "torch", str(tmp_path))
    check_epoch(out, data[1])
    assert PIN_WARNING not in err and not daemons


def test_with_batchd_and_no_daemon_a_private_one_serves_and_is_gone_after(data, tmp_path):
    if not no_daemon_answers():
        pytest.skip(f"a daemon answers at {_batchd.default_socket_path()}: this test needs none running")
    out, err, daemons, _ = train(data[0], "batchd", str(tmp_path))
    check_epoch(out, data[1])
    assert err.count(PIN_WARNING) == 1, err[-3000:]
    assert len(daemons) == 1, f"one private daemon for the trainer, saw {daemons}"
    pid = daemons.pop()
    assert wait_until(lambda: not running(pid)), "the private daemon outlived its trainer"
    assert glob.glob(str(tmp_path / "batchd-private-*")) == [], "its directory is removed at exit"


def test_with_batchd_and_a_daemon_that_declares_the_folder(data, tmp_path):
    config = tmp_path / "batchd.toml"
    config.write_text(f'[datasets.photos]\nformat = "imagefolder"\nroot = "{IMAGES}"\n')
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    for sock in _run_daemon(str(tmp_path), ["--config", str(config), "--cache-dir", ""]):
        out, err, daemons, streams = train(data[0], "batchd", str(runtime), socket=sock)
    check_epoch(out, data[1])
    assert err.count(PIN_WARNING) == 1, err[-3000:]
    assert not daemons and not glob.glob(str(runtime / "batchd-private-*")), "no private daemon: one answers"
    assert streams > 0, "the test's daemon served the trainer's streams"


def test_two_ranks_with_batchd_read_their_distributed_sampler_shares(data, tmp_path):
    """WORLD_SIZE=2 (gloo, as torchrun sets it): DistributedSampler for train (padded: 62 reads of 61 images, each
    rank its own private daemon), DistributedSampler(shuffle=False, drop_last=True) for val in a loader with
    drop_last=False (30 per rank, the short batch kept) plus the Subset of the last image: 61."""
    with socket_module.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k != "BATCHD_SOCKET"}
    env.update(XDG_RUNTIME_DIR=str(tmp_path), TMPDIR=str(tmp_path), BATCHD_BIN=BINARY, OMP_NUM_THREADS="1",
               WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    ranks = [subprocess.Popen([sys.executable, EXAMPLE, data[0], "--loader", "batchd", *SMALL],
                              env=dict(env, RANK=str(r), LOCAL_RANK=str(r)), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for r in (0, 1)]
    for proc in ranks:
        out, err = proc.communicate(timeout=400)
        assert proc.returncode == 0, f"a rank failed:\n{out}\n{err[-4000:]}"
        check_epoch(out, data[1], train_seen=data[1] + data[1] % 2)
