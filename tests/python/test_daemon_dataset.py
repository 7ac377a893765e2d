"""A dataset named by string (batchd.Loader("name").dataset, a DaemonDataset): len, classes and class_to_idx as
torchvision's ImageFolder over the same root has them (also over a tree whose class names sort differently by case
and through a symlink), no such attributes for a dataset without class names (idx), and, for an imagefolder whose
class names the daemon leaves out of its reply (over 512 KiB), an AttributeError saying how many there are."""
import os
import tempfile

import pytest
from torchvision import datasets

import batchd
from conftest import _run_daemon
from test_folder import IMAGES, _tricky_tree

FMNIST = "/usr/share/datasets/fashion-mnist"
WIDE = 2100  # classes of 250-byte names: 2100 * 254 bytes > 512 KiB


@pytest.fixture(scope="module")
def daemon():
    """Datasets "photos" (the test images), "tricky" (test_folder's tree), "wide" (WIDE classes, one file each: the
    daemon lists it, nothing decodes it) and "digits" (idx); yields (socket, {name: root})."""
    if not os.path.isdir(IMAGES):
        pytest.fail(f"{IMAGES} is missing: run ctest's make_testdata (BATCHD_TESTDATA)")
    with tempfile.TemporaryDirectory(prefix="batchd-py-daemon-dataset-") as tmp:
        roots = {"photos": IMAGES, "tricky": os.path.join(tmp, "tricky", "root"), "wide": os.path.join(tmp, "wide")}
        _tricky_tree(roots["tricky"])
        for i in range(WIDE):
            name = os.path.join(roots["wide"], f"{i:0>250}")
            os.makedirs(name)
            open(os.path.join(name, "1.jpg"), "wb").close()
        config = os.path.join(tmp, "batchd.toml")
        with open(config, "w") as f:
            for name, root in roots.items():
                f.write(f'[datasets.{name}]\nformat = "imagefolder"\nroot = "{root}"\n\n')
            f.write(f'[datasets.digits]\nformat = "idx"\nimages = "{FMNIST}/t10k-images-idx3-ubyte.gz"\n'
                    f'labels = "{FMNIST}/t10k-labels-idx1-ubyte.gz"\n')
        for sock in _run_daemon(tmp, ["--config", config, "--cache-dir", ""]):
            yield sock, roots


@pytest.mark.parametrize("name", ["photos", "tricky"])
def test_an_imagefolder_by_name_has_torchvisions_classes_and_class_to_idx(daemon, name):
    sock, roots = daemon
    folder = datasets.ImageFolder(roots[name])
    sut = batchd.Loader(name, 4, pipeline="val224", socket=sock).dataset
    assert len(sut) == len(folder)
    assert sut.classes == folder.classes and sut.class_to_idx == folder.class_to_idx
    if name == "tricky":
        assert sut.classes == ["Zebra", "cat", "dog", "emu"]  # by code point; emu is a symlinked directory


def test_a_dataset_without_class_names_has_neither_attribute(daemon):
    sut = batchd.Loader("digits", 4, pipeline="fmnist", socket=daemon[0]).dataset
    assert len(sut) == 10000
    assert not hasattr(sut, "classes") and not hasattr(sut, "class_to_idx")
    with pytest.raises(AttributeError, match="'digits' has no class names"):
        sut.classes


def test_class_names_past_the_reply_bound_are_an_attribute_error_with_the_count(daemon):
    sut = batchd.Loader("wide", 1, pipeline="val224", socket=daemon[0]).dataset
    assert len(sut) == WIDE
    with pytest.raises(AttributeError, match=f"'wide' has {WIDE} classes whose names take over 512 KiB"):
        sut.classes
