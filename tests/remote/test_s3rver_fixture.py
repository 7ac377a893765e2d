"""tests/remote/s3rver_fixture.py against the s3rver 3.7.1 that setup.sh installs: the fixture's lifetime (start,
stop, SIGKILL mid-transfer, restart on the same port and data, no process left behind) and each behaviour its header
says batchd may rely on, through botocore and through the curl CLI (raw HTTP, path-style URLs)."""
import hashlib
import os
import shutil
import subprocess
import sys
import time
from email.utils import formatdate
from pathlib import Path

import botocore.config
import botocore.session
import pytest
from botocore.exceptions import ClientError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from s3rver_fixture import PINNED_VERSION, S3rver  # noqa: E402

HELLO = b"hello world"
HELLO_ETAG = '"5eb63bbbe01eeed093cb22bb8f5acdc3"'  # md5(b"hello world"), quoted


def curl(*args):
    """(status, {lower-case header: value}, body) of one curl request; -i puts the headers before the body."""
    out = subprocess.run(["curl", "-sS", "-i", "--max-time", "10", *args], check=True, capture_output=True).stdout
    head, _, body = out.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = dict((k.lower(), v.strip()) for k, _, v in (line.partition(":") for line in lines[1:]))
    return int(lines[0].split()[1]), headers, body


@pytest.fixture(scope="module")
def s3():
    with S3rver() as server:
        server.create_bucket("bkt")
        server.put("bkt", "hello.txt", HELLO)
        yield server


def test_the_pinned_version_serves_path_style_on_loopback(s3):
    assert s3.version == PINNED_VERSION
    assert s3.endpoint.startswith("http://127.0.0.1:") and s3.port > 0
    status, _, body = curl(s3.url("bkt", "hello.txt"))
    assert (status, body) == (200, HELLO)


def test_etag_is_the_quoted_md5_on_put_head_get_and_list(s3):
    assert s3.put("bkt", "etag/a.bin", HELLO) == HELLO_ETAG
    assert s3.head("bkt", "etag/a.bin")["ETag"] == HELLO_ETAG
    assert curl("-I", s3.url("bkt", "etag/a.bin"))[1]["etag"] == HELLO_ETAG
    assert curl(s3.url("bkt", "etag/a.bin"))[1]["etag"] == HELLO_ETAG
    _, _, xml = curl(f"{s3.endpoint}/bkt?list-type=2&prefix=etag/")
    assert b"<ETag>&quot;5eb63bbbe01eeed093cb22bb8f5acdc3&quot;</ETag>" in xml
    assert s3.list("bkt", "etag/") == [{"Key": "etag/a.bin", "ETag": HELLO_ETAG, "Size": len(HELLO)}]


def test_replacing_an_object_gives_a_new_etag(s3):
    old = s3.put("bkt", "replace/shard.tar", b"first version")
    new = s3.replace("bkt", "replace/shard.tar", b"second version")
    assert new != old and new == '"%s"' % hashlib.md5(b"second version").hexdigest()
    assert curl(s3.url("bkt", "replace/shard.tar"))[1]["etag"] == new
    with pytest.raises(ValueError, match="kept ETag"):
        s3.replace("bkt", "replace/shard.tar", b"second version")


@pytest.mark.parametrize("byte_range, content_range, body", [
    ("bytes=2-5", "bytes 2-5/11", b"llo "),
    ("bytes=6-", "bytes 6-10/11", b"world"),
    ("bytes=5-100", "bytes 5-10/11", b" world"),       # the end is clamped
    ("bytes=0-0", "bytes 0-10/11", HELLO),             # bug: an end of 0 is no end
    ("bytes=-3", "bytes 0-3/11", b"hell"),             # bug: a suffix range is read as 0-N
])
def test_ranges(s3, byte_range, content_range, body):
    status, headers, got = curl("-H", f"Range: {byte_range}", s3.url("bkt", "hello.txt"))
    assert (status, headers["content-range"], got) == (206, content_range, body)
    assert headers["etag"] == HELLO_ETAG and headers["accept-ranges"] == "bytes"
    assert s3.get("bkt", "hello.txt", byte_range) == body
    status, headers, _ = curl("-I", "-H", f"Range: {byte_range}", s3.url("bkt", "hello.txt"))
    assert (status, headers["content-range"]) == (206, content_range)


