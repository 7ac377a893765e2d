#!/usr/bin/python3
"""Writes torchvision's output for the first N samples of an ImageFolder, as the expected values of batchd tests.

    torchvision_reference.py ROOT N OUT_PREFIX [PIPELINE]

PIPELINE is val224 (Resize(256) + CenterCrop(224) + ToTensor + Normalize(ImageNet)) or index (just the
sample list). Writes OUT_PREFIX.f32 (float32 [N,3,224,224], C order), OUT_PREFIX.labels (one label per line)
and OUT_PREFIX.paths (one path per line, the dataset's order). Exit 77 if torchvision is not importable.
"""
import sys

try:
    import numpy as np
    import torchvision
    import torchvision.transforms as T
except ImportError as e:  # the caller skips its test with this message
    print(f"torchvision is not available ({e}); install python3-torchvision", file=sys.stderr)
    sys.exit(77)

root, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
pipeline = sys.argv[4] if len(sys.argv) > 4 else "val224"
ds = torchvision.datasets.ImageFolder(root)
with open(out + ".paths", "w") as f:
    f.writelines(p + "\n" for p, _ in ds.samples)
with open(out + ".labels", "w") as f:
    f.writelines(f"{label}\n" for _, label in ds.samples)
if pipeline == "val224":
    tf = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(),
                    T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])
    arr = np.stack([tf(ds.loader(ds.samples[i][0])).numpy() for i in range(n)]).astype(np.float32)
    arr.tofile(out + ".f32")
