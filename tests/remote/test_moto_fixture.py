"""tests/remote/moto_fixture.py against the moto that tests/requirements.txt pins: each behaviour moto_objects.py's
header says batchd may rely on, through botocore and through the curl CLI (raw HTTP, path-style URLs, SigV4-signed by
curl). The fixture's lifetime (SIGKILL, restart, nothing left behind) is test_moto_fixture_lifecycle.py."""
import datetime
import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

import pytest
from botocore.exceptions import ClientError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from moto_fixture import PINNED_VERSION, MotoS3  # noqa: E402

HELLO = b"hello world"
HELLO_ETAG = '"5eb63bbbe01eeed093cb22bb8f5acdc3"'  # md5(b"hello world"), quoted
REQUIREMENTS = Path(__file__).resolve().parents[1] / "requirements.txt"


def curl(*args):
    """(status, {lower-case header: value}, body) of one curl request; -i puts the headers before the body."""
    out = subprocess.run(["curl", "-sS", "-i", "--max-time", "10", *args], check=True, capture_output=True).stdout
    head, _, body = out.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = dict((k.lower(), v.strip()) for k, _, v in (line.partition(":") for line in lines[1:]))
    return int(lines[0].split()[1]), headers, body


def signed(s3, *args, user=None):
    """curl signing with SigV4 (the server's key unless user="KEY:SECRET"), as batchd's libcurl does: the payload
    hash in x-amz-content-sha256, the URL signed as written (so its query must be in canonical order)."""
    return curl("--aws-sigv4", "aws:amz:us-east-1:s3", "--user", user or f"{s3.ACCESS_KEY}:{s3.SECRET_KEY}",
                "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", *args)


