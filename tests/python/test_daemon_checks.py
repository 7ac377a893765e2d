"""Whom the Python client talks to, and how long it waits (issue 23, items 7 and 10), against real daemons.

Owner: a batchd started as another uid (Debian's "daemon", uid 1; needs root): `python -m batchd` prints its uid and
pid, and fails, like batchd.Loader, when an expected owner (--expect-owner, expected_owner=, $BATCHD_EXPECT_OWNER)
differs; a socket in a directory others can write gets a warning.
Deadline: a SIGSTOPped batchd still accepts connections but never answers: every Loader request fails within its
request_timeout (or $BATCHD_TIMEOUT) with BatchdError naming the socket and the request."""
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

import pytest

import batchd
from batchd import _batchd
from conftest import _run_daemon

DAEMON_UID = 1  # Debian's "daemon" user and group


def _python_m_batchd(*args, **env):
    return subprocess.run([sys.executable, "-m", "batchd", *args], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, **env))


def _within(seconds, call):
    """(call()'s exception or None, seconds it took); fails the test if it takes longer than `seconds`."""
    result = {}

    def run():
        try:
            call()
        except Exception as e:  # noqa: BLE001: the caller checks which
            result["error"] = e

    start = time.monotonic()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still waiting after {seconds} s"
    return result.get("error"), time.monotonic() - start


@pytest.fixture(scope="module")
def others_daemon():
    """(socket, its directory) of a batchd running as uid 1, in a directory of its own (mode 0700)."""
    if os.getuid() != 0:
        pytest.skip("needs root, to start the daemon as another uid")
    with tempfile.TemporaryDirectory(prefix="batchd-py-owner-") as tmp:
        os.chown(tmp, DAEMON_UID, DAEMON_UID)
        for sock in _run_daemon(tmp, ["--cache-dir", ""], user=DAEMON_UID, group=DAEMON_UID, extra_groups=[]):
            yield sock, tmp


def test_python_m_batchd_prints_the_daemons_uid_and_pid(others_daemon):
    sock, _ = others_daemon
    out = _python_m_batchd("--socket", sock)
    assert out.returncode == 0, out.stdout + out.stderr
    match = re.search(r"^daemon: batchd [0-9.]+, instance [0-9a-f]{16}, pid (\d+), uid 1 \(daemon\), up ", out.stdout,
                      re.M)
    assert match, out.stdout
    assert "warning" not in out.stdout + out.stderr


def test_python_m_batchd_fails_when_the_daemon_is_not_the_expected_owner(others_daemon):
    sock, _ = others_daemon
    for out in (_python_m_batchd("--socket", sock, "--expect-owner", "root"),
                _python_m_batchd("--socket", sock, BATCHD_EXPECT_OWNER="0")):
        assert out.returncode == 1, out.stdout + out.stderr
        assert re.search(rf"FAILED: the daemon at {re.escape(sock)} \(pid \d+\) runs as uid 1 \(daemon\), not as "
                         r"uid 0 \(root\)", out.stderr), out.stderr
        assert "fix: point --socket or BATCHD_SOCKET at the daemon you mean" in out.stderr
    assert _python_m_batchd("--socket", sock, "--expect-owner", "daemon").returncode == 0


def test_a_loader_refuses_a_daemon_of_another_owner(others_daemon, monkeypatch):
    sock, _ = others_daemon
    with pytest.raises(batchd.BatchdError) as refused:
        batchd.Loader("fashion-mnist-test", as_dict=True, shuffle=True, pipeline="fmnist", batch_size=1000, socket=sock, expected_owner="root")
    assert refused.value.code == "permission denied"
    assert "runs as uid 1 (daemon), not as uid 0 (root)" in str(refused.value)
    monkeypatch.setenv("BATCHD_EXPECT_OWNER", "root")
    with pytest.raises(batchd.BatchdError, match=r"required by \$BATCHD_EXPECT_OWNER"):
        batchd.Loader("fashion-mnist-test", as_dict=True, shuffle=True, pipeline="fmnist", batch_size=1000, socket=sock)
    loader = batchd.Loader("fashion-mnist-test", as_dict=True, shuffle=True, pipeline="fmnist", batch_size=1000, socket=sock,
                           expected_owner="daemon")
    assert len(loader) == 10


