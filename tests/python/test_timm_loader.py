"""timm's data path with batchd.Loader switched in (issue 40, item 8; docs/switching.md): timm.data.create_loader
builds its loader as `torch.utils.data.DataLoader(dataset, ...)` (timm/data/loader.py): here that name is batchd.Loader
for the call, as a one-word switch in timm's source would make it. Its ImageDataset over the generated image folder,
its training transforms, fast_collate, its worker_init_fn (seeding numpy from get_worker_info().seed) and its
PrefetchLoader on the CPU; one epoch of a small timm model. Against a real daemon; the batches are compared with
DataLoader's, byte for byte, from the same torch.manual_seed."""
import os
import random

import pytest
import torch

import batchd

timm = pytest.importorskip("timm")  # pinned in tests/requirements.txt: absent only outside the project's venv
from timm.data import ImageDataset, create_loader  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IMAGES = os.path.join(os.environ.get("BATCHD_TESTDATA", os.path.join(ROOT, "build", "testdata")), "imagefolder")
pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create")


def timm_loader(loader_class, sock):
    """timm's create_loader, with `loader_class` where timm names torch.utils.data.DataLoader."""
    original = torch.utils.data.DataLoader
    if loader_class is not original:
        torch.utils.data.DataLoader = lambda *args, **kwargs: loader_class(*args, socket=sock, **kwargs)
    try:
        return create_loader(ImageDataset(IMAGES), input_size=(3, 64, 64), batch_size=8, is_training=True,
                             num_workers=2, device=torch.device("cpu"), use_prefetcher=True, persistent_workers=True,
                             worker_seeding="all", color_jitter=0.4, re_prob=0.25)
    finally:
        torch.utils.data.DataLoader = original


def epoch(loader, model=None):
    """The epoch's (input, target) pairs, seeded as a training script seeds (timm's RandomErasing runs in the
    trainer on Python's random); a training step on each if `model`."""
    torch.manual_seed(0)
    random.seed(0)
    out = []
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01) if model is not None else None
    for x, y in loader:
        out.append((x.clone(), y.clone()))
        if model is not None:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            assert torch.isfinite(loss)
    return out


def test_timm_create_loader_runs_an_epoch_with_dataloaders_batches(sock):
    ours = timm_loader(batchd.Loader, sock)
    theirs = timm_loader(torch.utils.data.DataLoader, sock)
    assert isinstance(ours.loader, batchd.Loader) and type(theirs.loader) is torch.utils.data.DataLoader
    try:
        model = timm.create_model("resnet10t", pretrained=False, num_classes=len(os.listdir(IMAGES)))
        got = epoch(ours, model)
        want = epoch(theirs)
        assert len(got) == len(want) == len(ours) == len(theirs) > 0
        for k, ((x, y), (x2, y2)) in enumerate(zip(got, want)):
            assert x.dtype == x2.dtype == torch.float32 and x.shape == x2.shape == (8, 3, 64, 64), k
            assert torch.equal(y, y2), k
            assert torch.equal(x, x2), f"batch {k}: timm's random transforms drew differently"
    finally:
        ours.loader.close()
