"""fault_server.py's state shared by its handler threads: the pending faults (Faults; parse_fault reads
--fault MODE[:COUNT[:PATH]]) and the files' ETags (Etags). The modes are fault_server.py's docstring's."""
import hashlib
import threading

BODY_FAULTS = ("reset", "truncate", "stall")


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
