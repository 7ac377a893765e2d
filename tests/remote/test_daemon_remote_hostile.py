"""Remote datasets against hostile servers, through real daemons (docs/security.md "The third review"): a listing
nested 50,000 deep fails its dataset and the daemon lives on; a listed key holding a newline reaches the log and
batchctl escaped, forging no line; a presigned http URL is one shard whose query is sent as it is and shown nowhere.
Servers: fault_server.py (its listing-file mode serves a crafted ListObjectsV2 answer). Helpers: remote_daemon.py.
"""
import json
import shutil

from remote_daemon import FaultServer, RemoteDaemon, config_text, epochs, make_shards, webdataset

SECRET = "5ec7e75ec7e7" * 4  # a presigned URL's signature: never in a log, status or error


def nested(depth):
    return ("<ListBucketResult><IsTruncated>false</IsTruncated>" + "<a>" * depth + "</a>" * depth +
            "</ListBucketResult>")


def test_a_listing_nested_50000_deep_fails_its_dataset_and_the_daemon_lives_on(tmp_path):
    root = tmp_path / "srv"
    make_shards(root / "good", 1, 4)
    (root / "deep").mkdir()
    (root / ".listing.xml").write_text(nested(50000))
    (tmp_path / "d").mkdir()
    with FaultServer(root, faults=["listing-file:0:/deep"]) as fs:
        datasets = {"deep": webdataset("s3://deep/train/*.tar", endpoint_url=fs.endpoint),
                    "good": webdataset(fs.url("good/shard-000000.tar"))}
        with RemoteDaemon(tmp_path / "d", config_text({}, datasets)) as d:
            deep = d.wait_loaded("deep")
            assert deep["state"] == "failed", deep
            assert "datasets.deep.shards: the listing of s3://deep/train/ " in deep["detail"], deep
            assert "nested deeper than 32" in deep["detail"], deep
            assert "is the endpoint an S3 server?" in deep["detail"], deep
            assert d.wait_loaded("good")["state"] == "available"
            assert int(d.status()["daemon_pid"]) == d.pid  # the same daemon, alive after the listing


def test_a_listed_key_with_a_newline_reaches_the_log_and_batchctl_escaped(tmp_path):
    root = tmp_path / "srv"
    shard = make_shards(tmp_path / "made", 1, 4)[0]
    (root / "bkt" / "evil").mkdir(parents=True)
    shutil.copy(shard, root / "bkt" / "evil" / "a\nWARN forged line\x1b[2J.tar")
    (tmp_path / "d").mkdir()
    with FaultServer(root) as fs:
        datasets = {"evil": webdataset("s3://bkt/evil/*.tar", endpoint_url=fs.endpoint)}
        with RemoteDaemon(tmp_path / "d", config_text({}, datasets)) as d:
            entry = d.wait_loaded("evil")
            text = d.ctl("datasets").stdout
            listed = d.ctl("datasets", "--json").stdout
            log = d.log()
    escaped = "s3://bkt/evil/a\\nWARN forged line\\x1b[2J.tar"
    assert entry["state"] == "failed" and escaped in entry["detail"], entry
    assert "control character" in entry["detail"], entry
    for where, out in (("the log", log), ("batchctl datasets", text), ("batchctl datasets --json", listed)):
        assert "\x1b" not in out, f"a raw ESC in {where}"
        assert not any(line.startswith("WARN forged") for line in out.splitlines()), f"a forged line in {where}"
    assert escaped in log, log
    assert json.loads(listed)  # still one JSON document


def test_a_presigned_url_is_one_shard_its_query_sent_as_is_and_shown_nowhere(tmp_path):
    root = tmp_path / "srv"
    make_shards(root / "bkt", 1, 4)
    query = f"?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=3600&X-Amz-Signature={SECRET}"
    (tmp_path / "d").mkdir()
    with FaultServer(root, log=True) as fs:
        url = fs.url("bkt/shard-000000.tar") + query
        datasets = {"signed": webdataset(url)}
        with RemoteDaemon(tmp_path / "d", config_text({}, datasets), log_level="info") as d:
            entry = d.wait_loaded("signed")
            assert entry["state"] == "available", entry
            (indices, _, _), = epochs(d.sock, "signed", 1)
            assert sorted(indices.tolist()) == [0, 1, 2, 3]
            shown = d.log() + d.ctl("datasets").stdout + d.ctl("datasets", "--json").stdout + json.dumps(d.status())
        targets = [r["target"] for r in fs.requests() if r["method"] in ("HEAD", "GET")]
    assert targets and all(t == "/bkt/shard-000000.tar" + query for t in targets), targets
    assert SECRET not in shown and "X-Amz-Signature" not in shown


def test_a_listing_that_never_ends_holds_no_other_datasets_load(tmp_path):
    """Issue 43 (6): loads ran one at a time, so a dataset declared after an endless listing stayed "indexing" for as
    long as that listing went on (now at most 10,000 pages or 600 s). The loader runs several loads at once."""
    root = tmp_path / "srv"
    (root / "endless").mkdir(parents=True)
    local = make_shards(tmp_path / "local", 1, 4)
    (tmp_path / "d").mkdir()
    with FaultServer(root, latency=0.05, faults=["endless:0:/endless"]) as fs:
        datasets = {"endless": webdataset("s3://endless/train/*.tar", endpoint_url=fs.endpoint),
                    "local": webdataset(str(local[0]))}
        with RemoteDaemon(tmp_path / "d", config_text({}, datasets)) as d:
            assert d.wait_loaded("local", timeout=20)["state"] == "available"
            assert d.entry("endless")["state"] == "indexing", "the endless listing is still under way"
            (indices, _, _), = epochs(d.sock, "local", 1)
            assert sorted(indices.tolist()) == [0, 1, 2, 3]
