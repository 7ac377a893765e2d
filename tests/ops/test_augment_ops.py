"""trivial_augment_wide, rand_augment and auto_augment as ops of a spec, through batchd's real executor (plan +
compiled kernels): the same bytes as torchvision's classes when torch's generator is fed the sample's random numbers
(the rng passed from op to op in spec order), the same output for the same seed, and the plan's refusals."""

import numpy as np
import pytest
import torchvision.transforms as T
from torchvision.transforms import InterpolationMode
from torchvision.transforms import autoaugment as AA

import batchd_ops_testing as ops
from augment_rng import feed_torch
from conftest import png  # the photos as PNG bytes (and the fixture encoded)


SIZE = [160, 200]
AUGMENT_SPEC = [{"op": "resize", "size": SIZE},
                {"op": "trivial_augment_wide", "fill": [10, 20, 30]},
                {"op": "rand_augment", "num_ops": 3, "magnitude": 20, "interpolation": "bilinear"},
                {"op": "auto_augment", "fill": 128},
                {"op": "pil_to_tensor"}]


def torchvision_reference(monkeypatch, photos, seed, epoch):
    compose = T.Compose([T.Resize(SIZE), AA.TrivialAugmentWide(fill=[10, 20, 30]),
                         AA.RandAugment(num_ops=3, magnitude=20, interpolation=InterpolationMode.BILINEAR),
                         AA.AutoAugment(fill=128), T.PILToTensor()])
    out = []
    for index, img in enumerate(photos):
        feed_torch(monkeypatch, seed, epoch, index)  # sample i of the batch is seeded by (seed, epoch, i)
        out.append(compose(img).numpy())
        monkeypatch.undo()
    return np.stack(out)


def test_spec_equals_torchvision_fed_the_samples_random_numbers(monkeypatch, photos):
    """Three transforms in a row: each draws from where the previous one stopped, as torchvision's Compose does."""
    for seed, epoch in ((3, 0), (3, 1), (11, 0)):
        ours, _ = ops.run(AUGMENT_SPEC, [png(p) for p in photos], seed=seed, epoch=epoch)
        theirs = torchvision_reference(monkeypatch, photos, seed, epoch)
        assert ours.dtype == np.uint8 and ours.shape == theirs.shape
        assert np.array_equal(ours, theirs), (seed, epoch)


def test_same_seed_same_output_other_seed_other_output(photos):
    images = [png(p) for p in photos]
    spec = [{"op": "resize", "size": [96, 96]}, {"op": "trivial_augment_wide"}, {"op": "pil_to_tensor"}]
    first, _ = ops.run(spec, images, seed=5)
    again, _ = ops.run(spec, images, seed=5)
    other, _ = ops.run(spec, images, seed=6)
    plain, _ = ops.run([spec[0], spec[2]], images, seed=5)
    assert np.array_equal(first, again)
    assert sum(not np.array_equal(a, b) for a, b in zip(first, other)) >= len(photos) // 2
    assert sum(not np.array_equal(a, b) for a, b in zip(first, plain)) >= len(photos) // 2


def test_defaults_are_torchvisions_and_canonical():
    assert ops.plan([{"op": "trivial_augment_wide"}, {"op": "center_crop", "size": 8}, {"op": "to_tensor"}]) == \
        ops.plan([{"op": "trivial_augment_wide", "num_magnitude_bins": 31, "interpolation": "nearest"},
                  {"op": "center_crop", "size": 8}, {"op": "to_tensor"}])
    assert ops.plan([{"op": "rand_augment"}, {"op": "center_crop", "size": 8}, {"op": "to_tensor"}]) == \
        ops.plan([{"op": "rand_augment", "num_ops": 2, "magnitude": 9, "num_magnitude_bins": 31},
                  {"op": "center_crop", "size": 8}, {"op": "to_tensor"}])
    assert ops.plan([{"op": "auto_augment"}, {"op": "center_crop", "size": 8}, {"op": "to_tensor"}]) == \
        ops.plan([{"op": "auto_augment", "policy": "imagenet", "interpolation": "nearest"},
                  {"op": "center_crop", "size": 8}, {"op": "to_tensor"}])


@pytest.mark.parametrize("op,message", [
    ({"op": "rand_augment", "magnitude": 31}, r"magnitude: 31 is not below num_magnitude_bins \(31\)"),
    ({"op": "rand_augment", "magnitude": 5, "num_magnitude_bins": 5}, "magnitude"),
    ({"op": "rand_augment", "num_ops": 33}, "num_ops"),
    ({"op": "trivial_augment_wide", "num_magnitude_bins": 1}, "num_magnitude_bins"),
    ({"op": "trivial_augment_wide", "num_magnitude_bins": 1025}, "num_magnitude_bins"),
    ({"op": "trivial_augment_wide", "fill": 256}, "fill"),
    ({"op": "trivial_augment_wide", "fill": [1, 2]}, "fill"),
    ({"op": "auto_augment", "interpolation": "lanczos"}, "interpolation"),
    ({"op": "auto_augment", "policy": "reduced_imagenet"}, "policy"),
])
def test_plan_refuses_bad_parameters_naming_the_key(op, message):
    with pytest.raises(ValueError, match=message):
        ops.plan([op, {"op": "center_crop", "size": 8}, {"op": "to_tensor"}])


def test_plan_refuses_an_augment_after_to_tensor():
    with pytest.raises(ValueError, match=r"ops\[2\] \(trivial_augment_wide\): takes a PIL-style image, not a tensor"):
        ops.plan([{"op": "center_crop", "size": 8}, {"op": "to_tensor"}, {"op": "trivial_augment_wide"}])
