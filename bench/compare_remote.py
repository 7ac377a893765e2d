#!/usr/bin/env python3
"""Remote shards (issue 28): epoch 1 over a throttled HTTP server, with and without prefetch, against the same shards
on local disk; bytes fetched per host with several trainers; the DataLoader peer after a plain download.

    bench/compare_remote.py [--images 2000] [--per-shard 100] [--pipeline train224] [--batch-size 64] [--workers 2]
                            [--bandwidth 50e6] [--latency 0.02] [--repeats 3] [--trainers 2] [--shuffle] [--json]

The shards are ../shared/data/make_shards.py's (build/bench-data/webdataset-N-PER, as bench/compare_webdataset.py).
tests/remote/fault_server.py serves them on 127.0.0.1 at --bandwidth bytes/s per connection and --latency s per
request (a loopback server is too fast to show anything). For each repeat, alternating:
  local      a daemon reading the shards from disk (index cached);
  prefetch   a daemon reading http://127.0.0.1:PORT/.../shard-{...}.tar with its index cached but no shard on disk
             (the shard files of a warm-up run deleted: epoch 1 fetches every shard), remote.prefetch_shards = 8;
  no-prefetch the same with remote.prefetch_shards = 0 (tasks fetch their own shards when they are handed out);
each timed by build/bin/batchd-bench --socket (epoch 1 = the first epoch, whole; then a second epoch from disk).
Then `--trainers` batchd-bench processes at once on one daemon with a cold shard cache: the bytes the server sent
(its request log) and the daemon's fetched_bytes, against the dataset's bytes. Then the peer: every shard downloaded
with curl from the same server (timed), and ../shared/bench/torch_peer.py --dataset webdataset on the copies.
Reports median seconds of epoch 1 and the ratios local/remote (goal: prefetch >= 0.8x local; no-prefetch measurably
slower). Exits 1 if an epoch does not deliver every sample once.
"""
import argparse
import glob
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_fmnist import ROOT, die, machine_info, machine_line  # noqa: E402
from compare_webdataset import ensure_shards  # noqa: E402

from project_python import DEFAULT_PYTHON  # noqa: E402

BIN = os.path.join(ROOT, "build", "bin")
FAULT_SERVER = os.path.join(ROOT, "tests", "remote", "fault_server.py")
PEER = os.path.join(ROOT, "..", "shared", "bench", "torch_peer.py")


class Server:
    def __init__(self, root, bandwidth, latency, log):
        self.proc = subprocess.Popen([sys.executable, FAULT_SERVER, "--root", root, "--port", "0", "--bandwidth",
                                      str(bandwidth), "--latency", str(latency), "--log", log],
                                     stdout=subprocess.PIPE, text=True)
        self.port = int(self.proc.stdout.readline())
        self.log = log

    def sent_bytes(self, sizes):
        """Bytes of the GET responses logged so far (whole shards: the daemon never asks for ranges)."""
        total = 0
        with open(self.log) as f:
            for line in f:
                r = json.loads(line)
                if r["method"] == "GET":
                    total += sizes.get(os.path.basename(r["target"].split("?")[0]), 0)
        return total

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


class Daemon:
    def __init__(self, tmp, config, workers):
        self.sock = os.path.join(tmp, "batchd.sock")
        self.proc = subprocess.Popen([os.path.join(BIN, "batchd"), "--socket", self.sock, "--config", config,
                                      "--workers", str(workers), "--log-level", "warn"])
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:  # the dataset is indexed in the background
            st = self.datasets()
            if st and st[0].get("state") == "available":
                return
            if st and st[0].get("state") == "failed":
                die(f"dataset failed: {st[0].get('detail')}")
            time.sleep(0.1)
        die("the dataset was not available within 600 s")

    def datasets(self):
        p = subprocess.run([os.path.join(BIN, "batchctl"), "--socket", self.sock, "datasets", "--json"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        if p.returncode != 0:
            return None
        return json.loads(p.stdout).get("dataset_entries", [])

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)


def config_text(cache_dir, shards, prefetch):
    return (f'[daemon]\ncache_dir = "{cache_dir}"\n[remote]\nprefetch_shards = {prefetch}\nfetch_concurrency = 4\n'
            f'[datasets.bench]\nformat = "webdataset"\nshards = "{shards}"\n')


def bench(sock, args, seed=0):
    cmd = [os.path.join(BIN, "batchd-bench"), "--socket", sock, "--dataset", "bench", "--pipeline", args.pipeline,
           "--batch-size", str(args.batch_size), "--epochs", "2", "--seed", str(seed), "--json"]
    if not args.shuffle:
        cmd.append("--no-shuffle")
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)


