"""S3rver: npm's s3rver 3.7.1, a real S3-compatible server, started by a test on 127.0.0.1 (issue 28).

    with S3rver() as s3:                        # a free port, a temporary data directory, removed at exit
        s3.create_bucket("shards")
        etag = s3.put("shards", "train/shard-000000.tar", path_or_bytes)   # the quoted MD5, as S3 sends it
        s3.url("shards", "train/shard-000000.tar")  # http://127.0.0.1:PORT/shards/train/shard-000000.tar
        s3.env()                                # AWS_* for a daemon: the fixed fake credentials, the endpoint
        s3.kill(); s3.start()                   # SIGKILL (mid-transfer), then the same port and data again

Where it comes from: setup.sh runs tests/remote/s3rver/install.sh, `npm ci` of the committed lockfile into
build-node/s3rver/ (git-ignored); the node it was installed with is recorded in build-node/s3rver/node-path.
BATCHD_S3RVER=/path/to/s3rver/bin/s3rver.js runs another copy. Credentials: access key S3RVER, secret S3RVER, the
only key s3rver 3.7.1 knows (`S3rver.ACCESS_KEY`). Lifetime: the server is a child of this process, stopped by
stop()/__exit__ (SIGTERM, SIGKILL after a timeout) and, should this process die first, by the kernel
(PR_SET_PDEATHSIG: start it from a thread that outlives it). Not thread-safe; one instance per test.

How s3rver 3.7.1 behaves where batchd relies on it (node 20 and Debian 12's node 18; test_s3rver_fixture.py proves
each point, with botocore 1.29 and the curl 7.88 CLI, except those marked "(source)", read in s3rver's lib/):
- Node >= 17 (OpenSSL 3) needs --openssl-legacy-provider: the ListObjectsV2 continuation token is DES-encrypted,
  and without the flag every truncated listing answers 500 InternalError. This fixture passes the flag.
- ETag: the quoted hex MD5 of the body ("5eb6...cdc3", quotes included) on PUT, HEAD, GET and in ListObjectsV2
  (XML-escaped as &quot;). A PUT of other bytes to a key gives a new ETag. PUT writes the object in place (not
  atomic, (source)): a GET during a replacement can see a mix; replace objects between transfers.
- Range: bytes=A-B (B clamped to the end) and bytes=A- answer 206 with Content-Range "bytes A-B/SIZE"; A past the
  end answers 416 InvalidRange. Bugs: bytes=A-0 (so bytes=0-0) ignores the end and sends A..end; a suffix range
  bytes=-N is read as 0-N (N+1 bytes from the start, not the last N). Check Content-Range, use A-B with B > 0.
  HEAD answers like GET without the body (a Range on HEAD gives 206 too).
- ListObjectsV2 (GET /BUCKET?list-type=2): Prefix, MaxKeys (default 1000, capped at 1000 (source)), KeyCount
  (objects only: CommonPrefixes are not counted, unlike S3), IsTruncated, NextContinuationToken when truncated,
  ContinuationToken echoed; a token it did not make answers 400 InvalidArgument (under 8 bytes) or 500 (DES cannot
  decrypt it). start-after and delimiter work. encoding-type=url is ignored: keys come back raw (XML-escaped) and
  the answer has no <EncodingType>, so decode keys only when the answer says EncodingType=url (as botocore does).
  The XML namespace is http://doc.s3.amazonaws.com/2006-03-01/ (S3's: http://s3.amazonaws.com/doc/2006-03-01/):
  match local names. The order is s3rver's directory walk, not S3's byte order: an object next to a "directory"
  ("p/a/x" before "p/a.tar"), or a key that extends another with a byte below '.', comes out of order, and
  pagination across such a pair skips keys. Sort listings client-side; keep test shard keys flat (one prefix, no
  such pairs).
- Conditionals: If-Match is ignored (a wrong ETag still gets 200, never 412); If-None-Match with the current ETag
  and If-Modified-Since answer 304. A changed object must be detected by comparing ETags, not by 412.
- Missing: 404 with <Error><Code>NoSuchKey</Code>... for a key, NoSuchBucket for a bucket (GET, HEAD without body,
  and ListObjectsV2 on a missing bucket).
- Signatures: none checked for SigV4. A request without Authorization is served (anonymous). With a SigV4
  Authorization header: the access key id must be S3RVER (else 403 InvalidAccessKeyId, the test's real 403), the
  x-amz-content-sha256 header must be present (else 400 InvalidRequest), x-amz-date within 15 minutes (else 403
  RequestTimeTooSkewed); the signature itself is never verified (any secret works). SigV2 is verified.
- Addressing: path-style http://127.0.0.1:PORT/BUCKET/KEY (vhost-style is off: --no-vhost-buckets). Keys with
  spaces, '+', and UTF-8 (percent-encoded in the URL path) round-trip.
"""
import ctypes
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

