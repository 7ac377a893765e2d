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
  (the client's port: one per connection), headers (as received, in order: Authorization and X-Amz-Security-Token included; the log is the test's own).
  Written and flushed before the response, so a test reads it after its request returned.
"""
import argparse
import base64
import email.utils
import hashlib
import http.server
import io
import json
import os
import socket
import ssl
import struct
import sys
import threading
import time
import urllib.parse
from xml.sax.saxutils import escape

BODY_FAULTS = ("reset", "truncate", "stall")
S3_NS = "http://s3.amazonaws.com/doc/2006-03-01/"
ERROR_STATUS_CODES = {403: "AccessDenied", 404: "NoSuchKey", 412: "PreconditionFailed", 500: "InternalError",
                      503: "SlowDown", 401: "Unauthorized", 400: "InvalidRequest"}


class Faults:
    """The pending faults, shared by the handler threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.items = []  # dicts: mode, remaining (None = forever), path, status

    def add(self, mode, count=1, path="", status=403):
        with self.lock:
            self.items.append({"mode": mode, "remaining": count if count > 0 else None, "path": path,
                               "status": status})

    def clear(self):
        with self.lock:
            self.items.clear()

    def take(self, path, has_body):
        """The first fault that applies to `path` (used up by one), or None. A HEAD takes no body fault."""
        with self.lock:
            for f in self.items:
                if path.startswith(f["path"]) and (has_body or f["mode"] not in BODY_FAULTS):
                    if f["remaining"] is not None:
                        f["remaining"] -= 1
                        if f["remaining"] == 0:
                            self.items.remove(f)
                    return dict(f)
        return None


def parse_fault(text):
    parts = text.split(":", 2)
    mode = parts[0]
    count = int(parts[1]) if len(parts) > 1 and parts[1] else 1
    path = parts[2] if len(parts) > 2 else ""
    status = 403
    if mode.isdigit():  # "404:0:/b/x": a fixed status for a path
        mode, status = "status", int(mode)
    return mode, count, path, status


