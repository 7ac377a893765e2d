"""FFCV (ffcv 1.0.2): a .beton file of the tree, then ffcv.loader.Loader on the CPU (bench/peers, issue 42).

What it runs: once, DatasetWriter(DIR/ffcv/<tree>.beton, {"image": RGBImageField(write_mode="jpg",
max_resolution=None, jpeg_quality=90), "label": IntField()}, num_workers=W).from_indexed_dataset(
ImageFolder(root)) (every photo at full size, as RGB, re-encoded as JPEG q90 by OpenCV; the time is the
conversion line; a .beton already there for the same file list is reused). Then Loader(beton, batch_size=64,
num_workers=W, order=OrderOption.RANDOM, os_cache=True, drop_last=False, batches_ahead=3) with the image pipeline
[RandomResizedCropRGBImageDecoder((224, 224), scale (0.08, 1), ratio (3/4, 4/3)), RandomHorizontalFlip(0.5)]
(train) or [CenterCropRGBImageDecoder((224, 224), ratio=224/256)] (eval), then NormalizeImage(mean*255,
std*255, float32), ToTensor(), ToTorchImage() (NCHW, channels_last memory); labels [IntDecoder(), ToTensor(),
Squeeze()] (int64).

Configuration and its source: FFCV's ImageNet example (libffcv/imagenet-example, train_imagenet.py and
write_imagenet.py, linked from docs/ffcv_examples/imagenet.rst): the same decoders, flip, ToTensor,
ToTorchImage, NormalizeImage; OrderOption.RANDOM, os_cache=True (in_memory), drop_last off for validation;
RGBImageField with jpeg_quality=90. The example runs ToDevice before ToTorchImage/NormalizeImage (GPU); on the
CPU NormalizeImage comes first (its numba CPU kernel wants uint8 NHWC numpy). The example writes at
max_resolution 256-512 with write_mode "smart"/"proportion"; here full size, all JPEG, so every peer decodes
full-size JPEGs. Semantics that differ from torchvision's: libffcv decodes with libjpeg-turbo's
TJFLAG_FASTDCT and resizes with OpenCV's INTER_AREA (not bilinear); eval is one square centre crop of
0.875*min(h, w) resized to 224 (the same region as Resize(256)+CenterCrop(224) up to rounding); and the stored
pixels were re-encoded at JPEG q90. Its threads are numba's (num_workers).
"""
import hashlib
import os
import sys
import time

import common

NAME = "ffcv"


def convert(ffcv, args, samples):
    """Write the .beton once (reused when the same file list was written before); prints the conversion line."""
    from ffcv.fields import IntField, RGBImageField
    from ffcv.writer import DatasetWriter
    from torchvision.datasets import ImageFolder
    key = hashlib.sha1("\n".join(f"{p}\t{c}" for p, c in samples).encode()).hexdigest()[:12]
    out_dir = os.path.join(args.work_dir, "ffcv")
    path = os.path.join(out_dir, f"{os.path.basename(os.path.abspath(args.root))}-{len(samples)}-{key}.beton")
    if os.path.exists(path):
        return path
    os.makedirs(out_dir, exist_ok=True)
    tmp = path + ".part"
    start = time.monotonic()
    writer = DatasetWriter(tmp, {"image": RGBImageField(write_mode="jpg", max_resolution=None, jpeg_quality=90),
                                 "label": IntField()}, num_workers=args.workers)
    writer.from_indexed_dataset(ImageFolder(args.root))
    os.replace(tmp, path)
    common.conversion_line(NAME, time.monotonic() - start, os.path.getsize(path))
    return path


def main():
    t0 = time.monotonic()
    args = common.parse_args()
    try:
        import numpy as np
        import torch
        import ffcv
        from importlib.metadata import version
        from ffcv.fields.basics import IntDecoder
        from ffcv.fields.rgb_image import CenterCropRGBImageDecoder, RandomResizedCropRGBImageDecoder
        from ffcv.loader import Loader, OrderOption
        from ffcv.transforms import NormalizeImage, RandomHorizontalFlip, Squeeze, ToTensor, ToTorchImage
        ffcv_version = version("ffcv")
    except Exception as e:  # noqa: BLE001 - reported as the peer's error
        common.fail(NAME, f"{type(e).__name__}: {e}")
    samples = common.imagefolder_samples(args.root)
    try:
        beton = convert(ffcv, args, samples)
    except Exception as e:  # noqa: BLE001
        common.fail(NAME, f"conversion: {type(e).__name__}: {e}")
    size = (common.SIZE, common.SIZE)
    if args.recipe == "train":
        image = [RandomResizedCropRGBImageDecoder(size, scale=common.SCALE, ratio=common.RATIO),
                 RandomHorizontalFlip(0.5)]
    else:
        image = [CenterCropRGBImageDecoder(size, ratio=common.SIZE / common.RESIZE)]
    image += [NormalizeImage(np.array(common.MEAN) * 255, np.array(common.STD) * 255, np.float32), ToTensor(),
              ToTorchImage()]
    pipelines = {"image": image, "label": [IntDecoder(), ToTensor(), Squeeze()]}
    if args.dump_eval:
        order, indices = OrderOption.SEQUENTIAL, list(range(args.dump_n))
    else:
        order, indices = OrderOption.RANDOM, None
    try:
        loader = Loader(beton, batch_size=args.batch_size, num_workers=args.workers, order=order, indices=indices,
                        os_cache=True, drop_last=False, batches_ahead=3, pipelines=pipelines)
    except Exception as e:  # noqa: BLE001
        common.fail(NAME, f"{type(e).__name__}: {e}")

    def batches(epoch):
        for images, labels in loader:
            # Squeeze leaves a 0-d tensor for a batch of 1; int64 is what IntDecoder yields.
            yield images, labels.view(-1).to(torch.int64)

    if args.dump_eval:
        got = [(i.clone(), l.clone()) for i, l in batches(0)]  # the Loader reuses its output buffers
        common.save_dump(NAME, args, torch.cat([b[0] for b in got]), torch.cat([b[1] for b in got]), samples)
        return
    common.Epochs(NAME, ffcv_version, args, samples, t0).run(batches)


if __name__ == "__main__":
    sys.exit(main())
