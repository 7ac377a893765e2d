"""torchdata.nodes (torchdata 0.11.0) over the same PIL decode + torchvision recipe (bench/peers, issue 42).

What it runs: SamplerWrapper(RandomSampler(ImageFolder)) -> Batcher(64, drop_last=False) of indices ->
ParallelMapper(MapAndCollate: ImageFolder[i] for each index (PIL decode, convert("RGB"),
common.transform(recipe)), then default_collate; num_workers=W, method=M, in_order=True) ->
Prefetcher(prefetch_factor=2*W) -> Loader. One Loader for all epochs: each epoch resets the graph, so
RandomSampler draws a new permutation.

Configuration and its source: torchdata's docs, "Migrating to torchdata.nodes from torch.utils.data"
(docs/source/migrate_to_nodes_from_utils.rst, its NodesDataLoader: exactly this graph, method="process",
"if you're not using Free-Threaded Python ... multi-threading might result in GIL contention"). M is
method="process" (the default here), measured faster than threads on this host for both recipes (2 cores,
200 images, W=2; bench/peers/README.md has the numbers): the recipe is Python (PIL + torchvision), and threads
serialize on the GIL between its kernels. --method thread runs the other. Unlike
DataLoader(persistent_workers=True), ParallelMapper starts its worker processes anew at each reset, i.e. every
epoch (torchdata 0.11 has no persistent workers); they use the default start method (fork on Linux).
torch.set_num_threads(1) in the main process, as for the DataLoader baseline.

--dump-eval N: the same graph over SequentialSampler(Subset(ImageFolder, range(N))), in_order=True.
"""
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
    p.add_argument("--method", choices=("process", "thread"), default="process",
                   help="ParallelMapper's method (default process)")


def main():
    t0 = time.monotonic()
    args = common.parse_args(extra=_method)
    try:
        import torch
        import torchdata
        import torchdata.nodes as tn
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
    node = tn.ParallelMapper(node, map_fn=MapAndCollate(ds, default_collate), num_workers=args.workers,
                             method=args.method, in_order=True)
    node = tn.Prefetcher(node, prefetch_factor=2 * args.workers)
    loader = tn.Loader(node)
    if args.dump_eval:
        batches = list(loader)
        common.save_dump(NAME, args, torch.cat([b[0] for b in batches]), torch.cat([b[1] for b in batches]), samples)
        return
    version = f"{torchdata.__version__} ({args.method})"
    common.Epochs(NAME, version, args, samples, t0).run(lambda e: iter(loader))


if __name__ == "__main__":
    sys.exit(main())
