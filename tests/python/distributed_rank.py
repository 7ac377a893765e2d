"""One rank of test_distributed.py, run as its own process: joins a gloo process group (file:// rendezvous, CPU only),
makes batchd.Loaders over fashion-mnist-test WITHOUT rank/world_size (and with only one of them) against its node's
daemon ($BATCHD_SOCKET), and writes what each read as JSON.

    distributed_rank.py RANK WORLD_SIZE INIT_FILE OUT_FILE
"""
import json
import sys

import torch.distributed as dist

import batchd
from batchd import _batchd

SEED, EPOCH = 11, 2


def read(loader):
    loader.set_epoch(EPOCH)
    return {"rank": loader.rank, "world_size": loader.world_size, "len": len(loader),
            "indices": [i for batch in loader for i in batch["index"].tolist()]}


def main(rank, world_size, init_file, out_file):
    kw = dict(pipeline="fmnist_u8", batch_size=100, seed=SEED)
    # Built before the process group exists (the usual order in scripts): its ranks are resolved when it iterates.
    early = batchd.Loader("fashion-mnist-test", as_dict=True, shuffle=True, **kw)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size)
    result = {"instance": _batchd.status()["instance_id"],  # which daemon this rank's $BATCHD_SOCKET reaches
              "shuffled": read(batchd.Loader("fashion-mnist-test", as_dict=True, shuffle=True, **kw)),
              "ordered": read(batchd.Loader("fashion-mnist-test", as_dict=True, shuffle=False, **kw)),
              "early": read(early)}
    for name, given in (("only_rank", {"rank": (rank + 1) % world_size}), ("only_world_size", {"world_size": 2})):
        try:
            loader = batchd.Loader("fashion-mnist-test", as_dict=True, shuffle=True, **given, **kw)
            result[name] = [loader.rank, loader.world_size]
        except ValueError as e:  # rank >= world_size
            result[name] = str(e)
    dist.barrier()
    dist.destroy_process_group()
    with open(out_file, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4])
