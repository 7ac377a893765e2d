#!/usr/bin/env python3
"""Issue 5's GPU measurements in one run, on a machine with an NVIDIA GPU (docs/benchmarks.md has the results).

    bench/compare_cuda.py [--batch-size 256] [--epochs 2] [--compute-us 300] [--workers 2] [--json]

1. H2D bandwidth, 1-64 MiB: a registered shared segment vs cudaHostAlloc vs pageable (batchd-cuda-bench bandwidth).
2. A GPU loop over Fashion-MNIST (pipeline fmnist) with one fixed synthetic kernel per batch (reads the batch, then
   spins --compute-us): batchd's DeviceStream (batchd-cuda-bench loop --spawn, registered and --no-pin), and, where
   this Python's torch has CUDA, torch.utils.data.DataLoader(pin_memory=True) + .cuda(non_blocking=True) with the
   same kernel time (torch.cuda._sleep). Reports samples/s and GPU idle time between consecutive kernels.
Exit status 2 when there is no GPU (batchd-cuda-bench says why).
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "build", "bin", "batchd-cuda-bench")


def run_json(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        sys.exit(p.returncode)
    return [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]


def torch_loop(args, cycles):
    """DataLoader(pin_memory=True) + non_blocking copies + `cycles` GPU clocks per batch; None without CUDA."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    sys.path.insert(0, os.path.join(ROOT, "..", "shared", "bench"))
    import torch_peer  # the peer benchmark's dataset and pipeline definitions

    ds = torch_peer.fashion_mnist("/tmp/batchd-peer-cache", torch_peer.pipeline("fmnist"))
    loader = torch.utils.data.DataLoader(ds, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                                         pin_memory=True, persistent_workers=True)
    s = torch.cuda.current_stream()
    skip = 5  # throughput and idle time skip the first batches (worker start-up), as batchd-cuda-bench does
    begin, end, samples = [], [], 0
    t0 = time.perf_counter()
    for _ in range(args.epochs):
        for image, _label in loader:
            if len(begin) == skip:
                t0 = time.perf_counter()
            x = image.cuda(non_blocking=True)
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record(s)
            x.view(-1)[::1024].sum()  # reads the batch, as batchd's kernel does
            torch.cuda._sleep(cycles)
            e1.record(s)
            begin.append(e0)
            end.append(e1)
            if len(begin) > skip:
                samples += image.shape[0]
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    skip = min(skip, len(begin))
    idle = sum(end[i - 1].elapsed_time(begin[i]) for i in range(max(skip, 1), len(begin)))
    busy = sum(begin[i].elapsed_time(end[i]) for i in range(skip, len(begin)))
    n = max(1, len(begin) - skip)
    return {"system": "torch.DataLoader(pin_memory=True)", "batches": len(begin), "samples_per_s": samples / wall,
            "gpu_idle_us_per_batch": idle * 1e3 / n, "gpu_busy_us_per_batch": busy * 1e3 / n,
            "idle_fraction": idle / max(1e-9, idle + busy)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--compute-us", type=float, default=300)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not os.path.exists(BENCH):
        sys.exit(f"{BENCH} is missing: build with the CUDA toolkit installed (./setup.sh, BATCHD_WITH_CUDA=AUTO)")
    bandwidth = run_json([BENCH, "bandwidth", "--json"])
    loop = [BENCH, "loop", "--spawn", "--json", "--batch-size", str(args.batch_size), "--epochs", str(args.epochs),
            "--compute-us", str(args.compute_us), "--workers", str(args.workers)]
    loops = run_json(loop) + run_json(loop + ["--no-pin"])
    peer = torch_loop(args, loops[0]["kernel_cycles"])  # the same GPU clocks per batch as batchd's kernel
    if peer:
        loops.append(peer)
    if args.json:
        for r in bandwidth + loops:
            print(json.dumps(r))
        return
    ro = "read-only" if bandwidth[0]["read_only_registration"] else "read-write (no read-only registration here)"
    print(f"device: {bandwidth[0]['device']}; segment registered {ro}\n")
    print("| MiB | registered segment GB/s | cudaHostAlloc GB/s | pageable GB/s | registered / cudaHostAlloc |")
    print("|---:|---:|---:|---:|---:|")
    for r in bandwidth:
        print(f"| {r['mb']} | {r['registered_gbps']:.2f} | {r['host_alloc_gbps']:.2f} | {r['pageable_gbps']:.2f} "
              f"| {100 * r['ratio']:.1f}% |")
    print(f"\nGPU loop, fmnist batch {args.batch_size}, {args.compute_us:g} µs kernel per batch, {args.epochs} epochs\n")
    print("| system | samples/s | GPU idle µs/batch | idle % | host waits |")
    print("|---|---:|---:|---:|---:|")
    for r in loops:
        name = r["system"] + (f" ({r['pinning']})" if "pinning" in r else "")
        print(f"| {name} | {r['samples_per_s']:,.0f} | {r['gpu_idle_us_per_batch']:.1f} | "
              f"{100 * r['idle_fraction']:.1f}% | {r.get('host_waits', '-')} |")
    if not peer:
        print("\n(torch.DataLoader row missing: this Python's torch has no CUDA)")


if __name__ == "__main__":
    main()