def epochs_of(proc, images):
    out, _ = proc.communicate()
    if proc.returncode != 0:
        die(f"batchd-bench failed ({proc.returncode})")
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{") and '"epoch"' in line]
    for r in rows:
        if r["samples"] != images or r["unique_indices"] != images:
            die(f"epoch {r['epoch']}: samples={r['samples']} unique={r['unique_indices']}, expected {images}")
    return rows


def run_mode(mode, args, shards_dir, url, tmp):
    cache = os.path.join(tmp, f"cache-{mode}")
    pattern = os.path.join(shards_dir, "shard-*.tar") if mode == "local" else url
    cfg = os.path.join(tmp, f"{mode}.toml")
    with open(cfg, "w") as f:
        f.write(config_text(cache, pattern, 0 if mode == "no-prefetch" else 8))
    if not os.path.isdir(cache):  # warm-up: the index (and, for remote, the shards, deleted below)
        Daemon(tmp, cfg, args.workers).stop()
    for f in glob.glob(os.path.join(cache, "shards", "*.tar")):
        os.unlink(f)
    d = Daemon(tmp, cfg, args.workers)
    try:
        rows = epochs_of(bench(d.sock, args), args.images)
        remote = (d.datasets() or [{}])[0].get("remote", {})
    finally:
        d.stop()
    return {"epoch1_s": rows[0]["seconds"], "epoch2_s": rows[1]["seconds"],
            "prefetched": int(remote.get("prefetched", 0)), "waited": int(remote.get("waited", 0)),
            "fetched": int(remote.get("fetched", 0))}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=2000)
    ap.add_argument("--per-shard", type=int, default=100)
    ap.add_argument("--pipeline", default="train224")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--bandwidth", type=float, default=50e6, help="bytes/s per connection")
    ap.add_argument("--latency", type=float, default=0.02, help="seconds per request")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--trainers", type=int, default=2)
    ap.add_argument("--shuffle", action="store_true", help="shuffled epochs (default: dataset order, shard by shard)")
    ap.add_argument("--python", default=DEFAULT_PYTHON)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    data = os.path.join(ROOT, "build", "bench-data")
    shards_dir = os.path.join(data, f"webdataset-{args.images}-{args.per_shard}")
    ensure_shards(shards_dir, args.images, args.per_shard, args.python)
    files = sorted(glob.glob(os.path.join(shards_dir, "shard-*.tar")))
    sizes = {os.path.basename(f): os.path.getsize(f) for f in files}
    dataset_bytes = sum(sizes.values())
    tmp = tempfile.mkdtemp(prefix="batchd-remote-bench-")
    server = Server(data, args.bandwidth, args.latency, os.path.join(tmp, "requests.jsonl"))
    try:
        url = (f"http://127.0.0.1:{server.port}/{os.path.basename(shards_dir)}/"
               f"shard-{{000000..{len(files) - 1:06d}}}.tar")
        runs = {"local": [], "prefetch": [], "no-prefetch": []}
        for _ in range(args.repeats):
            for mode in runs:
                runs[mode].append(run_mode(mode, args, shards_dir, url, tmp))
        med = {m: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for m, rs in runs.items()}

        # Several trainers, one daemon, a cold shard cache: what crosses the network.
        cfg = os.path.join(tmp, "trainers.toml")
        cache = os.path.join(tmp, "cache-trainers")
        with open(cfg, "w") as f:
            f.write(config_text(cache, url, 8))
        Daemon(tmp, cfg, args.workers).stop()
        for f in glob.glob(os.path.join(cache, "shards", "*.tar")):
            os.unlink(f)
        before = server.sent_bytes(sizes)
        d = Daemon(tmp, cfg, args.workers)
        try:
            procs = [bench(d.sock, args, seed=s) for s in range(args.trainers)]
            for p in procs:
                epochs_of(p, args.images)
            fetched_bytes = int((d.datasets() or [{}])[0].get("remote", {}).get("fetched_bytes", 0))
        finally:
            d.stop()
        sent = server.sent_bytes(sizes) - before

        # The peer: a plain download, then DataLoader on the copies.
        copies = os.path.join(tmp, "download")
        os.makedirs(copies)
        started = time.monotonic()
        for name in sizes:
            subprocess.run(["curl", "-sf", "-o", os.path.join(copies, name),
                            f"http://127.0.0.1:{server.port}/{os.path.basename(shards_dir)}/{name}"], check=True)
        download_s = time.monotonic() - started
        peer = subprocess.run([args.python, PEER, "--dataset", "webdataset", "--shards",
                               os.path.join(copies, "*.tar"), "--pipeline", args.pipeline, "--batch-size",
                               str(args.batch_size), "--workers", str(args.workers), "--epochs", "2"],
                              stdout=subprocess.PIPE, text=True, check=True)
        peer_rows = [json.loads(line) for line in peer.stdout.splitlines() if line.startswith("{")]
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    report = {"benchmark": "compare_remote", "images": args.images, "shards": len(files),
              "dataset_bytes": dataset_bytes, "pipeline": args.pipeline, "batch_size": args.batch_size,
              "workers": args.workers, "bandwidth": args.bandwidth, "latency": args.latency,
              "shuffle": args.shuffle, "repeats": args.repeats, "median": med,
              "ratio_prefetch_vs_local": round(med["local"]["epoch1_s"] / med["prefetch"]["epoch1_s"], 2),
              "ratio_no_prefetch_vs_local": round(med["local"]["epoch1_s"] / med["no-prefetch"]["epoch1_s"], 2),
              "trainers": args.trainers, "bytes_sent_for_trainers": sent, "daemon_fetched_bytes": fetched_bytes,
              "peer_download_s": round(download_s, 2), "peer_epoch1_s": peer_rows[0]["seconds"],
              "machine": machine_info(peer_rows[0].get("torch", "unknown"))}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{args.images} images in {len(files)} shards ({dataset_bytes / 1e6:.1f} MB), {args.pipeline}, batch "
          f"{args.batch_size}, {args.workers} workers, {'shuffled' if args.shuffle else 'dataset order'}; server "
          f"{args.bandwidth / 1e6:.0f} MB/s per connection, {args.latency * 1e3:.0f} ms per request; median of "
          f"{args.repeats}")
    for mode, m in med.items():
        print(f"  {mode:12s} epoch 1 {m['epoch1_s']:6.2f} s   epoch 2 {m['epoch2_s']:6.2f} s   "
              f"prefetched {m['prefetched']:.0f}  waited {m['waited']:.0f}")
    print(f"  epoch 1, remote with prefetch / local: {report['ratio_prefetch_vs_local']}x; without prefetch: "
          f"{report['ratio_no_prefetch_vs_local']}x")
    print(f"  {args.trainers} trainers, one daemon: the server sent {sent / 1e6:.1f} MB, the daemon fetched "
          f"{fetched_bytes / 1e6:.1f} MB, the dataset is {dataset_bytes / 1e6:.1f} MB")
    print(f"  DataLoader peer: download {download_s:.2f} s (curl, one at a time) + epoch 1 "
          f"{peer_rows[0]['seconds']:.2f} s")
    print(machine_line(report["machine"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
