#!/usr/bin/env python3
# The heavy user: a client spec near limits.max_sample_work (resize 2048 x 2048 + gaussian_blur 61: ~3.2e9), read for
# `secs` seconds from the photo folder; prints its batches and whether the spec of issue 43 (six blurs of 101 at 4096)
# is refused.
import sys, time, batchd
sock, secs = sys.argv[1], float(sys.argv[2])
ops = [{"op": "resize", "size": [2048, 2048]}, {"op": "gaussian_blur", "kernel_size": 61}, {"op": "center_crop", "size": 64}, {"op": "to_tensor"}]
bad = [{"op": "resize", "size": [4096, 4096]}] + [{"op": "gaussian_blur", "kernel_size": 101}] * 6 + [{"op": "to_tensor"}]
try:
    l = batchd.Loader("photos", batch_size=4, transform=bad, socket=sock)
    next(iter(l))
    print("heavy: six blurs of 101 at 4096 ACCEPTED")
except Exception as e:
    print("heavy: six blurs refused:", str(e)[:160])
loader = batchd.Loader("photos", batch_size=4, transform=ops, socket=sock, endless=True, shuffle=True)
n, t0 = 0, time.monotonic()
for _ in loader:
    n += 1
    if time.monotonic() - t0 > secs: break
loader.close()
print(f"heavy: {n} batches in {time.monotonic()-t0:.1f} s", flush=True)
