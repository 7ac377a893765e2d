"""S3Objects: the S3 (and STS) operations of the MotoS3 fixture (moto_fixture.py), through botocore: what tests use to
make and read the buckets and objects a daemon under test fetches. MotoS3 derives from it; the operations use its
endpoint, credentials, region and botocore session, and remember what they made so that a restarted server gets it
back (moto_fixture.py says how).

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
from pathlib import Path

import botocore.config


class S3Objects:
    """Mixin of MotoS3: needs self.endpoint, ACCESS_KEY, SECRET_KEY, REGION, auth, role_arn, _session, _client,
    _buckets and _objects (MotoS3.__init__ sets them)."""

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
