"""A daemon several users share, round three (issue 43): what one user's stream may cost everyone else. Against one
real daemon (2 workers, a socket every uid may reach), with another user's fmnist stream reading all along.

- An own Dataset of any len (2^28, 2^40) costs the daemon O(batch) per batch: the shuffle takes one index at a
  time (index_permutation.h). Before, the first task built the epoch's order on the event loop: len 2^28 stalled
  every stream for about 20 s and held 2 GiB.
"""
import os
import tempfile
import threading
import time

import pytest

import batchd
from conftest import _run_daemon
from own_datasets import Huge

FMNIST = "/usr/share/datasets/fashion-mnist"


@pytest.fixture(scope="module")
def daemon():
    with tempfile.TemporaryDirectory(prefix="batchd-py-costs-") as tmp:
        os.chmod(tmp, 0o755)
        config = os.path.join(tmp, "batchd.toml")
        with open(config, "w") as f:
            f.write('[daemon]\nsocket_mode = "0666"\n'
                    f'[datasets.fmnist]\nformat = "idx"\nimages = "{FMNIST}/t10k-images-idx3-ubyte.gz"\n'
                    f'labels = "{FMNIST}/t10k-labels-idx1-ubyte.gz"\n')
        for sock in _run_daemon(tmp, ["--config", config, "--cache-dir", ""]):
            yield {"sock": sock, "pid": _daemon_pid(sock)}


def _daemon_pid(sock):
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"batchd") and sock.encode() in argv:
            return int(pid)
    raise AssertionError(f"no batchd process serves {sock}")


def _peak_rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


class Victim:
    """Another user's stream (fmnist, 64 per batch, endless) read in a thread; its longest wait between batches."""

    def __init__(self, sock):
        self.loader = batchd.Loader("fmnist", batch_size=64, pipeline="fmnist", shuffle=True, socket=sock,
                                    endless=True)
        self.longest, self.batches, self._stop = 0.0, 0, threading.Event()
        self._thread = threading.Thread(target=self._read)

    def _read(self):
        last = time.monotonic()
        for _ in self.loader:
            now = time.monotonic()
            self.longest, last = max(self.longest, now - last), now
            self.batches += 1
            if self._stop.is_set():
                break

    def __enter__(self):
        self._thread.start()
        while self.batches < 5:  # reading before the test starts
            time.sleep(0.01)
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=30)
        self.loader.close()


@pytest.mark.parametrize("n", [2 ** 28, 2 ** 40])
def test_an_own_dataset_of_any_len_costs_the_daemon_one_batch_at_a_time(daemon, n):
    before = _peak_rss_mib(daemon["pid"])
    with Victim(daemon["sock"]) as victim:
        loader = batchd.Loader(Huge(n), batch_size=16, shuffle=True, seed=3, num_workers=1, socket=daemon["sock"],
                               timeout=60, seeding="per_sample")  # batchd's sampler: DataLoader's randperm(n) could not
        try:
            batches = [b.flatten().tolist() for _, b in zip(range(3), loader)]
        finally:
            loader.close()
    seen = [i for b in batches for i in b]
    assert len(seen) == 48 and len(set(seen)) == 48 and all(0 <= i < n for i in seen), batches
    assert max(seen) > n // 1024, "shuffled over the whole range"
    peak = _peak_rss_mib(daemon["pid"])
    assert peak - before < 200, f"the daemon's peak RSS grew from {before:.0f} to {peak:.0f} MiB"
    assert victim.longest < 5.0, f"another user's stream waited {victim.longest:.1f} s between batches"
