"""Remote shards' faults and refusals through real daemons (issue 28, docs/operations.md "Remote shards"): a 503
burst, a reset, a truncated body and a stalled transfer retried; a 503 that outlasts the retries, a 403, a 404 and
an https server whose CA is not configured failing the dataset at load, naming the URL and the fix; moto's S3 server
SIGKILLed mid-transfer and started again (its objects uploaded again); a shard replaced on the server after it was
indexed; config refusals; credentials in no log, status, metric or error. Helpers: remote_daemon.py."""
import os
import shutil
import signal
import socket
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

import batchd
from remote_daemon import (FaultServer, RemoteDaemon, assert_same_epochs, config_text, epochs, load_error,
                           make_shards, make_test_ca, photo_shards, shard_files, webdataset)
from moto_fixture import MotoS3
from test_daemon_remote import BRACES, N, photos, s3  # noqa: F401  (module fixtures)


def test_a_503_burst_a_reset_a_truncated_body_and_a_stall_are_retried(tmp_path, photos):
    """fault_server as an S3 endpoint (a listing, so the only requests for a shard are its GETs); the dataset "gone"
    answers 503 until the retries (4) run out."""
    faults = ["503:3:/fts/shard-000001.tar", "truncate:1:/fts/shard-000002.tar", "reset:1:/fts/shard-000003.tar",
              "stall:1:/fts/shard-000000.tar", "503:0:/gone/shard-"]
    shutil.copytree(photos / "train", tmp_path / "srv" / "fts")  # copies: fault_server serves nothing outside its root
    (tmp_path / "srv" / "gone").mkdir()
    shutil.copy(photos / "train" / "shard-000000.tar", tmp_path / "srv" / "gone")
    with FaultServer(tmp_path / "srv", log=True, faults=faults) as fs:
        datasets = {"local": webdataset(f"{photos}/train/{BRACES}"),
                    "fts": webdataset("s3://fts/*.tar", endpoint_url=fs.endpoint),
                    "gone": webdataset("s3://gone/*.tar", endpoint_url=fs.endpoint)}
        with RemoteDaemon(tmp_path, config_text({}, datasets)) as d:
            assert d.wait_loaded("fts")["state"] == "available"
            assert_same_epochs(epochs(d.sock, "fts", 1), epochs(d.sock, "local", 1), N)
            r = d.remote("fts")
            assert (r["fetched"], r["failed"], r["shards_here"]) == (4, 0, 4), r
            gets = {s: fs.gets(f"/fts/shard-00000{s}.tar") for s in range(4)}
            assert gets == {0: 2, 1: 4, 2: 2, 3: 2}, gets  # each fault cost one more GET, then it was served
            error = load_error(d.sock, "gone")
            entry = d.wait_loaded("gone")
            assert fs.gets("/gone/shard-000000.tar") == 5  # the first try and 4 retries
            assert int(d.status()["remote_cache"]["totals"].get("failed", 0)) == 1
    assert entry["state"] == "failed" and "s3://gone/shard-000000.tar" in entry["detail"], entry
    assert "s3://gone/shard-000000.tar" in error and "503" in error, error


