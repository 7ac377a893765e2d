"""A trainer for test_own_dataset_faults.py to SIGKILL: `python own_trainer.py SOCKET` reads a slow own Dataset
(3 workers) epoch after epoch; once its first batch is in it prints "<stream id> <worker pid>..." and goes on."""
import sys

import batchd
from own_datasets import Squares

if __name__ == "__main__":
    loader = batchd.Loader(Squares(64, delay=0.01), batch_size=4, num_workers=3, socket=sys.argv[1])
    batches = iter(loader)
    next(batches)
    print(loader._stream.info["id"], *(process.pid for process, _ in loader._own._workers), flush=True)
    while True:
        for _ in batches:
            pass
        batches = iter(loader)
