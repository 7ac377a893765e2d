"""moto_fixture.py's lifetime: SIGKILL mid-transfer and a restart on the same port with the objects uploaded again
before it answers; a restored file must hold its bytes; no process or log left behind, even when the test or the
test process dies; a Python without moto names the fix (split from test_moto_fixture.py)."""
import hashlib
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from moto_fixture import MotoS3  # noqa: E402
from test_moto_fixture import _error  # noqa: E402  (the HTTP status and code of a refused call)


def test_sigkill_mid_transfer_then_restart_on_the_same_port_with_the_objects_before_it_answers(tmp_path):
    data = os.urandom(32 << 20)
    with MotoS3() as server:
        server.create_bucket("bkt2")
        etag = server.put("bkt2", "big.tar", data)
        for i in range(3):
            server.put("bkt2", f"small/{i}", b"%d" % i)
        port, key = server.port, server.ACCESS_KEY
        token = server.client.list_objects_v2(Bucket="bkt2", Prefix="small/", MaxKeys=1)["NextContinuationToken"]
        out = tmp_path / "partial"
        transfer = subprocess.Popen(["curl", "-sS", "--aws-sigv4", "aws:amz:us-east-1:s3", "--user",
                                     f"{server.ACCESS_KEY}:{server.SECRET_KEY}", "-H",
                                     "x-amz-content-sha256: UNSIGNED-PAYLOAD", "--limit-rate", "16M", "-o", str(out),
                                     server.url("bkt2", "big.tar")], stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 10
            while not (out.exists() and out.stat().st_size > (4 << 20)) and time.monotonic() < deadline:
                time.sleep(0.02)
            server.kill()
            assert not server.running
            assert transfer.wait(20) in (18, 56)  # partial file, or failure receiving data
        finally:
            transfer.kill()
            transfer.wait()
        assert out.stat().st_size < len(data)
        # A client polling the public port while it comes back sees no answer, then the object: never a 404.
        seen, stop = [], threading.Event()
        poller = server._make_client("s3", f"http://127.0.0.1:{port}", server.ACCESS_KEY, server.SECRET_KEY)

        def poll():
            while not stop.is_set():
                try:
                    seen.append(poller.head_object(Bucket="bkt2", Key="big.tar")["ETag"])
                except ClientError as e:
                    seen.append(e.response["ResponseMetadata"]["HTTPStatusCode"])
                except Exception:  # connection refused
                    seen.append("refused")
                    time.sleep(0.005)

        thread = threading.Thread(target=poll)
        thread.start()
        try:
            server.start()
            time.sleep(0.1)
        finally:
            stop.set()
            thread.join()
            poller.close()
        assert "refused" in seen and seen[-1] == etag and set(seen) == {"refused", etag}, set(seen)
        assert (server.port, server.ACCESS_KEY) == (port, key)
        assert server.head("bkt2", "big.tar")["ETag"] == etag
        assert hashlib.sha256(server.get("bkt2", "big.tar")).digest() == hashlib.sha256(data).digest()
        assert [o["Key"] for o in server.list("bkt2", "small/")] == ["small/0", "small/1", "small/2"]
        assert _error(lambda: server.client.list_objects_v2(Bucket="bkt2", ContinuationToken=token))[0] == 500
        server.kill()
        server.start(restore=False)
        assert server.port == port
        assert _error(lambda: server.head("bkt2", "big.tar")) == (404, "404")  # HEAD: no body, no code


def test_a_restored_file_must_hold_the_bytes_it_had(tmp_path):
    path = tmp_path / "shard.tar"
    path.write_bytes(b"first")
    with MotoS3(auth=False) as server:
        server.create_bucket("files")
        server.put("files", "shard.tar", path)
        path.write_bytes(b"other")
        server.kill()
        with pytest.raises(RuntimeError, match=r"restoring s3://files/shard\.tar: .* changed since"):
            server.start()
        assert not server.running


def test_no_process_or_log_is_left_behind_even_when_the_test_fails():
    with pytest.raises(KeyError):
        with MotoS3(auth=False) as server:
            pid, root = server._proc.pid, server.log_path.parent
            raise KeyError("a failing test")
    assert not server.running and not root.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_the_server_dies_with_a_sigkilled_test_process():
    starter = ("import sys, time; sys.path.insert(0, sys.argv[1]); from moto_fixture import MotoS3\n"
               "s = MotoS3(auth=False); s.start(); print(s._proc.pid, s.log_path.parent, flush=True); time.sleep(60)")
    test = subprocess.Popen([sys.executable, "-c", starter, str(Path(__file__).parent)], stdout=subprocess.PIPE)
    try:
        pid, root = test.stdout.readline().decode().split()
        pid = int(pid)
        os.kill(pid, 0)
    finally:
        test.kill()
        test.wait()
    shutil.rmtree(root)  # a SIGKILLed process removes nothing
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().split(")")[-1].split()[0] == "Z":
                    break  # dead, waiting for init to reap it
        except FileNotFoundError:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        pytest.fail(f"moto's server (pid {pid}) outlived the SIGKILLed process that started it")


def test_a_python_without_moto_names_the_fix(tmp_path):
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'moto'\" >&2\nexit 1\n")
    python.chmod(0o755)
    with pytest.raises(RuntimeError, match=r"exited with status 1 .*setup\.sh --tests.*No module named 'moto'"):
        with MotoS3(python=str(python)):
            pass
