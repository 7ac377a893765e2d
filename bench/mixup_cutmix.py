"""RandomMixup and RandomCutmix of pytorch/vision's references/classification/transforms.py (v0.14), for a
DataLoader's collate_fn.

That file is not part of the torchvision package (Debian's python3-torchvision does not install it): training
scripts copy it next to train.py, which builds, when --mixup-alpha / --cutmix-alpha are given,

    mixupcutmix = torchvision.transforms.RandomChoice([RandomMixup(num_classes, p=1.0, alpha=mixup_alpha),
                                                       RandomCutmix(num_classes, p=1.0, alpha=cutmix_alpha)])
    collate_fn = lambda batch: mixupcutmix(*default_collate(batch))

These classes do what the references' do, written here from their behaviour: same constructor (num_classes, p=0.5,
alpha=1.0, inplace=False) and checks, and per call on a float [B, C, H, W] batch and an int64 [B] target: copy
both (unless inplace), turn the target into a one-hot of the batch's dtype, return them as they are when
torch.rand(1) >= p, else draw lambda ~ Beta(alpha, alpha) (torch._sample_dirichlet of [alpha, alpha], first
component, as the references draw it) and mix each sample with its neighbour batch.roll(1, 0):
  mixup:  x = lambda x + (1 - lambda) x_rolled, y likewise;
  cutmix: a box centred at (torch.randint(W), torch.randint(H)) with half sides int(0.5 sqrt(1 - lambda) W) and
          int(0.5 sqrt(1 - lambda) H), clamped to the image, takes the rolled batch's pixels; lambda becomes
          1 - box area / image area and mixes y.
batchd.Loader(batch_transform=...) recognises them (batchd/_transforms/batch.py: class name RandomMixup /
RandomCutmix with the attributes num_classes, p, alpha, inplace) and runs the same semantics as its mixup / cutmix
batch ops, so one object serves both sides of bench/compare_recipes.py. tests/ops/test_batch_ops.py checks batchd's
kernels against mix_() and cut_() below.
"""
import math

import torch


def mix_(batch, target, lam):
    """Mixup with a given lambda, in place: batch and target (float one-hot) mixed with their roll(1, 0)."""
    batch_rolled, target_rolled = batch.roll(1, 0), target.roll(1, 0)
    batch_rolled.mul_(1.0 - lam)
    batch.mul_(lam).add_(batch_rolled)
    target_rolled.mul_(1.0 - lam)
    target.mul_(lam).add_(target_rolled)
    return batch, target


def cut_(batch, target, lam, r_x, r_y):
    """Cutmix with a given lambda and box centre (ints), in place; returns (batch, target, (x1, y1, x2, y2, lambda
    of the box))."""
    height, width = batch.shape[-2], batch.shape[-1]
    r = 0.5 * math.sqrt(1.0 - lam)
    half_w, half_h = int(r * width), int(r * height)
    x1, y1 = max(r_x - half_w, 0), max(r_y - half_h, 0)
    x2, y2 = min(r_x + half_w, width), min(r_y + half_h, height)
    batch[:, :, y1:y2, x1:x2] = batch.roll(1, 0)[:, :, y1:y2, x1:x2]
    lam = float(1.0 - (x2 - x1) * (y2 - y1) / (width * height))
    target_rolled = target.roll(1, 0)
    target_rolled.mul_(1.0 - lam)
    target.mul_(lam).add_(target_rolled)
    return batch, target, (x1, y1, x2, y2, lam)


class RandomMixup(torch.nn.Module):
    """references/classification/transforms.py's RandomMixup (see the module docstring)."""

    def __init__(self, num_classes, p=0.5, alpha=1.0, inplace=False):
        super().__init__()
        if num_classes < 1:
            raise ValueError(f"num_classes must be positive, got {num_classes}")
        if alpha <= 0:
            raise ValueError(f"alpha must be positive, got {alpha}")
        self.num_classes, self.p, self.alpha, self.inplace = num_classes, p, alpha, inplace

    def _prepare(self, batch, target):
        """The checks and the one-hot target; None for lambda when the batch is left unmixed (probability 1 - p)."""
        if batch.ndim != 4 or not batch.is_floating_point():
            raise ValueError(f"batch must be a float [B, C, H, W] tensor, got {batch.dtype} {list(batch.shape)}")
        if target.ndim != 1 or target.dtype != torch.int64:
            raise ValueError(f"target must be an int64 [B] tensor, got {target.dtype} {list(target.shape)}")
        if not self.inplace:
            batch = batch.clone()
        target = torch.nn.functional.one_hot(target, num_classes=self.num_classes).to(dtype=batch.dtype)
        if torch.rand(1).item() >= self.p:
            return batch, target, None
        return batch, target, float(torch._sample_dirichlet(torch.tensor([self.alpha, self.alpha]))[0])

    def forward(self, batch, target):
        batch, target, lam = self._prepare(batch, target)
        return (batch, target) if lam is None else mix_(batch, target, lam)

    def __repr__(self):
        return (f"{type(self).__name__}(num_classes={self.num_classes}, p={self.p}, alpha={self.alpha}, "
                f"inplace={self.inplace})")


class RandomCutmix(RandomMixup):
    """references/classification/transforms.py's RandomCutmix (see the module docstring)."""

    def forward(self, batch, target):
        batch, target, lam = self._prepare(batch, target)
        if lam is None:
            return batch, target
        r_x = int(torch.randint(batch.shape[-1], (1,)))
        r_y = int(torch.randint(batch.shape[-2], (1,)))
        return cut_(batch, target, lam, r_x, r_y)[:2]
