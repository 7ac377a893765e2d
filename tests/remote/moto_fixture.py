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
another). The child is moto_serve.py run as a script: moto's own WSGI application (what `python -m moto.server` serves,
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

How moto 5.2.5 behaves where batchd relies on it: moto_objects.py, with the S3 operations (put, get, list, ...).
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

import botocore.session

from moto_objects import S3Objects

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


class MotoS3(S3Objects):
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
            self._proc = subprocess.Popen([self.python, str(Path(__file__).resolve().parent / "moto_serve.py")],
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
