"""What test_daemon_remote.py runs (issue 28): a real batchd over remote shards, the fault server, shards, epochs.

    with RemoteDaemon(tmp, config_text(remote={...}, datasets={...}), env=s3.env()) as d:
        d.sock, d.pid, d.cache_dir, d.shard_dir, d.log_path (the daemon's stderr)
        d.wait_loaded("name"); d.entry("name") (batchctl datasets --json); d.remote("name") (its counters, ints)
    with FaultServer(root, latency=0.2, bandwidth=2e6, tls_dir=ca_dir, log=True) as fs:
        fs.url("train/shard-000000.tar"); fs.fault("503", 3, "/train/shard-000001.tar"); fs.gets("/train/...")
    epochs(sock, "name", 2) -> one (indices, images, labels) per epoch, val224_u8, shuffled by seed

The daemon is build/bin/batchd (BATCHD_BIN) started by tests/python/conftest.py's _run_daemon with --config and
--cache-dir; its environment has no AWS_* of the caller's and no shared AWS files, only what a test gives.
fault_server.py and make_test_ca.sh are this folder's. Not thread-safe; one of each per test.
"""
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
from PIL import Image

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python"))
from conftest import _run_daemon  # noqa: E402  (tests/python's daemon starter)
from moto_fixture import _die_with_parent  # noqa: E402

import batchd  # noqa: E402  (build/python on PYTHONPATH)

BATCHD_BIN = os.environ.get("BATCHD_BIN", str(ROOT / "build" / "bin" / "batchd"))
BATCHCTL = os.path.join(os.path.dirname(BATCHD_BIN), "batchctl")
TESTDATA = Path(os.environ.get("BATCHD_TESTDATA", ROOT / "build" / "testdata"))
# Short timeouts and backoffs: a fault costs the tests milliseconds, not the production defaults' seconds.
FAST = {"retries": 4, "backoff_base_s": 0.02, "backoff_max_s": 0.1, "connect_timeout_s": 2, "stall_timeout_s": 1,
        "request_timeout_s": 60}
COUNTERS = ("shards", "shards_here", "bytes", "bytes_here", "fetched", "fetched_bytes", "prefetched", "waited",
            "failed", "evicted")


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a TOML basic string for what the tests write (ASCII, quotes, backslashes)
    return "[" + ", ".join(toml_value(x) for x in v) + "]"


def config_text(remote=None, datasets=None, metrics=None):
    """A daemon config: [remote] (FAST plus `remote`), [metrics], [datasets.NAME] of {key: value}."""
    lines = ["[remote]"] + [f"{k} = {toml_value(v)}" for k, v in {**FAST, **(remote or {})}.items()]
    if metrics:
        lines += ["[metrics]"] + [f"{k} = {toml_value(v)}" for k, v in metrics.items()]
    for name, keys in (datasets or {}).items():
        lines += [f"[datasets.{name}]"] + [f"{k} = {toml_value(v)}" for k, v in keys.items()]
    return "\n".join(lines) + "\n"


def webdataset(shards, **keys):
    return {"format": "webdataset", "shards": shards, **keys}