import botocore.config
import botocore.session

SOURCE_DIR = Path(__file__).resolve().parents[2]
INSTALL_DIR = SOURCE_DIR / "build-node" / "s3rver"
PINNED_VERSION = "3.7.1"


def _die_with_parent():
    """preexec_fn: the kernel SIGKILLs the server when the thread that started it dies (prctl PR_SET_PDEATHSIG)."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class S3rver:
    ACCESS_KEY = "S3RVER"  # s3rver's built-in account (lib/models/account.js): other key ids get 403
    SECRET_KEY = "S3RVER"  # never checked for SigV4
    REGION = "us-east-1"
    # ListObjectsV2's continuation token is DES (bucket.js): OpenSSL 3 has DES in its legacy provider only.
    node_flags = ("--openssl-legacy-provider",)

    def __init__(self, ready_timeout=20.0, stop_timeout=5.0):
        self.script, self.node = self._locate()
        self.version = json.loads((Path(self.script).parent.parent / "package.json").read_text())["version"]
        self._root = Path(tempfile.mkdtemp(prefix="batchd-s3rver-"))
        self.data_dir = self._root / "data"
        self.data_dir.mkdir()
        self.log_path = self._root / "s3rver.log"
        self.port = 0  # chosen by the first start (s3rver -p 0), kept by restarts
        self.ready_timeout = ready_timeout
        self.stop_timeout = stop_timeout
        self._proc = None
        self._client = None

    @staticmethod
    def _locate():
        """(s3rver.js, node): BATCHD_S3RVER if set, else setup.sh's install; a clear error naming the fix."""
        override = os.environ.get("BATCHD_S3RVER")
        script = Path(override) if override else INSTALL_DIR / "node_modules" / "s3rver" / "bin" / "s3rver.js"
        if not script.is_file():
            where = f"BATCHD_S3RVER={override}" if override else str(script)
            raise RuntimeError(f"s3rver is not installed ({where} is missing): run ./setup.sh, which installs "
                               f"s3rver {PINNED_VERSION} with npm into {INSTALL_DIR}, or point BATCHD_S3RVER "
                               f"at an s3rver/bin/s3rver.js")
        recorded = INSTALL_DIR / "node-path"
        node = recorded.read_text().strip() if recorded.is_file() else ""
        node = node if node and os.access(node, os.X_OK) else shutil.which("node")
        if not node:
            raise RuntimeError("node is not found (neither in build-node/s3rver/node-path nor on PATH): "
                               "run ./setup.sh, which installs Debian's nodejs when npm is missing")
        return str(script), node

    # -- lifetime ------------------------------------------------------------------------------------------------

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def running(self):
        return self._proc is not None and self._proc.poll() is None

    def start(self):
        """Starts s3rver (on self.port once known) and returns when it answers ListBuckets with 200."""
        assert not self.running, "s3rver is already running"
        cmd = [self.node, *self.node_flags, self.script, "--directory", str(self.data_dir),
               "--address", "127.0.0.1", "--port", str(self.port), "--no-vhost-buckets"]
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                          preexec_fn=_die_with_parent)
        deadline = time.monotonic() + self.ready_timeout
        while True:
            if self._proc.poll() is not None:
                raise RuntimeError(f"s3rver exited with status {self._proc.returncode} at start "
                                   f"(port {self.port}): {self._log_tail(offset)}")
            if self.port == 0:
                match = re.search(rb"listening on 127\.0\.0\.1:(\d+)", self.log_path.read_bytes()[offset:])
                self.port = int(match.group(1)) if match else 0
            if self.port and self._answers():
                return
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"s3rver did not answer on 127.0.0.1:{self.port} within "
                                   f"{self.ready_timeout} s: {self._log_tail(offset)}")
            time.sleep(0.05)

    def _answers(self):
        try:
            with urllib.request.urlopen(self.endpoint + "/", timeout=1) as response:
                return response.status == 200
        except OSError:
            return False

    def stop(self):
        """SIGTERM, then SIGKILL after stop_timeout; returns once the process is reaped."""
        if self._proc is None:
            return
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(self.stop_timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = None

    def kill(self):
        """SIGKILL now (a server dying mid-transfer); start() brings it back on the same port and data."""
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait()
            self._proc = None

    def close(self):
        """Stops the server and removes its data directory and log."""
        self.stop()
        if self._client is not None:
            self._client.close()
            self._client = None
        shutil.rmtree(self._root, ignore_errors=True)

    def _log_tail(self, offset=0):
        data = self.log_path.read_bytes()[offset:] if self.log_path.exists() else b""
        return data[-2000:].decode(errors="replace").strip() or "(no output)"

    # -- addresses -----------------------------------------------------------------------------------------------

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    def url(self, bucket, key=""):
        """The path-style URL of an object, its key percent-encoded (UTF-8) with '/' kept."""
        return f"{self.endpoint}/{bucket}/{urllib.parse.quote(key, safe='/')}"

    def env(self):
        """The AWS_* variables that point an S3 client (a daemon under test) at this server."""
        return {"AWS_ACCESS_KEY_ID": self.ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": self.SECRET_KEY,
                "AWS_REGION": self.REGION, "AWS_ENDPOINT_URL": self.endpoint, "AWS_ENDPOINT_URL_S3": self.endpoint}

    # -- S3 operations through botocore (Debian's python3-botocore) ------------------------------------------------

    @property
    def client(self):
        """A botocore S3 client: path-style, SigV4, the fixed credentials, no retries, short timeouts."""
        if self._client is None:
            config = botocore.config.Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                                            retries={"max_attempts": 1}, connect_timeout=5, read_timeout=30)
            self._client = botocore.session.Session().create_client(
                "s3", endpoint_url=self.endpoint, region_name=self.REGION, aws_access_key_id=self.ACCESS_KEY,
                aws_secret_access_key=self.SECRET_KEY, config=config)
        return self._client

    def create_bucket(self, bucket):
        self.client.create_bucket(Bucket=bucket)

    def put(self, bucket, key, data):
        """Uploads bytes, or the file at a Path; returns the object's ETag (the quoted MD5)."""
        if isinstance(data, Path):
            with open(data, "rb") as f:
                return self.client.put_object(Bucket=bucket, Key=key, Body=f)["ETag"]
        return self.client.put_object(Bucket=bucket, Key=key, Body=data)["ETag"]

    def replace(self, bucket, key, data):
        """Overwrites an existing object with other bytes; returns the new ETag (asserted to differ)."""
        old = self.head(bucket, key)["ETag"]
        new = self.put(bucket, key, data)
        if new == old:
            raise ValueError(f"replacing s3://{bucket}/{key} kept ETag {old}: the new bytes equal the old")
        return new

    def head(self, bucket, key):
        return self.client.head_object(Bucket=bucket, Key=key)

    def get(self, bucket, key, byte_range=None):
        args = {"Range": byte_range} if byte_range else {}
        return self.client.get_object(Bucket=bucket, Key=key, **args)["Body"].read()

    def list(self, bucket, prefix="", page_size=1000):
        """Every object under prefix, following continuation tokens: [{"Key", "ETag", "Size"}, ...] as listed."""
        objects, token = [], None
        while True:
            args = {"Bucket": bucket, "Prefix": prefix, "MaxKeys": page_size}
            if token:
                args["ContinuationToken"] = token
            page = self.client.list_objects_v2(**args)
            objects += [{k: o[k] for k in ("Key", "ETag", "Size")} for o in page.get("Contents", [])]
            if not page["IsTruncated"]:
                return objects
            token = page["NextContinuationToken"]
