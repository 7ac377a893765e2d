"""batchd's geometry ops (daemon/transforms/kernels/geometry, resample.h) against torchvision 0.29's functional ops and
transform classes on PIL images, and their random draws against torchvision's get_params.

Every image comparison is exact (max abs difference 0 per uint8 channel): crops, pads, flips, and the three
resampling filters (PIL's arithmetic reproduced bit for bit). The distribution tests compare many draws of
batchd's sample rng with torchvision's own get_params (two-sample Kolmogorov-Smirnov, fixed seeds), check the
ranges' ends are reached and, once, that the test would reject a wrong distribution."""
import math

import numpy as np
import pytest
import torch
from PIL import Image
from scipy import stats
from torchvision import transforms as T
from torchvision.transforms import InterpolationMode
from torchvision.transforms import functional as F

import batchd_ops_testing as ops
from geometry_cases import RANDOM_CROPS, case_id

FILTERS = {"nearest": Image.NEAREST, "bilinear": Image.BILINEAR, "bicubic": Image.BICUBIC}
MODES = {"nearest": InterpolationMode.NEAREST, "bilinear": InterpolationMode.BILINEAR,
         "bicubic": InterpolationMode.BICUBIC}


def assert_same(ours, theirs, what):
    theirs = np.asarray(theirs)
    assert ours.shape == theirs.shape, (what, ours.shape, theirs.shape)
    diff = int(np.abs(ours.astype(np.int16) - theirs.astype(np.int16)).max()) if ours.size else 0
    assert diff == 0, f"{what}: max abs difference {diff}"


# --- resampling: PIL's Image.resize with each filter, whole image and boxes ---

@pytest.mark.parametrize("name", list(FILTERS))
def test_pil_resize_equals_pil(photos, name):
    for img in photos[:6]:
        a = np.asarray(img)
        w, h = img.size
        for size in [(224, 224), (97, 301), (w * 2, h + 3), (w - 1, h), (w, h), (1, 1), (3, h * 3)]:
            assert_same(ops.pil_resize(a, *size, name), img.resize(size, FILTERS[name]), (img.filename, name, size))
        # Fractional boxes, one of them not representable in binary (Pillow takes the box as C floats).
        for box in [(10.5, 3.75, w - 20.25, h - 0.5), (0.1, 1 / 3, w - 0.7, h - 2 / 3), (5, 7, 5 + 224, 7 + 224)]:
            for size in [(224, 160), (w, h), (31, 500)]:
                assert_same(ops.pil_resize(a, *size, name, list(box)), img.resize(size, FILTERS[name], box=box),
                            (img.filename, name, size, box))


# --- torchvision's F.resize / Resize: output size rule, max_size, every filter ---

def test_resized_output_size_follows_torchvision():
    from torchvision.transforms.functional import _compute_resized_output_size as theirs
    for w in [1, 2, 7, 224, 333, 500, 501, 1024, 4000]:
        for h in [1, 3, 224, 375, 498, 999]:
            for size in [[1], [7], [224], [256], [333], [224, 300]]:
                for max_size in [None, 300, 1000]:
                    if max_size is not None and (len(size) == 2 or max_size <= size[0]):
                        continue
                    assert ops.resized_output_size(w, h, size, max_size or 0) == theirs((h, w), size, max_size), \
                        (w, h, size, max_size)


@pytest.mark.parametrize("name", list(MODES))
def test_resize_equals_torchvision(photos, name):
    for img in photos[:6]:
        a = np.asarray(img)
        for size, max_size in [([256], None), ([232], None), ([224, 300], None), ([200], 240), ([min(img.size)], None)]:
            theirs = F.resize(img, size, MODES[name], max_size=max_size)
            assert_same(ops.resize(a, size, name, max_size or 0), theirs, (img.filename, name, size, max_size))
            # The transform class, as a trainer writes it.
            assert_same(ops.resize(a, size, name, max_size or 0), T.Resize(size, MODES[name], max_size)(img),
                        (img.filename, name, size, max_size, "Resize"))


