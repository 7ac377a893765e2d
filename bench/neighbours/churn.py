#!/usr/bin/env python3
# A user who owns a dataset's files touches every one of them before each epoch of a cached stream (issue 43, 7):
# every entry is dropped and filled again. Runs `secs` seconds; prints its epochs. With a 4th argument, reads that
# pipeline of the config instead of its own client spec (a client spec's churn is charged to its uid; a config's
# is not).
import os, sys, time, batchd
sock, folder, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
spec = [{"op": "decode", "max_side": 256}, {"op": "cache"}, {"op": "random_resized_crop", "size": 128},
        {"op": "to_tensor"}]
how = dict(pipeline=sys.argv[4]) if len(sys.argv) > 4 else dict(transform=spec)
loader = batchd.Loader("mine", batch_size=16, shuffle=True, socket=sock, **how)
t0, epochs = time.monotonic(), 0
while time.monotonic() - t0 < secs:
    for d, _, files in os.walk(folder):
        for f in files:
            os.utime(os.path.join(d, f), ns=(epochs * 10**9 + 10**9, epochs * 10**9 + 10**9))
    for _ in loader:
        pass
    epochs += 1
loader.close()
print(f"churn: {epochs} epochs in {time.monotonic() - t0:.1f} s, every file touched before each", flush=True)