def test_load_refusals_name_the_url_and_the_fix(tmp_path, photos, s3):
    """A 403 (moto: an access key its IAM does not know), a 404, an https server whose CA is not remote.ca_file, an
    http:// glob, local and remote shards mixed; and with --cache-dir "", any remote shard."""
    ca = make_test_ca(tmp_path / "ca")
    creds = tmp_path / "credentials"
    creds.write_text("[default]\naws_access_key_id = AKIDNOTKNOWNTOMOTO\naws_secret_access_key = wrong\n")
    creds.chmod(0o600)
    one = "s3://photos/train/shard-000000.tar"
    with FaultServer(photos, tls_dir=ca) as https, FaultServer(photos) as http:
        datasets = {"denied": webdataset(one, endpoint_url=s3.endpoint, credentials_file=str(creds)),
                    "missing": webdataset("s3://photos/train/absent.tar"),
                    "untrusted": webdataset(https.url("train/shard-000000.tar")),
                    "httpglob": webdataset(http.url("train/*.tar")),
                    "mixed": webdataset([f"{photos}/train/shard-000000.tar", one])}
        # The env's key signs "missing" (moto answers an unsigned request for a missing key with 500, not 404);
        # "denied"'s credentials_file comes first (remote/aws_settings.h), so the env's key cannot mask its 403.
        (tmp_path / "d").mkdir()
        with RemoteDaemon(tmp_path / "d", config_text({}, datasets), env=s3.env()) as d:
            errors = {name: load_error(d.sock, name) for name in datasets}
            for name in datasets:
                entry = d.wait_loaded(name)
                assert entry["state"] == "failed" and entry["detail"], entry
        (tmp_path / "nocache").mkdir()
        with RemoteDaemon(tmp_path / "nocache", config_text({}, {"s3": webdataset(one)}), env=s3.env(),
                          cache_dir="") as d:
            errors["nocache"] = load_error(d.sock, "s3")
    print("\n".join(f"{k}: {v}" for k, v in errors.items()))
    assert one in errors["denied"] and "403" in errors["denied"], errors["denied"]
    assert "credentials" in errors["denied"].lower(), errors["denied"]  # the fix: the key
    assert "s3://photos/train/absent.tar" in errors["missing"] and "404" in errors["missing"], errors["missing"]
    untrusted = errors["untrusted"]
    assert https.url("train/shard-000000.tar") in untrusted and "certificate" in untrusted.lower(), untrusted
    assert "ca_file" in untrusted, untrusted  # the fix
    assert "HTTP has no listing" in errors["httpglob"] and http.url("train/*.tar") in errors["httpglob"]
    assert "mixes local paths" in errors["mixed"], errors["mixed"]
    assert "daemon.cache_dir" in errors["nocache"], errors["nocache"]


def test_an_s3_server_killed_mid_transfer_and_started_again_is_retried(tmp_path):
    """One shard of 6 samples and 96 MiB of padding (moto sends it in about 0.2 s): moto's server is SIGKILLed once
    the .part holds some of it, and started again on the same port 0.3 s later, the shard uploaded again before the
    port answers (moto keeps objects in memory; MotoS3.start restores them); the retries (up to 30, backoff up to
    0.5 s) outlast that (about 2 s on 2 busy cores)."""
    pad = 96 << 20
    path, = make_shards(tmp_path / "big", 1, 6, seed=2, pad=pad)
    size = os.path.getsize(path)
    with MotoS3() as s3:
        s3.create_bucket("killed")
        s3.put("killed", "big/shard-000000.tar", Path(path))
        datasets = {"local": webdataset(path), "big": webdataset("s3://killed/big/shard-000000.tar")}
        config = config_text({"retries": 30, "backoff_base_s": 0.1, "backoff_max_s": 0.5, "stall_timeout_s": 2},
                             datasets)
        with RemoteDaemon(tmp_path, config, env=s3.env()) as d:
            deadline = time.monotonic() + 30
            while True:
                files = shard_files(d.shard_dir)
                partial = [v for k, v in files.items() if k.endswith(".part") and 0 < v < size]
                if partial:
                    break
                assert not [k for k in files if k.endswith(".tar")], "the download ended before the server was killed"
                assert time.monotonic() < deadline, "no download started"
            s3.kill()
            time.sleep(0.3)
            s3.start()  # restore=True: the bucket and the shard again, then the same port
            assert d.wait_loaded("big")["state"] == "available"
            r = d.remote("big")
            assert (r["fetched"], r["failed"], r["shards_here"]) == (1, 0, 1), r
            assert list(shard_files(d.shard_dir).values()) == [size]
            assert_same_epochs(epochs(d.sock, "big", 1, batch_size=3), epochs(d.sock, "local", 1, batch_size=3), 6)
    print(f"killed with {partial[0]} of {size} bytes in the .part file")


