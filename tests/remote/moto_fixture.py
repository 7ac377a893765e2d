"""MotoS3: moto's S3 (moto[server] 5.2.5, PyPI), a real HTTP server process on 127.0.0.1, started by a test (issue 28).

    with MotoS3() as s3:                        # a free port, signatures checked (auth=True), stopped at exit
        s3.create_bucket("shards")
        etag = s3.put("shards", "train/shard-000000.tar", path_or_bytes)   # the quoted MD5, as S3 sends it
        s3.url("shards", "train/shard-000000.tar")  # http://127.0.0.1:PORT/shards/train/shard-000000.tar
        s3.env()                                # AWS_* for a daemon: the server's credentials, the endpoint
        s3.kill(); s3.start()                   # SIGKILL (mid-transfer), then the same port, credentials and objects
        s3.session_credentials()                # STS temporary credentials (key id, secret, session token)

Where it comes from: moto[server], pinned in tests/requirements.txt and installed into the project venv by
`./setup.sh --tests`; the server runs in the Python that runs the tests (sys.executable; BATCHD_MOTO_PYTHON names
another). The child is this file run as a script: moto's own WSGI application (what `python -m moto.server` serves,
werkzeug's threaded server) on a staging port first, then on the public one (`python -m moto.server` binds its one
port at once: after a restart it would answer 404 until the objects were uploaded again, and batchd does not retry
a 404). Lifetime: a child of this process,
stopped by stop()/__exit__ (SIGTERM, SIGKILL after a timeout) and, should this process die first, by the kernel
(PR_SET_PDEATHSIG: start it from a thread that outlives it). Not thread-safe; one instance per test.

moto keeps every bucket and object in the server's memory: a killed server comes back empty. So the fixture
remembers what create_bucket(), put() and replace() made (bytes kept, files re-read; anything made through
`client` directly is not remembered) and start() uploads it again (start(restore=False): back empty). That happens
on the staging port, before the public port is bound: a client retrying the public port meanwhile gets "connection
refused" (retried), never a 404 for an object not yet restored. A restored file must still hold the bytes it had
(its ETag is compared). ListObjectsV2 continuation tokens do not survive a restart.

Credentials (auth=True, the default): the fixture seeds moto's random generator (/moto-api/seed), makes an IAM user
with an access key (the same key after every restart, as the seed is the same) allowed s3:* and sts:AssumeRole,
and a role allowed s3:*, then turns moto's IAM authentication on (/moto-api/reset-auth 0, the server-mode form of
INITIAL_NO_AUTH_ACTION_COUNT). auth=False leaves moto's default: no credential is checked at all.

How moto 5.2.5 behaves where batchd relies on it (test_moto_fixture.py proves each point, through botocore 1.44 and
the curl 7.88 CLI, except those marked "(source)", read in moto/s3 and moto/iam):
- ETag: the quoted hex MD5 of the body ("5eb6...cdc3", quotes included) on PUT, HEAD, GET and in ListObjectsV2,
  where the quotes are sent raw (<ETag>"5eb6..."</ETag>; S3 writes &quot;): parse the XML, don't match the text.
  A PUT of other bytes gives a new ETag. PUT replaces the object at once: a GET under way still sends the old
  object, whole (moto reads an object into memory when the GET starts).
- Range: as S3. bytes=A-B (B clamped to the end), bytes=A- and the suffix range bytes=-N (the last N bytes; the
  whole object when N > size) answer 206 with Content-Range "bytes A-B/SIZE"; bytes=0-0 is the first byte. A range
  whose end is before its start (bytes=3-0) is ignored: 200, the whole object, no Content-Range. A start past the
  end and bytes=-0 answer 416 InvalidRange. HEAD with a Range answers 206 and its Content-Range, no body.
- ListObjectsV2 (GET /BUCKET?list-type=2): Prefix, StartAfter, Delimiter (CommonPrefixes), IsTruncated,
  NextContinuationToken when truncated (the hex MD5 of the page's last key, remembered by the server: one it did
  not make answers 500 with an HTML page, not XML; an empty one 400 InvalidArgument), KeyCount counting keys and
  CommonPrefixes (as S3). MaxKeys defaults to 1000 but is not capped (max-keys=5000 is echoed: S3 caps at 1000).
  encoding-type=url: keys percent-encoded as Python's quote() ('/' kept, space %20, '+' %2B, UTF-8 bytes %XX; Prefix
  and CommonPrefixes too (source)) and <EncodingType>url</EncodingType> in the answer; decode when it says so (botocore
  does); without encoding-type keys come raw. S3's namespace,
  http://s3.amazonaws.com/doc/2006-03-01/; elements in another order than S3's (IsTruncated first): match names.
  Keys in byte order (UTF-8), so pages never skip or repeat a key.
- Conditionals: If-Match with another ETag answers 412 PreconditionFailed (GET and HEAD), as S3; If-None-Match with
  the current ETag and If-Modified-Since after the last change answer 304; If-Unmodified-Since before it 412.
- Missing: 404 with <Error><Code>NoSuchKey</Code>... for a key, NoSuchBucket for a bucket (GET; HEAD the same
  status without a body; ListObjectsV2 on a missing bucket).
- Signatures, auth=True: SigV4 verified. moto recomputes the signature with botocore's S3SigV4Auth over the method,
  the path and query as received, the signed headers and the x-amz-content-sha256 header's payload hash (source):
  a query signed as written but not in canonical order fails (curl 7.88 signs it so: batchd writes it canonical),
  and so does a request without x-amz-content-sha256 (S3 refuses it too; batchd sends it). A wrong secret is 403
  SignatureDoesNotMatch, an unknown key id 403 InvalidAccessKeyId; the IAM user's key with a session token, or STS
  credentials with another token, 400 InvalidToken. x-amz-date is not checked against the clock (S3 refuses a skew
  over 15 minutes). Anonymous requests (no Authorization): 403 with an empty body for an existing object, 500 for a
  missing key and for a listing (moto reads the absent header (source)): sign every request.
- Signatures, auth=False (moto's default): none checked, any key id, secret and token work. An anonymous request is
  served only where the ACL allows it: an existing private object is 403 (empty body), a missing key 404 NoSuchKey.
- Addressing: path-style http://127.0.0.1:PORT/BUCKET/KEY. Keys with spaces, '+' and UTF-8 round-trip, the URL path
  percent-encoded as AWS's UriEncode ('+' as %2B).
- Errors moto does not make (source): no 503 SlowDown, no resets or truncated bodies (tests/remote/fault_server.py
  makes those). A 500 from moto is werkzeug's HTML page, not an S3 error body.
"""
import ctypes
import importlib.metadata
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

