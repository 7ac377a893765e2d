"""Your own Dataset (issue 26) when things go wrong, against a real daemon with a 1 s task deadline
(daemon.task_timeout_min_s = 1, per_sample_timeout_ms = 1: their minimums), file_system segments (named in
/dev/shm) and a socket every uid may reach.

A worker SIGKILLed mid-epoch, or hung in __getitem__ past the deadline (the daemon detaches it, its client library
ends it with status 75): its task is redone, every index comes once, and the Loader starts a replacement. A sample
that hangs twice, raises, or changes shape is a bad sample: on_error="fail" raises naming it, "skip" replaces it. A
SIGKILLed trainer leaves no worker, no /dev/shm file and no stream; another uid cannot attach to a stream.
"""
import glob
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings

import pytest

import batchd
from batchd import _batchd
from conftest import _run_daemon
from own_datasets import Faulty, Squares
from test_private_daemon import running, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
NOBODY = 65534  # Debian's nobody


@pytest.fixture(scope="module")
def sock():
    with tempfile.TemporaryDirectory(prefix="batchd-py-own-") as tmp:
        os.chmod(tmp, 0o755)  # nobody reaches the socket (test_another_uid_cannot_attach...)
        config = os.path.join(tmp, "batchd.toml")
        with open(config, "w") as f:
            f.write('[daemon]\nsocket_mode = "0666"\nshm_strategy = "file_system"\ntask_timeout_min_s = 1\n'
                    'per_sample_timeout_ms = 1\n')
        yield from _run_daemon(tmp, ["--config", config, "--cache-dir", ""])


def _pids(loader):
    return [process.pid for process, _ in loader._own._workers]


def _epoch(loader, order=None):
    """The indices of one pass (appended to `order` as they come, so a failed pass leaves what it delivered)."""
    order = [] if order is None else order
    for _, i in loader:
        order += i.tolist()
    return order


def test_a_worker_killed_mid_epoch_is_replaced_and_every_index_comes_once(sock):
    loader = batchd.Loader(Squares(60, delay=0.01), batch_size=4, num_workers=4, shuffle=True, socket=sock,
                           timeout=30)
    try:
        with pytest.warns(RuntimeWarning) as caught:
            order, victim = [], None
            for k, (_, i) in enumerate(loader):
                order += i.tolist()
                if k == 1:
                    victim = _pids(loader)[1]
                    os.kill(victim, signal.SIGKILL)
            assert sorted(order) == list(range(60))
            assert wait_until(lambda: loader._own.check() or loader._own.replaced >= 1)
            assert sorted(_epoch(loader)) == list(range(60))
        assert victim not in _pids(loader) and all(running(p) for p in _pids(loader))
        assert any(f"worker 1 (pid {victim}) exited (status -9)" in str(w.message) for w in caught)
    finally:
        loader.close()


def test_a_hanging_sample_is_redone_and_its_worker_ended(sock, tmp_path):
    loader = batchd.Loader(Faulty(40, 13, "hang", str(tmp_path)), batch_size=4, num_workers=3, socket=sock,
                           timeout=30, seeding="per_sample")
    try:
        with pytest.warns(RuntimeWarning) as caught:
            assert sorted(_epoch(loader)) == list(range(40))
            (hung,) = [int(name.split(".")[1]) for name in os.listdir(tmp_path)]  # "hang.<pid>.0"
            assert wait_until(lambda: loader._own.check() or loader._own.replaced >= 1)
        assert not running(hung) and hung not in _pids(loader)
        assert any(f"(pid {hung}) was ended by its client library (status 75: the daemon detached it"
                   in str(w.message) for w in caught), [str(w.message) for w in caught]  # its exit status was 75
        assert sorted(_epoch(loader)) == list(range(40)), "the replacement serves the next epoch"
    finally:
        loader.close()


@pytest.mark.parametrize("on_error", ["fail", "skip"])
def test_a_sample_that_hangs_two_workers_is_bad(sock, tmp_path, on_error):
    loader = batchd.Loader(Faulty(40, 13, "hang", str(tmp_path), times=2), batch_size=4, num_workers=3,
                           socket=sock, on_error=on_error, timeout=30, seeding="per_sample")  # names the sample
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the replacements
            order = []
            if on_error == "fail":
                with pytest.raises(batchd.BatchdError) as failed:
                    _epoch(loader, order)
                assert "sample 13 of dataset 'python:Faulty' hung 2 workers (no answer within 1.0 s" in \
                    str(failed.value), failed.value
                assert order == list(range(12)), "the batches before the bad sample's are delivered"
            else:
                _epoch(loader, order)
                assert len(order) == 40 and 13 not in order and set(order) == set(range(40)) - {13}
            hung = [int(name.split(".")[1]) for name in os.listdir(tmp_path)]
            assert len(set(hung)) == 2, "two workers hung on it"
            assert wait_until(lambda: not any(running(pid) for pid in hung))
    finally:
        loader.close()


