"""fault_server.py's request handler: GET/HEAD of files (ETag, ranges, If-Match), S3 ListObjectsV2 over a
bucket folder, the control requests (POST /__control/...), and the pending fault (fault_state.Faults) in
place of an answer or its body. What each does is fault_server.py's docstring."""
import base64
import email.utils
import http.server
import io
import json
import os
import socket
import struct
import time
import urllib.parse
from xml.sax.saxutils import escape

S3_NS = "http://s3.amazonaws.com/doc/2006-03-01/"
ERROR_STATUS_CODES = {403: "AccessDenied", 404: "NoSuchKey", 412: "PreconditionFailed", 500: "InternalError",
                      503: "SlowDown", 401: "Unauthorized", 400: "InvalidRequest"}


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