class RemoteDaemon:
    """A batchd on tmp/batchd.sock with tmp/batchd.toml; cache_dir None = tmp/cache, "" = none."""

    def __init__(self, tmp, config, env=None, cache_dir=None, log_level="warn"):
        self.tmp = Path(tmp)
        self.cache_dir = str(self.tmp / "cache") if cache_dir is None else cache_dir
        self.shard_dir = Path(self.cache_dir) / "shards" if self.cache_dir else None
        self.config_path = self.tmp / "batchd.toml"
        self.config_path.write_text(config)
        self.log_path = self.tmp / "batchd.log"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        self.env.update(AWS_SHARED_CREDENTIALS_FILE=str(self.tmp / "no-credentials"),
                        AWS_CONFIG_FILE=str(self.tmp / "no-config"), **(env or {}))
        self.log_level = log_level
        self._run = None

    def __enter__(self):
        with open(self.log_path, "ab") as log:
            self._run = _run_daemon(str(self.tmp), ["--config", str(self.config_path), "--cache-dir", self.cache_dir,
                                                    "--log-level", self.log_level], env=self.env, stdout=log, stderr=log)
            self.sock = next(self._run)
        self.pid = int(self.status()["daemon_pid"])
        return self

    def __exit__(self, *exc):
        self._run.close()  # SIGTERM and wait (a daemon the test SIGKILLed is only reaped)

    def ctl(self, *args, check=True):
        out = subprocess.run([BATCHCTL, "--socket", self.sock, *args], capture_output=True, text=True, timeout=30)
        assert not check or out.returncode == 0, f"batchctl {' '.join(args)}: {out.stderr}"
        return out

    def status(self):
        return json.loads(self.ctl("status", "--json").stdout)

    def entry(self, name):
        for e in json.loads(self.ctl("datasets", "--json").stdout)["dataset_entries"]:
            if e["name"] == name:
                return e
        raise KeyError(f"no dataset {name} in batchctl datasets")

    def remote(self, name):
        r = self.entry(name).get("remote", {})
        return {k: int(r.get(k, 0)) for k in COUNTERS}

    def wait_loaded(self, name, timeout=60):
        """The dataset's entry once it is no longer indexing."""
        deadline = time.monotonic() + timeout
        while True:
            e = self.entry(name)
            if e.get("state") != "indexing":
                return e
            assert time.monotonic() < deadline, f"{name} still indexing after {timeout} s: {e}"
            time.sleep(0.05)

    def log(self):
        return self.log_path.read_text(errors="replace")


class FaultServer:
    """fault_server.py on 127.0.0.1: files under root; HTTPS with tls_dir's server.pem (make_test_ca.sh)."""

    def __init__(self, root, latency=0.0, bandwidth=0.0, tls_dir=None, log=False, faults=()):
        self.root, self.latency, self.bandwidth, self.tls_dir = str(root), latency, bandwidth, tls_dir
        self.faults = list(faults)
        self.log_path = Path(str(root) + ".requests.jsonl") if log else None
        self.port = 0
        self._proc = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        cmd = [sys.executable, str(HERE / "fault_server.py"), "--root", self.root, "--port", str(self.port),
               "--latency", str(self.latency), "--bandwidth", str(self.bandwidth)]
        if self.tls_dir:
            cmd += ["--cert", f"{self.tls_dir}/server.pem", "--key", f"{self.tls_dir}/server.key"]
        if self.log_path:
            cmd += ["--log", str(self.log_path)]
        for f in self.faults:
            cmd += ["--fault", f]
        self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, preexec_fn=_die_with_parent)
        line = self._proc.stdout.readline()
        assert line.strip().isdigit(), f"fault_server did not start: {line!r}"
        self.port = int(line)

    def stop(self):
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(10)
            self._proc = None

    def restart(self, **changes):
        """Stops it and starts it again on the same port with some settings changed (latency=, bandwidth=)."""
        self.stop()
        for k, v in changes.items():
            setattr(self, k, v)
        self.faults = []
        self.start()

    @property
    def endpoint(self):
        return f"{'https' if self.tls_dir else 'http'}://127.0.0.1:{self.port}"

    def url(self, path):
        return f"{self.endpoint}/{path}"

    def fault(self, mode, count=1, path="", status=403):
        """The next `count` requests (0 = all) whose path starts with `path` get the fault (fault_server's modes)."""
        assert not self.tls_dir, "control requests go to a plain HTTP server"
        query = urllib.parse.urlencode({"mode": mode, "count": count, "path": path, "status": status})
        urllib.request.urlopen(urllib.request.Request(f"{self.endpoint}/__control/fault?{query}", method="POST"),
                               timeout=5).close()

    def requests(self):
        return [json.loads(line) for line in self.log_path.read_text().splitlines()] if self.log_path else []

    def gets(self, path, method="GET"):
        """How many GETs (or `method` requests) of `path` the server received."""
        return sum(1 for r in self.requests() if r["method"] == method and r["target"].split("?")[0] == path)


