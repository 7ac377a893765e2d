"""RandomErasing (transforms/kernels/tensor/erasing.h) against torchvision 0.29 on real photographs, and the random
draws under the tensor and batch ops (transforms/kernels/tensor/random_draws.h) against scipy.stats and torch's own
samplers.

Statistical tests use fixed seeds and many draws: a correct implementation passes with a wide margin (p-values far
above the 1e-3 threshold), and each test also checks that it would reject a wrong distribution."""
import numpy as np
import pytest
import torch
from scipy import stats
from torchvision import transforms as T
from torchvision.transforms import functional as F

import batchd_ops_testing as ops

ALPHA = 1e-3  # reject below this p-value


def _tensor(img, side=None):
    if side is not None:
        img = F.center_crop(F.resize(img, side), side)
    return F.to_tensor(img)


# ---------------------------------------------------------------- F.erase with fixed parameters


def test_erase_equals_torchvision_erase_on_photos(photos):
    rng = np.random.default_rng(3)
    for img in photos[:6]:
        t = F.normalize(_tensor(img), [0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
        _, height, width = t.shape
        for value in ("zero", "number", "per_channel", "random"):
            h, w = int(rng.integers(1, height)), int(rng.integers(1, width))
            i, j = int(rng.integers(0, height - h + 1)), int(rng.integers(0, width - w + 1))
            v = {"zero": torch.tensor([0.0])[:, None, None], "number": torch.tensor([0.7])[:, None, None],
                 "per_channel": torch.tensor([0.1, -0.5, 2.0])[:, None, None],
                 "random": torch.empty([3, h, w], dtype=torch.float32).normal_()}[value]
            theirs = F.erase(t, i, j, h, w, v)
            ours = ops.erase(t.numpy(), i, j, h, w, v.reshape(-1).numpy())
            assert np.array_equal(ours, theirs.numpy()), (img.filename, value, (i, j, h, w))
            ours_hwc = ops.erase(t.permute(1, 2, 0).contiguous().numpy(), i, j, h, w, v.reshape(-1).numpy(),
                                 hwc=True)
            assert np.array_equal(ours_hwc, theirs.permute(1, 2, 0).numpy()), (img.filename, value, "hwc")


def test_random_erasing_erases_its_box_with_its_value(photos):
    t = _tensor(photos[0], 96)
    for value, v in ((0, [0.0]), (0.25, [0.25]), ([0.1, 0.2, 0.3], [0.1, 0.2, 0.3])):
        for index in range(20):
            ours, box = ops.random_erasing(t.numpy(), 1.0, (0.02, 0.33), (0.3, 3.3), value, 5, 0, index)
            assert box is not None
            theirs = F.erase(t, *box, torch.tensor(v)[:, None, None])
            assert np.array_equal(ours, theirs.numpy()), (value, index, box)


def test_random_value_is_standard_normal_inside_the_box_only(photos):
    t = _tensor(photos[1], 128)
    inside = []
    for index in range(60):
        ours, box = ops.random_erasing(t.numpy(), 1.0, (0.1, 0.33), (0.3, 3.3), "random", 11, 2, index)
        i, j, h, w = box
        mask = np.zeros(t.shape, dtype=bool)
        mask[:, i:i + h, j:j + w] = True
        assert np.array_equal(ours[~mask], t.numpy()[~mask])
        inside.append(ours[mask])
    values = np.concatenate(inside)
    assert values.size > 100000
    assert stats.kstest(values, "norm").pvalue > ALPHA
    assert stats.kstest(values, "norm", args=(0.05, 1)).pvalue < ALPHA  # the test sees a shift of 0.05


def test_p_decides_how_often_an_image_is_erased(photos):
    t = _tensor(photos[2], 64).numpy()
    assert all(ops.random_erasing(t, 0.0, (0.02, 0.33), (0.3, 3.3), 0, 1, 0, i)[1] is None for i in range(200))
    erased = sum(ops.random_erasing(t, 0.3, (0.02, 0.33), (0.3, 3.3), 0, 1, 0, i)[1] is not None
                 for i in range(4000))
    assert stats.binomtest(erased, 4000, 0.3).pvalue > ALPHA
    assert stats.binomtest(erased, 4000, 0.33).pvalue < ALPHA


def test_no_try_fits_leaves_the_image_unchanged(photos):
    t = _tensor(photos[3], 50)
    # h = w = round(sqrt(area)) = 50 is never < 50: get_params falls back to (0, 0, H, W, img).
    assert T.RandomErasing.get_params(t, scale=(1.0, 1.0), ratio=(1.0, 1.0), value=[0.0])[:4] == (0, 0, 50, 50)
    ours, box = ops.random_erasing(t.numpy(), 1.0, (1.0, 1.0), (1.0, 1.0), 0, 1, 0, 0)
    assert box is None and np.array_equal(ours, t.numpy())


def _torch_params(n, height, width, scale, ratio, value):
    torch.manual_seed(1234)
    img = torch.zeros(3, height, width)
    out = np.zeros((n, 4), dtype=np.int64)
    for k in range(n):
        out[k] = T.RandomErasing.get_params(img, scale=scale, ratio=ratio, value=value)[:4]
    return out


@pytest.mark.parametrize("height,width,scale,ratio", [
    (224, 224, (0.02, 0.33), (0.3, 3.3)),   # the defaults: nearly always fits
    (176, 240, (0.2, 0.8), (0.3, 3.3)),     # many tries fail: the fallback's frequency counts too
])
def test_params_follow_torchvision_get_params(height, width, scale, ratio):
    n = 6000
    theirs = _torch_params(n, height, width, scale, ratio, [0.0])
    ours = ops.random_erasing_params(3, height, width, scale, ratio, False, 99, n)[:, 1:]
    for k, name in enumerate("ijhw"):
        assert stats.ks_2samp(ours[:, k], theirs[:, k]).pvalue > ALPHA, name
    area_ours, area_theirs = ours[:, 2] * ours[:, 3], theirs[:, 2] * theirs[:, 3]
    assert stats.ks_2samp(area_ours, area_theirs).pvalue > ALPHA
    assert stats.ks_2samp(ours[:, 2] / ours[:, 3], theirs[:, 2] / theirs[:, 3]).pvalue > ALPHA
    # The test has the power to see a wrong distribution: a narrower ratio range.
    wrong = ops.random_erasing_params(3, height, width, scale, (0.5, 2.0), False, 99, n)[:, 1:]
    assert stats.ks_2samp(wrong[:, 2] / wrong[:, 3], theirs[:, 2] / theirs[:, 3]).pvalue < ALPHA


def test_random_value_draws_do_not_change_the_box_distribution():
    n = 4000
    theirs = _torch_params(n, 120, 160, (0.02, 0.33), (0.3, 3.3), None)
    ours = ops.random_erasing_params(3, 120, 160, (0.02, 0.33), (0.3, 3.3), True, 5, n)[:, 1:]
    for k, name in enumerate("ijhw"):
        assert stats.ks_2samp(ours[:, k], theirs[:, k]).pvalue > ALPHA, name


# ---------------------------------------------------------------- the samplers


@pytest.mark.parametrize("fill", [False, True])
def test_normal_is_standard_normal(fill):
    x = ops.normal_draws(17, 200000, fill)
    assert abs(x.mean()) < 4 / np.sqrt(x.size)
    assert abs(x.std() - 1) < 0.01
    assert stats.kstest(x, "norm").pvalue > ALPHA
    assert stats.kstest(x, "norm", args=(0, 1.02)).pvalue < ALPHA  # a 2% wider normal is seen


@pytest.mark.parametrize("shape", [0.2, 1.0, 3.5])
def test_gamma_follows_scipy(shape):
    x = ops.gamma_draws(shape, 8, 100000)
    assert abs(x.mean() - shape) < 4 * np.sqrt(shape / x.size)
    assert abs(x.var() / shape - 1) < 0.05
    assert stats.kstest(x, stats.gamma(shape).cdf).pvalue > ALPHA
    assert stats.kstest(x, stats.gamma(shape * 1.03).cdf).pvalue < ALPHA


@pytest.mark.parametrize("a,b", [(0.2, 0.2), (1.0, 1.0), (2.0, 5.0)])
def test_beta_follows_scipy(a, b):
    x = ops.beta_draws(a, b, 21, 100000)
    assert ((0 <= x) & (x <= 1)).all()
    mean, var = a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1))
    assert abs(x.mean() - mean) < 4 * np.sqrt(var / x.size)
    assert abs(x.var() / var - 1) < 0.03
    assert stats.kstest(x, stats.beta(a, b).cdf).pvalue > ALPHA
    assert stats.kstest(x, stats.beta(a * 1.05, b).cdf).pvalue < ALPHA