import botocore.config
import botocore.session

PINNED_VERSION = "5.2.5"  # tests/requirements.txt's moto; the docstring above describes this version
SEED = 20261128  # moto's random generator: the same IAM key id and secret after every (re)start


# prctl, looked up once in the parent: the child between fork and exec (preexec_fn, other threads may be running)
# only calls it, never dlopen()s or allocates.
_PRCTL = ctypes.CDLL(None, use_errno=True).prctl
_PR_SET_PDEATHSIG = 1


def _die_with_parent():
    """preexec_fn: the kernel SIGKILLs the server when the thread that started it dies (prctl PR_SET_PDEATHSIG)."""
    _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _policy(*actions):
    return json.dumps({"Version": "2012-10-17",
                       "Statement": [{"Effect": "Allow", "Action": list(actions), "Resource": "*"}]})


class MotoS3:
    ACCESS_KEY = "MOTOTESTKEY"  # auth=False: any key works; auth=True: the IAM user's key, set by start()
    SECRET_KEY = "moto-test-secret"
    REGION = "us-east-1"
    USER = "batchd-test"
    ROLE = "batchd-test-role"

    def __init__(self, auth=True, ready_timeout=60.0, stop_timeout=5.0, python=None):
        self.auth = auth
        self.python = python or os.environ.get("BATCHD_MOTO_PYTHON") or sys.executable
        if self.python == sys.executable:
            try:
                self.version = importlib.metadata.version("moto")
            except importlib.metadata.PackageNotFoundError:
                raise RuntimeError(self._install_hint()) from None
        else:
            self.version = None  # another Python's: not looked at here
        self._root = Path(tempfile.mkdtemp(prefix="batchd-moto-"))
        self.log_path = self._root / "moto.log"
        self.port = 0  # chosen by the first start (bound to port 0), kept by restarts
        self.ready_timeout = ready_timeout
        self.stop_timeout = stop_timeout
        self.role_arn = None
        self._proc = None
        self._session = botocore.session.Session()
        self._client = None
        self._buckets = []  # what create_bucket() made, in order
        self._objects = {}  # (bucket, key) -> (bytes or Path, ETag): what put() uploaded last

    def _install_hint(self):
        return (f"moto[server] is not installed in {self.python}: run ./setup.sh --tests (it installs "
                f"tests/requirements.txt into .venv), or `.venv/bin/pip install -r tests/requirements.txt`, or point "
                f"BATCHD_MOTO_PYTHON at a Python that has moto {PINNED_VERSION}")

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

    def start(self, restore=True):
        """Starts the server; with auth, its IAM user (and authentication); with restore, every bucket and object
        made through this fixture before; then binds the public port (self.port once known) and returns when it
        answers ListBuckets with 200."""
        assert not self.running, "moto's server is already running"
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("AWS_", "MOTO_")) and k != "INITIAL_NO_AUTH_ACTION_COUNT"}
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen([self.python, str(Path(__file__).resolve()), "--serve"],
                                          stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, env=env,
                                          preexec_fn=_die_with_parent)
        try:
            deadline = time.monotonic() + self.ready_timeout
            staging = f"http://127.0.0.1:{self._wait_for('staging', offset, deadline)}"
            if self.auth:
                self._set_up_auth(staging)
            if restore:
                self._restore(staging)
            else:
                self._buckets, self._objects = [], {}
            self._proc.stdin.write(f"serve {self.port}\n".encode())
            self._proc.stdin.flush()
            self.port = self._wait_for("serving", offset, deadline)
            while not self._answers():
                self._check_alive(offset)
                if time.monotonic() > deadline:
                    raise RuntimeError(f"moto's server did not answer on 127.0.0.1:{self.port} within "
                                       f"{self.ready_timeout} s: {self._log_tail(offset)}")
                time.sleep(0.05)
        except BaseException:
            self.kill()
            raise

    def _wait_for(self, what, offset, deadline):
        """The port of the child's line "<what> on 127.0.0.1:PORT" written after offset in the log."""
        while True:
            self._check_alive(offset)
            match = re.search(rb"^%s on 127\.0\.0\.1:(\d+)$" % what.encode(), self.log_path.read_bytes()[offset:],
                              re.MULTILINE)
            if match:
                return int(match.group(1))
            if time.monotonic() > deadline:
                raise RuntimeError(f"moto's server was not {what} within {self.ready_timeout} s "
                                   f"(port {self.port}): {self._log_tail(offset)}")
            time.sleep(0.02)

    def _check_alive(self, offset):
        if self._proc.poll() is not None:
            tail = self._log_tail(offset)
            hint = f" ({self._install_hint()})" if "No module named" in tail else ""
            raise RuntimeError(f"moto's server exited with status {self._proc.returncode} at start "
                               f"(port {self.port}){hint}: {tail}")

    def _answers(self):
        try:
            return self.client.list_buckets()["ResponseMetadata"]["HTTPStatusCode"] == 200
        except Exception:  # connection refused, a timeout, an error status: not ready
            return False

    def _post(self, endpoint, path, data=b""):
        request = urllib.request.Request(endpoint + path, data=data, method="POST",
                                         headers={"Content-Type": "text/plain"})  # a form body Flask would eat
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.read()

    def _set_up_auth(self, endpoint):
        """The IAM user and role (unauthenticated, moto's default), then authentication on: every later request
        must be signed with a key IAM knows and be allowed by its policies."""
        self._post(endpoint, f"/moto-api/seed?a={SEED}")
        iam = self._make_client("iam", endpoint, "any-key", "any-secret")
        try:
            iam.create_user(UserName=self.USER)
            iam.put_user_policy(UserName=self.USER, PolicyName="s3", PolicyDocument=_policy("s3:*", "sts:AssumeRole"))
            key = iam.create_access_key(UserName=self.USER)["AccessKey"]
            trust = json.dumps({"Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}]})
            self.role_arn = iam.create_role(RoleName=self.ROLE, AssumeRolePolicyDocument=trust)["Role"]["Arn"]
            iam.put_role_policy(RoleName=self.ROLE, PolicyName="s3", PolicyDocument=_policy("s3:*"))
        finally:
            iam.close()
        if "ACCESS_KEY" in vars(self) and (self.ACCESS_KEY, self.SECRET_KEY) != (key["AccessKeyId"],
                                                                                 key["SecretAccessKey"]):
            raise RuntimeError(f"moto made another IAM key after a restart ({key['AccessKeyId']}, was "
                               f"{self.ACCESS_KEY}): /moto-api/seed no longer makes its keys reproducible")
        self.ACCESS_KEY, self.SECRET_KEY = key["AccessKeyId"], key["SecretAccessKey"]
        self._post(endpoint, "/moto-api/reset-auth", b"0")

    def _restore(self, endpoint):
        if not self._buckets:
            return
        client = self._make_client("s3", endpoint, self.ACCESS_KEY, self.SECRET_KEY)
        try:
            for bucket in self._buckets:
                client.create_bucket(Bucket=bucket)
            for (bucket, key), (data, etag) in self._objects.items():
                now = self._upload(client, bucket, key, data)
                if now != etag:
                    raise RuntimeError(f"restoring s3://{bucket}/{key}: {data} now has ETag {now}, not the {etag} "
                                       f"it had when put: it changed since")
        finally:
            client.close()

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
        self._close_stdin()

    def kill(self):
        """SIGKILL now (a server dying mid-transfer): its objects are gone; start() brings them back, same port."""
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait()
            self._close_stdin()

    def _close_stdin(self):
        try:
            self._proc.stdin.close()
        except OSError:
            pass
        self._proc = None

    def close(self):
        """Stops the server and removes its log."""
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
        """The path-style URL of an object, its key percent-encoded (UTF-8, AWS's UriEncode) with '/' kept."""
        return f"{self.endpoint}/{bucket}/{urllib.parse.quote(key, safe='/')}"

    def env(self):
        """The AWS_* variables that point an S3 client (a daemon under test) at this server."""
        return {"AWS_ACCESS_KEY_ID": self.ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": self.SECRET_KEY,
                "AWS_REGION": self.REGION, "AWS_ENDPOINT_URL": self.endpoint, "AWS_ENDPOINT_URL_S3": self.endpoint}

    def session_credentials(self):
        """STS AssumeRole of the fixture's role (auth=True): {"AccessKeyId", "SecretAccessKey", "SessionToken"}, which
        the server accepts until it restarts (the token is random, not seeded)."""
        assert self.auth and self.role_arn, "session credentials need MotoS3(auth=True), started"
        sts = self._make_client("sts", self.endpoint, self.ACCESS_KEY, self.SECRET_KEY)
        try:
            creds = sts.assume_role(RoleArn=self.role_arn, RoleSessionName="batchd-test")["Credentials"]
        finally:
            sts.close()
        return {k: creds[k] for k in ("AccessKeyId", "SecretAccessKey", "SessionToken")}

    # -- S3 operations through botocore --------------------------------------------------------------------------

    def _make_client(self, service, endpoint, key, secret, token=None):
        config = botocore.config.Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                                        retries={"max_attempts": 1}, connect_timeout=5, read_timeout=30)
        return self._session.create_client(
            service, endpoint_url=endpoint, region_name=self.REGION, aws_access_key_id=key,
            aws_secret_access_key=secret, aws_session_token=token, config=config)

    @property
    def client(self):
        """A botocore S3 client: path-style, SigV4, the server's credentials, no retries, short timeouts."""
        if self._client is None:
            self._client = self._make_client("s3", self.endpoint, self.ACCESS_KEY, self.SECRET_KEY)
        return self._client

    def create_bucket(self, bucket):
        self.client.create_bucket(Bucket=bucket)
        if bucket not in self._buckets:
            self._buckets.append(bucket)

    @staticmethod
    def _upload(client, bucket, key, data):
        if isinstance(data, Path):
            with open(data, "rb") as f:
                return client.put_object(Bucket=bucket, Key=key, Body=f)["ETag"]
        return client.put_object(Bucket=bucket, Key=key, Body=data)["ETag"]

    def put(self, bucket, key, data):
        """Uploads bytes, or the file at a Path; returns the object's ETag (the quoted MD5). Remembered for start()."""
        etag = self._upload(self.client, bucket, key, data)
        self._objects[(bucket, key)] = (data if isinstance(data, Path) else bytes(data), etag)
        return etag

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


def _serve():
    """The child: moto's WSGI application (as moto.server.main builds it) in werkzeug's threaded server on a staging
    port at once, and on the public port when stdin says "serve PORT" (0: any), the staging one then closed. Each
    bound port is announced on stdout ("staging on 127.0.0.1:PORT", "serving on ..."); both servers share moto's
    in-memory backends. Exits when stdin closes."""
    import threading

    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    app = DomainDispatcherApplication(create_backend_app)

    def serve(port, poll_interval):
        server = make_server("127.0.0.1", port, app, threaded=True, request_handler=MotoRequestHandler)
        threading.Thread(target=server.serve_forever, args=(poll_interval,), daemon=True).start()
        return server

    staging = serve(0, 0.02)  # shutdown() waits for the serving loop's poll
    print(f"staging on 127.0.0.1:{staging.socket.getsockname()[1]}", flush=True)
    for line in sys.stdin:
        command, _, port = line.strip().partition(" ")
        if command == "serve" and staging is not None:
            public = serve(int(port), 0.5)
            staging.shutdown()
            staging.server_close()
            staging = None
            print(f"serving on 127.0.0.1:{public.socket.getsockname()[1]}", flush=True)


if __name__ == "__main__" and sys.argv[1:] == ["--serve"]:
    _serve()
