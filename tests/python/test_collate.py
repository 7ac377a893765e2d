"""Batches of any structure through the slots (issue 40, item 1): a collate_fn's batch, or default_collate's of samples
that fit no fixed layout, made by the Loader's workers into the stream's slots and rebuilt in the trainer, equal to
DataLoader's batch for batch, against a real daemon. Cases from real training code (collate_datasets.py)."""
import os

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

import batchd
from batchd._own import batch_codec
from own_datasets import Faulty
from collate_datasets import (Captioned, Detection, Growing, Mixed, Tokens, detection_collate, list_collate,
                              mixed_collate, pad_collate, same)


CASES = {  # name: (dataset, DataLoader keyword arguments)
    "detection": (Detection(23), dict(batch_size=4, collate_fn=detection_collate)),
    "padding": (Tokens(30), dict(batch_size=8, collate_fn=pad_collate)),
    "captions_default_collate": (Captioned(21), dict(batch_size=5)),
    "every_leaf": (Mixed(17), dict(batch_size=6, collate_fn=mixed_collate)),
    "no_batching_with_collate_fn": (Detection(5), dict(batch_size=None, collate_fn=list)),
    "drop_last": (Tokens(30), dict(batch_size=8, collate_fn=pad_collate, drop_last=True)),
}


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("case", sorted(CASES))
def test_batches_equal_dataloaders(sock, case, workers):
    dataset, kwargs = CASES[case]
    expected = list(DataLoader(dataset, num_workers=workers, **kwargs))
    loader = batchd.Loader(dataset, num_workers=workers, socket=sock, **kwargs)
    try:
        assert len(loader) == len(expected)
        for epoch in range(2):  # compared as they come: a batch holds its slot while it lives (depth at once)
            count = 0
            for k, (ours, theirs) in enumerate(zip(loader, expected)):
                same(ours, theirs, f"epoch {epoch} batch {k}")
                count += 1
            assert count == len(expected), f"epoch {epoch}"
        assert loader._own.layout().kind == "collated"
    finally:
        loader.close()


def test_tensors_are_views_of_the_slot_and_writable(sock):
    loader = batchd.Loader(Tokens(16), batch_size=8, collate_fn=pad_collate, socket=sock)
    try:
        batch = next(iter(loader))
        ids = batch["input_ids"]
        assert ids.untyped_storage().nbytes() > ids.numel() * 8, "a view of the slot, not a copy of its own"
        ids += 1  # DataLoader's batches may be modified in place
    finally:
        loader.close()


def test_shuffled_epochs_deliver_every_index_once(sock):
    loader = batchd.Loader(Mixed(50), batch_size=8, shuffle=True, num_workers=2, collate_fn=list_collate, socket=sock)
    try:
        for _ in range(2):
            seen = [i for batch in loader for i in batch]
            assert sorted(seen) == list(range(50))
    finally:
        loader.close()


def test_spawned_workers_collate_too(sock):
    dataset, kwargs = CASES["padding"]
    expected = list(DataLoader(dataset, **kwargs))
    loader = batchd.Loader(dataset, num_workers=2, multiprocessing_context="spawn", socket=sock, **kwargs)
    try:
        for k, (ours, theirs) in enumerate(zip(loader, expected)):
            same(ours, theirs, f"batch {k}")
    finally:
        loader.close()


def test_a_batch_larger_than_its_slot_is_an_error_naming_both_sizes(sock):
    loader = batchd.Loader(Growing(40), batch_size=4, collate_fn=list_collate, socket=sock, seeding="per_sample")
    try:
        with pytest.raises(batchd.BatchdError, match=r"collated to \d+ bytes, over its slot's \d+"):
            for _ in loader:
                pass
    finally:
        loader.close()


def test_a_collate_fn_exception_is_raised_with_its_own_type(sock):
    def broken(batch):
        raise LookupError("no vocabulary for this batch")

    loader = batchd.Loader(Tokens(16), batch_size=4, collate_fn=broken, socket=sock)
    try:
        with pytest.raises(LookupError, match="no vocabulary for this batch"):
            next(iter(loader))
    finally:
        loader.close()


def test_as_dict_gives_the_batch_and_its_indices(sock):
    loader = batchd.Loader(Captioned(10), batch_size=4, as_dict=True, socket=sock, seeding="per_sample")
    try:
        first = next(iter(loader))
        assert first["index"].tolist() == [0, 1, 2, 3]
        assert first["batch"][1] == ("caption 0", "caption 1", "caption 2", "caption 3")  # default_collate: a tuple
    finally:
        loader.close()


def test_an_exception_of_a_later_sample_keeps_its_type_and_names_it(sock):
    loader = batchd.Loader(Faulty(40, 13, "raise"), batch_size=4, num_workers=2, collate_fn=list_collate, seeding="per_sample",
                           socket=sock)
    try:
        with pytest.raises(ValueError, match=r"Faulty.__getitem__\(13\)") as failed:
            for _ in loader:
                pass
        assert "sample 13 is unreadable" in str(failed.value)
        assert "sample 13 of dataset" in str(failed.value.__cause__)
    finally:
        loader.close()


class _Marker:
    """Unpickling it creates a file: what a writer of the segment could make the trainer run."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_a_batch_not_signed_by_the_loaders_workers_is_not_unpickled(tmp_path):
    key, other = b"k" * 32, b"x" * 32
    marker = str(tmp_path / "ran")
    batch = {"x": torch.arange(4), "payload": _Marker(marker)}
    slot = torch.zeros(batch_codec.encode(batch), dtype=torch.uint8)
    batch_codec.encode(batch, slot, other)  # written by someone without this Loader's key
    with pytest.raises(ValueError, match="signature does not check"):
        batch_codec.decode(slot, key)
    assert not os.path.exists(marker), "nothing was unpickled"
    batch_codec.encode({"x": torch.arange(4)}, slot, key)
    assert torch.equal(batch_codec.decode(slot, key)["x"], torch.arange(4))


def test_subclasses_masks_byte_order_and_aliases_survive_the_slot():
    from torchvision import tv_tensors
    boxes = tv_tensors.BoundingBoxes([[1, 2, 3, 4]], format="XYXY", canvas_size=(10, 12))
    shared = torch.arange(3)
    batch = {"boxes": boxes, "masked": np.ma.masked_array([1, 2, 3], mask=[0, 1, 0]),
             "big_endian": np.arange(3, dtype=">i4"), "a": shared, "b": shared}
    slot = torch.zeros(batch_codec.encode(batch), dtype=torch.uint8)
    batch_codec.encode(batch, slot, b"k")
    out = batch_codec.decode(slot, b"k")
    assert type(out["boxes"]) is tv_tensors.BoundingBoxes and out["boxes"].canvas_size == (10, 12)
    assert out["masked"].mask.tolist() == [False, True, False]
    assert out["big_endian"].dtype == np.dtype(">i4") and out["big_endian"].tolist() == [0, 1, 2]
    assert out["a"] is out["b"], "one tensor, written once"