class Etags:
    """Quoted MD5 per file, recomputed when the file changes (inode, size, mtime)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.cache = {}

    def of(self, path, st):
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        with self.lock:
            hit = self.cache.get(path)
            if hit and hit[0] == stamp:
                return hit[1]
        md5 = hashlib.md5()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                md5.update(block)
        etag = '"%s"' % md5.hexdigest()
        with self.lock:
            self.cache[path] = (stamp, etag)
        return etag


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fault_server/1"

    def log_message(self, *args):  # quiet: the --log file is the record
        pass

    # --- plumbing -------------------------------------------------------------------------------------------------
    def send_stream(self, source, length):
        """Writes `length` bytes read from `source` (a file), in blocks, paced to --bandwidth per connection."""
        bw = self.server.bandwidth
        block = max(1024, int(bw / 50)) if bw else 1 << 20
        start, sent = time.monotonic(), 0
        while sent < length:
            data = source.read(min(block, length - sent))
            if not data:
                break
            self.wfile.write(data)
            sent += len(data)
            ahead = sent / bw - (time.monotonic() - start) if bw else 0
            if ahead > 0:
                time.sleep(ahead)

    def send_bytes(self, data):
        self.send_stream(io.BytesIO(data), len(data))

    def s3_error(self, status, code=None, message="", head=False):
        code = code or ERROR_STATUS_CODES.get(status, "Error")
        body = ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>%s</Code><Message>%s</Message>'
                '<Resource>%s</Resource></Error>' % (code, escape(message), escape(self.path))).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.send_bytes(body)

    def log_request_line(self):
        if self.server.log_file is None:
            return
        entry = {"method": self.command, "target": self.path, "peer": self.client_address[1],
                 "headers": [[k, v] for k, v in self.headers.items()]}
        with self.server.log_lock:
            self.server.log_file.write(json.dumps(entry) + "\n")
            self.server.log_file.flush()

    # --- requests -------------------------------------------------------------------------------------------------
    def do_POST(self):
        url = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(url.query))
        if url.path == "/__control/fault":
            self.server.faults.add(q.get("mode", "503"), int(q.get("count", "1")), q.get("path", ""),
                                   int(q.get("status", "403")))
        elif url.path == "/__control/clear":
            self.server.faults.clear()
        else:
            return self.s3_error(405, "MethodNotAllowed")
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_HEAD(self):
        self.serve(head=True)

    def do_GET(self):
        self.serve(head=False)

    def serve(self, head):
        self.log_request_line()
        if self.server.latency:
            time.sleep(self.server.latency)
        url = urllib.parse.urlsplit(self.path)
        fault = self.server.faults.take(url.path, not head)
        mode = fault["mode"] if fault else None
        if mode == "503":
            return self.s3_error(503, "SlowDown", "Please reduce your request rate.", head)
        if mode == "status":
            return self.s3_error(fault["status"], None, "injected by fault_server", head)
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        if "list-type" in query and mode == "endless":
            return self.endless_listing(head)
        if "list-type" in query and mode == "listing-file":
            with open(os.path.join(self.server.root, ".listing.xml"), "rb") as f:
                return self.send_xml(f.read(), head, None)
        if "list-type" in query:
            return self.list_objects(url.path, query, head, mode)
        self.serve_file(url.path, head, mode)

    def serve_file(self, raw_path, head, mode):
        rel = urllib.parse.unquote(raw_path).lstrip("/")
        path = os.path.realpath(os.path.join(self.server.root, rel))
        if not path.startswith(self.server.root + os.sep) or not os.path.isfile(path):
            return self.s3_error(404, "NoSuchKey", "The specified key does not exist.", head)
        st = os.stat(path)
        etag = self.server.etags.of(path, st)
        if_match = self.headers.get("If-Match")
        if if_match and if_match.strip() not in ("*", etag) and mode != "ignore-if-match":
            return self.s3_error(412, "PreconditionFailed", "At least one of the pre-conditions you specified did not "
                                 "hold", head)
        start, end, status = 0, st.st_size, 200
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes="):
            a, _, b = rng[6:].partition("-")
            if a == "":
                start = max(0, st.st_size - int(b))
            else:
                start = int(a)
                end = min(st.st_size, int(b) + 1) if b else st.st_size
            if start >= st.st_size:
                return self.s3_error(416, "InvalidRange", "The requested range is not satisfiable", head)
            status = 206
        self.send_response(status)
        self.send_header("ETag", etag)
        self.send_header("Content-Length", str(end - start))
        self.send_header("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True))
        self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end - 1, st.st_size))
        self.end_headers()
        if head:
            return
        with open(path, "rb") as f:
            f.seek(start)
            self.send_body(f, end - start, mode)

    def send_body(self, source, length, mode):
        """The body (`length` bytes of the file `source`), or the fault `mode` in its place."""
        if mode == "reset":
            self.wfile.flush()
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return
        if mode == "truncate":
            self.send_stream(source, length // 2)
            self.wfile.flush()
            self.close_connection = True
            return
        if mode == "stall":
            self.wfile.flush()
            time.sleep(120)
            self.close_connection = True
            return
        self.send_stream(source, length)

    def list_objects(self, raw_path, query, head, mode):
        bucket = urllib.parse.unquote(raw_path).strip("/")
        base = os.path.join(self.server.root, bucket)
        if "/" in bucket or not os.path.isdir(base):
            return self.s3_error(404, "NoSuchBucket", "The specified bucket does not exist", head)
        arg = lambda name, default="": query.get(name, [default])[0]
        prefix, max_keys = arg("prefix"), int(arg("max-keys", "1000"))
        token = arg("continuation-token")
        try:
            after = base64.b64decode(token, validate=True).decode() if token else arg("start-after")
        except ValueError:
            return self.s3_error(400, "InvalidArgument", "The continuation token provided is incorrect", head)
        keys = []
        for dirpath, _, files in os.walk(base):
            for name in files:
                key = os.path.relpath(os.path.join(dirpath, name), base).replace(os.sep, "/")
                if key.startswith(prefix) and key.encode() > after.encode():
                    keys.append(key)
        keys.sort(key=lambda k: k.encode())
        page, truncated = keys[:max_keys], len(keys) > max_keys
        url_encoded = arg("encoding-type") == "url"
        show = (lambda k: urllib.parse.quote_plus(k, safe="/")) if url_encoded else (lambda k: k)
        parts = ['<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="%s">' % S3_NS,
                 "<Name>%s</Name><Prefix>%s</Prefix><KeyCount>%d</KeyCount><MaxKeys>%d</MaxKeys>"
                 % (escape(bucket), escape(show(prefix)), len(page), max_keys),
                 "<IsTruncated>%s</IsTruncated>" % ("true" if truncated else "false")]
        if url_encoded:
            parts.append("<EncodingType>url</EncodingType>")
        if token:
            parts.append("<ContinuationToken>%s</ContinuationToken>" % escape(token))
        if truncated:
            parts.append("<NextContinuationToken>%s</NextContinuationToken>"
                         % base64.b64encode(page[-1].encode()).decode())
        for key in page:
            path = os.path.join(base, key)
            st = os.stat(path)
            parts.append("<Contents><Key>%s</Key><LastModified>%s</LastModified><ETag>%s</ETag><Size>%d</Size>"
                         "<StorageClass>STANDARD</StorageClass></Contents>"
                         % (escape(show(key)), time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(st.st_mtime)),
                            escape(self.server.etags.of(path, st), {'"': "&quot;"}), st.st_size))
        parts.append("</ListBucketResult>")
        self.send_xml("".join(parts).encode(), head, mode)

    def endless_listing(self, head):
        with self.server.log_lock:
            self.server.pages += 1
            token = "page-%d" % self.server.pages
        body = ('<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="%s"><KeyCount>0</KeyCount>'
                "<IsTruncated>true</IsTruncated><NextContinuationToken>%s</NextContinuationToken>"
                "</ListBucketResult>" % (S3_NS, token)).encode()
        self.send_xml(body, head, None)

    def send_xml(self, body, head, mode):
        self.send_response(200)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.send_body(io.BytesIO(body), len(body), mode)


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
