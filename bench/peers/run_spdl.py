"""SPDL (spdl 0.8.0): its own FFmpeg image decoding in a thread pipeline (bench/peers, issue 42).

What it runs: spdl.dataloader.DataLoader(src, preprocessor=decode, batch_size=64, drop_last=False,
aggregator=collate, buffer_size=3, num_threads=W): src is the tree's (path, label) list, reshuffled at each
epoch's iteration; decode (W concurrent tasks on W threads) is spdl.io.demux_image + spdl.io.decode_packets with
an FFmpeg filter graph that does the recipe's geometry: train "format=rgb24,crop=w:h:x:y,scale=224:224:
flags=bilinear[,hflip]" with the crop drawn by torchvision's RandomResizedCrop algorithm (common.rrc_params) from
the demuxed width/height; eval "format=rgb24,scale=W:H:flags=bilinear,crop=224:224:x:y" with torchvision's
Resize(256)/CenterCrop(224) sizes (common.eval_geometry). collate merges the frames with spdl.io.convert_frames,
spdl.io.to_torch (uint8 NHWC, no copy), then permute to NCHW, float, normalize (torch on the pipeline's thread).

Configuration and its source: SPDL's examples/imagenet_classification.py (spdl.dataloader.DataLoader with an
aggregator that decodes with spdl.io and an FFmpeg filter_desc from spdl.io.get_video_filter_desc, then
normalizes in torch) and the DataLoader docstring's example (per-image preprocessor demux_image +
decode_packets(filter_desc), aggregator convert_frames): threads, not processes, as SPDL is designed (FFmpeg
releases the GIL). The example decodes to a fixed 256x256 and crops 224 (no aspect ratio kept, no random crop):
here the filter is per image so that the geometry is torchvision's. FFmpeg's swscale "bilinear" is a tent filter
widened when downscaling (antialiased like PIL's), but its rounding and the JPEG decoder's chroma upsampling
differ from PIL's, so pixels differ by a few levels. Needs FFmpeg's shared libraries: spdl_io 0.8.0 loads
FFmpeg 4-9 from the system (Debian 12: libavcodec59, libavformat59, libavfilter8, libavdevice59, libswscale6).

--dump-eval N: the same graph over the first N (path, label) in ImageFolder order, output_order="input".
"""
import random
import sys
import time

import common

NAME = "spdl"


class Source:
    """The tree's samples, reshuffled each time it is iterated (SPDL builds a new pipeline per epoch)."""

    def __init__(self, samples, shuffle, seed=0):
        self.samples, self.shuffle, self.rng = list(samples), shuffle, random.Random(seed)

    def __iter__(self):
        order = list(self.samples)
        if self.shuffle:
            self.rng.shuffle(order)
        return iter(order)


def main():
    t0 = time.monotonic()
    args = common.parse_args()
    try:
        import spdl
        import spdl.io
        import torch
        from spdl.dataloader import DataLoader
        from importlib.metadata import version
        spdl_version = version("spdl")
    except Exception as e:  # noqa: BLE001 - reported as the peer's error
        common.fail(NAME, f"{type(e).__name__}: {e}")
    rng = random.Random()
    mean = torch.tensor(common.MEAN).view(1, 3, 1, 1) * 255
    std = torch.tensor(common.STD).view(1, 3, 1, 1) * 255

    def decode(item):
        path, label = item
        packets = spdl.io.demux_image(path)
        w, h = packets.codec.width, packets.codec.height
        if args.recipe == "train":
            top, left, ch, cw = common.rrc_params(w, h, rng)
            desc = f"format=rgb24,crop={cw}:{ch}:{left}:{top},scale={common.SIZE}:{common.SIZE}:flags=bilinear"
            if rng.random() < 0.5:
                desc += ",hflip"
        else:
            rw, rh, left, top = common.eval_geometry(w, h)
            desc = f"format=rgb24,scale={rw}:{rh}:flags=bilinear,crop={common.SIZE}:{common.SIZE}:{left}:{top}"
        return spdl.io.decode_packets(packets, filter_desc=desc + ",format=pix_fmts=rgb24"), label

    def collate(items):
        frames = [f for f, _ in items]
        images = spdl.io.to_torch(spdl.io.convert_frames(frames)).permute(0, 3, 1, 2).float()
        images = images.sub_(mean).div_(std)
        return images, torch.tensor([lab for _, lab in items], dtype=torch.int64)

    samples = common.imagefolder_samples(args.root)
    src = Source(samples[:args.dump_n] if args.dump_eval else samples, shuffle=not args.dump_eval)
    loader = DataLoader(src, preprocessor=decode, batch_size=args.batch_size, drop_last=False, aggregator=collate,
                        buffer_size=3, num_threads=args.workers,
                        output_order="input" if args.dump_eval else "completion")
    if args.dump_eval:
        batches = list(loader)
        common.save_dump(NAME, args, torch.cat([b[0] for b in batches]), torch.cat([b[1] for b in batches]), samples)
        return
    common.Epochs(NAME, spdl_version, args, samples, t0).run(lambda e: iter(loader))


if __name__ == "__main__":
    sys.exit(main())
