#!/usr/bin/env bash
# Configures this source tree with -DBATCHD_WITH_CUDA=OFF in a scratch directory, builds the client library and
# batchd-bench, and checks that nothing links the CUDA runtime and that batchd::cuda does not exist.
# It reads one epoch through the daemon of the main build (the daemon never uses CUDA).
#   without_cuda.sh SOURCE_DIR DAEMON_BINARY
set -euo pipefail
src=$(realpath "$1")
export BATCHD_BIN=$(realpath "$2")
work=$(mktemp -d /tmp/batchd-nocuda-XXXXXX)
trap 'rm -rf "$work"' EXIT
cmake -S "$src" -B "$work" -DBATCHD_WITH_CUDA=OFF -DBATCHD_BUILD_TESTS=OFF >"$work/configure.log"
grep -q "batchd: CUDA client path: OFF" "$work/configure.log" || { cat "$work/configure.log"; exit 1; }
cmake --build "$work" -j 2 --target batchd_client batchd-bench >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
if cmake --build "$work" --target batchd_cuda >/dev/null 2>&1; then
  echo "batchd_cuda was built although BATCHD_WITH_CUDA=OFF" >&2
  exit 1
fi
if ldd "$work/bin/batchd-bench" | grep -q cudart; then
  echo "batchd-bench links the CUDA runtime in a build without CUDA" >&2
  exit 1
fi
"$work/bin/batchd-bench" --spawn --epochs 1 --dataset fashion-mnist --workers 1 | grep "epoch 0: 60000 samples"
echo "client built and ran without CUDA"
