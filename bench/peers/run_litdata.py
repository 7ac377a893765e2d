"""LitData (litdata 0.2.76): litdata.optimize the tree once, then StreamingDataset + StreamingDataLoader
(bench/peers, issue 42).

What it runs: once, in a child process (optimize sets the process-wide multiprocessing start method to spawn
and DATA_OPTIMIZER_* variables, which made this process's loader workers ~7x slower), litdata.optimize(fn=read,
inputs=[(i, path, label)] in ImageFolder order, output_dir=DIR/litdata/<tree>, chunk_bytes="64MB",
num_workers=W, keep_data_ordered=True), read returning {"index": i, "image": the file's raw JPEG bytes,
"label": label}; its time is the conversion line, and a dataset already there for the same file list is reused.
Then StreamingDataset(that dir, shuffle=True, transform=Decode) (PIL decode + convert("RGB") +
common.transform(recipe), in the loader's workers) and StreamingDataLoader(dataset, batch_size=64,
num_workers=W, drop_last=False), whose workers (torch DataLoader processes, not persistent) start each epoch.

Configuration and its source: LitData's README, "Speed up model training" (optimize(fn, inputs, output_dir,
num_workers, chunk_bytes="64MB"), then StreamingDataset(dir, shuffle=True) and StreamingDataLoader(dataset,
batch_size=64)) and its "Optimize images as JPEG" advice to keep the existing .jpg bytes (Image(path=...) stores
them as-is; plain bytes here, so the decode is PIL's, as ImageFolder's); StreamingDataset's transform= runs per
item. litdata's shuffle is chunk-aware (FullShuffle): chunks are permuted, then items within windows of 256
(item_shuffle_window), not a uniform permutation of the tree. Its version check against PyPI is off by default
in 0.2.76 (LITDATA_DISABLE_VERSION_CHECK). first_batch_s includes the conversion when one ran.

--dump-eval N: the same dataset read with shuffle=False, num_workers=0, checking that the stored indices come
out as 0..N-1 (ImageFolder's order).
"""
import hashlib
import io
import os
import sys
import time

import common

NAME = "litdata"


def read(item):
    """optimize's fn: (index, path, label) -> the stored sample."""
    i, path, label = item
    with open(path, "rb") as f:
        return {"index": i, "image": f.read(), "label": label}


class Decode:
    """StreamingDataset's transform: raw JPEG bytes -> the recipe's tensor (PIL + torchvision, as ImageFolder)."""

    def __init__(self, recipe):
        self.tf = common.transform(recipe)

    def __call__(self, sample):
        img = common.pil_rgb(io.BytesIO(sample["image"]))
        return self.tf(img), sample["label"], sample["index"]


def _optimize(inputs, out, workers):
    import litdata
    litdata.optimize(fn=read, inputs=inputs, output_dir=out, chunk_bytes="64MB", num_workers=workers,
                     keep_data_ordered=True, mode="overwrite", verbose=False)


def convert(args, samples):
    """optimize in a child process: it sets the process-wide multiprocessing start method to spawn (force=True)
    and DATA_OPTIMIZER_* variables, which would slow this process's StreamingDataLoader workers ~7x."""
    import multiprocessing
    key = hashlib.sha1("\n".join(f"{p}\t{c}" for p, c in samples).encode()).hexdigest()[:12]
    out = os.path.join(args.work_dir, "litdata", f"{os.path.basename(os.path.abspath(args.root))}-{len(samples)}-{key}")
    if os.path.exists(os.path.join(out, "index.json")):
        return out
    start = time.monotonic()
    tmp = out + ".part"
    child = multiprocessing.get_context("spawn").Process(
        target=_optimize, args=([(i, p, c) for i, (p, c) in enumerate(samples)], tmp, args.workers))
    child.start()
    child.join()
    if child.exitcode != 0:
        raise RuntimeError(f"litdata.optimize exited with {child.exitcode}")
    os.replace(tmp, out)
    common.conversion_line(NAME, time.monotonic() - start, common.dir_bytes(out))
    return out


def main():
    t0 = time.monotonic()
    args = common.parse_args()
    try:
        import torch
        import litdata
        from litdata import StreamingDataLoader, StreamingDataset
    except Exception as e:  # noqa: BLE001 - reported as the peer's error
        common.fail(NAME, f"{type(e).__name__}: {e}")
    samples = common.imagefolder_samples(args.root)
    try:
        data_dir = convert(args, samples)
    except Exception as e:  # noqa: BLE001
        common.fail(NAME, f"conversion: {type(e).__name__}: {e}")
    ds = StreamingDataset(data_dir, transform=Decode(args.recipe), shuffle=not args.dump_eval)
    if len(ds) != len(samples):
        common.fail(NAME, f"the optimized dataset has {len(ds)} samples, the tree {len(samples)}", 1)
    if args.dump_eval:
        dl = StreamingDataLoader(ds, batch_size=args.batch_size, num_workers=0, shuffle=False)
        images, labels, index = [], [], []
        for im, lab, idx in dl:
            images.append(im), labels.append(lab), index.extend(int(i) for i in idx)
            if len(index) >= args.dump_n:
                break
        if index[:args.dump_n] != list(range(args.dump_n)):
            common.fail(NAME, f"unshuffled order {index[:args.dump_n]} is not ImageFolder's", 3, key="dump_error")
        n = args.dump_n
        common.save_dump(NAME, args, torch.cat(images)[:n], torch.cat(labels)[:n].to(torch.int64), samples)
        return
    dl = StreamingDataLoader(ds, batch_size=args.batch_size, num_workers=args.workers, shuffle=True,
                             drop_last=False)

    def batches(epoch):
        for images, labels, _ in dl:
            yield images, labels.to(torch.int64)

    common.Epochs(NAME, litdata.__version__, args, samples, t0).run(batches)


if __name__ == "__main__":
    sys.exit(main())