def _by_index(result):
    (indices, images, labels), = result
    return {int(i): (images[k], int(labels[k])) for k, i in enumerate(indices)}


def test_a_shard_replaced_on_the_server_fails_its_samples_until_a_reload(tmp_path, s3):
    """4 shards of 6 samples, a cache of 2 of them (so shard 0 is evicted after indexing and fetched again when read);
    shard 0 is replaced by other bytes (other labels) after the load."""
    old = make_shards(tmp_path / "old", 4, 6, seed=1)
    make_shards(tmp_path / "new", 4, 6, seed=1, label_shift=3)
    for p in old[1:]:  # the new dataset: shard 0 changed (its labels), the others the same files
        shutil.copyfile(p, tmp_path / "new" / os.path.basename(p))
    s3.create_bucket("replaced")
    for p in old:
        s3.put("replaced", f"r/{os.path.basename(p)}", Path(p))
    sizes = sorted(os.path.getsize(p) for p in old)
    bound = sizes[-1] + sizes[-2] + 100
    braces = "shard-{000000..000003}.tar"
    datasets = {"repl": webdataset(f"s3://replaced/r/{braces}"), "old": webdataset(f"{tmp_path}/old/{braces}"),
                "new": webdataset(f"{tmp_path}/new/{braces}")}
    url = "s3://replaced/r/shard-000000.tar"
    with RemoteDaemon(tmp_path, config_text({"cache_max_bytes": bound}, datasets), env=s3.env()) as d:
        assert d.wait_loaded("repl")["state"] == "available"
        r = d.remote("repl")
        assert r["evicted"] >= 1 and r["shards_here"] <= 2, r
        s3.replace("replaced", "r/shard-000000.tar", Path(tmp_path / "new" / "shard-000000.tar"))
        with pytest.raises(batchd.BatchdError, match="changed on the server") as failed:
            epochs(d.sock, "repl", 1, batch_size=6, shuffle=False)
        assert url in str(failed.value), str(failed.value)
        old_samples = _by_index(epochs(d.sock, "old", 1, batch_size=6, shuffle=False))
        skipped = _by_index(epochs(d.sock, "repl", 1, batch_size=6, shuffle=False, on_error="skip"))
        assert set(skipped) == set(range(6, 24)), sorted(skipped)  # shard 0's samples skipped, the others served
        for i, (image, label) in skipped.items():
            assert np.array_equal(image, old_samples[i][0]) and label == old_samples[i][1], i
        before = d.entry("repl").get("fingerprint", "")
        os.kill(d.pid, signal.SIGHUP)  # indexed again: the new ETag
        deadline = time.monotonic() + 30
        while (e := d.entry("repl")).get("fingerprint", "") in ("", before) or e["state"] != "available":
            assert time.monotonic() < deadline, e
            time.sleep(0.05)
        want = epochs(d.sock, "new", 1, batch_size=6, shuffle=False)
        assert_same_epochs(epochs(d.sock, "repl", 1, batch_size=6, shuffle=False), want, 24)
        assert want[0][2].tolist() != [old_samples[i][1] for i in range(24)]


