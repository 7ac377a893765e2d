"""mixup and cutmix (transforms/kernels/tensor/mixup.h) against the formulas of pytorch/vision's
references/classification/transforms.py (RandomMixup, RandomCutmix, v0.14; the file is not installed with
python3-torchvision, so its arithmetic is written out in bench/mixup_cutmix.py, whose classes the DataLoader side of
bench/compare_recipes.py runs) on a batch of real photographs, with
lambda and the box fixed; then the kernels' own draws (p, lambda ~ Beta(alpha, alpha), the box centre); then the ops
as a spec's batch_ops through batchd's executor (plan, collate's one-hot label with label smoothing, finish_batch)."""
import os
import sys

import numpy as np
import pytest
import torch
from scipy import stats
from torchvision.transforms import functional as F

import batchd_ops_testing as ops

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from mixup_cutmix import cut_, mix_  # noqa: E402

K = 10
ALPHA = 1e-3


@pytest.fixture(scope="module")
def batch(photos):
    images = torch.stack([F.to_tensor(F.center_crop(F.resize(img, 72), [64, 80])) for img in photos[:8]])
    images = F.normalize(images, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    labels = torch.tensor([3, 3, 0, 9, 1, 3, 7, 0])
    return images, torch.nn.functional.one_hot(labels, num_classes=K).to(torch.float32)


def _as_numpy(images):
    """float32 as it is; float16/bfloat16 as their uint16 bits (the binding's form)."""
    if images.dtype == torch.float32:
        return images.numpy()
    return images.view(torch.int16).numpy().view(np.uint16)


def _as_torch(array, dtype):
    if dtype == torch.float32:
        return torch.from_numpy(array)
    return torch.from_numpy(array.view(np.int16)).view(dtype)


def _name(dtype):
    return str(dtype).replace("torch.", "")


def reference_mixup(batch, target, lam):
    """RandomMixup.forward after its draws."""
    return mix_(batch.clone(), target.clone(), lam)


def reference_cutmix(batch, target, lam, r_x, r_y):
    """RandomCutmix.forward after its draws (r_x = torch.randint(W, (1,)), r_y = torch.randint(H, (1,))); also
    returns the box and its lambda (x1, y1, x2, y2, lam)."""
    return cut_(batch.clone(), target.clone(), lam, r_x, r_y)


LAMBDAS = [0.0, 0.0371, 0.3719283746, 0.5, 0.93, 1.0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_mixup_equals_the_references(batch, dtype):
    images, target = batch
    images = images.to(dtype)
    for lam in LAMBDAS:
        theirs, theirs_target = reference_mixup(images, target, lam)
        ours, ours_target = ops.mixup(_as_numpy(images), _name(dtype), target.numpy(), lam)
        assert torch.equal(_as_torch(ours, dtype), theirs), (dtype, lam)  # bit for bit, in the dtype's rounding
        assert torch.equal(torch.from_numpy(ours_target), theirs_target), lam
        hwc, _ = ops.mixup(_as_numpy(images.permute(0, 2, 3, 1).contiguous()), _name(dtype), target.numpy(), lam,
                           hwc=True)
        assert torch.equal(_as_torch(hwc, dtype), theirs.permute(0, 2, 3, 1)), (dtype, lam, "hwc")


def test_mixup_in_float16_is_torch_float16_arithmetic_not_float32_rounded(batch):
    """The products round to float16 before the sum: mixing in float32 and rounding once differs."""
    images, target = batch
    h = images.to(torch.float16)
    lam = 0.3719283746
    once = (h.float() * lam + h.roll(1, 0).float() * (1 - lam)).to(torch.float16)
    ours, _ = ops.mixup(_as_numpy(h), "float16", target.numpy(), lam)
    assert not torch.equal(_as_torch(ours, torch.float16), once)


CENTRES = [(0.3719, 40, 32), (0.05, 0, 0), (0.05, 79, 63), (0.6, 3, 60), (0.999, 10, 10), (0.0, 40, 32),
           (1.0, 5, 5)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_cutmix_equals_the_references(batch, dtype):
    images, target = batch
    images = images.to(dtype)
    _, _, height, width = images.shape
    for lam, r_x, r_y in CENTRES:
        theirs, theirs_target, box = reference_cutmix(images, target, lam, r_x, r_y)
        assert ops.cutmix_box(width, height, lam, r_x, r_y) == box
        ours, ours_target = ops.cutmix(_as_numpy(images), _name(dtype), target.numpy(), lam, r_x, r_y)
        assert torch.equal(_as_torch(ours, dtype), theirs), (dtype, lam, r_x, r_y)
        assert torch.equal(torch.from_numpy(ours_target), theirs_target), (lam, r_x, r_y)
        hwc, _ = ops.cutmix(_as_numpy(images.permute(0, 2, 3, 1).contiguous()), _name(dtype), target.numpy(), lam,
                            r_x, r_y, hwc=True)
        assert torch.equal(_as_torch(hwc, dtype), theirs.permute(0, 2, 3, 1)), (dtype, lam, "hwc")


def test_a_batch_of_one_mixes_with_itself(batch):
    images, target = batch
    theirs, theirs_target = reference_mixup(images[:1], target[:1], 0.3)
    ours, ours_target = ops.mixup(images[:1].numpy(), "float32", target[:1].numpy(), 0.3)
    assert torch.equal(torch.from_numpy(ours), theirs) and torch.equal(torch.from_numpy(ours_target), theirs_target)


# ---------------------------------------------------------------- the kernels' draws


def _run(op, images, target, seed, batch_index, alpha=1.0, p=1.0):
    return ops.batch_kernel(op, images.numpy(), "float32", target.numpy(), alpha, p, seed, 0, batch_index)


def _mixed_lambda(ours_target, labels):
    """lambda from sample 1's label row: lambda at its own class, 1 - lambda at sample 0's."""
    return float(ours_target[1, labels[1]])


def test_p_decides_how_often_a_batch_is_mixed(batch):
    images, target = batch
    for op in ("mixup", "cutmix"):
        mixed = sum(not np.array_equal(_run(op, images, target, 4, b, p=0.4)[0], images.numpy()) for b in range(1500))
        assert stats.binomtest(mixed, 1500, 0.4).pvalue > ALPHA, op
        untouched, labels = _run(op, images, target, 4, 0, p=0.0)
        assert np.array_equal(untouched, images.numpy()) and np.array_equal(labels, target.numpy())


@pytest.mark.parametrize("alpha", [0.2, 1.0])
def test_mixup_lambda_is_beta(batch, alpha):
    images, target = batch
    labels = target.argmax(1)  # sample 1 (class 3) pairs with sample 0 (class 3): use samples 2 and 1 (0 vs 3)
    lams = []
    for b in range(3000):
        _, t = _run("mixup", images[1:3], target[1:3], 9, b, alpha=alpha)
        lams.append(float(t[1, labels[2]]))
    lams = np.array(lams)
    assert stats.kstest(lams, stats.beta(alpha, alpha).cdf).pvalue > ALPHA
    assert stats.kstest(lams, stats.beta(alpha * 2, alpha * 2).cdf).pvalue < ALPHA


def test_cutmix_lambda_follows_the_references_draws(batch):
    """The corrected lambda (1 - box area / image area) of our draws against the references' own draws:
    _sample_dirichlet, then torch.randint(W), torch.randint(H)."""
    images, target = batch
    labels = target.argmax(1)
    n, alpha = 3000, 1.0
    _, _, height, width = images.shape
    ours = np.array([float(_run("cutmix", images[1:3], target[1:3], 13, b, alpha=alpha)[1][1, labels[2]])
                     for b in range(n)])
    torch.manual_seed(0)
    theirs = []
    for _ in range(n):
        lam = float(torch._sample_dirichlet(torch.tensor([alpha, alpha]))[0])
        r_x, r_y = int(torch.randint(width, (1,))), int(torch.randint(height, (1,)))
        theirs.append(ops.cutmix_box(width, height, lam, r_x, r_y)[4])
    assert stats.ks_2samp(ours, np.array(theirs)).pvalue > ALPHA
    uncorrected = np.array([float(torch._sample_dirichlet(torch.tensor([alpha, alpha]))[0]) for _ in range(n)])
    assert stats.ks_2samp(ours, uncorrected).pvalue < ALPHA  # the correction is visible to the test


def test_kernels_refuse_integer_images(batch):
    images, target = batch
    with pytest.raises(RuntimeError, match="mixup needs a float32, float16 or bfloat16 image tensor"):
        ops.batch_kernel("mixup", (images * 255).to(torch.uint8).numpy(), "uint8", target.numpy(), 1.0, 1.0, 0, 0, 0)


# ---------------------------------------------------------------- through the executor (batch_ops of a spec)

IMAGENET = dict(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
SPEC = [{"op": "resize", "size": [48, 64]}, {"op": "to_tensor"}, {"op": "normalize", **IMAGENET}]
LABELS = [3, 0, 9, 1, 3, 7]


def _png(img):
    import io
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def _smoothed(e):
    return torch.nn.functional.one_hot(torch.tensor(LABELS), K).float() * (1 - e) + e / K


@pytest.mark.parametrize("e", [0.0, 0.1])
def test_mixup_in_a_spec_mixes_the_collated_batch_as_the_references(photos, e):
    data = [_png(p) for p in photos[:6]]
    base, _ = ops.run(SPEC, data, LABELS)
    mixed, labels = ops.run(SPEC, data, LABELS, batch_ops=[
        {"op": "mixup", "p": 1.0, "alpha": 0.2, "num_classes": K, "label_smoothing": e}], batch=3)
    assert labels.shape == (6, K) and labels.dtype == np.float32
    # Sample 1 (class 0) mixes with sample 0 (class 3): its label at class 0 is lambda (1 - e) + e / K.
    lam = (float(labels[1, 0]) - e / K) / (1 - e)
    onehot = torch.nn.functional.one_hot(torch.tensor(LABELS), K).float()
    ref_images, ref_target = reference_mixup(torch.from_numpy(base), onehot, lam)
    # The references smooth in the loss, after mixing; batchd mixes the smoothed one-hot: equal up to rounding.
    # Measured: images <= 4.8e-7 apart (lambda read back from a float32 label), labels <= 6.1e-8.
    assert np.allclose(mixed, ref_images.numpy(), rtol=0, atol=1e-6)
    assert np.allclose(labels, (ref_target * (1 - e) + e / K).numpy(), rtol=0, atol=2e-7)
    assert not np.array_equal(mixed, base)


def test_cutmix_in_a_spec_pastes_one_box_of_the_rolled_batch(photos):
    data = [_png(p) for p in photos[:6]]
    base, _ = ops.run(SPEC, data, LABELS)
    for batch in range(6):
        out, labels = ops.run(SPEC, data, LABELS, batch_ops=[{"op": "cutmix", "p": 1.0, "num_classes": K}],
                              batch=batch)
        changed = (out != base).any(axis=(0, 1))  # [H, W]: where any sample, any channel changed
        rows, cols = np.flatnonzero(changed.any(1)), np.flatnonzero(changed.any(0))
        if rows.size == 0:
            continue  # a box of zero area (lambda near 1)
        y1, y2, x1, x2 = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
        expected = base.copy()
        expected[:, :, y1:y2, x1:x2] = np.roll(base, 1, axis=0)[:, :, y1:y2, x1:x2]
        assert np.array_equal(out, expected), batch
        lam = 1 - (x2 - x1) * (y2 - y1) / (48 * 64)
        assert float(labels[1, 0]) == np.float32(lam), batch  # sample 1 (class 0) keeps lambda of its own class


def test_random_choice_of_batch_ops_follows_its_weights(photos):
    data = [_png(p) for p in photos[:2]]
    base, _ = ops.run(SPEC, data, [3, 0])
    choice = [{"op": "random_choice", "p": [0, 1], "ops": [
        {"op": "mixup", "p": 1.0, "num_classes": K}, {"op": "cutmix", "p": 1.0, "num_classes": K}]}]
    for batch in range(5):  # always cutmix: every changed pixel is the other sample's
        out, _ = ops.run(SPEC, data, [3, 0], batch_ops=choice, batch=batch)
        rolled = np.roll(base, 1, axis=0)
        assert ((out == base) | (out == rolled)).all(), batch
    out, _ = ops.run(SPEC, data, [3, 0], batch_ops=[dict(choice[0], p=[1, 0])], batch=0)  # always mixup
    assert not ((out == base) | (out == np.roll(base, 1, axis=0))).all()


@pytest.mark.parametrize("ops_,batch_ops,message", [
    (SPEC[:1] + [{"op": "pil_to_tensor"}], [{"op": "mixup", "num_classes": K}],
     "batch_ops[0] (mixup): mixup needs a float image tensor (float32, float16 or bfloat16), not uint8"),
    (SPEC, [{"op": "cutmix"}], "batch_ops[0] (cutmix): num_classes: is required"),
    (SPEC, [{"op": "mixup", "alpha": 0, "num_classes": K}], "batch_ops[0] (mixup): alpha: must be above 0"),
    (SPEC, [{"op": "mixup", "p": 1.5, "num_classes": K}], "batch_ops[0] (mixup): p: 1.5 is out of range [0, 1]"),
    (SPEC + [{"op": "mixup", "num_classes": K}], [], "ops[3] (mixup): is a batch op"),
    (SPEC, [{"op": "random_choice", "ops": [{"op": "mixup", "num_classes": K}, {"op": "horizontal_flip"}]}],
     "batch_ops[0].ops[1] (horizontal_flip): is a per-sample op"),
])
def test_plan_refuses_batch_ops_naming_the_op_and_key(ops_, batch_ops, message):
    with pytest.raises(ValueError) as e:
        ops.plan(ops_, batch_ops)
    assert message in str(e.value)


def test_num_classes_comes_from_the_dataset_when_absent_and_is_written_in_the_canonical_spec():
    """RandomMixup(num_classes=1000) and {"op": "mixup"} on a 1000-class dataset are one pipeline."""
    implicit = ops.plan(SPEC, [{"op": "random_choice", "ops": [{"op": "mixup"}, {"op": "cutmix"}]}], num_classes=1000)
    explicit = ops.plan(SPEC, [{"op": "random_choice", "ops": [{"op": "mixup", "num_classes": 1000},
                                                              {"op": "cutmix", "num_classes": 1000.0}]}],
                        num_classes=1000)
    assert implicit == explicit
    assert implicit != ops.plan(SPEC, [{"op": "random_choice", "ops": [{"op": "mixup"}, {"op": "cutmix"}]}],
                                num_classes=100)
