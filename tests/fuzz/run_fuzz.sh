#!/usr/bin/env bash
# Runs a libFuzzer target for a bounded time on a scratch copy of a seed corpus (the seeds stay small and
# unchanged). Exit status: the fuzzer's (non-zero on a crash, leak, timeout or broken invariant; the input is saved
# under build-fuzz/).
#   tests/fuzz/run_fuzz.sh BINARY SECONDS [SEED_DIR [LIBFUZZER_FLAG...]]
# SEED_DIR defaults to tests/fuzz/corpus (fuzz_control's seeds).
set -euo pipefail
binary=$(realpath -m "$1")
seconds=${2:-30}
here=$(cd "$(dirname "$0")" && pwd)
seeds=${3:-$here/corpus}
shift $(($# < 3 ? $# : 3))
if [[ ! -x "$binary" ]]; then
  echo "run_fuzz.sh: $binary is missing; ./setup.sh builds it (needs clang-14 and libclang-rt-14-dev)" >&2
  exit 1
fi
work=$(mktemp -d /tmp/batchd-fuzz-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/corpus"
cp "$seeds"/* "$work/corpus/"
cd "$work"
status=0
"$binary" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=4096 -timeout=10 -print_final_stats=1 \
  -artifact_prefix="$here/../../build-fuzz/" "$@" "$work/corpus" >"$work/fuzz.log" 2>&1 || status=$?
if [[ $status -ne 0 ]]; then
  cat "$work/fuzz.log"
  echo "run_fuzz.sh: the fuzzer found a problem (exit $status); the input is saved under build-fuzz/" >&2
else
  grep -E '^(Done|stat::number_of_executed_units)' "$work/fuzz.log" || true
fi
exit "$status"
