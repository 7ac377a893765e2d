"""torchdata.nodes (torchdata 0.11.0) over the same PIL decode + torchvision recipe (bench/peers, issue 42).

What it runs: SamplerWrapper(RandomSampler(ImageFolder)) -> Batcher(64, drop_last=False) of indices ->
ParallelMapper(MapAndCollate: ImageFolder[i] for each index (PIL decode, convert("RGB"),
common.transform(recipe)), then default_collate; num_workers=W, method="thread", in_order=True) ->
Prefetcher(prefetch_factor=2*W) -> Loader. One Loader for all epochs: each epoch resets the graph, so
RandomSampler draws a new permutation. torch.set_num_threads(1) in the process, as for the DataLoader baseline.

Configuration and its source: torchdata's docs, "Migrating to torchdata.nodes from torch.utils.data"
(docs/source/migrate_to_nodes_from_utils.rst, its NodesDataLoader: exactly this graph, with method="process"
and the note "Set this to 'thread' for multi-threading"). Threads, not processes, because threads measured faster
here (2 cores, W=2, train: ~180 vs ~110 img/s on 200 images, ~280 vs ~210 img/s on 2,000; eval alike; PIL's
decode and resize and torch's kernels release the GIL) and because processes were unsafe: torchdata 0.11 has no persistent
workers, ParallelMapper starts its processes anew at every epoch, and with the default start method (fork)
one run hung at the first epoch: a worker forked while the sampler's thread was running torch ops in the parent,
and waited forever on a torch static-initialisation guard in its first torch.log. --method process runs
processes with the forkserver start method (torch and torchvision preloaded), which is safe but pays a process
start and a pickled dataset at each epoch.

--dump-eval N: the same graph over SequentialSampler(Subset(ImageFolder, range(N))), in_order=True.
"""
import gc
import sys
import time

import common

NAME = "torchdata_nodes"


class MapAndCollate:
    """The migration guide's map function: a batch of indices -> the collated batch, in one worker."""

    def __init__(self, dataset, collate):
        self.dataset, self.collate = dataset, collate

    def __call__(self, indices):
        return self.collate([self.dataset[i] for i in indices])


def _method(p):
    p.add_argument("--method", choices=("thread", "process"), default="thread",
                   help="ParallelMapper's method (default thread; process uses the forkserver start method)")


def main():
    t0 = time.monotonic()
    args = common.parse_args(extra=_method)
    try:
        import torch
        import torchdata.nodes as tn
        from importlib.metadata import version
        from torch.utils.data import RandomSampler, SequentialSampler, Subset, default_collate
        from torchvision.datasets import ImageFolder
    except Exception as e:  # noqa: BLE001 - reported as the peer's error
        common.fail(NAME, f"{type(e).__name__}: {e}")
    torch.set_num_threads(1)
    ds = ImageFolder(args.root, transform=common.transform(args.recipe))
    samples = common.imagefolder_samples(args.root)
    if args.dump_eval:
        ds = Subset(ds, range(args.dump_n))
    sampler = SequentialSampler(ds) if args.dump_eval else RandomSampler(ds)
    node = tn.SamplerWrapper(sampler)
    node = tn.Batcher(node, batch_size=args.batch_size, drop_last=False)
    ctx = None
    if args.method == "process":
        import multiprocessing
        ctx = "forkserver"
        multiprocessing.get_context(ctx).set_forkserver_preload(["torch", "torchvision", "common"])
    node = tn.ParallelMapper(node, map_fn=MapAndCollate(ds, default_collate), num_workers=args.workers,
                             method=args.method, multiprocessing_context=ctx, in_order=True)
    node = tn.Prefetcher(node, prefetch_factor=2 * args.workers)
    loader = tn.Loader(node)
    if args.dump_eval:
        batches = list(loader)
        common.save_dump(NAME, args, torch.cat([b[0] for b in batches]), torch.cat([b[1] for b in batches]), samples)
        return
    common.Epochs(NAME, f"{version('torchdata')} ({args.method})", args, samples, t0).run(lambda e: iter(loader))
    # Stop the graph's threads now (their __del__ joins them), not during interpreter teardown, where one run
    # in ~20 aborted with "terminate called without an active exception" after its last line.
    del loader, node
    gc.collect()


if __name__ == "__main__":
    sys.exit(main())