def test_credentials_appear_in_no_log_status_metric_or_error(tmp_path, s3):
    """The daemon at --log-level debug signs with temporary credentials from moto's STS (a random secret and session
    token: moto checks the signature and the token, and fault_server's request log shows the token and the key id
    arrived, so the daemon had them); its stderr, batchctl's status and datasets (text and --json), the metrics page,
    the errors of a 404 and of a 503 that outlasts the retries, and every file under cache_dir hold neither."""
    srv = tmp_path / "srv"
    make_shards(srv / "tok", 1, 4, seed=3)
    shutil.copytree(srv / "tok", srv / "slow")
    s3.create_bucket("creds")
    s3.put("creds", "c/shard-000000.tar", srv / "tok" / "shard-000000.tar")
    with socket.socket() as sk:
        sk.bind(("127.0.0.1", 0))
        port = sk.getsockname()[1]
    creds = s3.session_credentials()
    key_id, secret, token = creds["AccessKeyId"], creds["SecretAccessKey"], creds["SessionToken"]
    env = dict(s3.env(), AWS_ACCESS_KEY_ID=key_id, AWS_SECRET_ACCESS_KEY=secret, AWS_SESSION_TOKEN=token)
    with FaultServer(srv, log=True, faults=["503:0:/slow/"]) as fs:
        datasets = {"signed": webdataset("s3://creds/c/shard-000000.tar"),
                    "seen": webdataset("s3://tok/*.tar", endpoint_url=fs.endpoint),
                    "missing": webdataset("s3://creds/c/absent.tar"),
                    "failing": webdataset("s3://slow/shard-000000.tar", endpoint_url=fs.endpoint)}
        config = config_text({}, datasets, metrics={"listen": f"127.0.0.1:{port}", "per_stream": True})
        with RemoteDaemon(tmp_path, config, env=env, log_level="debug") as d:
            for name in ("signed", "seen"):
                assert d.wait_loaded(name)["state"] == "available"
                assert len(epochs(d.sock, name, 1, batch_size=2)[0][0]) == 4
            texts = {f"error {n}": load_error(d.sock, n) for n in ("missing", "failing")}
            for args in (("status",), ("status", "--json"), ("datasets",), ("datasets", "--json"), ("streams",)):
                texts["batchctl " + " ".join(args)] = d.ctl(*args).stdout
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as page:
                texts["metrics"] = page.read().decode()
        texts["daemon log"] = d.log()
        for dirpath, _, names in os.walk(d.cache_dir):
            for name in names:
                texts[os.path.join(dirpath, name)] = Path(dirpath, name).read_bytes().decode(errors="replace")
        signed = [r["headers"] for r in fs.requests() if r["target"].startswith("/tok")]
    headers = [{k.lower(): v for k, v in h} if isinstance(h, list) else {k.lower(): v for k, v in h.items()}
               for h in signed]
    assert any(h.get("x-amz-security-token") == token and f"Credential={key_id}/" in h.get("authorization", "")
               for h in headers), headers[:1]
    assert "batchd_remote_fetched_total" in texts["metrics"] and "s3://creds/c/absent.tar" in texts["error missing"]
    assert "s3://slow/shard-000000.tar" in texts["error failing"], texts["error failing"]
    assert len(texts["daemon log"]) > 0
    for what, text in texts.items():
        for fragment in (secret, token, secret[:16], token[:24], token[-24:]):
            assert fragment not in text, f"{what} holds a credential"


def test_a_task_whose_shards_exceed_the_cache_bound_fails_the_stream_naming_the_key(tmp_path, s3):
    """A cache of one shard and shuffled batches of 6 from 4 shards: a task reads several shards, more than the bound
    holds, so it can never run; the stream must fail naming remote.cache_max_bytes (not wait forever: the Loader's
    timeout turns a hang into a "deadline exceeded" error, which fails this test)."""
    paths = make_shards(tmp_path / "shards", 4, 6, seed=4)
    s3.create_bucket("toobig")
    for p in paths:
        s3.put("toobig", f"t/{os.path.basename(p)}", Path(p))
    bound = max(os.path.getsize(p) for p in paths) + 100
    config = config_text({"cache_max_bytes": bound}, {"toobig": webdataset("s3://toobig/t/*.tar")})
    with RemoteDaemon(tmp_path, config, env=s3.env()) as d:
        assert d.wait_loaded("toobig")["state"] == "available"
        with pytest.raises(batchd.BatchdError, match="remote.cache_max_bytes"):
            epochs(d.sock, "toobig", 1, batch_size=6, shuffle=True, timeout=5)
