"""The daemon's include layers (issue 41, item 1; docs/design.md, "Layers"): a file may include only files of its
own layer or of lower ones, and two folders of one layer may not include each other (a cycle).

    python3 tests/layers/check_layers.py

Layers, lowest first (a folder of daemon/; daemon/'s top holds only main.cc, the top layer):

    base  <  data, remote  <  cache  <  transforms  <  workers  <  streams  <  server  <  config  <  main

Only quoted includes that name a file of daemon/ count (proto/'s and the libraries' are below everything). Every
include that breaks the rule is printed, and the check fails if there is one.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
DAEMON = ROOT / "daemon"
ORDER = [("base",), ("data", "remote"), ("cache",), ("transforms",), ("workers",), ("streams",), ("server",),
         ("config",), ("main",)]
LAYER = {folder: level for level, folders in enumerate(ORDER) for folder in folders}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder_of(path):
    """The layer folder of a daemon file (a path relative to daemon/)."""
    parts = path.parts
    if len(parts) == 1:
        return "main" if parts[0] == "main.cc" else "top"  # "top" is in no layer: the check says so
    return parts[0]


def resolve(source, name):
    """The daemon file `name` names when included from `source` (relative to daemon/), or None."""
    for candidate in (DAEMON / name, DAEMON / source.parent / name):
        if candidate.is_file():
            return candidate.resolve().relative_to(DAEMON)
    return None


def breaking():
    """Every include that points up, or across between two folders of one layer that include each other."""
    edges = []
    for path in sorted(DAEMON.rglob("*")):
        if path.suffix not in (".h", ".cc") or not path.is_file():
            continue
        source = path.relative_to(DAEMON)
        for name in INCLUDE.findall(path.read_text(errors="replace")):
            target = resolve(source, name)
            if target is not None:
                edges.append((source, target))
    across = {(folder_of(s), folder_of(t)) for s, t in edges}
    out = []
    for s, t in edges:
        a, b = folder_of(s), folder_of(t)
        if a not in LAYER or b not in LAYER:
            raise SystemExit(f"check_layers: {s} or {t} is in a folder no layer names: add it to ORDER and docs")
        if LAYER[b] > LAYER[a] or (a != b and LAYER[a] == LAYER[b] and (b, a) in across):
            out.append(f"{s} -> {t}")
    return sorted(set(out))


def main():
    found = breaking()
    for f in found:
        print(f"check_layers: {f} includes a higher layer (or closes a cycle in its layer): move the shared piece "
              f"down, or the including file up (docs/design.md, \"Layers\")")
    print(f"check_layers: {len(found)} includes break the layers")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
