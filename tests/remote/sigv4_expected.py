#!/usr/bin/env python3
"""What botocore would have sent: the SigV4 Authorization of each request a client sent to fault_server.py (issue 28).

    sigv4_expected.py --log requests.jsonl --key-id ID --secret SECRET [--token TOKEN] --region R --scheme http

For each JSON line of fault_server.py's --log (method, target = raw path + query, headers as received) prints one
JSON line: {"target": the logged target, "expected_target": botocore's, "authorization": botocore's}.

The request is rebuilt from what it means, not from how the client spelled it: the path and the query parameters are
percent-decoded, then encoded as botocore does (the key as botocore's serializer: percent_encode(key, safe='/~');
the query through S3SigV4Auth's own canonical_query_string of the decoded params: sorted, RFC 3986 with '/' encoded),
so a client that encodes or orders differently from AWS gets expected_target != target. Headers: those the request
carried except the ones botocore sets itself (Host from the URL; X-Amz-Date, X-Amz-Content-SHA256 (S3SigV4Auth:
the SHA-256 of the empty body for a GET/HEAD without Content-MD5), X-Amz-Security-Token from the credentials) and
the transport's own (Authorization, Accept, User-Agent, Connection, Content-Length): If-Match, Range... are signed
as botocore signs every header but User-Agent/Expect. The time is the request's own X-Amz-Date (botocore's clock
is fixed to it), so the signature is botocore.auth.S3SigV4Auth.add_auth's for that request. botocore: the project
venv's (tests/requirements.txt).
"""
import argparse
import datetime
import json
import sys
import urllib.parse
from unittest import mock

import botocore.auth
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.utils import percent_encode

SET_BY_BOTOCORE = {"authorization", "host", "accept", "user-agent", "connection", "content-length", "x-amz-date",
                   "x-amz-content-sha256", "x-amz-security-token"}


def expected(entry, args):
    raw_path, _, raw_query = entry["target"].partition("?")
    params = [(urllib.parse.unquote(k), urllib.parse.unquote(v))
              for k, _, v in (p.partition("=") for p in raw_query.split("&") if p)]
    path = percent_encode(urllib.parse.unquote(raw_path), safe="/~")
    headers = {k: v for k, v in entry["headers"] if k.lower() not in SET_BY_BOTOCORE}
    amz_date = next(v for k, v in entry["headers"] if k.lower() == "x-amz-date")
    host = next(v for k, v in entry["headers"] if k.lower() == "host")
    request = AWSRequest(method=entry["method"], url="%s://%s%s" % (args.scheme, host, path), headers=headers,
                         params=params)
    auth = S3SigV4Auth(Credentials(args.key_id, args.secret, args.token or None), "s3", args.region)
    fixed = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ")

    class Clock(datetime.datetime):
        @classmethod
        def utcnow(cls):
            return fixed

    # botocore reads the clock through botocore.utils.get_current_datetime (1.34 and later; its import in auth.py
    # is what add_auth calls) or datetime.datetime.utcnow (before): both fixed to the request's X-Amz-Date.
    with mock.patch("botocore.auth.datetime.datetime", Clock):
        if hasattr(botocore.auth, "get_current_datetime"):
            with mock.patch("botocore.auth.get_current_datetime", lambda *a, **k: fixed):
                auth.add_auth(request)
        else:
            auth.add_auth(request)
    query = auth.canonical_query_string(request)
    return {"target": entry["target"], "expected_target": path + ("?" + query if query else ""),
            "authorization": request.headers["Authorization"]}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--log", required=True)
    p.add_argument("--key-id", required=True)
    p.add_argument("--secret", required=True)
    p.add_argument("--token", default="")
    p.add_argument("--region", required=True)
    p.add_argument("--scheme", default="http")
    args = p.parse_args()
    with open(args.log, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                print(json.dumps(expected(json.loads(line), args)))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
