#!/usr/bin/env bash
# bench/task_times.sh — how long workers take per sample as the task watchdog sees it (from assignment to answer),
# to choose daemon.task_timeout_min_s and daemon.per_sample_timeout_ms (docs/reliability.md has the figures).
#
#   bench/task_times.sh BIN_DIR [WORKDIR] [ROUNDS]
#
# Makes ImageFolder trees of real photographs in WORKDIR (default /tmp/batchd-task-times): ImageNet-like ones
# (../shared/data/make_imagefolder.py 200 1), and large ones: scikit-image's photographs upscaled to 12 MP
# (4032x3024) and 24 MP (6000x4000), JPEG quality 95. Reads them with train224, train224 --exact-decode and
# val224, and Fashion-MNIST with fmnist, at batch sizes 1 and 64 (2 workers, depth 2), through
# BIN_DIR/batchd-bench --spawn with the daemon's trace log, ROUNDS times (default 1), while two busy loops load
# both cores. Prints, per data set, pipeline and batch size, the tasks seen and the max / p99 / median of the
# watchdog's "ms per sample" (its trace line "worker N answered a task of S samples in T ms").
set -euo pipefail
[[ $# -ge 1 ]] || { sed -n '2,14p' "$0"; exit 2; }
bin=$(cd "$1" && pwd) work=${2:-/tmp/batchd-task-times} rounds=${3:-1}
src=$(cd "$(dirname "$0")/.." && pwd)
py=${BATCHD_PYTHON:-$src/.venv/bin/python}  # the project venv (./setup.sh --tests): Pillow, scikit-image
mkdir -p "$work"
[[ -d $work/imagenet ]] || "$py" "$src/../shared/data/make_imagefolder.py" "$work/imagenet" 200 1 >/dev/null
[[ -d $work/large ]] || "$py" - "$work/large" <<'PY'
import os, sys
from PIL import Image
import skimage.data as sd
root = sys.argv[1]
for cls, size in (("12mp", (4032, 3024)), ("24mp", (6000, 4000))):
    os.makedirs(os.path.join(root, cls))
    for i, name in enumerate(["retina", "hubble_deep_field", "astronaut", "coffee", "rocket", "chelsea"] * 3):
        im = Image.fromarray(getattr(sd, name)()).convert("RGB").resize(size, Image.LANCZOS)
        im.save(os.path.join(root, cls, f"{i:03d}.jpg"), quality=95)
PY
cat > "$work/datasets.toml" <<TOML
[datasets.imagenet]
format = "imagefolder"
root = "$work/imagenet"
[datasets.large]
format = "imagefolder"
root = "$work/large"
[datasets.fashion-mnist-test]
format = "idx"
images = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"
labels = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz"
TOML
# Load: one busy loop per core, beside the daemon's two workers.
loads=()
for _ in 1 2; do (while :; do :; done) & loads+=($!); done
trap 'kill "${loads[@]}" 2>/dev/null || true' EXIT
run() {  # label, batchd-bench options...
  local label=$1; shift
  for _ in $(seq 1 "$rounds"); do
    BATCHD_BIN=$bin/batchd "$bin/batchd-bench" --spawn --workers 2 --depth 2 --epochs 1 --log-level trace \
      --config "$work/datasets.toml" "$@" 2>&1 | grep -o 'answered a task of [0-9]* samples in [0-9.]* ms' |
      awk -v l="$label" '{print l, $0}'
  done
}
{
  for b in 1 64; do
    for p in train224 val224; do
      run "imagenet/$p/b$b" --dataset imagenet --pipeline $p --batch-size $b
      run "large/$p/b$b" --dataset large --pipeline $p --batch-size $b
    done
    run "imagenet/train224-exact/b$b" --dataset imagenet --pipeline train224 --exact-decode --batch-size $b
    run "large/train224-exact/b$b" --dataset large --pipeline train224 --exact-decode --batch-size $b
    run "fmnist/fmnist/b$b" --dataset fashion-mnist-test --pipeline fmnist --batch-size $b
  done
} | "$py" -c '
import sys, statistics
rows = {}
for line in sys.stdin:
    f = line.split()  # label answered a task of S samples in T ms
    rows.setdefault(f[0], []).append(float(f[8]) / int(f[5]))
print("%-34s %6s %14s %9s %9s" % ("data/pipeline/batch", "tasks", "max ms/sample", "p99", "median"))
for k, v in rows.items():
    v.sort()
    print(f"{k:34} {len(v):6} {v[-1]:14.2f} {v[int(0.99 * (len(v) - 1))]:9.2f} {statistics.median(v):9.2f}")
'