def test_beta_of_a_tiny_alpha_neither_underflows_nor_skews():
    """alpha = 0.05: the gammas underflow as plain doubles (u^20); the sampler works in logarithms. Near 1 a double
    cannot tell Beta's mass from 1.0 (8% of it lies within 1e-16 of 1), so the shape is tested on the lower half,
    where doubles resolve it: x | x < 0.5 has the CDF 2 F(x)."""
    a = 0.05
    x = ops.beta_draws(a, a, 21, 100000)
    assert np.isfinite(x).all() and ((0 <= x) & (x <= 1)).all()
    var = 1 / (4 * (2 * a + 1))
    assert abs(x.mean() - 0.5) < 4 * np.sqrt(var / x.size) and abs(x.var() / var - 1) < 0.03
    lower = x[x < 0.5]
    assert stats.binomtest(lower.size, x.size, 0.5).pvalue > ALPHA
    assert stats.kstest(lower, lambda t: 2 * stats.beta(a, a).cdf(t)).pvalue > ALPHA
    assert stats.kstest(lower, lambda t: 2 * stats.beta(a * 1.1, a * 1.1).cdf(t)).pvalue < ALPHA


@pytest.mark.parametrize("alpha", [0.2, 1.0])
def test_beta_matches_torch_sample_dirichlet(alpha):
    """The references draw lambda as float(torch._sample_dirichlet(torch.tensor([alpha, alpha]))[0])."""
    torch.manual_seed(0)
    theirs = torch._sample_dirichlet(torch.tensor([[alpha, alpha]], dtype=torch.float64).expand(50000, 2))[:, 0]
    ours = ops.beta_draws(alpha, alpha, 3, 50000)
    assert stats.ks_2samp(ours, theirs.numpy()).pvalue > ALPHA