def _jpeg(rng, side):
    pixels = rng.integers(0, 256, size=(side[0], side[1], 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="JPEG", quality=80)
    return out.getvalue()


def make_shards(out, shards, per_shard, seed=0, side=(40, 48), pad=0, label_shift=0):
    """out/shard-000000.tar ...: per_shard samples each (<key>.jpg noise, <key>.cls = (index + label_shift) % 7);
    pad > 0 adds a <key>.pad member of that many zero bytes to each shard's first sample (a large, slow object)."""
    rng = np.random.default_rng(seed)
    os.makedirs(out, exist_ok=True)
    paths = []
    for s in range(shards):
        path = os.path.join(out, f"shard-{s:06d}.tar")
        with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
            for k in range(s * per_shard, (s + 1) * per_shard):
                members = [(".jpg", _jpeg(rng, side)), (".cls", str((k + label_shift) % 7).encode())]
                if pad and k == s * per_shard:
                    members.append((".pad", b"\0" * pad))
                for ext, data in members:
                    info = tarfile.TarInfo(f"s{k:06d}{ext}")
                    info.size, info.mtime = len(data), 0
                    tar.addfile(info, io.BytesIO(data))
        paths.append(path)
    return paths


def photo_shards(out):
    """A copy of build/testdata/shards (60 photographs in 4 shards) in out; the paths."""
    src = TESTDATA / "shards"
    assert src.is_dir(), f"{src} is missing: run ctest's make_testdata (BATCHD_TESTDATA)"
    shutil.copytree(src, out)
    return sorted(str(p) for p in Path(out).glob("shard-*.tar"))


def make_test_ca(out):
    subprocess.run([str(HERE / "make_test_ca.sh"), str(out)], check=True)
    return Path(out)


def epochs(sock, name, n=2, batch_size=8, seed=3, shuffle=True, sleep=0.0, **kw):
    """n passes of a Loader over `name` (val224_u8): per epoch (indices, images, labels) as numpy arrays."""
    loader = batchd.Loader(name, batch_size, shuffle=shuffle, seed=seed, pipeline="val224_u8", as_dict=True,
                           socket=sock, index_timeout=60, **kw)
    out = []
    try:
        for _ in range(n):
            parts = {"index": [], "image": [], "label": []}
            for batch in loader:
                for k in parts:
                    parts[k].append(batch[k].numpy().copy())
                if sleep:
                    time.sleep(sleep)
            out.append(tuple(np.concatenate(parts[k]) for k in ("index", "image", "label")))
    finally:
        loader.close()
    return out


def load_error(sock, name):
    """The BatchdError a Loader of `name` raises when planned (the dataset cannot be opened), as text."""
    with contextlib.closing(batchd.Loader(name, 4, pipeline="val224_u8", socket=sock, index_timeout=60)) as loader:
        try:
            len(loader)
        except batchd.BatchdError as e:
            return str(e)
    raise AssertionError(f"dataset {name} was served; it should have failed to open")


def assert_same_epochs(got, want, size):
    """Each epoch: every index once, and indices, images and labels equal to the reference byte for byte."""
    assert len(got) == len(want)
    for e, ((gi, gx, gy), (wi, wx, wy)) in enumerate(zip(got, want)):
        assert sorted(gi.tolist()) == list(range(size)), f"epoch {e}: not every sample exactly once"
        assert np.array_equal(gi, wi), f"epoch {e}: another order than the reference"
        assert gx.dtype == wx.dtype and np.array_equal(gx, wx), f"epoch {e}: other pixels than the reference"
        assert np.array_equal(gy, wy), f"epoch {e}: other labels than the reference"


def shard_files(shard_dir):
    """{name: size} of the shard cache's files (.tar and .part; a file gone meanwhile is left out)."""
    out = {}
    for name in os.listdir(shard_dir) if os.path.isdir(shard_dir) else []:
        try:
            out[name] = os.stat(os.path.join(shard_dir, name)).st_size
        except FileNotFoundError:
            pass
    return out
