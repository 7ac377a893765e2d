"""torchvision.transforms.v2 (0.29, on PIL images, Pillow 13) as the reference of the ops its classes become
(batchd/_transforms/v2.py; the translation itself: tests/python/test_transforms_v2.py), through batchd's real executor
(ops.run: plan, compiled kernels, fused head and tail) on the photographs: what test_transforms_v2_*.py share. The
random classes get batchd's draws: make_params (v2's per-call parameters, an instance method) patched to return the
binding's draw for the sample (patch_make_params), as the v1 tests patch get_params; the flips and the auto-augment
family fed through torch.randint / torch.rand in v2's own forward() (augment_rng.feed_torch_v2: batchd's numbers in
batchd's order, answered as v2 asks for them).

What each file measures (12 photos) and asserts: test_transforms_v2_recipe.py (the eval recipe, ToDtype, v2's
documented order), test_transforms_v2_geometry.py (RandomResizedCrop, the flips, RandomCrop),
test_transforms_v2_color.py (ColorJitter, RandomGrayscale, GaussianBlur, RandomErasing),
test_transforms_v2_augment.py (TrivialAugmentWide, RandAugment, AutoAugment and Solarize's threshold).
"""
import numpy as np
from torchvision.transforms import InterpolationMode

EXACT = {"op": "decode", "exact_decode": True}
IMAGENET = dict(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
MODES = {"nearest": InterpolationMode.NEAREST, "bilinear": InterpolationMode.BILINEAR,
         "bicubic": InterpolationMode.BICUBIC}




def v2_batch(transform, photos):
    return np.stack([np.asarray(transform(p)) for p in photos])


def patch_make_params(monkeypatch, cls, params):
    """cls.make_params (v2: an instance method) returns batchd's draws, photo after photo."""
    it = iter(params)
    monkeypatch.setattr(cls, "make_params", lambda self, flat_inputs: next(it))


def levels(ours, theirs):
    d = np.abs(ours.astype(np.int64) - theirs.astype(np.int64))
    return int(d.max()), np.count_nonzero(d)
