"""A real batchd for the Python tests: build/bin/batchd on a private socket (BATCHD_BIN overrides the binary)."""
import os
import subprocess
import tempfile
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def socket_path():
    binary = os.environ.get("BATCHD_BIN", os.path.join(ROOT, "build", "bin", "batchd"))
    with tempfile.TemporaryDirectory(prefix="batchd-py-") as tmp:
        sock = os.path.join(tmp, "batchd.sock")
        proc = subprocess.Popen([binary, "--socket", sock, "--workers", "2", "--log-level", "warn"])
        try:
            for _ in range(300):
                if os.path.exists(sock):
                    break
                if proc.poll() is not None:
                    raise RuntimeError(f"batchd exited with {proc.returncode} during start-up")
                time.sleep(0.02)
            yield sock
        finally:
            proc.terminate()
            proc.wait(timeout=10)
