#!/usr/bin/env python3
# Another user's stream: reads fmnist batches for `secs` seconds, prints its longest gap between batches.
import sys, time, batchd
sock, secs = sys.argv[1], float(sys.argv[2])
loader = batchd.Loader("fmnist", batch_size=64, pipeline="fmnist", shuffle=True, socket=sock, endless=True)
longest, n, t0 = 0.0, 0, time.monotonic()
last = t0
for _ in loader:
    now = time.monotonic()
    if n >= 3: longest = max(longest, now - last)
    last, n = now, n + 1
    if now - t0 > secs: break
loader.close()
print(f"victim: {n} batches in {time.monotonic()-t0:.1f} s, longest gap {longest*1000:.0f} ms", flush=True)
