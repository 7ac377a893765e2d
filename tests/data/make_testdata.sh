#!/usr/bin/env bash
# Generates the image test data under OUT (a build directory), once:
#   OUT/imagefolder      60 JPEGs cut from real photographs (../shared/data/make_imagefolder.py 60 7), plus one PNG
#   OUT/imagefolder-bad  the same tree plus bad files: zero bytes, a truncated JPEG, a text file named .jpg,
#                        a dangling symlink named .JPG, a truncated PNG
#   OUT/imagefolder-empty-class  a root whose only class directory holds no image
#   OUT/shards           the same 60 photographs as WebDataset shards (../shared/data/make_shards.py 60 7 16):
#                        shard-000000.tar .. shard-000003.tar, 16 samples each (the last 12), <key>.jpg + <key>.cls
#   OUT/shards-bad       truncated.tar (shard-000000.tar cut inside a member's data); partial.tar: samples p0..p3 of
#                        which p1 has no .cls and p3 a .cls that is not an integer
# Needs Pillow and scikit-image in $BATCHD_PYTHON (default: the project venv's .venv/bin/python, which
# setup.sh --tests makes) and ../shared beside the checkout.
set -euo pipefail
out=$1
src=$(cd "$(dirname "$0")/../.." && pwd)
maker="$src/../shared/data/make_imagefolder.py"
shard_maker="$src/../shared/data/make_shards.py"
py=${BATCHD_PYTHON:-$src/.venv/bin/python}
if ! "$py" -c 'import PIL, skimage' 2>/dev/null; then
  echo "make_testdata.sh: $py cannot import PIL and skimage: run ./setup.sh --tests (the project venv), or set" \
       "BATCHD_PYTHON to a Python that has Pillow and scikit-image" >&2
  exit 1
fi
# The photographs' bytes depend on the Pillow that makes them (its resize and its libjpeg-turbo): a tree made by
# another Pillow is made again (the golden digests of preset_golden_test.cc were recorded on this one's).
pillow=$("$py" -c 'import PIL; print(PIL.__version__)')
if [[ -f "$out/.done" && "$(cat "$out/.done")" != "pillow $pillow" ]]; then rm -f "$out/.done" "$out/.shards-done"; fi
if [[ -f "$out/.done" && -f "$out/.shards-done" ]]; then exit 0; fi
for m in "$maker" "$shard_maker"; do
  if [[ ! -f "$m" ]]; then
    echo "make_testdata.sh: $m is missing (the shared/ directory must sit beside the checkout)" >&2
    exit 1
  fi
done
if [[ ! -f "$out/.done" ]]; then
rm -rf "$out"
mkdir -p "$out"
"$py" "$maker" "$out/imagefolder" 60 7 >/dev/null
# One PNG (palette-free RGB) in the good tree, made from a JPEG of it.
"$py" - "$out/imagefolder" <<'PY'
import sys, os
from PIL import Image
root = sys.argv[1]
cls = sorted(os.listdir(root))[0]
first = sorted(os.listdir(os.path.join(root, cls)))[0]
Image.open(os.path.join(root, cls, first)).convert("RGB").save(os.path.join(root, cls, "zz_png_sample.png"))
PY
cp -r "$out/imagefolder" "$out/imagefolder-bad"
bad="$out/imagefolder-bad/$(ls "$out/imagefolder-bad" | head -n 1)"
good=$(ls "$bad"/*.jpg | head -n 1)
: > "$bad/bad_empty.jpg"
head -c "$(( $(stat -c %s "$good") / 2 ))" "$good" > "$bad/bad_truncated.jpg"
echo "this is not an image" > "$bad/bad_text.jpg"
ln -s /nonexistent/batchd-test.jpg "$bad/bad_dangling.JPG"
head -c 300 "$bad/zz_png_sample.png" > "$bad/bad_truncated.png"
mkdir -p "$out/imagefolder-empty-class/cats"
touch "$out/imagefolder-empty-class/cats/notes.txt"
echo "pillow $pillow" > "$out/.done"
fi

# WebDataset shards (their own marker, so a tree made before them gains them).
rm -rf "$out/shards" "$out/shards-bad"
"$py" "$shard_maker" "$out/shards" 60 7 16 >/dev/null
mkdir -p "$out/shards-bad"
"$py" - "$out/shards" "$out/shards-bad" <<'PY'
import io, os, sys, tarfile
src, dst = sys.argv[1], sys.argv[2]
first = os.path.join(src, "shard-000000.tar")
with tarfile.open(first) as t:
    members = t.getmembers()
    jpgs = [t.extractfile(m).read() for m in members if m.name.endswith(".jpg")]
# Cut inside the data of the 5th member: everything before it is well formed.
data = open(first, "rb").read()
open(os.path.join(dst, "truncated.tar"), "wb").write(data[:members[4].offset_data + 100])
with tarfile.open(os.path.join(dst, "partial.tar"), "w", format=tarfile.USTAR_FORMAT) as t:
    def add(name, payload):
        info = tarfile.TarInfo(name); info.size = len(payload); info.mtime = 0
        t.addfile(info, io.BytesIO(payload))
    for k, cls in enumerate([b"3", None, b"5", b"three"]):
        add(f"p{k}.jpg", jpgs[k])
        if cls is not None:
            add(f"p{k}.cls", cls)
PY
touch "$out/.shards-done"
