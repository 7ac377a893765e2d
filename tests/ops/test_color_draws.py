"""batchd's draws for ColorJitter, RandomGrayscale and GaussianBlur (daemon/transforms/kernels/color/color_draws.h) have
torchvision 0.29's distributions (its get_params / forward draws, from torch's generator with a fixed seed):
two-sample Kolmogorov-Smirnov for the factors, chi-square for the 24 orders and for the grayscale coin. Each
threshold is one that the right distribution passes by a wide margin (p-values > 1e-4 with fixed seeds) and a
plausible mistake fails (checked once by hand: a fixed order, a factor range off by 0.05, p off by 0.02)."""
import math

import numpy as np
import pytest
import torch
from scipy import stats
from torchvision import transforms as T
from torchvision.transforms import functional as F

import batchd_ops_testing as ops

N = 20000


def torch_jitter_draws(ranges, n, seed=0):
    torch.manual_seed(seed)
    out = []
    for _ in range(n):
        idx, *factors = T.ColorJitter.get_params(*ranges)
        out.append((idx.tolist(), [math.nan if f is None else f for f in factors]))
    return out


RANGES = [[0.6, 1.4], [0.2, 1.8], [0.0, 3.0], [-0.3, 0.45]]


def test_jitter_order_is_uniform_over_the_24_orders():
    ours = ops.color_jitter_draws(*RANGES, 11, N)
    theirs = torch_jitter_draws(RANGES, N)
    orders = sorted({tuple(o) for o, _ in theirs})
    assert len(orders) == 24
    count = lambda draws: np.array([sum(1 for o, _ in draws if tuple(o) == k) for k in orders])
    ours_count, theirs_count = count(ours), count(theirs)
    assert ours_count.sum() == N
    assert stats.chisquare(ours_count).pvalue > 1e-4, ours_count
    assert stats.chi2_contingency(np.stack([ours_count, theirs_count]))[1] > 1e-4


@pytest.mark.parametrize("which", range(4))
def test_jitter_factors_are_uniform_in_their_ranges(which):
    ours = np.array([f[which] for _, f in ops.color_jitter_draws(*RANGES, 12, N)])
    theirs = np.array([f[which] for _, f in torch_jitter_draws(RANGES, N, seed=1)])
    lo, hi = RANGES[which]
    assert lo <= ours.min() and ours.max() <= hi
    assert stats.ks_2samp(ours, theirs).pvalue > 1e-4
    assert stats.kstest(ours, stats.uniform(lo, hi - lo).cdf).pvalue > 1e-4
    # torch draws float32 values; so does batchd (a range [f, f] gives float32(f) in both).
    assert np.array_equal(ours.astype(np.float32).astype(np.float64), ours)


def test_jitter_none_ranges_draw_nothing():
    """A None range (ColorJitter's brightness=0 etc.) consumes no random number: the next factor takes its place."""
    only_contrast = ops.color_jitter_draws(None, [0.0, 1.0], None, None, 5, 50)
    only_brightness = ops.color_jitter_draws([0.0, 1.0], None, None, None, 5, 50)
    for (o1, f1), (o2, f2) in zip(only_contrast, only_brightness):
        assert o1 == o2
        assert f1[1] == f2[0]
        assert math.isnan(f1[0]) and math.isnan(f1[2]) and math.isnan(f1[3])
    # Ranges [1, 1] (and hue [0, 0]) are None too, as ColorJitter._check_input makes them.
    identity = ops.color_jitter_draws([1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [0.0, 0.0], 5, 3)
    assert all(all(math.isnan(x) for x in f) for _, f in identity)


def test_jitter_fixed_ranges_give_torchvisions_float32_factors():
    ranges = [[0.3, 0.3], [1.7, 1.7], [0.6, 0.6], [-0.1, -0.1]]
    _, (b, c, s, h) = torch_jitter_draws(ranges, 1)[0]
    _, ours = ops.color_jitter_draws(*ranges, 1, 1)[0]
    assert ours == [b, c, s, h]


def test_jitter_applies_in_the_drawn_order(photos):
    img = photos[0]
    a = np.asarray(img)
    seen_orders = set()
    for index in range(12):
        out, (order, factors) = ops.color_jitter(a, *RANGES, 3, index)
        seen_orders.add(tuple(order))
        expected = img
        fns = [F.adjust_brightness, F.adjust_contrast, F.adjust_saturation, F.adjust_hue]
        for fn_id in order:
            expected = fns[fn_id](expected, factors[fn_id])
        assert np.array_equal(out, np.asarray(expected)), (index, order, factors)
    assert len(seen_orders) > 3


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_grayscale_coin(p):
    ours = np.array(ops.random_grayscale_draws(p, 7, N))
    torch.manual_seed(2)
    theirs = np.array([bool(torch.rand(1) < p) for _ in range(N)])
    assert stats.binomtest(int(ours.sum()), N, p).pvalue > 1e-4
    table = [[ours.sum(), N - ours.sum()], [theirs.sum(), N - theirs.sum()]]
    assert stats.chi2_contingency(table)[1] > 1e-4


def test_grayscale_coin_edges():
    assert not any(ops.random_grayscale_draws(0.0, 1, 2000))
    assert all(ops.random_grayscale_draws(1.0, 1, 2000))


@pytest.mark.parametrize("lo,hi", [(0.1, 2.0), (1.5, 1.5)])
def test_blur_sigma(lo, hi):
    ours = np.array(ops.gaussian_sigma_draws(lo, hi, 9, N))
    torch.manual_seed(3)
    theirs = np.array([T.GaussianBlur.get_params(lo, hi) for _ in range(N)])
    if lo == hi:
        assert set(ours) == set(theirs) == {float(np.float32(lo))}
        return
    assert lo <= ours.min() and ours.max() <= hi
    assert stats.ks_2samp(ours, theirs).pvalue > 1e-4
