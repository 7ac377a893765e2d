"""The private daemon (batchd._daemon.private): a trainer process (python -c) starts one over the test ImageFolder,
reads a batch through it (a file_system stream, so it has a named segment in /dev/shm), then ends; afterwards no
process of it remains and no /dev/shm file of its instance, whether the trainer exits normally (its directory is
gone too) or is killed with SIGKILL (the daemon's --exit-with-parent; its directory, with the log, is removed by the
next private daemon's start). The binary lookup's errors name the fix."""
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest

import batchd
from batchd import _batchd
from batchd._daemon import binary as _daemon_binary, private as _private_daemon
from conftest import ROOT

TESTDATA = os.environ.get("BATCHD_TESTDATA", os.path.join(ROOT, "build", "testdata"))
IMAGES = os.path.join(TESTDATA, "imagefolder")
BINARY = os.environ.get("BATCHD_BIN", os.path.join(ROOT, "build", "bin", "batchd"))

# The trainer: starts the private daemon, reads one batch, prints what it made, then exits or waits to be killed.
# It imports batchd's modules without the package's __init__ (which imports torch: seconds on a loaded machine).
TRAINER = """
import glob, json, sys, time, types
package = types.ModuleType("batchd")
package.__path__ = [sys.argv[3]]
sys.modules["batchd"] = package
from batchd import _batchd
from batchd._daemon.private import private_daemon
d = private_daemon(workers=1)
name = d.declare_imagefolder(sys.argv[1])
stream = _batchd.Client(d.socket).open_stream(dataset=name, pipeline="val224", batch_size=4, strategy="file_system")
epoch, arrays = stream.next_arrays()
instance = _batchd.status(d.socket)["instance_id"]
print(json.dumps({"pid": d.pid, "dir": d.directory, "socket": d.socket, "instance": instance, "name": name,
                  "shape": list(arrays["image"].shape), "shm": glob.glob(f"/dev/shm/batchd.{instance}.*")}),
      flush=True)
if sys.argv[2] == "wait":
    time.sleep(60)
"""


