"""Every wire dtype reaches Python as the torch dtype of its name, viewing the batch's bytes (no copy): the array
_batchd makes for a tensor (the code path of Batch.arrays()) and batchd._loader.support.torch_tensor, which the Loader
applies to each array. bfloat16, which numpy lacks, arrives as int16 bits and is viewed as torch.bfloat16."""
import numpy as np
import pytest
import torch

from batchd import _batchd
from batchd._loader.support import torch_tensor

VALUES = [0.0, 1.0, -2.5, 0.15625, 3.0e4, -1.0e-3]
CASES = {  # batchd dtype -> (torch dtype, values)
    "uint8": (torch.uint8, [0, 1, 127, 128, 255, 7]),
    "float32": (torch.float32, VALUES),
    "int64": (torch.int64, [0, -1, 2**62, -2**63, 5, 2**40]),
    "float16": (torch.float16, VALUES),
    "bfloat16": (torch.bfloat16, VALUES),
    "float64": (torch.float64, [0.1, -1e300, 2.0**-1070, 1.0, 3.0, -7.25]),
    "int32": (torch.int32, [0, -1, 2**31 - 1, -2**31, 5, 1000]),
    "bool": (torch.bool, [True, False, True, True, False, False]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_dtype_maps_to_its_torch_dtype_over_the_same_bytes(name):
    dtype, values = CASES[name]
    expected = torch.tensor(values, dtype=dtype).reshape(2, 3)
    raw = expected.contiguous().view(torch.uint8).numpy().tobytes()  # the bytes a worker would write
    buffer = bytearray(raw)
    array = _batchd._array_over(buffer, name, [2, 3])
    tensor = torch_tensor(array)
    assert tensor.dtype == dtype
    assert tensor.shape == (2, 3)
    assert torch.equal(tensor, expected)
    buffer[0:len(raw)] = bytes(len(raw))  # a view, not a copy: the tensor sees the slot's bytes change
    assert torch.equal(tensor, torch.zeros_like(expected))


def test_bfloat16_is_int16_bits_tagged_for_numpy():
    array = _batchd._array_over(bytearray(b"\x80\x3f\x00\xc0"), "bfloat16", [2])  # 1.0, -2.0 as bfloat16
    assert array.dtype == np.int16 and array.dtype.metadata == {"batchd_dtype": "bfloat16"}
    assert torch_tensor(array).tolist() == [1.0, -2.0]
    plain = np.array([0x3f80, 0x4000], dtype=np.int16)  # an int16 array without the tag stays int16
    assert torch_tensor(plain).dtype == torch.int16


def test_unknown_dtype_and_short_buffer_are_refused():
    with pytest.raises(ValueError, match="unknown batchd dtype 'complex64'"):
        _batchd._array_over(bytearray(8), "complex64", [1])
    with pytest.raises(ValueError, match="smaller than 16"):
        _batchd._array_over(bytearray(8), "float32", [4])
