"""Sizes of the sample cache for bench/compare_cache.py: what an image folder's entries take, the index the daemon
adds, and the bytes the daemon's workers read.

The constants mirror daemon/cache/sample_cache.cc (kBytesPerSlot, kMinSlots, kMaxSlots, kAlign, the page) and the
sizes of its Header (20,544 bytes: 64 of counters, 256 uid rows and 1,024 filler rows of 16 bytes) and Entry (104
bytes on x86-64); the decoded size mirrors decode(max_side)'s (daemon/transforms/ops/geometry_kernels.cc: the longer
side becomes max_side, each side lround(side x max_side / longer)).
"""
import math
import os

from PIL import Image

PAGE, ALIGN, BYTES_PER_SLOT, MIN_SLOTS, MAX_SLOTS = 4096, 64, 8192, 1024, 1 << 26
HEADER_BYTES, ENTRY_BYTES = 20544, 104
EXTENSIONS = (".jpg", ".jpeg", ".png")  # what the daemon's imagefolder indexes


def round_up(v, a):
    return (v + a - 1) // a * a


def index_bytes(max_bytes):
    """The header and index of a cache of max_bytes (its data area's offset): counted in max_bytes from the start."""
    slots = 1
    while slots < max_bytes // BYTES_PER_SLOT:
        slots <<= 1
    slots = min(max(slots, MIN_SLOTS), MAX_SLOTS)
    return round_up(round_up(HEADER_BYTES, PAGE) + slots * ENTRY_BYTES, PAGE)


def max_bytes_for(entry_bytes):
    """The cache.max_bytes whose room for entries (max_bytes less its index) is entry_bytes."""
    m = entry_bytes
    for _ in range(8):  # the index grows with max_bytes in powers of two: a fixed point in a step or two
        m = entry_bytes + index_bytes(m)
    return m


def working_set(root, max_side):
    """{"images": N, "file_bytes": sum of file sizes, "entry_bytes": sum of the cache's bytes for decode(max_side)
    -> cache (round_up(h x w x 3, 64) each)}, from the image headers (PIL reads no pixels)."""
    images = files = entries = 0
    for top, _, names in os.walk(root):
        for name in names:
            if not name.lower().endswith(EXTENSIONS):
                continue
            path = os.path.join(top, name)
            with Image.open(path) as im:
                w, h = im.size
            if max(w, h) > max_side:
                f = max_side / max(w, h)
                w, h = max(1, math.floor(w * f + 0.5)), max(1, math.floor(h * f + 0.5))
            images += 1
            files += os.path.getsize(path)
            entries += round_up(w * h * 3, ALIGN)
    return {"images": images, "file_bytes": files, "entry_bytes": entries}


def workers_rchar(workers):
    """Bytes read (read/pread/recv: /proc/PID/io rchar) by the processes `workers` (the daemon's workers)."""
    total = 0
    for pid in workers:
        try:
            with open(f"/proc/{pid}/io") as f:
                total += next(int(line.split()[1]) for line in f if line.startswith("rchar:"))
        except OSError:
            continue
    return total