def test_a_range_past_the_end_is_416_invalid_range(s3):
    status, _, xml = curl("-H", "Range: bytes=20-30", s3.url("bkt", "hello.txt"))
    assert status == 416 and b"<Code>InvalidRange</Code>" in xml


def test_list_objects_v2_pages_with_continuation_tokens(s3):
    keys = [f"list/shard-{i:06d}.tar" for i in range(5)]
    for key in keys:
        s3.put("bkt", key, key.encode())
    assert [o["Key"] for o in s3.list("bkt", "list/", page_size=2)] == keys
    _, _, page = curl(f"{s3.endpoint}/bkt?list-type=2&prefix=list/&max-keys=2")
    assert b"<KeyCount>2</KeyCount><MaxKeys>2</MaxKeys><IsTruncated>true</IsTruncated>" in page
    assert b"<NextContinuationToken>" in page
    last = s3.client.list_objects_v2(Bucket="bkt", Prefix="list/", StartAfter=keys[2], MaxKeys=2)
    assert (last["KeyCount"], last["IsTruncated"], "NextContinuationToken" in last) == (2, False, False)
    status, _, xml = curl(f"{s3.endpoint}/bkt?list-type=2&prefix=list/&continuation-token=garbage")
    assert status == 400 and b"<Code>InvalidArgument</Code>" in xml
    assert curl(f"{s3.endpoint}/bkt?list-type=2&prefix=list/&continuation-token=bm90LWEtdG9rZW4%3D")[0] == 500


def test_list_objects_v2_delimiter_namespace_and_raw_keys(s3):
    s3.put("bkt", "tree/x/1.tar", b"1")
    s3.put("bkt", "tree/y/2.tar", b"2")
    s3.put("bkt", "tree/a+b.tar", b"3")
    _, _, xml = curl(f"{s3.endpoint}/bkt?list-type=2&prefix=tree/&delimiter=/&encoding-type=url")
    assert b'<ListBucketResult xmlns="http://doc.s3.amazonaws.com/2006-03-01/">' in xml
    assert b"<Key>tree/a+b.tar</Key>" in xml and b"EncodingType" not in xml  # raw, not a%2Bb.tar
    assert b"<KeyCount>1</KeyCount>" in xml  # the two CommonPrefixes are not counted
    assert b"<CommonPrefixes><Prefix>tree/x/</Prefix></CommonPrefixes>" in xml
    assert [o["Key"] for o in s3.list("bkt", "tree/a")] == ["tree/a+b.tar"]  # botocore asks for url, decodes not


def test_without_the_legacy_provider_a_truncated_listing_is_500():
    server = S3rver()
    server.node_flags = ()
    with server:
        server.create_bucket("bkt2")
        server.put("bkt2", "k1", b"1")
        server.put("bkt2", "k2", b"2")
        status, _, xml = curl(f"{server.endpoint}/bkt2?list-type=2&max-keys=1")
        assert status == 500 and b"<Code>InternalError</Code>" in xml


def test_listing_order_is_the_directory_walk_not_byte_order(s3):
    s3.put("bkt", "order/a.tar", b"1")
    s3.put("bkt", "order/a/x", b"2")
    assert [o["Key"] for o in s3.list("bkt", "order/")] == ["order/a/x", "order/a.tar"]
    assert [o["Key"] for o in s3.list("bkt", "order/", page_size=1)] == ["order/a/x"]  # a.tar is skipped


def test_if_match_is_ignored_if_none_match_is_304(s3):
    assert curl("-H", 'If-Match: "0123"', s3.url("bkt", "hello.txt"))[0] == 200
    assert curl("-H", f"If-None-Match: {HELLO_ETAG}", s3.url("bkt", "hello.txt"))[0] == 304
    assert curl("-H", "If-Modified-Since: Fri, 01 Jan 2100 00:00:00 GMT", s3.url("bkt", "hello.txt"))[0] == 304


def test_a_missing_key_or_bucket_is_404_with_its_code(s3):
    status, _, xml = curl(s3.url("bkt", "no/such.tar"))
    assert status == 404 and b"<Code>NoSuchKey</Code>" in xml
    status, _, xml = curl(s3.url("nobucket", "x.tar"))
    assert status == 404 and b"<Code>NoSuchBucket</Code>" in xml
    assert curl("-I", s3.url("bkt", "no/such.tar"))[0] == 404
    assert curl(f"{s3.endpoint}/nobucket?list-type=2")[0] == 404
    with pytest.raises(ClientError) as error:
        s3.get("nobucket", "x.tar")
    assert error.value.response["Error"]["Code"] == "NoSuchBucket"


