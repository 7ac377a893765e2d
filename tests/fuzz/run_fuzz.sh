#!/usr/bin/env bash
# Runs the libFuzzer target for a bounded time on a scratch copy of the seed corpus (tests/fuzz/corpus stays
# small and unchanged). Exit status: the fuzzer's (non-zero on a crash, leak or timeout; the input is saved).
#   tests/fuzz/run_fuzz.sh BINARY SECONDS
set -euo pipefail
binary=$(realpath -m "$1")
seconds=${2:-30}
here=$(cd "$(dirname "$0")" && pwd)
if [[ ! -x "$binary" ]]; then
  echo "run_fuzz.sh: $binary is missing; ./setup.sh builds it (needs clang-14 and libclang-rt-14-dev)" >&2
  exit 1
fi
work=$(mktemp -d /tmp/batchd-fuzz-XXXXXX)
trap 'rm -rf "$work"' EXIT
cp "$here"/corpus/* "$work"/
cd "$work"
status=0
"$binary" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=4096 -timeout=10 -print_final_stats=1 \
  -artifact_prefix="$here/../../build-fuzz/" "$work" >"$work/fuzz.log" 2>&1 || status=$?
if [[ $status -ne 0 ]]; then
  cat "$work/fuzz.log"
  echo "run_fuzz.sh: the fuzzer found a problem (exit $status); the input is saved under build-fuzz/" >&2
else
  grep -E '^(Done|stat::number_of_executed_units)' "$work/fuzz.log" || true
fi
exit "$status"
