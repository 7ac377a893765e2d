"""A torchvision ImageFolder object named to the daemon (batchd._loader.folder.folder_options + open_stream(folder=,
indices=)): served with the ImageFolder's own samples and labels (also over a tree whose listing order is tricky), a
Subset read exactly, refused objects with the reason, and a folder the daemon does not serve (root unknown, listing
changed, hostile root) refused with the cause and the fixes while the daemon serves others after."""
import os
import shutil
import tempfile

import pytest
import torch
from torch.utils.data import Subset
from torchvision import datasets, transforms

from batchd import BatchdError, _batchd
from batchd._loader.folder import folder_options
from conftest import ROOT, _run_daemon

TESTDATA = os.environ.get("BATCHD_TESTDATA", os.path.join(ROOT, "build", "testdata"))
IMAGES = os.path.join(TESTDATA, "imagefolder")
VAL = dict(pipeline="val224", crop_size=32, resize_size=36)  # small images: the test is about which samples


def _tricky_tree(dst):
    """A copy of the test images laid out where std::filesystem and os.walk could disagree: nested directories whose
    names sort across '/' ("a b" < "a/x" < "a0"), upper-case extensions, a file named only ".jpg", a class reached
    through a symlink, and files torchvision ignores (.txt)."""
    jpgs = sorted(os.path.join(d, f) for d, _, fs in os.walk(IMAGES) for f in fs if f.endswith(".jpg"))
    layout = ["cat/a/x/1.jpg", "cat/a b/2.JPG", "cat/a0/3.jpeg", "cat/.jpg", "cat/z.Png", "cat/notes.txt",
              "dog/b.jpg", "dog/a.jpg", "dog/sub/c.jpg", "Zebra/q.jpg"]
    for i, rel in enumerate(layout):
        path = os.path.join(dst, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if rel.endswith(".txt"):
            open(path, "w").close()
        elif rel.endswith(".Png"):
            shutil.copy(os.path.join(IMAGES, sorted(os.listdir(IMAGES))[0], "zz_png_sample.png"), path)
        else:
            shutil.copy(jpgs[i], path)
    linked = os.path.join(os.path.dirname(dst), "linked-class")
    os.makedirs(linked, exist_ok=True)
    shutil.copy(jpgs[20], os.path.join(linked, "l.jpg"))
    os.symlink(linked, os.path.join(dst, "emu"))


@pytest.fixture(scope="module")
def folders():
    """A daemon serving the test images as "photos", the tricky tree as "tricky", and a copy as "growing" (the tests
    change it after the daemon listed it); yields (socket, {name: root})."""
    if not os.path.isdir(IMAGES):
        pytest.fail(f"{IMAGES} is missing: make it with tests/data/make_testdata.sh {TESTDATA}")
    with tempfile.TemporaryDirectory(prefix="batchd-py-folder-") as tmp:
        roots = {"photos": IMAGES, "tricky": os.path.join(tmp, "tricky", "root"),
                 "growing": os.path.join(tmp, "growing")}
        _tricky_tree(roots["tricky"])
        shutil.copytree(IMAGES, roots["growing"])
        config = os.path.join(tmp, "batchd.toml")
        with open(config, "w") as f:
            for name, root in roots.items():
                f.write(f'[datasets.{name}]\nformat = "imagefolder"\nroot = "{root}"\n\n')
        for sock in _run_daemon(tmp, ["--config", config, "--cache-dir", ""]):
            yield sock, roots


def read_all(sock, **kw):
    """Every (index, label) the stream delivers, in order, and its info."""
    stream = _batchd.Client(sock).open_stream(batch_size=7, **VAL, **kw)
    out = []
    while (item := stream.next_arrays()) is not None:
        arrays = item[1]
        out += list(zip(arrays["index"].tolist(), arrays["label"].tolist()))
    return out, stream.info


@pytest.mark.parametrize("name", ["photos", "tricky"])
def test_an_imagefolder_is_served_with_its_own_samples_and_labels(folders, name):
    sock, roots = folders
    folder = datasets.ImageFolder(roots[name], transforms.ToTensor())
    kwargs, transform = folder_options(folder)
    assert isinstance(transform, transforms.ToTensor)
    got, info = read_all(sock, shuffle=False, **kwargs)
    assert info["dataset"] == name and info["dataset_size"] == len(folder)
    assert got == [(i, folder.samples[i][1]) for i in range(len(folder))]  # index i is samples[i], same label
    if name == "tricky":  # the listing torchvision makes, which the daemon matched
        rel = [os.path.relpath(p, roots[name]) for p, _ in folder.samples]
        assert rel == ["Zebra/q.jpg", "cat/.jpg", "cat/z.Png", "cat/a b/2.JPG", "cat/a/x/1.jpg", "cat/a0/3.jpeg",
                       "dog/a.jpg", "dog/b.jpg", "dog/sub/c.jpg", "emu/l.jpg"]
        assert folder.class_to_idx == {"Zebra": 0, "cat": 1, "dog": 2, "emu": 3}


def test_a_subset_reads_only_its_indices_each_once_per_epoch(folders):
    sock, roots = folders
    folder = datasets.ImageFolder(roots["photos"])
    picked = [40, 3, 4, 5, 6, 17, 0, 59, 58]
    kwargs, _ = folder_options(Subset(folder, picked))
    assert kwargs["indices"] == picked
    got, info = read_all(sock, shuffle=True, seed=3, num_epochs=2, **kwargs)
    assert info["subset_size"] == len(picked) and info["samples_per_epoch"] == len(picked)
    for epoch in (got[:len(picked)], got[len(picked):]):
        assert sorted(i for i, _ in epoch) == sorted(picked)
        assert all(label == folder.samples[i][1] for i, label in epoch)
    # Nested Subsets and a range (one run on the wire), sharded over two ranks.
    nested = Subset(Subset(folder, range(10, 50)), [0, 39, 2, -1])
    kwargs, _ = folder_options(nested)
    assert kwargs["indices"] == [10, 49, 12, 49]
    ranks = [read_all(sock, shuffle=False, rank=r, world_size=2, **folder_options(Subset(folder, range(10, 50)))[0])[0]
             for r in (0, 1)]
    assert sorted(i for part in ranks for i, _ in part) == list(range(10, 50))


def test_a_subset_index_past_the_dataset_is_refused_naming_it(folders):
    sock, roots = folders
    kwargs, _ = folder_options(datasets.ImageFolder(roots["photos"]))
    with pytest.raises(BatchdError, match=r"subset index 61 \(position 2 of the subset\) is out of range"):
        read_all(sock, indices=[0, 1, 61, 62], **kwargs)


class MyFolder(datasets.ImageFolder):
    pass


@pytest.mark.parametrize("make, why", [
    (lambda r: MyFolder(r), "subclass of torchvision's ImageFolder"),
    (lambda r: datasets.ImageFolder(r, loader=lambda p: open(p, "rb").read()), "custom loader"),
    (lambda r: datasets.ImageFolder(r, is_valid_file=lambda p: p.endswith(".jpg")), "is_valid_file"),
    (lambda r: datasets.ImageFolder(r, target_transform=lambda y: y + 1), "target_transform"),
    (lambda r: torch.utils.data.TensorDataset(torch.zeros(3)), "serves other Dataset objects as your own"),
])
def test_what_batchd_cannot_reproduce_is_refused_naming_why(folders, make, why):
    with pytest.raises(TypeError, match=why) as e:
        folder_options(make(folders[1]["photos"]))
    assert "your own" in str(e.value)


def test_a_root_the_daemon_does_not_serve_names_the_fixes(folders, tmp_path):
    sock, roots = folders
    shutil.copytree(roots["photos"], tmp_path / "copy")
    kwargs, _ = folder_options(datasets.ImageFolder(str(tmp_path / "copy")))
    with pytest.raises(BatchdError) as e:
        read_all(sock, **kwargs)
    message = str(e.value)
    assert e.value.code == "not found"
    for words in (os.path.realpath(tmp_path / "copy"), '[datasets.NAME] format = "imagefolder"', "private=True",
                  f"photos ({os.path.realpath(IMAGES)})"):
        assert words in message, message


def test_a_listing_that_differs_says_how(folders):
    sock, roots = folders
    growing = roots["growing"]
    first = sorted(os.listdir(growing))[0]
    src = os.path.join(growing, first, sorted(os.listdir(os.path.join(growing, first)))[0])
    shutil.copy(src, os.path.join(growing, first, "added-later.jpg"))  # after the daemon listed it
    with pytest.raises(BatchdError, match=rf"(?s)its sample list differs: 62 samples in yours vs 61 .*first class "
                                          rf"whose count differs is '{first}'.*SIGHUP") as e:
        read_all(sock, **folder_options(datasets.ImageFolder(growing))[0])
    assert e.value.code == "invalid argument"
    os.makedirs(os.path.join(growing, "aaa-new-class"))
    shutil.copy(src, os.path.join(growing, "aaa-new-class", "x.jpg"))
    with pytest.raises(BatchdError, match=r"the class names differ: the daemon has \d+ classes, yours \d+; class 0 "
                                          r"is '[^']+' here and 'aaa-new-class' in yours"):
        read_all(sock, **folder_options(datasets.ImageFolder(growing))[0])


def test_a_file_batchd_does_not_decode_is_refused_on_the_client_naming_it(tmp_path):
    shutil.copytree(IMAGES, tmp_path / "f")
    cls = sorted(os.listdir(tmp_path / "f"))[0]
    open(tmp_path / "f" / cls / "old.bmp", "wb").close()
    with pytest.raises(ValueError, match=r"old\.bmp\) is not a \.jpg, \.jpeg or \.png"):
        folder_options(datasets.ImageFolder(str(tmp_path / "f")))


@pytest.mark.parametrize("root", ["/root", "/etc", "/proc/self/root/etc", "relative/path", "/" + "a" * 5000],
                         ids=["root", "etc", "proc", "relative", "too-long"])
def test_a_hostile_folder_reference_is_refused_and_the_daemon_serves_others_after(folders, root):
    sock, _ = folders
    ref = dict(root=root, classes=["x"], num_samples=1, class_sizes=[1], digest="0" * 32)
    with pytest.raises(BatchdError) as e:
        read_all(sock, folder=ref)
    assert e.value.code == ("not found" if root.startswith("/") and len(root) < 4096 else "invalid argument")
    assert "[datasets.NAME]" in str(e.value) or "absolute path" in str(e.value)
    got, info = read_all(sock, dataset="photos", shuffle=False)  # the daemon is alive and serves
    assert info["dataset"] == "photos" and len(got) == info["dataset_size"]