def test_sigv4_signatures_are_not_verified_but_the_key_id_is(s3):
    def signed(user, *headers):
        return curl("--aws-sigv4", "aws:amz:us-east-1:s3", "--user", user, *headers, s3.url("bkt", "hello.txt"))
    sha = ("-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD")
    assert signed("S3RVER:not-the-secret", *sha)[0] == 200
    status, _, xml = signed("AKIAOTHERKEY:secret", *sha)
    assert status == 403 and b"<Code>InvalidAccessKeyId</Code>" in xml
    status, _, xml = signed("S3RVER:S3RVER")
    assert status == 400 and b"x-amz-content-sha256" in xml
    assert curl(s3.url("bkt", "hello.txt"))[0] == 200  # anonymous
    stale = ("-H", "x-amz-date: 20200101T000000Z", "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", "-H",
             "Authorization: AWS4-HMAC-SHA256 Credential=S3RVER/20200101/us-east-1/s3/aws4_request, "
             "SignedHeaders=host, Signature=0123")
    status, _, xml = curl(*stale, s3.url("bkt", "hello.txt"))
    assert status == 403 and b"<Code>RequestTimeTooSkewed</Code>" in xml
    status, _, xml = curl("-H", "Authorization: AWS S3RVER:bm90LWl0", "-H", f"Date: {formatdate(usegmt=True)}",
                          s3.url("bkt", "hello.txt"))  # SigV2
    assert status == 403 and b"<Code>SignatureDoesNotMatch</Code>" in xml
    client = botocore.session.Session().create_client(
        "s3", endpoint_url=s3.endpoint, region_name="us-east-1", aws_access_key_id=S3rver.ACCESS_KEY,
        aws_secret_access_key="not-the-secret", config=botocore.config.Config(s3={"addressing_style": "path"}))
    assert client.get_object(Bucket="bkt", Key="hello.txt")["Body"].read() == HELLO
    client.close()


@pytest.mark.parametrize("key", ["keys/with space.tar", "keys/plus+sign.tar", "keys/ünïcødé-シャード.tar"])
def test_keys_with_spaces_plus_and_unicode_round_trip(s3, key):
    s3.put("bkt", key, key.encode())
    status, _, body = curl(s3.url("bkt", key))
    assert (status, body) == (200, key.encode())
    assert key in [o["Key"] for o in s3.list("bkt", "keys/")]


def test_sigkill_mid_transfer_then_restart_on_the_same_port_and_data():
    data = os.urandom(48 << 20)
    with S3rver() as server:
        server.create_bucket("bkt2")
        etag = server.put("bkt2", "big.tar", data)
        port, out = server.port, server.data_dir.parent / "partial"
        transfer = subprocess.Popen(["curl", "-sS", "--limit-rate", "16M", "-o", str(out),
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
        server.start()
        assert server.port == port
        assert server.head("bkt2", "big.tar")["ETag"] == etag
        assert hashlib.sha256(server.get("bkt2", "big.tar")).digest() == hashlib.sha256(data).digest()


def test_no_process_or_data_is_left_behind_even_when_the_test_fails():
    with pytest.raises(KeyError):
        with S3rver() as server:
            pid, root = server._proc.pid, server.data_dir.parent
            raise KeyError("a failing test")
    assert not server.running and not root.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_the_server_dies_with_a_sigkilled_test_process():
    starter = ("import sys, time; sys.path.insert(0, sys.argv[1]); from s3rver_fixture import S3rver\n"
               "s = S3rver(); s.start(); print(s._proc.pid, s.data_dir.parent, flush=True); time.sleep(60)")
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
        pytest.fail(f"s3rver (pid {pid}) outlived the SIGKILLed process that started it")


def test_a_missing_install_names_setup_sh(monkeypatch):
    monkeypatch.setenv("BATCHD_S3RVER", "/nonexistent/s3rver.js")
    with pytest.raises(RuntimeError, match=r"run \./setup\.sh.*BATCHD_S3RVER"):
        S3rver()