def test_a_socket_in_a_directory_others_can_write_gets_a_warning(others_daemon):
    sock, tmp = others_daemon
    os.chmod(tmp, 0o1777)  # as /tmp: anyone could have bound that name first
    try:
        out = _python_m_batchd("--socket", sock)
        assert out.returncode == 0, out.stdout + out.stderr
        assert re.search(rf"^  warning: the daemon at {re.escape(sock)} \(pid \d+\) runs as uid 1 \(daemon\), and "
                         rf"{re.escape(tmp)} \(mode 1777\) lets other users create that name first", out.stdout,
                         re.M), out.stdout
        assert "BATCHD_EXPECT_OWNER=daemon" in out.stdout
        with pytest.warns(RuntimeWarning, match="lets other users create that name first"):
            batchd.Loader("fashion-mnist-test", as_dict=True, shuffle=True, pipeline="fmnist", batch_size=1000, socket=sock)
    finally:
        os.chmod(tmp, 0o700)


@pytest.fixture
def stoppable_daemon():
    """(socket, stop): a daemon of its own; stop() SIGSTOPs it (SIGCONT at the end of the test)."""
    with tempfile.TemporaryDirectory(prefix="batchd-py-stopped-") as tmp:
        for sock in _run_daemon(tmp):
            pid = _batchd.status(sock)["daemon_pid"]
            stopped = []

            def stop():
                os.kill(pid, signal.SIGSTOP)
                stopped.append(pid)

            try:
                yield sock, stop
            finally:
                if stopped:
                    os.kill(pid, signal.SIGCONT)


def _check_deadline(error, took, sock, request, timeout):
    assert isinstance(error, batchd.BatchdError), repr(error)
    assert error.code == "unavailable"
    assert f"the daemon at {sock} accepted the connection but did not answer {request} within" in str(error), error
    assert "BATCHD_TIMEOUT" in str(error)
    assert timeout * 0.9 <= took < timeout + 4, took


def test_loader_requests_fail_within_the_request_timeout(stoppable_daemon):
    sock, stop = stoppable_daemon
    planned = batchd.Loader("fashion-mnist-test", as_dict=True, shuffle=True, pipeline="fmnist", batch_size=1000, socket=sock,
                            request_timeout=1.5)
    assert len(planned) == 10  # planned while the daemon answers
    stop()
    loader = batchd.Loader("fashion-mnist-test", as_dict=True, shuffle=True, pipeline="fmnist", batch_size=1000, socket=sock, request_timeout=1)
    error, took = _within(20, lambda: len(loader))
    _check_deadline(error, took, sock, "OpenStream (dry run)", 1)
    error, took = _within(20, lambda: next(iter(planned)))
    _check_deadline(error, took, sock, "OpenStream", 1.5)
    error, took = _within(20, lambda: _batchd.status(sock, timeout=1))
    _check_deadline(error, took, sock, "StatusRequest", 1)
    # The connection is closed after a deadline: a later request fails at once.
    error, took = _within(20, lambda: len(loader))
    _check_deadline(error, took + 1, sock, "OpenStream (dry run)", 1)


def test_batchd_timeout_sets_the_deadline_of_every_loader(stoppable_daemon, monkeypatch):
    sock, stop = stoppable_daemon
    stop()
    monkeypatch.setenv("BATCHD_TIMEOUT", "0.5")
    loader = batchd.Loader("fashion-mnist-test", as_dict=True, shuffle=True, pipeline="fmnist", batch_size=1000, socket=sock)
    error, took = _within(20, lambda: len(loader))
    _check_deadline(error, took, sock, "OpenStream (dry run)", 0.5)
    for bad in (-1, 9.3e9, float("nan")):  # 9.3e9 s overflowed the steady clock: every request failed at once
        with pytest.raises(ValueError, match="request_timeout must be a number of seconds >= 0"):
            batchd.Loader("fashion-mnist-test", as_dict=True, shuffle=True, pipeline="fmnist", socket=sock, request_timeout=bad)
