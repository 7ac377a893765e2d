#!/usr/bin/env python3
"""A fault-injecting, throttled HTTP(S) object server for batchd's remote-shard tests (issue 28).

    python3 tests/remote/fault_server.py --root DIR --port 0 [--bandwidth 50e6] [--latency 0.02]
        [--cert server.pem --key server.key] [--log requests.jsonl] [--fault MODE[:COUNT[:PATH]]]...

Prints the port it listens on (127.0.0.1 only) as its first stdout line, then serves until SIGTERM/SIGINT.

What it serves (real sockets, ThreadingHTTPServer, HTTP/1.1 keep-alive):
- GET/HEAD /PATH: the file ROOT/PATH (percent-decoded; never outside ROOT). ETag = the quoted hex MD5 of the bytes
  (as S3 for single-part objects), Content-Length, Last-Modified; Range bytes=A-B, A-, -N -> 206 + Content-Range
  (416 past the end); If-Match other than the ETag (or "*") -> 412 PreconditionFailed. A missing file -> 404
  NoSuchKey (S3's XML error body).
- GET /BUCKET?list-type=2[&prefix=P][&max-keys=N][&continuation-token=T][&start-after=K][&encoding-type=url]:
  S3 ListObjectsV2 over the files under ROOT/BUCKET (key = the path below it), sorted by UTF-8 bytes, max-keys
  (default 1000) per page, IsTruncated + NextContinuationToken (base64 of the last key: holds '+', '/', '=', so
  the client must encode it in the query) ; encoding-type=url: keys quote_plus'ed and <EncodingType>url</...>, as
  S3. A missing bucket -> 404 NoSuchBucket.
- Faults (--fault, or POST /__control/fault?mode=M&count=N&path=P&status=S; POST /__control/clear drops them),
  each applied to the next COUNT requests (0 = every request) whose path starts with PATH (default: all; the
  faults on a body (reset, truncate, stall) to GETs only):
    503        503 SlowDown with S3's XML body (Retry-After absent, as S3)
    reset      the response headers, then a TCP reset (SO_LINGER 0) instead of the body
    truncate   the headers with the full Content-Length, half the body, then close
    stall      the headers, then nothing (the connection stays open for up to 120 s)
    status     answer `status` (default 403 AccessDenied) with S3's XML error body
    ignore-if-match   serve 200 whatever If-Match says (as some S3-compatible servers do)
    endless    a listing answered with no key, IsTruncated true and a NextContinuationToken never seen before
               (a server that never ends a listing)
    listing-file      a listing answered with the bytes of the file ROOT/.listing.xml as they are (a crafted
               answer: deep nesting, a huge page)
- --bandwidth B: each connection sends at most B bytes/s; --latency S: each request waits S seconds first.
- --cert/--key: HTTPS (the handshake happens in the request's thread, so a silent client blocks only itself).
- --log FILE: one JSON line per request (control requests excepted): method, target (raw path + query), peer
  (the client's port: one per connection), headers (as received, in order: Authorization and X-Amz-Security-Token
  included; the log is the test's own). Written and flushed before the response, so a test reads it after its
  request returned.

The parts: this file (the command line, the listening socket, TLS); fault_handler.py (Handler: the requests,
files, ranges, listings, a fault in place of an answer); fault_state.py (the pending faults, ETags).
"""
import argparse
import http.server
import os
import ssl
import sys
import threading

from fault_handler import Handler
from fault_state import Etags, Faults, parse_fault


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, args):
        super().__init__(("127.0.0.1", args.port), Handler)
        self.root = os.path.realpath(args.root)
        self.bandwidth = float(args.bandwidth)
        self.latency = float(args.latency)
        self.faults = Faults()
        for f in args.fault:
            self.faults.add(*parse_fault(f))
        self.etags = Etags()
        self.log_lock = threading.Lock()
        self.pages = 0  # endless listing pages served
        self.log_file = open(args.log, "a", encoding="utf-8") if args.log else None
        self.tls = None
        if args.cert:
            self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.tls.load_cert_chain(args.cert, args.key)

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (OSError, ssl.SSLError)):  # a client gone or reset: expected here
            super().handle_error(request, client_address)

    def get_request(self):
        sock, addr = self.socket.accept()
        if self.tls:  # the handshake runs on the handler's thread, at its first read
            sock = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, addr


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--root", required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--bandwidth", default="0", help="bytes/s per connection (0 = unlimited)")
    p.add_argument("--latency", default="0", help="seconds before each response")
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("--log")
    p.add_argument("--fault", action="append", default=[], help="MODE[:COUNT[:PATH]] (COUNT 0 = always)")
    args = p.parse_args()
    server = Server(args)
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
