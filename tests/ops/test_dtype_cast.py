"""batchd's element casts (transforms/kernels/dtype_cast.h) equal torch 2.15's, bit for bit: Tensor.to(torch.float16 /
torch.bfloat16 / torch.float32) and torchvision 0.29's convert_image_dtype between uint8 and float."""
import numpy as np
import pytest
import torch
from torchvision.transforms import functional as F

import batchd_ops_testing as ops


def _bits(a):
    return a.view(np.uint32) if a.dtype == np.float32 else a


def _floats():
    """Every kind of float32: random bit patterns (all exponents, NaN payloads included), values around 1, the
    rounding ties and overflow edges of float16 and bfloat16, subnormals of both, zeros and infinities."""
    rng = np.random.default_rng(24)
    random_bits = rng.integers(0, 2**32, size=1 << 21, dtype=np.uint64).astype(np.uint32).view(np.float32)
    around_one = rng.standard_normal(1 << 20).astype(np.float32)
    small = (rng.standard_normal(1 << 18) * 1e-5).astype(np.float32)  # float16 subnormals
    one = np.float32(1.0)
    ties = np.array([1 + 2.0**-11, 1 + 3 * 2.0**-11, 1 + 2.0**-8, 1 + 3 * 2.0**-8, 2.0**-25, 3 * 2.0**-25,
                     65504, 65519.99, 65520, 65536, 3.3895e38, 3.4e38, 2.0**-24, 2.0**-14, 0.0, -0.0,
                     np.inf, -np.inf, np.nan, 1e-45, -1e-45], dtype=np.float32)
    nans = np.array([0x7FC00001, 0xFFC00000, 0x7F800001, 0x7FFFFFFF, 0xFF812345], dtype=np.uint32).view(np.float32)
    finite = ties[np.isfinite(ties)]
    neighbours = np.concatenate([np.nextafter(finite, np.float32(np.inf)), np.nextafter(finite, np.float32(-np.inf))])
    return np.concatenate([random_bits, around_one, small, ties, nans, neighbours, [one]]).astype(np.float32)


@pytest.mark.parametrize("ours,dtype", [(ops.to_half, torch.float16), (ops.to_bfloat16, torch.bfloat16)])
def test_float_to_half_and_bfloat16_equal_torch(ours, dtype):
    x = _floats()
    theirs = torch.from_numpy(x).to(dtype).view(torch.int16).numpy().view(np.uint16)
    mine = ours(x)
    bad = np.flatnonzero(mine != theirs)
    assert bad.size == 0, [(hex(x.view(np.uint32)[i]), hex(mine[i]), hex(theirs[i])) for i in bad[:5]]


def test_half_and_bfloat16_to_float_equal_torch_for_every_bit_pattern():
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    as_int16 = torch.from_numpy(bits.view(np.int16))
    for ours, dtype in ((ops.from_half(bits), torch.float16), (ops.from_bfloat16(bits), torch.bfloat16)):
        theirs = as_int16.view(dtype).float().numpy()
        finite = ~np.isnan(theirs)
        assert np.array_equal(_bits(ours)[finite], _bits(theirs)[finite]), dtype
        assert np.isnan(ours[~finite]).all(), dtype


def test_image_float_to_uint8_equals_convert_image_dtype():
    rng = np.random.default_rng(7)
    x = np.concatenate([np.linspace(0, 1, 100001, dtype=np.float32), rng.random(1 << 20, dtype=np.float32),
                        rng.standard_normal(1 << 18).astype(np.float32) * 3,  # normalized images: out of [0, 1]
                        np.array([1.0, 0.0, -0.0, -0.001, -0.5, -1.5, 1.5, 255.0, 3e9, -1e10, 1e30, np.inf,
                                  -np.inf, np.nan], dtype=np.float32)]).astype(np.float32)
    theirs = F.convert_image_dtype(torch.from_numpy(x).reshape(1, 1, -1), torch.uint8).reshape(-1).numpy()
    ours = ops.image_to_uint8(x)
    bad = np.flatnonzero(ours != theirs)
    assert bad.size == 0, [(float(x[i]), int(ours[i]), int(theirs[i])) for i in bad[:5]]


def test_image_uint8_to_float_equals_convert_image_dtype_for_every_value():
    u8 = np.arange(256, dtype=np.uint8)
    image = torch.from_numpy(u8).reshape(1, 1, -1)
    ours = ops.image_to_float(u8)
    assert np.array_equal(_bits(ours), _bits(F.convert_image_dtype(image, torch.float32).reshape(-1).numpy()))
    # uint8 -> float16 / bfloat16 (ConvertImageDtype to those): the float32 quotient, rounded once.
    for to, dtype in ((ops.to_half, torch.float16), (ops.to_bfloat16, torch.bfloat16)):
        theirs = F.convert_image_dtype(image, dtype).reshape(-1).view(torch.int16).numpy().view(np.uint16)
        assert np.array_equal(to(ours), theirs), dtype