@pytest.mark.parametrize("on_error", ["fail", "skip"])
def test_a_sample_that_raises(sock, on_error):
    loader = batchd.Loader(Faulty(40, 13, "raise"), batch_size=4, num_workers=3, socket=sock, on_error=on_error, seeding="per_sample",
                           timeout=30)
    try:
        order = []
        if on_error == "fail":
            with pytest.raises(ValueError) as failed:  # its own type, as DataLoader raises it (issue 40)
                _epoch(loader, order)
            message = str(failed.value)
            assert "ValueError: sample 13 is unreadable (a test's fault)" in message, message
            assert "Faulty.__getitem__(13)" in message, message
            assert order == list(range(12))
        else:
            _epoch(loader, order)
            assert len(order) == 40 and set(order) == set(range(40)) - {13}
            assert sorted(_epoch(loader)) == sorted(order), "the next epoch skips it too"
        assert loader._own.replaced == 0, "an exception does not cost a worker"
    finally:
        loader.close()


def test_a_sample_of_another_shape_names_the_field_index_and_shapes(sock):
    loader = batchd.Loader(Faulty(40, 13, "shape"), batch_size=4, num_workers=2, socket=sock, timeout=30, seeding="per_sample")
    try:
        with pytest.raises(batchd.BatchdError) as failed:
            _epoch(loader)
        assert ("sample 13: field '0' is float32 of shape (3, 5), expected float32 of shape (3, 4)"
                in str(failed.value)), failed.value
    finally:
        loader.close()


@pytest.mark.parametrize("context, how", [("fork", "read"), ("forkserver", "read"), ("fork", "idle"), ("fork", "fed"),
                                          ("forkserver", "fed")])
def test_a_killed_trainer_leaves_no_worker_no_shm_file_and_no_stream(sock, context, how):
    """"idle": the workers were forked by a thread that has ended, and wait between streams: only their watch of
    the trainer's pid can end them (the parent-death signal follows the forking thread; the pipe never closes)."""
    trainer = subprocess.Popen([sys.executable, os.path.join(HERE, "own_trainer.py"), sock, context, how],
                               stdout=subprocess.PIPE, text=True)
    try:
        stream, *workers = map(int, trainer.stdout.readline().split())
        prefix = f"/dev/shm/batchd.{_batchd.status(sock)['instance_id']}."
        time.sleep(0.3)
        assert len(workers) == 3 and all(running(pid) for pid in workers), "the workers outlive their thread"
        if how in ("read", "fed"):
            assert os.path.exists(f"{prefix}{stream}") and _batchd.status(sock)["streams"] == 1
    finally:
        trainer.kill()
        trainer.wait(10)
    try:
        assert wait_until(lambda: not any(running(pid) for pid in workers)), "the workers follow their trainer"
    finally:
        for pid in filter(running, workers):  # a failed test leaves nothing behind
            os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: _batchd.status(sock)["streams"] == 0), "the daemon frees the stream"
    assert wait_until(lambda: glob.glob(f"{prefix}*") == [f"{prefix}lock"]), glob.glob(f"{prefix}*")


def test_workers_forked_by_a_thread_outlive_it(sock):
    loader = batchd.Loader(Squares(40), batch_size=4, num_workers=2, socket=sock, timeout=30)
    try:
        first = []
        reader = threading.Thread(target=lambda: _epoch(loader, first))  # forks the workers, then ends
        reader.start()
        reader.join()
        time.sleep(0.3)
        assert sorted(first) == list(range(40)) and all(running(pid) for pid in _pids(loader))
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # a lost worker warns
            assert sorted(_epoch(loader)) == list(range(40))
        assert loader._own.replaced == 0
    finally:
        loader.close()


def test_another_uid_cannot_attach_a_worker_to_the_stream(sock):
    if os.getuid() != 0:
        pytest.skip("needs root, to run a process as nobody")
    loader = batchd.Loader(Squares(40), batch_size=4, num_workers=2, socket=sock, timeout=30, seeding="per_sample")
    try:
        batches = iter(loader)
        order = next(batches)[1].tolist()
        stream = loader._stream.info["id"]
        attach = ("import sys; from batchd import _batchd\n"
                  "try:\n    _batchd.AttachedWorker(sys.argv[1], int(sys.argv[2]))\n    print('attached')\n"
                  "except _batchd.BatchdError as e:\n    print(e.code, '|', e)\n")
        out = subprocess.run([sys.executable, "-c", attach, sock, str(stream)], capture_output=True, text=True,
                             timeout=60, user=NOBODY, group=NOBODY, extra_groups=[], cwd="/",
                             env=dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(batchd.__file__))))
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith(f"not found | no stream {stream} of uid {NOBODY} to attach a worker to"), \
            out.stdout + out.stderr
        for _, i in batches:
            order += i.tolist()
        assert sorted(order) == list(range(40)), "the owner's stream goes on"
    finally:
        loader.close()