@pytest.mark.parametrize("name", list(MODES))
def test_resized_crop_equals_torchvision(photos, name):
    for img in photos[:6]:
        a = np.asarray(img)
        w, h = img.size
        for top, left, ch, cw, size in [(21, 37, h // 3, w // 2 + 1, [224, 224]), (0, 0, h, w, [176, 176]),
                                        (h - 10, w - 7, 10, 7, [64, 48]), (5, 9, 85, 100, [85, 100])]:
            theirs = F.resized_crop(img, top, left, ch, cw, size, MODES[name])
            assert_same(ops.resized_crop(a, top, left, ch, cw, size, name), theirs, (img.filename, name, top, left))


# --- crops, pads, flips ---

def test_crop_equals_torchvision(photos):
    for img in photos[:4]:
        a = np.asarray(img)
        w, h = img.size
        for top, left, ch, cw in [(0, 0, h, w), (10, 20, 100, 50), (-5, -7, 40, 30), (h - 10, w - 10, 30, 40),
                                  (-3, -4, h + 9, w + 11), (h + 2, 0, 4, 4)]:
            assert_same(ops.crop(a, top, left, ch, cw), F.crop(img, top, left, ch, cw), (img.filename, top, left))


def test_center_crop_equals_torchvision_padding_included(photos):
    for img in photos:
        a = np.asarray(img)
        w, h = img.size
        for size in [[224], [224, 192], [h - 1, w - 2], [h, w], [h + 1, w + 2], [h + 7, 10], [11, w + 30],
                     [h + 100, w + 101], [1]]:
            assert_same(ops.center_crop(a, size), F.center_crop(img, size), (img.filename, size))
            assert_same(ops.center_crop(a, size), T.CenterCrop(size)(img), (img.filename, size, "CenterCrop"))


def small(img, w, h):
    return img.crop((13, 17, 13 + w, 17 + h))


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric"])
def test_pad_equals_torchvision(photos, mode):
    for img in photos[:3]:
        # Paddings longer than the image too (numpy's iterative reflection), on small crops of the photo.
        for src in [img, small(img, 5, 3), small(img, 1, 4), small(img, 2, 2)]:
            a = np.asarray(src)
            for padding in [[0], [3], [2, 5], [1, 0, 4, 2], [0, 7, 0, 0], [9, 1, 13, 6], [17]]:
                for fill in ([0], [255], [17, 128, 250], [300.7, -2, 3.9]) if mode == "constant" else ([0],):
                    tv_fill = fill[0] if len(fill) == 1 else tuple(fill)
                    theirs = F.pad(src, padding if len(padding) > 1 else padding[0], tv_fill, mode)
                    assert_same(ops.pad(a, padding, fill, mode), theirs, (img.filename, src.size, padding, fill, mode))


def test_vflip_equals_torchvision(photos):
    for img in photos[:4]:
        assert_same(ops.vflip(np.asarray(img)), F.vflip(img), img.filename)
    one_row = small(photos[0], 9, 1)
    assert_same(ops.vflip(np.asarray(one_row)), F.vflip(one_row), "one row")


# --- random_crop and random_resized_crop: the image, with batchd's draw, equals torchvision's forward with it ---

def patched_forward(monkeypatch, cls, box):
    """torchvision's own cls.forward, with get_params returning `box` (batchd's draw)."""
    monkeypatch.setattr(cls, "get_params", staticmethod(lambda *args, **kwargs: tuple(int(v) for v in box)))




@pytest.mark.parametrize("spec", RANDOM_CROPS, ids=case_id)
def test_random_crop_equals_torchvision_with_our_draw(photos, monkeypatch, spec):
    padding, fill, mode = spec.get("padding"), spec.get("fill", [0]), spec.get("padding_mode", "constant")
    for index, img in enumerate(photos[:6]):
        a = np.asarray(img)
        box = ops.random_crop_params(img.width, img.height, index + 1, 5, spec["size"], padding,
                                     spec.get("pad_if_needed", False))[index]
        ours = ops.random_crop(a, spec["size"], padding, spec.get("pad_if_needed", False), fill, mode, 5, index)
        patched_forward(monkeypatch, T.RandomCrop, box)
        tv = T.RandomCrop(spec["size"], padding if padding is None or len(padding) > 1 else padding[0],
                          spec.get("pad_if_needed", False), fill[0] if len(fill) == 1 else tuple(fill), mode)
        assert_same(ours, tv(img), (img.filename, spec, box))


def test_random_crop_larger_than_image_is_refused_as_torchvision_does(photos):
    img = photos[0]
    with pytest.raises(ValueError, match="larger than the"):
        ops.random_crop(np.asarray(img), [img.height + 1, 10])
    with pytest.raises(ValueError, match="larger than input image size"):
        T.RandomCrop([img.height + 1, 10])(img)


@pytest.mark.parametrize("name", list(MODES))
def test_random_resized_crop_equals_torchvision_with_our_draw(photos, monkeypatch, name):
    for index, img in enumerate(photos[:6]):
        for size, scale, ratio in [([224, 224], [0.08, 1.0], [3 / 4, 4 / 3]), ([176, 144], [0.25, 0.5], [0.5, 2.0])]:
            box = ops.random_resized_crop_params(img.width, img.height, index + 1, 11, scale, ratio)[index]
            ours = ops.random_resized_crop(np.asarray(img), size, scale, ratio, name, 11, index)
            patched_forward(monkeypatch, T.RandomResizedCrop, box)
            theirs = T.RandomResizedCrop(size, scale, ratio, MODES[name])(img)
            assert_same(ours, theirs, (img.filename, name, size, box))


# --- distributions of the draws against torchvision's get_params ---

N = 4000


def torchvision_draws(get, n, seed):
    torch.manual_seed(seed)
    return np.array([get() for _ in range(n)])


def ks_same(ours, theirs, what):
    p = stats.ks_2samp(ours, theirs).pvalue
    assert p > 1e-3, f"{what}: KS p = {p:.2e}: batchd's draws do not follow torchvision's"


@pytest.mark.parametrize("width,height,size,padding,pad_if_needed", [
    (500, 375, [224, 224], None, False), (333, 423, [176, 300], [8], False), (100, 60, [128, 128], None, True)])
def test_random_crop_draws_follow_torchvision(width, height, size, padding, pad_if_needed):
    ours = ops.random_crop_params(width, height, N, 1234, size, padding, pad_if_needed)
    # torchvision's get_params on the padded image, which only its size matters for.
    img = Image.new("RGB", (width, height))
    tv = T.RandomCrop(size, padding, pad_if_needed)
    if padding is not None:
        img = F.pad(img, padding)
    if pad_if_needed and img.width < size[1]:
        img = F.pad(img, [size[1] - img.width, 0])
    if pad_if_needed and img.height < size[0]:
        img = F.pad(img, [0, size[0] - img.height])
    theirs = torchvision_draws(lambda: tv.get_params(img, tuple(size)), N, 99)
    assert (ours[:, 2:] == theirs[:, 2:]).all()
    for col, name, span in [(0, "top", img.height - size[0]), (1, "left", img.width - size[1])]:
        ks_same(ours[:, col], theirs[:, col], name)
        assert ours[:, col].min() == 0 and ours[:, col].max() == span, (name, ours[:, col].min(), ours[:, col].max())
        counts = np.bincount(ours[:, col], minlength=span + 1)
        assert stats.chisquare(counts).pvalue > 1e-3, f"{name} not uniform on [0, {span}]"


def rrc_features(boxes, width, height):
    top, left, h, w = boxes.T.astype(np.float64)
    return {"area": w * h / (width * height), "log_aspect": np.log(w / h), "top": top, "left": left}


@pytest.mark.parametrize("width,height,scale,ratio", [
    (500, 375, [0.08, 1.0], [3 / 4, 4 / 3]), (333, 423, [0.08, 1.0], [3 / 4, 4 / 3]),
    (500, 375, [0.25, 0.9], [0.5, 2.0]), (200, 400, [0.35, 1.0], [3 / 4, 4 / 3])])  # the last: many fallbacks
def test_random_resized_crop_draws_follow_torchvision(width, height, scale, ratio):
    ours = rrc_features(ops.random_resized_crop_params(width, height, N, 4321, scale, ratio), width, height)
    img = Image.new("RGB", (width, height))
    draws = torchvision_draws(lambda: T.RandomResizedCrop.get_params(img, scale, ratio), N, 7)
    theirs = rrc_features(draws, width, height)
    for key in ours:
        ks_same(ours[key], theirs[key], key)
    assert ours["area"].min() < scale[0] + 0.02, "the smallest areas are never drawn"


def test_the_ks_check_rejects_a_wrong_aspect_distribution():
    """Power of the test above: torchvision's get_params with the aspect ratio drawn uniformly instead of
    log-uniformly (a plausible bug) must fail the same check."""
    width, height, scale, ratio = 500, 375, [0.08, 1.0], [3 / 4, 4 / 3]
    rng = np.random.default_rng(3)

    def wrong():
        for _ in range(10):
            area = width * height * rng.uniform(*scale)
            aspect = rng.uniform(*ratio)
            w, h = int(round(math.sqrt(area * aspect))), int(round(math.sqrt(area / aspect)))
            if 0 < w <= width and 0 < h <= height:
                return rng.integers(0, height - h + 1), rng.integers(0, width - w + 1), h, w
        return (height - 375) // 2, (width - 500) // 2, 375, 500

    bad = rrc_features(np.array([wrong() for _ in range(N)]), width, height)
    img = Image.new("RGB", (width, height))
    theirs = rrc_features(torchvision_draws(lambda: T.RandomResizedCrop.get_params(img, scale, ratio), N, 7),
                          width, height)
    assert stats.ks_2samp(bad["log_aspect"], theirs["log_aspect"]).pvalue < 1e-3
