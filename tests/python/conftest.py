"""A real batchd for the Python tests: build/bin/batchd on a private socket (BATCHD_BIN overrides the binary).

socket_path: the embedded default config (fashion-mnist, fashion-mnist-test).
token_daemon: a config of token datasets (format "tokens"), good and bad, beside fashion-mnist-test.
"""
import os
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAKE_TOKENS = os.path.join(ROOT, "..", "shared", "data", "make_tokens.py")


def _accepts(sock):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        try:
            s.connect(sock)
            return True
        except OSError:
            return False


def _run_daemon(tmp, extra_args=(), **popen):
    """Starts batchd on a socket in tmp and yields the socket's path; stops it afterwards. `popen`: more arguments
    of subprocess.Popen (user=, group= to run it as another user). The log level is warn unless extra_args sets it."""
    binary = os.environ.get("BATCHD_BIN", os.path.join(ROOT, "build", "bin", "batchd"))
    sock = os.path.join(tmp, "batchd.sock")
    level = [] if "--log-level" in extra_args else ["--log-level", "warn"]
    proc = subprocess.Popen([binary, "--socket", sock, "--workers", "2", *level, *extra_args], **popen)
    try:
        for _ in range(1500):  # ready once it accepts: the socket file exists a moment before listen()
            if _accepts(sock):
                break
            if proc.poll() is not None:
                raise RuntimeError(f"batchd exited with {proc.returncode} during start-up")
            time.sleep(0.02)
        else:
            raise RuntimeError(f"batchd did not accept connections on {sock} within 30 s")
        yield sock
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def sock():
    """A daemon of this test module's own, without the sample cache (your own Dataset's tests)."""
    with tempfile.TemporaryDirectory(prefix="batchd-py-own-") as tmp:
        yield from _run_daemon(tmp, ["--cache-dir", ""])


@pytest.fixture(scope="module")
def socket_path():
    with tempfile.TemporaryDirectory(prefix="batchd-py-") as tmp:
        yield from _run_daemon(tmp)


class TokenFiles:
    """The token daemon's socket and its datasets: name -> (path, numpy dtype, seq_len)."""

    def __init__(self, sock, datasets):
        self.sock, self.datasets = sock, datasets

    def memmap(self, name):
        path, dtype, t = self.datasets[name]
        return np.memmap(path, dtype=dtype, mode="r"), t


@pytest.fixture(scope="module")
def token_daemon():
    """text16: make_tokens.py's byte-level tokens of real text (uint16, T = 128); rand32: uint32 tokens over the
    whole range, 400 windows of T = 48 and a 17-token tail; cut16: 100 windows of T = 64, for the test that
    truncates it; bad-size: 7 bytes (not whole uint16s); too-short: 10 tokens for T = 64. The two bad ones are
    refused alone; the others serve."""
    with tempfile.TemporaryDirectory(prefix="batchd-py-tokens-") as tmp:
        text16 = os.path.join(tmp, "text16.bin")
        subprocess.run([sys.executable, MAKE_TOKENS, text16, "0.1"], check=True, stdout=subprocess.DEVNULL)
        rand32 = os.path.join(tmp, "rand32.bin")
        rng = np.random.default_rng(15)
        rng.integers(0, 2**32, size=48 * 400 + 1 + 17, dtype=np.uint64).astype("<u4").tofile(rand32)
        bad_size = os.path.join(tmp, "bad-size.bin")
        with open(bad_size, "wb") as f:
            f.write(b"\x01" * 7)
        cut16 = os.path.join(tmp, "cut16.bin")
        np.arange(64 * 100 + 1, dtype="<u2").tofile(cut16)
        too_short = os.path.join(tmp, "too-short.bin")
        np.arange(10, dtype="<u2").tofile(too_short)
        datasets = {"text16": (text16, np.uint16, 128), "rand32": (rand32, np.uint32, 48),
                    "cut16": (cut16, np.uint16, 64), "bad-size": (bad_size, np.uint16, 16),
                    "too-short": (too_short, np.uint16, 64)}
        config = os.path.join(tmp, "batchd.toml")
        with open(config, "w") as f:
            for name, (path, dtype, t) in datasets.items():
                f.write(f'[datasets.{name}]\nformat = "tokens"\npath = "{path}"\n'
                        f'dtype = "{np.dtype(dtype).name}"\nseq_len = {t}\n\n')
            f.write('[datasets.fashion-mnist-test]\nformat = "idx"\n'
                    'images = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"\n'
                    'labels = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz"\n')
        for sock in _run_daemon(tmp, ["--config", config, "--cache-dir", ""]):
            yield TokenFiles(sock, datasets)
