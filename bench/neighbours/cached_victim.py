#!/usr/bin/env python3
# Another user's cached stream (the config's pipeline "cached", or the 3rd argument's, over "photos"): reads for `secs` seconds, prints its
# longest gap between batches (run.sh reads its hit rate from batchctl cache).
import sys, time, batchd
sock, secs = sys.argv[1], float(sys.argv[2])
pipeline = sys.argv[3] if len(sys.argv) > 3 else "cached"
loader = batchd.Loader("photos", batch_size=8, pipeline=pipeline, shuffle=True, socket=sock)
longest, n, epochs, t0 = 0.0, 0, 0, time.monotonic()
last = t0
while time.monotonic() - t0 < secs:
    for _ in loader:
        now = time.monotonic()
        if n >= 3: longest = max(longest, now - last)
        last, n = now, n + 1
    epochs += 1
loader.close()
print(f"cached victim: {epochs} epochs, {n} batches in {time.monotonic() - t0:.1f} s, longest gap "
      f"{longest * 1000:.0f} ms", flush=True)
