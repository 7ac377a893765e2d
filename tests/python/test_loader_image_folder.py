"""batchd.Loader over a torchvision ImageFolder object, as DataLoader takes one (issue 25): served natively by a daemon
that declares the folder, a subclass served as your own Dataset, and a private daemon serving the folder when no
daemon answers. The drop-in's arguments: test_dataloader_surface.py."""
import os
import subprocess
import sys
import tempfile
import time

import pytest
import torch

import batchd
from conftest import _run_daemon

IMAGES = os.path.join(os.environ.get("BATCHD_TESTDATA", ""), "imagefolder")


def _folder(transform):
    import torchvision as tv  # the project venv has it: a missing reference fails, never skips
    return tv.datasets.ImageFolder(IMAGES, transform=transform)


def _small():
    import torchvision.transforms as T
    return T.Compose([T.Resize(40), T.CenterCrop(32), T.ToTensor()])


@pytest.fixture(scope="module")
def folder_daemon():
    if not os.path.isdir(IMAGES):
        pytest.fail(f"no test images at {IMAGES}: run ctest's make_testdata (BATCHD_TESTDATA)")
    with tempfile.TemporaryDirectory(prefix="batchd-py-folder-") as tmp:
        config = os.path.join(tmp, "batchd.toml")
        with open(config, "w") as f:
            f.write(f'[datasets.photos]\nformat = "imagefolder"\nroot = "{IMAGES}"\n')
        yield from _run_daemon(tmp, ["--config", config])


def test_an_image_folder_object_is_served_with_its_samples_and_classes(folder_daemon):
    folder = _folder(_small())
    loader = batchd.Loader(folder, 8, socket=folder_daemon, as_dict=True)
    assert loader.dataset is folder and len(loader) == -(-len(folder) // 8)
    seen = []
    for batch in loader:
        assert batch["image"].shape[1:] == (3, 32, 32)
        seen += list(zip(batch["index"].tolist(), batch["label"].tolist()))
    assert seen == [(i, folder.samples[i][1]) for i in range(len(folder))]
    image, label = next(iter(batchd.Loader(torch.utils.data.Subset(folder, [3, 1]), 2, socket=folder_daemon)))
    assert label.tolist() == [folder.samples[3][1], folder.samples[1][1]]
    assert (image[0] - folder[3][0]).abs().mean() < 0.02  # the same photo (batchd decodes fast: not bit-exact)


def test_an_image_folder_subclass_is_served_as_your_own_dataset(folder_daemon):
    # A subclass may change what a sample is, so the daemon does not serve it natively: the Loader's own workers
    # run its __getitem__ (issue 26), and the batches are DataLoader's.
    import torchvision as tv  # the project venv has it: a missing reference fails, never skips

    class Mine(tv.datasets.ImageFolder):
        pass

    mine = Mine(IMAGES, transform=_small())
    loader = batchd.Loader(mine, 4, socket=folder_daemon, num_workers=2)
    try:
        assert loader._own is not None
        image, label = next(iter(loader))
        expected_image, expected_label = next(iter(torch.utils.data.DataLoader(mine, 4)))
        assert torch.equal(image, expected_image) and torch.equal(label, expected_label)
    finally:
        loader.close()


def test_with_no_daemon_answering_a_private_daemon_serves_the_folder_and_ends_with_the_trainer(tmp_path):
    script = ("import sys, torchvision, torchvision.transforms as T, batchd\n"
              f"folder = torchvision.datasets.ImageFolder({IMAGES!r}, T.Compose([T.Resize(40), T.CenterCrop(32), "
              "T.ToTensor()]))\n"
              "loader = batchd.Loader(folder, 4, num_workers=1)\n"
              "image, label = next(iter(loader))\n"
              "from batchd._daemon.private import private_daemon\n"
              "print(private_daemon().pid, tuple(image.shape), flush=True)\n")
    env = {k: v for k, v in os.environ.items() if k != "BATCHD_SOCKET"}
    env["XDG_RUNTIME_DIR"] = str(tmp_path)  # the private daemon's directory: here
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    pid, shape = out.stdout.split(maxsplit=1)
    assert shape.strip() == "(4, 3, 32, 32)"
    for _ in range(100):
        if not os.path.exists(f"/proc/{pid}"):
            break
        time.sleep(0.1)
    assert not os.path.exists(f"/proc/{pid}"), "the private daemon outlived its trainer"