def listening_ports(pid):
    """The TCP ports process pid listens on (its socket inodes matched in /proc/net/tcp)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except FileNotFoundError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    ports = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "0A" and fields[9] in inodes:  # LISTEN
            ports.add(int(fields[1].split(":")[1], 16))
    return ports


@pytest.fixture(scope="module")
def s3():
    with MotoS3() as server:
        server.create_bucket("bkt")
        server.put("bkt", "hello.txt", HELLO)
        yield server


def test_the_pinned_version_serves_path_style_on_loopback_from_a_process_of_its_own(s3):
    assert s3.version == PINNED_VERSION
    assert f"moto=={PINNED_VERSION}" in REQUIREMENTS.read_text().split()
    assert s3.endpoint.startswith("http://127.0.0.1:") and s3.port > 0
    assert listening_ports(s3._proc.pid) == {s3.port}  # the staging port is closed
    assert s3.port not in listening_ports(os.getpid())
    status, _, body = signed(s3, s3.url("bkt", "hello.txt"))
    assert (status, body) == (200, HELLO)


def test_etag_is_the_quoted_md5_on_put_head_get_and_list(s3):
    assert s3.put("bkt", "etag/a.bin", HELLO) == HELLO_ETAG
    assert s3.head("bkt", "etag/a.bin")["ETag"] == HELLO_ETAG
    assert signed(s3, "-I", s3.url("bkt", "etag/a.bin"))[1]["etag"] == HELLO_ETAG
    assert signed(s3, s3.url("bkt", "etag/a.bin"))[1]["etag"] == HELLO_ETAG
    _, _, xml = signed(s3, f"{s3.endpoint}/bkt?list-type=2&prefix=etag%2F")
    assert b'<ETag>"5eb63bbbe01eeed093cb22bb8f5acdc3"</ETag>' in xml and b"&quot;" not in xml  # quotes raw
    assert s3.list("bkt", "etag/") == [{"Key": "etag/a.bin", "ETag": HELLO_ETAG, "Size": len(HELLO)}]


def test_replacing_an_object_gives_a_new_etag(s3):
    old = s3.put("bkt", "replace/shard.tar", b"first version")
    new = s3.replace("bkt", "replace/shard.tar", b"second version")
    assert new != old and new == '"%s"' % hashlib.md5(b"second version").hexdigest()
    assert signed(s3, s3.url("bkt", "replace/shard.tar"))[1]["etag"] == new
    with pytest.raises(ValueError, match="kept ETag"):
        s3.replace("bkt", "replace/shard.tar", b"second version")


def test_a_get_under_way_while_the_object_is_replaced_sends_the_old_object_whole(s3):
    old, new = b"A" * (32 << 20), b"B" * (32 << 20)  # far more than the socket buffers hold
    s3.put("bkt", "atomic.tar", old)
    body = s3.client.get_object(Bucket="bkt", Key="atomic.tar")["Body"]
    try:
        first = body.read(1 << 20)
        s3.replace("bkt", "atomic.tar", new)
        rest = body.read()
    finally:
        body.close()
    assert first + rest == old
    assert s3.get("bkt", "atomic.tar") == new


@pytest.mark.parametrize("byte_range, content_range, body", [
    ("bytes=2-5", "bytes 2-5/11", b"llo "),
    ("bytes=6-", "bytes 6-10/11", b"world"),
    ("bytes=5-100", "bytes 5-10/11", b" world"),       # the end is clamped
    ("bytes=0-0", "bytes 0-0/11", b"h"),                # the first byte
    ("bytes=-3", "bytes 8-10/11", b"rld"),              # a suffix: the last 3
    ("bytes=-20", "bytes 0-10/11", HELLO),              # a suffix longer than the object: all of it
])
def test_ranges(s3, byte_range, content_range, body):
    status, headers, got = signed(s3, "-H", f"Range: {byte_range}", s3.url("bkt", "hello.txt"))
    assert (status, headers["content-range"], got) == (206, content_range, body)
    assert headers["etag"] == HELLO_ETAG and headers["accept-ranges"] == "bytes"
    assert s3.get("bkt", "hello.txt", byte_range) == body
    status, headers, _ = signed(s3, "-I", "-H", f"Range: {byte_range}", s3.url("bkt", "hello.txt"))
    assert (status, headers["content-range"]) == (206, content_range)


def test_a_range_ending_before_its_start_is_ignored_and_one_past_the_end_is_416(s3):
    status, headers, body = signed(s3, "-H", "Range: bytes=3-0", s3.url("bkt", "hello.txt"))
    assert (status, body) == (200, HELLO) and "content-range" not in headers
    for byte_range in ("bytes=20-30", "bytes=-0"):
        status, _, xml = signed(s3, "-H", f"Range: {byte_range}", s3.url("bkt", "hello.txt"))
        assert status == 416 and b"<Code>InvalidRange</Code>" in xml, byte_range


def test_list_objects_v2_pages_with_continuation_tokens(s3):
    keys = [f"list/shard-{i:06d}.tar" for i in range(5)]
    for key in keys:
        s3.put("bkt", key, key.encode())
    assert [o["Key"] for o in s3.list("bkt", "list/", page_size=2)] == keys
    _, _, page = signed(s3, f"{s3.endpoint}/bkt?list-type=2&max-keys=2&prefix=list%2F")
    token = hashlib.md5(keys[1].encode()).hexdigest()  # the page's last key, hashed
    assert b"<IsTruncated>true</IsTruncated>" in page and b"<KeyCount>2</KeyCount>" in page
    assert b"<MaxKeys>2</MaxKeys>" in page and b"<NextContinuationToken>%s</" % token.encode() in page
    _, _, page = signed(s3, f"{s3.endpoint}/bkt?continuation-token={token}&list-type=2&max-keys=2&prefix=list%2F")
    assert b"<Key>list/shard-000002.tar</Key>" in page and b"shard-000001" not in page
    last = s3.client.list_objects_v2(Bucket="bkt", Prefix="list/", StartAfter=keys[2], MaxKeys=2)
    assert (last["KeyCount"], last["IsTruncated"], "NextContinuationToken" in last) == (2, False, False)
    status, _, html = signed(s3, f"{s3.endpoint}/bkt?continuation-token=garbage&list-type=2")
    assert status == 500 and b"<title>500 Internal Server Error</title>" in html  # a token it did not make
    status, _, xml = signed(s3, f"{s3.endpoint}/bkt?continuation-token=&list-type=2")
    assert status == 400 and b"<Code>InvalidArgument</Code>" in xml
    assert b"<MaxKeys>1000</MaxKeys>" in signed(s3, f"{s3.endpoint}/bkt?list-type=2")[2]
    assert b"<MaxKeys>5000</MaxKeys>" in signed(s3, f"{s3.endpoint}/bkt?list-type=2&max-keys=5000")[2]  # no cap


def test_list_objects_v2_delimiter_namespace_and_url_encoded_keys(s3):
    s3.put("bkt", "tree/x/1.tar", b"1")
    s3.put("bkt", "tree/y/2.tar", b"2")
    s3.put("bkt", "tree/a+b c.tar", b"3")
    _, _, xml = signed(s3, f"{s3.endpoint}/bkt?delimiter=%2F&encoding-type=url&list-type=2&prefix=tree%2F")
    assert b'<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">' in xml
    assert b"<Key>tree/a%2Bb%20c.tar</Key>" in xml and b"<EncodingType>url</EncodingType>" in xml
    assert b"<KeyCount>3</KeyCount>" in xml  # the two CommonPrefixes are counted, as S3 does
    assert b"<CommonPrefixes><Prefix>tree/x/</Prefix></CommonPrefixes>" in xml
    _, _, xml = signed(s3, f"{s3.endpoint}/bkt?list-type=2&prefix=tree%2Fa")
    assert b"<Key>tree/a+b c.tar</Key>" in xml and b"EncodingType" not in xml  # raw without encoding-type
    assert [o["Key"] for o in s3.list("bkt", "tree/a")] == ["tree/a+b c.tar"]  # botocore asks for url, decodes


def test_listing_order_is_byte_order_and_pages_skip_nothing(s3):
    keys = ["order/a-b", "order/a.tar", "order/a/x", "order/z", "order/\u00e9"]  # '-' < '.' < '/' < 'z' < 0xC3
    for key in reversed(keys):
        s3.put("bkt", key, b"x")
    assert [o["Key"] for o in s3.list("bkt", "order/")] == keys
    assert [o["Key"] for o in s3.list("bkt", "order/", page_size=1)] == keys


def test_if_match_is_412_if_none_match_is_304(s3):
    url = s3.url("bkt", "hello.txt")
    for method in ((), ("-I",)):
        status, _, body = signed(s3, *method, "-H", 'If-Match: "0123"', url)
        assert status == 412 and (method or b"<Code>PreconditionFailed</Code>" in body)
        assert signed(s3, *method, "-H", f"If-Match: {HELLO_ETAG}", url)[0] == 200
        assert signed(s3, *method, "-H", f"If-None-Match: {HELLO_ETAG}", url)[0] == 304
        assert signed(s3, *method, "-H", 'If-None-Match: "0123"', url)[0] == 200
        assert signed(s3, *method, "-H", "If-Modified-Since: Fri, 01 Jan 2100 00:00:00 GMT", url)[0] == 304
        assert signed(s3, *method, "-H", "If-Unmodified-Since: Sat, 01 Jan 2000 00:00:00 GMT", url)[0] == 412


def test_a_missing_key_or_bucket_is_404_with_its_code(s3):
    status, _, xml = signed(s3, s3.url("bkt", "no/such.tar"))
    assert status == 404 and b"<Code>NoSuchKey</Code>" in xml
    status, _, xml = signed(s3, s3.url("nobucket", "x.tar"))
    assert status == 404 and b"<Code>NoSuchBucket</Code>" in xml
    assert signed(s3, "-I", s3.url("bkt", "no/such.tar"))[::2] == (404, b"")
    status, _, xml = signed(s3, f"{s3.endpoint}/nobucket?list-type=2")
    assert status == 404 and b"<Code>NoSuchBucket</Code>" in xml
    with pytest.raises(ClientError) as error:
        s3.get("nobucket", "x.tar")
    assert error.value.response["Error"]["Code"] == "NoSuchBucket"


def _error(client_call):
    with pytest.raises(ClientError) as error:
        client_call()
    return error.value.response["ResponseMetadata"]["HTTPStatusCode"], error.value.response["Error"]["Code"]


def test_with_auth_sigv4_signatures_key_ids_and_tokens_are_verified(s3):
    url = s3.url("bkt", "hello.txt")
    assert signed(s3, url)[0] == 200
    status, _, xml = signed(s3, url, user=f"{s3.ACCESS_KEY}:not-the-secret")
    assert status == 403 and b"<Code>SignatureDoesNotMatch</Code>" in xml
    status, _, xml = signed(s3, url, user="AKIAOTHERKEY:secret")
    assert status == 403 and b"<Code>InvalidAccessKeyId</Code>" in xml
    # The query is signed as curl sent it: in canonical (sorted) order it verifies, in another order it does not.
    assert signed(s3, f"{s3.endpoint}/bkt?list-type=2&prefix=etag%2F")[0] == 200
    status, _, xml = signed(s3, f"{s3.endpoint}/bkt?prefix=etag%2F&list-type=2")
    assert status == 403 and b"<Code>SignatureDoesNotMatch</Code>" in xml
    status, _, xml = curl("--aws-sigv4", "aws:amz:us-east-1:s3", "--user", f"{s3.ACCESS_KEY}:{s3.SECRET_KEY}", url)
    assert status == 403 and b"<Code>SignatureDoesNotMatch</Code>" in xml  # no x-amz-content-sha256
    # The clock is not checked: a request signed as of 2020 is served.
    with mock.patch("botocore.auth.get_current_datetime", return_value=datetime.datetime(2020, 1, 1)):
        stale = s3._make_client("s3", s3.endpoint, s3.ACCESS_KEY, s3.SECRET_KEY)
        assert stale.get_object(Bucket="bkt", Key="hello.txt")["Body"].read() == HELLO
    stale.close()
    tokened = s3._make_client("s3", s3.endpoint, s3.ACCESS_KEY, s3.SECRET_KEY, token="a-token")
    assert _error(lambda: tokened.get_object(Bucket="bkt", Key="hello.txt")) == (400, "InvalidToken")
    creds = s3.session_credentials()
    assert creds["AccessKeyId"].startswith("ASIA") and creds["AccessKeyId"] != s3.ACCESS_KEY
    session = s3._make_client("s3", s3.endpoint, creds["AccessKeyId"], creds["SecretAccessKey"],
                              token=creds["SessionToken"])
    assert session.get_object(Bucket="bkt", Key="hello.txt")["Body"].read() == HELLO
    wrong = s3._make_client("s3", s3.endpoint, creds["AccessKeyId"], creds["SecretAccessKey"], token="another")
    assert _error(lambda: wrong.get_object(Bucket="bkt", Key="hello.txt")) == (400, "InvalidToken")
    for client in (tokened, session, wrong):
        client.close()
    # Anonymous: 403 for an object, 500 for a missing key and for a listing.
    assert curl(url)[::2] == (403, b"")
    assert curl(s3.url("bkt", "no/such.tar"))[0] == 500
    assert curl(f"{s3.endpoint}/bkt?list-type=2")[0] == 500


def test_without_auth_any_credentials_work_and_anonymous_requests_meet_the_acl():
    with MotoS3(auth=False) as server:
        server.create_bucket("open")
        server.put("open", "k.tar", HELLO)
        for user in ("ANYKEY:any-secret", "AKIAOTHERKEY:x"):
            status, _, body = signed(server, server.url("open", "k.tar"), user=user)
            assert (status, body) == (200, HELLO), user
        tokened = server._make_client("s3", server.endpoint, "ANY", "any", token="any-token")
        assert tokened.get_object(Bucket="open", Key="k.tar")["Body"].read() == HELLO
        tokened.close()
        assert curl(server.url("open", "k.tar"))[::2] == (403, b"")  # private
        status, _, xml = curl(server.url("open", "no.tar"))
        assert status == 404 and b"<Code>NoSuchKey</Code>" in xml


@pytest.mark.parametrize("key", ["keys/with space.tar", "keys/plus+sign.tar", "keys/ünïcødé-シャード.tar"])
def test_keys_with_spaces_plus_and_unicode_round_trip(s3, key):
    s3.put("bkt", key, key.encode())
    status, _, body = signed(s3, s3.url("bkt", key))
    assert (status, body) == (200, key.encode())
    assert key in [o["Key"] for o in s3.list("bkt", "keys/")]
