"""Your own Dataset over a Loader's life (issue 26, review findings): passes abandoned early, close() and a new
pass, a sample whose field is an ndarray where sample 0's was a tensor. Real daemon (conftest's socket_path)."""
import numpy as np
import torch
from torch.utils.data import Dataset

import batchd


class _TensorOrArray(Dataset):
    """Sample i: a float32 [3] filled with i, a tensor for even i and an ndarray for odd i; label i."""

    def __len__(self):
        return 64

    def __getitem__(self, i):
        x = torch.full((3,), float(i))
        return (x if i % 2 == 0 else x.numpy()), i


def _one_pass(loader):
    seen = []
    for x, y in loader:
        assert torch.equal(x[:, 0], y.float()), "each row holds its own sample"
        seen += y.tolist()
    return sorted(seen)


def test_abandoned_passes_then_a_whole_one_deliver_every_index_once(socket_path):
    loader = batchd.Loader(_TensorOrArray(), batch_size=8, num_workers=2, socket=socket_path, seeding="per_sample")
    try:
        for _ in range(3):  # each new pass opens a new stream; workers of the old one re-attach, none fails
            it = iter(loader)
            next(it)
            del it
        assert _one_pass(loader) == list(range(64))
    finally:
        loader.close()


def test_a_loader_iterates_again_after_close(socket_path):
    loader = batchd.Loader(_TensorOrArray(), batch_size=8, num_workers=2, socket=socket_path, seeding="per_sample")
    try:
        assert _one_pass(loader) == list(range(64))
        loader.close()  # stops the workers
        assert _one_pass(loader) == list(range(64)), "close() then a new pass starts them again"
    finally:
        loader.close()


def test_a_field_given_as_an_ndarray_after_a_tensor_is_written_not_a_dead_worker(socket_path):
    loader = batchd.Loader(_TensorOrArray(), batch_size=8, num_workers=1, socket=socket_path, seeding="per_sample")
    try:
        assert _one_pass(loader) == list(range(64))
        assert loader._own.replaced == 0
    finally:
        loader.close()


def test_a_numpy_scalar_then_python_ints_are_one_int64_field(socket_path):
    class Labels(Dataset):
        def __len__(self):
            return 16

        def __getitem__(self, i):
            return np.int64(i) if i == 0 else i

    loader = batchd.Loader(Labels(), batch_size=4, num_workers=1, socket=socket_path)
    try:
        batches = [b.clone() for b in loader]
        assert all(b.dtype == torch.int64 for b in batches)
        assert sorted(torch.cat(batches).tolist()) == list(range(16))
    finally:
        loader.close()
