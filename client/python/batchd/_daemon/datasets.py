"""The datasets a private daemon declares (private.py): their names and their TOML tables.

A dataset's name is derived from what it is, so the same files always get the same name in one daemon and two
Loaders over one folder share its declaration: "<last path component>-<8 hex digits of a SHA-1 of the format and
its keys>", e.g. "train-1f3a9c02" for an ImageFolder at /data/imagenet/train; characters outside A-Z a-z 0-9 . _ -
become "_". Paths are given resolved (realpath) by the caller.
"""
import hashlib
import json
import os
import re

FORMATS = {"imagefolder": ("root",), "idx": ("images", "labels"), "tokens": ("path", "seq_len", "dtype")}


def dataset_name(format, keys):
    """The name of dataset `format` with `keys` (FORMATS[format]'s keys: path strings, seq_len an int)."""
    if format not in FORMATS or set(keys) != set(FORMATS[format]):
        raise ValueError(f"a private daemon declares {sorted(FORMATS)} datasets with keys {FORMATS}, not {format} "
                         f"with {sorted(keys)}")
    first = str(keys[FORMATS[format][0]])
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(first.rstrip("/")) or format)[:40]
    digest = hashlib.sha1(json.dumps([format, keys], sort_keys=True).encode()).hexdigest()[:8]
    return f"{stem}-{digest}"


def dataset_table(name, format, keys):
    """The lines of [datasets."<name>"] in TOML (strings quoted as JSON, which TOML reads alike)."""
    lines = [f"[datasets.{json.dumps(name)}]", f"format = {json.dumps(format)}"]
    for key in FORMATS[format]:
        value = keys[key]
        lines.append(f"{key} = {value}" if isinstance(value, int) else f"{key} = {json.dumps(value)}")
    return lines + [""]
