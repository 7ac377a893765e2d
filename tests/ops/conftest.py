"""Real photographs for the op fidelity tests: the JPEGs of the test image folder (tests/data/make_testdata.sh builds
it from ../shared/data/make_imagefolder.py), decoded by PIL as torchvision's ImageFolder does (convert("RGB"))."""
import glob
import io
import os

import pytest
from PIL import Image

DATA = os.environ.get("BATCHD_TESTDATA", "")


@pytest.fixture(scope="session")
def photos():
    files = sorted(glob.glob(os.path.join(DATA, "imagefolder", "*", "*")))
    if not files:
        pytest.fail(f"no images under {DATA}/imagefolder: run tests/data/make_testdata.sh (BATCHD_TESTDATA)")
    out = []
    for f in files[:12]:
        with Image.open(f) as im:
            rgb = im.convert("RGB")
            rgb.filename = f
            out.append(rgb)
    return out


def png(img):
    """A PIL image as PNG bytes: what ops.run decodes, losslessly."""
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


@pytest.fixture(scope="module")
def encoded(photos):
    """The photos as PNG bytes (png())."""
    return [png(p) for p in photos]
