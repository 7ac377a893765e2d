"""A trainer for test_own_dataset_faults.py to SIGKILL: `python own_trainer.py SOCKET CONTEXT HOW` reads a slow own
Dataset with 3 workers started by multiprocessing context CONTEXT (fork, forkserver). HOW = "read": the main thread
reads epoch after epoch; once its first batch is in it prints "<stream id> <worker pid>..."; HOW = "fed": the same
with seeding="dataloader" and persistent_workers=True (the sampler run in the trainer, the batches fed to the
workers). HOW = "idle": a thread
that then ends reads the first epoch (and so forks the workers), the stream is closed (the workers wait, attached to
nothing), it prints "0 <worker pid>..." and sleeps."""
import sys
import threading
import time

import batchd
from own_datasets import Squares

if __name__ == "__main__":
    socket, context, how = sys.argv[1:]
    loader = batchd.Loader(Squares(64, delay=0.01), batch_size=4, num_workers=3, socket=socket,
                           multiprocessing_context=context, seeding="dataloader" if how == "fed" else "per_sample",
                           persistent_workers=how == "fed")  # fed: the printed workers serve every pass
    if how == "idle":
        reader = threading.Thread(target=lambda: [None for _ in loader])
        reader.start()
        reader.join()
        loader._close_stream()
        print(0, *(process.pid for process, _ in loader._own._workers), flush=True)
        time.sleep(3600)
    batches = iter(loader)
    next(batches)
    stream = loader._fed_stream.source if how == "fed" else loader._stream  # fed: the sampler runs here
    print(stream.info["id"], *(process.pid for process, _ in loader._own._workers), flush=True)
    while True:
        for _ in batches:
            pass
        batches = iter(loader)
