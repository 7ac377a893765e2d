#!/bin/bash
# bench/neighbours/run.sh — issue 43's measurements (docs/benchmarks.md, "A user's stream beside hostile
# neighbours"): on a root daemon (2 workers, socket 0666) another user's (nobody's) fmnist stream reads while root
# runs (a) an own Dataset of len 2^28, (b) two streams of a heavy spec near limits.max_sample_work, and (c) churns the
# sample cache: it touches every file of a dataset it owns before each epoch of a cached client spec, and nobody's
# cached stream starts 20 s into that.
set -u
# Needs root (the victim runs as nobody), ./setup.sh --tests (the venv, build/testdata). Prints the victim's longest
# gap between batches in each phase and the daemon's peak RSS (VmHWM).
HERE=$(cd "$(dirname "$0")" && pwd); ROOT=$(cd "$HERE/../.." && pwd)
B=${BUILD:-$ROOT/build}; PY=${PYTHON:-$ROOT/.venv/bin/python}
T=$(mktemp -d /tmp/batchd-meas-XXXX)  # the daemon's socket, config and log; removed on exit, whatever happened
chmod 755 $T  # nobody (the victim) reaches the socket
D=""
trap '[ -n "$D" ] && kill $D 2>/dev/null; rm -rf "$T"' EXIT
cache_report() {  # the cache's totals, and each group's hit rate since the daemon started
  $B/bin/batchctl --socket $T/s.sock cache | head -3
  $B/bin/batchctl --socket $T/s.sock cache --json | $PY -c "
import json, sys
c = json.load(sys.stdin)['cache']
for g in c.get('groups', []):
    h, f, u = (int(g.get(k, 0)) for k in ('hits', 'fills', 'uncached'))
    print(f\"{g['dataset']}: hits {h}, fills {f}, uncached {u}, hit rate {h / max(1, h + f + u):.2f}\")"
}
cat > $T/batchd.toml <<TOML
[daemon]
socket_mode = "0666"
[datasets.fmnist]
format = "idx"
images = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"
labels = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz"
[datasets.photos]
format = "imagefolder"
root = "$B/testdata/imagefolder"
[datasets.mine]
format = "imagefolder"
root = "$T/mine"
[cache]
max_bytes = 41943040
[pipelines.cached]
ops = [{op = "decode", max_side = 256}, {op = "cache"}, {op = "center_crop", size = 128}, {op = "to_tensor"}]
[pipelines.cached_b]
ops = [{op = "decode", max_side = 224}, {op = "cache"}, {op = "center_crop", size = 128}, {op = "to_tensor"}]
[pipelines.churned]
ops = [{op = "decode", max_side = 256}, {op = "cache"}, {op = "random_resized_crop", size = 128}, {op = "to_tensor"}]
TOML
cp -r $B/testdata/imagefolder $T/mine
$B/bin/batchd --socket $T/s.sock --workers 2 --config $T/batchd.toml --cache-dir '' --log-level warn > $T/log 2>&1 &
D=$!; sleep 2
export PYTHONPATH=$B/python:$ROOT/tests/python
echo "== (a) own Dataset len 2^28, batch 16, 20 batches"
runuser -u nobody -- env PYTHONPATH=$B/python $PY $HERE/victim.py $T/s.sock 12 &
V=$!; sleep 2
$PY -c "
import batchd, time
from own_datasets import Huge
t=time.time(); l=batchd.Loader(Huge(2**28), batch_size=16, shuffle=True, num_workers=1, socket='$T/s.sock', timeout=60)
n=sum(1 for _, b in zip(range(20), l)); l.close(); print(f'own: {n} batches, {time.time()-t:.1f} s')"
wait $V
grep VmHWM /proc/$D/status
echo "== (b) heavy spec, two streams, 25 s"
runuser -u nobody -- env PYTHONPATH=$B/python $PY $HERE/victim.py $T/s.sock 25 &
V=$!; sleep 2
$PY $HERE/heavy.py $T/s.sock 20 &
H1=$!
$PY $HERE/heavy.py $T/s.sock 20 &
H2=$!
wait $V $H1 $H2
grep VmHWM /proc/$D/status
echo "== (c) cache churn: root touches its 61 files before each epoch of a cached client spec, 40 s; nobody's"
echo "   cached stream (the config's pipeline, another dataset) from 20 s on; cache.max_bytes 40 MiB"
$PY $HERE/churn.py $T/s.sock $T/mine 40 &
C=$!; sleep 20
runuser -u nobody -- env PYTHONPATH=$B/python $PY $HERE/cached_victim.py $T/s.sock 18
wait $C
cache_report
grep VmHWM /proc/$D/status

echo "== (d) the same with the config's pipeline (no per-uid charge: every touched entry is refilled), 40 s; nobody's"
echo "   stream from 20 s on is of another cached pipeline (its entries must be filled then)"
$PY $HERE/churn.py $T/s.sock $T/mine 40 churned &
C=$!; sleep 20
runuser -u nobody -- env PYTHONPATH=$B/python $PY $HERE/cached_victim.py $T/s.sock 18 cached_b
wait $C
cache_report
grep VmHWM /proc/$D/status
for w in $(pgrep -P $D); do echo "worker $w $(grep VmHWM /proc/$w/status)"; done
kill $D; wait $D; echo "daemon exit $?"; D=
