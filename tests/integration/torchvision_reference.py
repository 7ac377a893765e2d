#!/usr/bin/env python3
"""Writes torchvision's output for the first N samples of an ImageFolder, as the expected values of batchd tests.

    torchvision_reference.py ROOT N OUT_PREFIX [PIPELINE]
    torchvision_reference.py --webdataset 'DIR/shard-*.tar' N OUT_PREFIX [PIPELINE]

PIPELINE is val224 (Resize(256) + CenterCrop(224) + ToTensor + Normalize(ImageNet)) or index (just the
sample list). Writes OUT_PREFIX.f32 (float32 [N,3,224,224], C order), OUT_PREFIX.labels (one label per line)
and OUT_PREFIX.paths (one path per line, the dataset's order). Exit 1, saying so, if torchvision is not importable.

With --webdataset the samples are those of the tar shards matching the glob (sorted by name), read with Python's
tarfile and grouped as webdataset's group_by_keys does (key = name up to the first dot of its last component,
consecutive members of a key form a sample); the image is the .jpg member, decoded by PIL and converted to RGB
(as ImageFolder's loader), the label the .cls member as int(); OUT_PREFIX.paths holds "<shard>: sample '<key>'".
"""
import glob
import io
import re
import sys
import tarfile

try:
    import numpy as np
    import torchvision
    import torchvision.transforms as T
except ImportError as e:  # the caller fails its test with this message
    print(f"torchvision is not available in {sys.executable} ({e}): ./setup.sh --tests makes the project venv",
          file=sys.stderr)
    sys.exit(1)

from PIL import Image


class TarSamples:
    """(image bytes, label) of webdataset shards in order, with the ImageFolder attributes used below."""

    def __init__(self, pattern):
        self.samples, self.images = [], []
        for shard in sorted(glob.glob(pattern)):
            current = None
            with tarfile.open(shard) as tar:
                for member in tar:
                    m = re.match(r"^((?:.*/|)[^.]+)[.]([^/]*)$", member.name) if member.isreg() else None
                    if m is None:
                        continue
                    key, ext = m.group(1), m.group(2).lower()
                    if current is None or current["key"] != key:
                        current = {"key": key}
                        self.images.append(current)
                        self.samples.append(None)
                    current[ext] = tar.extractfile(member).read()
            for i in range(len(self.samples)):
                if self.samples[i] is None:
                    s = self.images[i]
                    self.samples[i] = (f"{shard}: sample '{s['key']}'", int(s["cls"]))
                    self.images[i] = s["jpg"]

    def loader(self, name):
        index = [p for p, _ in self.samples].index(name)
        return Image.open(io.BytesIO(self.images[index])).convert("RGB")


args = sys.argv[1:]
webdataset = args[0] == "--webdataset"
if webdataset:
    args = args[1:]
root, n, out = args[0], int(args[1]), args[2]
pipeline = args[3] if len(args) > 3 else "val224"
ds = TarSamples(root) if webdataset else torchvision.datasets.ImageFolder(root)
with open(out + ".paths", "w") as f:
    f.writelines(p + "\n" for p, _ in ds.samples)
with open(out + ".labels", "w") as f:
    f.writelines(f"{label}\n" for _, label in ds.samples)
if pipeline == "val224":
    tf = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(),
                    T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])
    arr = np.stack([tf(ds.loader(ds.samples[i][0])).numpy() for i in range(n)]).astype(np.float32)
    arr.tofile(out + ".f32")