# ---------------------------------------------------------------- random_erasing in a spec (the real executor)

IMAGENET = dict(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])


def _png(img):
    import io
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


@pytest.mark.parametrize("layout", ["CHW", "HWC"])
def test_random_erasing_in_a_spec_erases_one_box_per_sample(photos, layout):
    head = [{"op": "resize", "size": [48, 64]}, {"op": "to_tensor"}, {"op": "normalize", **IMAGENET}]
    tail = [{"op": "layout", "order": layout}] if layout == "HWC" else []
    data = [_png(p) for p in photos[:6]]
    base, _ = ops.run(head + tail, data)
    erased, _ = ops.run(head + [{"op": "random_erasing", "p": 1.0, "value": [0.5, -1.0, 2.0]}] + tail, data, seed=3)
    if layout == "HWC":
        base, erased = base.transpose(0, 3, 1, 2), erased.transpose(0, 3, 1, 2)
    for b in range(len(data)):
        changed = (erased[b] != base[b]).any(axis=0)
        rows, cols = np.flatnonzero(changed.any(1)), np.flatnonzero(changed.any(0))
        i, j, h, w = rows[0], cols[0], rows[-1] + 1 - rows[0], cols[-1] + 1 - cols[0]
        expected = F.erase(torch.from_numpy(base[b]), i, j, h, w, torch.tensor([0.5, -1.0, 2.0])[:, None, None])
        assert np.array_equal(erased[b], expected.numpy()), b


@pytest.mark.parametrize("spec,message", [
    ([{"op": "center_crop", "size": 8}, {"op": "pil_to_tensor"}, {"op": "random_erasing"}],
     "ops[2] (random_erasing): random_erasing takes a float tensor, not a uint8 tensor"),
    ([{"op": "center_crop", "size": 8}, {"op": "random_erasing"}, {"op": "to_tensor"}],
     "ops[1] (random_erasing): random_erasing takes a float tensor, not an image"),
    ([{"op": "center_crop", "size": 8}, {"op": "to_tensor"}, {"op": "random_erasing", "scale": [0.5, 0.2]}],
     "ops[2] (random_erasing): scale: min is above max"),
    ([{"op": "center_crop", "size": 8}, {"op": "to_tensor"}, {"op": "random_erasing", "scale": [0.1, 1.5]}],
     "scale: 1.5 is out of range [0, 1]"),
    ([{"op": "center_crop", "size": 8}, {"op": "to_tensor"}, {"op": "random_erasing", "ratio": [0, 2]}],
     "ratio: must be above 0"),
    ([{"op": "center_crop", "size": 8}, {"op": "to_tensor"}, {"op": "random_erasing", "ratio": [1e-300, 1e300]}],
     "ratio: must be within [1.2e-38, 3.4e38]"),
    ([{"op": "center_crop", "size": 8}, {"op": "to_tensor"}, {"op": "random_erasing", "value": [1, 2]}],
     "value: has 2 numbers: give one (every channel) or 3 (R, G, B)"),
    ([{"op": "center_crop", "size": 8}, {"op": "to_tensor"}, {"op": "random_erasing", "value": "noise"}],
     "value: \"noise\" is not"),
])
def test_plan_refuses_random_erasing_naming_the_op_and_key(spec, message):
    with pytest.raises(ValueError) as e:
        ops.plan(spec)
    assert message in str(e.value)


def test_random_erasing_value_canonical_forms():
    one = ops.plan([{"op": "center_crop", "size": 8}, {"op": "to_tensor"}, {"op": "random_erasing", "value": [0]}])
    assert one == ops.plan([{"op": "center_crop", "size": 8}, {"op": "to_tensor"}, {"op": "random_erasing"}])
    ops.plan([{"op": "center_crop", "size": 8}, {"op": "to_tensor"}, {"op": "random_erasing", "value": "random"}])
