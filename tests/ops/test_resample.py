"""batchd's Pillow-compatible bilinear resize equals PIL's on real photographs."""
import numpy as np
from PIL import Image

import batchd_ops_testing as ops


def test_bilinear_resize_equals_pil(photos):
    for img in photos[:4]:
        a = np.asarray(img)
        for w, h in [(224, 224), (97, 301), (a.shape[1] * 2, a.shape[0] + 3)]:
            ours = ops.resize_bilinear(a, w, h)
            theirs = np.asarray(img.resize((w, h), Image.BILINEAR))
            assert np.array_equal(ours, theirs), (img.filename, w, h)
