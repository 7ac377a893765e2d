#!/usr/bin/env bash
# bench/first_batch.sh — time to the first batch (epoch 0) of two batchd builds, side by side on this machine.
#
#   bench/first_batch.sh OLD_BIN_DIR NEW_BIN_DIR [ROUNDS] [batchd-bench options...]
#
# Runs `BIN_DIR/batchd-bench --spawn --epochs 1 --json OPTIONS` with each build's batchd, alternating, ROUNDS times
# (default 9), and prints the median first_batch_ms and epoch-0 samples/s of each. Default options: Fashion-MNIST,
# pipeline fmnist, batch 256, 2 workers. Example (a build of the commit before a change in ../old):
#   bench/first_batch.sh ../old/build/bin build/bin 9
#   bench/first_batch.sh ../old/build/bin build/bin 5 --config photos.toml --dataset photos --pipeline train224 --batch-size 64
set -euo pipefail
[[ $# -ge 2 ]] || { sed -n '2,10p' "$0"; exit 2; }
old=$1 new=$2 rounds=${3:-9}
shift $(( $# >= 3 ? 3 : 2 ))
for i in $(seq 1 "$rounds"); do
  for side in old new; do
    dir=$old; [[ $side == new ]] && dir=$new
    BATCHD_BIN=$dir/batchd "$dir/batchd-bench" --spawn --epochs 1 --json "$@" 2>/dev/null | head -1 |
      python3 -c "import json,sys; r=json.loads(sys.stdin.read()); print('$side', r['first_batch_ms'], r['samples_per_s'])"
  done
done | python3 -c "
import sys, statistics
rows = {}
for line in sys.stdin:
    side, ms, rate = line.split()
    rows.setdefault(side, []).append((float(ms), float(rate)))
for side in ('old', 'new'):
    v = rows[side]
    print(f'{side}: median first_batch_ms {statistics.median(m for m, _ in v):.3f}, '
          f'median epoch-0 samples/s {statistics.median(r for _, r in v):,.0f} ({len(v)} runs)')
"
