#!/usr/bin/env bash
# Generates the image test data under OUT (a build directory), once:
#   OUT/imagefolder      60 JPEGs cut from real photographs (../shared/data/make_imagefolder.py 60 7), plus one PNG
#   OUT/imagefolder-bad  the same tree plus bad files: zero bytes, a truncated JPEG, a text file named .jpg,
#                        a dangling symlink named .JPG, a truncated PNG
#   OUT/imagefolder-empty-class  a root whose only class directory holds no image
# Needs Debian's python3-pil and python3-skimage (setup.sh installs them) and ../shared beside the checkout.
set -euo pipefail
out=$1
src=$(cd "$(dirname "$0")/../.." && pwd)
maker="$src/../shared/data/make_imagefolder.py"
py=/usr/bin/python3
[[ -x $py ]] || py=python3
if [[ -f "$out/.done" ]]; then exit 0; fi
if [[ ! -f "$maker" ]]; then
  echo "make_testdata.sh: $maker is missing (the shared/ directory must sit beside the checkout)" >&2
  exit 1
fi
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
touch "$out/.done"