def start_trainer(tmp, mode):
    env = dict(os.environ, BATCHD_BIN=BINARY, TMPDIR=tmp)
    env.pop("XDG_RUNTIME_DIR", None)  # the private directory goes under TMPDIR, this test's own
    proc = subprocess.Popen([sys.executable, "-c", TRAINER, IMAGES, mode, os.path.dirname(batchd.__file__)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line, f"the trainer printed nothing: {proc.communicate(timeout=30)[1][-3000:]}"
    made = json.loads(line)
    assert made["shape"] == [4, 3, 224, 224]
    assert made["shm"], "a file_system stream has its segment and the instance its lock in /dev/shm"
    assert os.path.dirname(made["dir"]) == tmp and os.stat(made["dir"]).st_mode & 0o777 == 0o700
    return proc, made


def running(pid):
    """True while `pid` exists and is not a zombie (an exited daemon that its new parent has not reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_until(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def tmp():
    with tempfile.TemporaryDirectory(prefix="batchd-private-test-") as d:
        yield d


@pytest.fixture
def in_process(tmp, monkeypatch):
    """start(): a PrivateDaemon of this test process, its directory under tmp; each is closed afterwards."""
    monkeypatch.setattr(_private_daemon, "_base_dir", lambda: tmp)
    monkeypatch.setenv("BATCHD_BIN", BINARY)
    started = []
    yield lambda: started.append(_private_daemon.PrivateDaemon(workers=1)) or started[-1]
    for d in started:
        d.close()


def test_a_normal_exit_leaves_no_process_no_directory_and_no_shm_file(tmp):
    proc, made = start_trainer(tmp, "exit")
    assert proc.wait(timeout=30) == 0, proc.stderr.read()[-3000:]
    assert not running(made["pid"]), "the finalizer waits for the daemon"
    assert not os.path.exists(made["dir"])
    assert glob.glob(f"/dev/shm/batchd.{made['instance']}.*") == []


def test_after_sigkill_of_the_trainer_the_daemon_drains_and_a_later_start_removes_its_directory(tmp, in_process):
    proc, made = start_trainer(tmp, "wait")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert wait_until(lambda: not running(made["pid"])), "the daemon outlived its trainer"
    assert glob.glob(f"/dev/shm/batchd.{made['instance']}.*") == []
    assert not os.path.exists(made["socket"]), "the daemon's drain removes its socket"
    with open(os.path.join(made["dir"], "batchd.log")) as f:
        log = f.read()
    assert f"parent process {proc.pid} exited (--exit-with-parent)" in log and "batchd stopped" in log, log[-2000:]
    # The next private daemon of this user removes the directory of the gone trainer (started here: a trainer
    # process more would import torch again).
    later = in_process()
    assert not os.path.exists(made["dir"])
    assert os.path.dirname(later.directory) == tmp
    later.close()
    assert not os.path.exists(later.directory) and not running(later.pid)


def test_a_second_dataset_is_added_by_a_reload_not_a_restart(in_process):
    sut = in_process()
    images = sut.declare_imagefolder(IMAGES)
    assert sut.declare_imagefolder(IMAGES + "/") == images  # one folder, one name
    digits = sut.declare_idx("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz",
                             "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz")
    client = _batchd.Client(sut.socket)
    for name, pipeline, shape in ((images, "val224", (2, 3, 224, 224)), (digits, "fmnist", (2, 1, 28, 28))):
        _, arrays = client.open_stream(dataset=name, pipeline=pipeline, batch_size=2).next_arrays()
        assert arrays["image"].shape == shape
    assert sut.running() and _batchd.status(sut.socket)["daemon_pid"] == sut.pid
    sut.close()
    assert not os.path.exists(sut.directory) and not running(sut.pid)


def test_a_folder_the_daemon_cannot_serve_is_an_error_with_the_reason_and_the_log(tmp, in_process):
    sut = in_process()
    with pytest.raises(batchd.BatchdError, match=r"cannot serve dataset no-such-folder-[0-9a-f]{8}: .*its log: "
                                                 + sut.log_path):
        sut.declare_imagefolder(os.path.join(tmp, "no-such-folder"))


def test_batchd_bin_naming_a_missing_file_is_an_error_naming_it(monkeypatch, tmp):
    missing = os.path.join(tmp, "no-such-batchd")
    monkeypatch.setenv("BATCHD_BIN", missing)
    with pytest.raises(batchd.BatchdError, match=f"BATCHD_BIN is '{missing}', which is not an executable file"):
        _daemon_binary.daemon_binary()


def test_without_any_binary_the_error_lists_where_it_looked_and_the_fixes(monkeypatch):
    monkeypatch.delenv("BATCHD_BIN", raising=False)
    monkeypatch.setattr(_daemon_binary, "candidates", lambda: [(None, "batchd on $PATH")])
    with pytest.raises(batchd.BatchdError) as e:
        _daemon_binary.daemon_binary()
    for part in ("looked at: $BATCHD_BIN (unset); batchd on $PATH", "BATCHD_BIN=/path/to/batchd",
                 "socket= or $BATCHD_SOCKET", "pip install"):
        assert part in str(e.value)


def test_the_lookup_order_is_package_copy_then_build_tree_then_path_then_system_dirs(monkeypatch):
    monkeypatch.delenv("BATCHD_BIN", raising=False)
    where = [w for _, w in _daemon_binary.candidates()]
    assert where == ["the pip-installed package's copy", "the CMake build tree's", "batchd on $PATH",
                     "/usr/sbin/batchd", "/usr/local/sbin/batchd", "/usr/bin/batchd"]
    if os.path.realpath(batchd.__file__).startswith(os.path.realpath(os.path.join(ROOT, "build", "python"))):
        assert os.path.samefile(_daemon_binary.daemon_binary(), os.path.join(ROOT, "build", "bin", "batchd"))


def test_a_private_daemon_is_for_no_socket_given_and_none_at_the_default(monkeypatch, tmp):
    import socket
    monkeypatch.delenv("BATCHD_SOCKET", raising=False)
    default = os.path.join(tmp, "default.sock")
    monkeypatch.setattr(_batchd, "default_socket_path", lambda: default)
    assert _private_daemon.no_daemon_answers()  # no file there
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as dead:
        dead.bind(default)  # a socket file nothing listens on: a dead daemon's
        assert _private_daemon.no_daemon_answers()
    os.unlink(default)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as live:
        live.bind(default)
        live.listen()
        assert not _private_daemon.no_daemon_answers()
    assert not _private_daemon.no_daemon_answers(socket=default)
    monkeypatch.setenv("BATCHD_SOCKET", default)
    assert not _private_daemon.no_daemon_answers()
