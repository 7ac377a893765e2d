"""batchd — the PyTorch-side client of the batchd data-loading daemon.

One changed line to switch from torch.utils.data.DataLoader::

    loader = batchd.Loader("fashion-mnist", pipeline="fmnist", batch_size=256)   # was: DataLoader(...)
    for epoch in range(10):
        loader.set_epoch(epoch)                      # optional, as with DistributedSampler
        for batch in loader:                         # {"image": float32 [B,1,28,28], "label": int64 [B],
            train_step(batch["image"], batch["label"])  #  "index": int64 [B]}

An ImageFolder dataset with your own torchvision recipe, run by the daemon's native ops (no Python per sample)::

    from torchvision import transforms as T
    train = T.Compose([T.RandomResizedCrop(176), T.RandomHorizontalFlip(), T.TrivialAugmentWide(),
                       T.PILToTensor(), T.ConvertImageDtype(torch.float),
                       T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)), T.RandomErasing(0.1)])
    loader = batchd.Loader("imagenet-train", transform=train, batch_size=128,
                           batch_transform=[{"op": "random_choice",
                                             "ops": [{"op": "mixup", "alpha": 0.2, "p": 1.0},
                                                     {"op": "cutmix", "alpha": 1.0, "p": 1.0}]}])
    # or transform=[{"op": "random_resized_crop", "size": 176}, {"op": "horizontal_flip"}, ...] (op dicts)

Language-model token files (a `format = "tokens"` dataset, nanoGPT's train.bin) with pipeline "lm"::

    loader = batchd.Loader("owt-train", pipeline="lm", batch_size=32, as_tuple=True)
    for x, y in loader:                              # input_ids, targets: int64 [B,T] (window[:-1], window[1:])
        loss = model(x, y)

Tensors are zero-copy views of the batch in the daemon's shared memory: the batch's slot is returned to the
daemon when the last tensor viewing it is freed (never earlier), so keep tensors only as long as you need them, or
.clone() them. They are writable, as DataLoader's are: in-place ops change only your own batch (the daemon lets no
other user open your stream's segment; see docs/operations.md).
"""
try:
    import torch
except ImportError as e:
    raise ImportError(f"batchd needs PyTorch >= 2.6 ({e}): install it into this Python's venv (pip install "
                      "'torch>=2.6'; `pip install .` of batchd does that), or use the project venv of "
                      "./setup.sh --tests (.venv/bin/python)") from e

from ._batchd import BatchdError, __version__
from ._loader.loader import Loader

__all__ = ["Loader", "BatchdError"]
