#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_shards (tests/fuzz/corpus_shards/): tiny webdataset shards, each cut after its
end-of-archive blocks (tarfile pads to 10 KiB records; the fuzzer need not carry the padding).

    make_shards_corpus.py OUT_DIR

Seeds: USTAR samples (jpg + cls); GNU format with member names over 100 bytes (././@LongLink); PAX (tarfile's
default) with a long and a non-ASCII name; a sample without label, one without image, a bad label, a directory
and a symlink member, metadata members (__key__), a duplicate extension, a png/jpeg mix, and a truncated shard.
"""
import io
import os
import sys
import tarfile

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def shard(name, members, fmt=tarfile.USTAR_FORMAT, cut=None):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt, encoding="utf-8") as t:
        for m in members:
            kind, path, data = m if len(m) == 3 else ("file",) + m
            info = tarfile.TarInfo(path)
            info.mtime = 0
            if kind == "dir":
                info.type = tarfile.DIRTYPE
                t.addfile(info)
            elif kind == "link":
                info.type = tarfile.SYMTYPE
                info.linkname = data
                t.addfile(info)
            else:
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
        end = t.offset
    data = buf.getvalue()[: end + 1024]
    if cut is not None:
        data = data[:cut]
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)


jpg = b"\xff\xd8\xff\xe0" + bytes(range(60)) + b"\xff\xd9"
long_dir = "d" * 70 + "/" + "e" * 40
shard("ustar", [("s0.jpg", jpg), ("s0.cls", b"3"), ("s1.jpg", jpg[:20]), ("s1.cls", b" 12\n")])
shard("gnu_long_names", [(f"{long_dir}/s0.jpg", jpg), (f"{long_dir}/s0.cls", b"1")], tarfile.GNU_FORMAT)
shard("pax_long_non_ascii", [(f"{long_dir}/ключ_é.jpg", jpg), (f"{long_dir}/ключ_é.cls", b"7")], tarfile.PAX_FORMAT)
shard("missing_fields", [("a.jpg", jpg), ("b.cls", b"1"), ("c.json", b"{}"), ("d.png", jpg), ("d.cls", b"x")])
shard("other_members", [("dir", "d", None), ("link", "l.jpg", "s0.jpg"), ("__key__", b"meta"),
                        ("x/s0.JPEG", jpg), ("x/s0.cls", b"-2"), ("noext", b"?")])
shard("duplicate_extension", [("a.jpg", jpg), ("a.cls", b"1"), ("a.JPG", jpg)])
shard("truncated", [("a.jpg", jpg * 20), ("a.cls", b"1")], cut=900)
