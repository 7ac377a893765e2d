"""NVIDIA DALI (nvidia-dali-cuda130 2.4.0) as a CPU-only pipeline (bench/peers, issue 42).

What it runs: a DALI pipeline with device_id=None (CPU only), batch_size=64, num_threads=W:
fn.readers.file(file_root=ROOT, random_shuffle=True, pad_last_batch=True, name="Reader") ->
fn.decoders.image(device="cpu", output_type=types.RGB) -> train: fn.random_resized_crop(size=224,
random_area=[0.08, 1], random_aspect_ratio=[3/4, 4/3], interp_type=INTERP_LINEAR, antialias=True) ->
fn.crop_mirror_normalize(mirror=fn.random.coin_flip(0.5), mean/std = ImageNet's * 255, dtype=FLOAT,
output_layout="CHW"); eval: fn.resize(resize_shorter=256, INTERP_LINEAR, antialias=True) ->
fn.crop_mirror_normalize(crop=(224, 224), centred, same normalize). Batches come through
nvidia.dali.plugin.pytorch.DALIGenericIterator(reader_name="Reader", last_batch_policy=PARTIAL, auto_reset=True)
as CPU torch tensors; the labels (int32 [b,1]) are made int64 [b] (timed).

Configuration and its source: DALI's ResNet-50 PyTorch example (docs/examples/use_cases/pytorch/resnet50/main.py,
create_dali_pipeline with dali_cpu=True: readers.file with random_shuffle and pad_last_batch, decoders.image on
the CPU, random_resized_crop, crop_mirror_normalize; DALIClassificationIterator with reader_name and
LastBatchPolicy.PARTIAL) and the docs' CPU-only mode (device_id=None). pad_last_batch=True is needed for exact
epochs: without it the reader filled the last batch from the next epoch and epoch 1's labels did not match the
tree. random_shuffle draws from a buffer of initial_fill=1024 samples, so with more images an epoch is a local,
not a uniform, permutation; --shuffle epoch uses shuffle_after_epoch=True instead. readers.file numbers the
sorted class folders, as ImageFolder does. Semantics that differ from torchvision's (eval): the resized long
side is rounded where torchvision truncates, and the centre crop's offset (H-224)/2 rounds half up where
torchvision rounds half to even (1 px apart for many images); DALI's antialiased linear resize is its own.

--dump-eval N: fn.readers.file(files=, labels=) with the first N images in ImageFolder order, no shuffle.
"""
import sys
import time

import common

NAME = "dali"


def _shuffle(p):
    p.add_argument("--shuffle", choices=("buffer", "epoch"), default="buffer",
                   help="readers.file random_shuffle=True (default: a 1024-sample shuffle buffer) or "
                        "shuffle_after_epoch=True (the whole file list permuted after each epoch)")


def main():
    t0 = time.monotonic()
    args = common.parse_args(extra=_shuffle)
    try:
        import torch
        import nvidia.dali as dali
        import nvidia.dali.fn as fn
        import nvidia.dali.types as types
        from nvidia.dali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy
    except Exception as e:  # noqa: BLE001 - reported as the peer's error
        common.fail(NAME, f"{type(e).__name__}: {e}")
    samples = common.imagefolder_samples(args.root)
    mean = [m * 255 for m in common.MEAN]
    std = [s * 255 for s in common.STD]

    @dali.pipeline_def(batch_size=args.batch_size, num_threads=args.workers, device_id=None,
                       prefetch_queue_depth=2)
    def pipe():
        if args.dump_eval:
            top = samples[:args.dump_n]
            jpegs, labels = fn.readers.file(files=[p for p, _ in top], labels=[c for _, c in top],
                                            random_shuffle=False, pad_last_batch=True, name="Reader")
        else:
            jpegs, labels = fn.readers.file(file_root=args.root, random_shuffle=args.shuffle == "buffer",
                                            shuffle_after_epoch=args.shuffle == "epoch", pad_last_batch=True,
                                            name="Reader")
        images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
        if args.recipe == "train":
            images = fn.random_resized_crop(images, size=common.SIZE, random_area=list(common.SCALE),
                                            random_aspect_ratio=list(common.RATIO), interp_type=types.INTERP_LINEAR,
                                            antialias=True)
            images = fn.crop_mirror_normalize(images, mirror=fn.random.coin_flip(probability=0.5), mean=mean,
                                              std=std, dtype=types.FLOAT, output_layout="CHW")
        else:
            images = fn.resize(images, resize_shorter=common.RESIZE, interp_type=types.INTERP_LINEAR,
                               antialias=True)
            images = fn.crop_mirror_normalize(images, crop=(common.SIZE, common.SIZE), mean=mean, std=std,
                                              dtype=types.FLOAT, output_layout="CHW")
        return images, labels

    try:
        p = pipe()
        p.build()
        it = DALIGenericIterator([p], ["images", "labels"], reader_name="Reader",
                                 last_batch_policy=LastBatchPolicy.PARTIAL, auto_reset=True)
    except Exception as e:  # noqa: BLE001 - e.g. a DALI that cannot run without a GPU
        common.fail(NAME, f"{type(e).__name__}: {e}")
    n_reader = p.epoch_size("Reader")
    want = args.dump_n if args.dump_eval else len(samples)
    if n_reader != want:
        common.fail(NAME, f"readers.file found {n_reader} files, ImageFolder {want}", 1)

    def batches(epoch):
        for out in it:
            d = out[0]
            yield d["images"], d["labels"].view(-1).to(torch.int64)

    if args.dump_eval:
        got = list(batches(0))
        common.save_dump(NAME, args, torch.cat([b[0] for b in got]), torch.cat([b[1] for b in got]), samples)
        return
    common.Epochs(NAME, f"{dali.__version__} ({args.shuffle} shuffle)", args, samples, t0).run(batches)


if __name__ == "__main__":
    sys.exit(main())
