#!/usr/bin/env bash
# Installs the build into a scratch prefix, builds tests/package (find_package(batchd)) against it, and runs the
# resulting trainer against the installed daemon.   run.sh BUILD_DIR
set -euo pipefail
build=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/batchd-package-XXXXXX)
daemon_pid=""
cleanup() { [[ -n $daemon_pid ]] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$here" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" -j 2 >/dev/null
"$work/prefix/sbin/batchd" --socket "$work/batchd.sock" --workers 1 --log-level warn &
daemon_pid=$!
for _ in $(seq 100); do [[ -S "$work/batchd.sock" ]] && break; sleep 0.1; done
out=$("$work/build/trainer" "$work/batchd.sock")
echo "$out"
[[ "$out" == "image float32 [32,1,28,28]" ]]
out=$("$work/build/admin_probe" "$work/batchd.sock")
echo "$out"
[[ "$out" == "admin: 1 workers" ]]
if [[ -x "$work/build/cuda_probe" ]]; then
  "$work/build/cuda_probe" | grep -E "^cuda(: no CUDA device| devices: [0-9]+)"
fi
