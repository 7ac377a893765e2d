"""Pipelines as data end to end: one recipe written as Python op dicts, as a torchvision Compose (with the
references' RandomMixup/RandomCutmix) and as a TOML [pipelines.NAME] table gives the same canonical spec (the
daemon's dry run) and bit-identical batches; the daemon's refusal of a bad spec reaches Python naming the op's
position and key."""
import os
import tempfile

import pytest
import torch
from torchvision import transforms as T
from torchvision.transforms import InterpolationMode as IM

import batchd
from conftest import ROOT, _run_daemon
from references_like import ClassificationPresetEval, ClassificationPresetTrain, RandomCutmix, RandomMixup

TESTDATA = os.environ.get("BATCHD_TESTDATA", os.path.join(ROOT, "build", "testdata"))
IMAGES = os.path.join(TESTDATA, "imagefolder")
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]

# Recipes with the ops on main now, each as op dicts and as what a torchvision user writes. "train": the references'
# preset (ClassificationPresetTrain without auto-augment: RandomResizedCrop, flip, PILToTensor, ConvertImageDtype,
# Normalize); "nested": random_apply / random_choice / random_order; "augment": the auto-augment family, color
# (ColorJitter as it stores its factors: [1 - b, 1 + b], [-h, h]) and blur; "eval": ClassificationPresetEval with
# the new recipe's sizes (resize 232, crop 224).
RECIPES = {
    "train": ([{"op": "random_resized_crop", "size": 176, "interpolation": "bilinear"},
               {"op": "horizontal_flip", "p": 0.5},
               {"op": "pil_to_tensor"}, {"op": "convert_image_dtype", "dtype": "float32"},
               {"op": "normalize", "mean": MEAN, "std": STD}],
              lambda: ClassificationPresetTrain(crop_size=176, interpolation=IM.BILINEAR)),
    "nested": ([{"op": "resize", "size": [150, 120]},
                {"op": "random_apply", "p": 0.7, "ops": [{"op": "random_order", "ops": [
                    {"op": "vertical_flip", "p": 1.0}, {"op": "center_crop", "size": [140, 100]}]}]},
                {"op": "random_choice", "p": [0.25, 0.75], "ops": [
                    {"op": "random_resized_crop", "size": [64, 48], "scale": [0.5, 1.0]},
                    {"op": "center_crop", "size": [64, 48]}]},
                {"op": "to_tensor"}],
               lambda: T.Compose([T.Resize((150, 120)),
                                  T.RandomApply([T.RandomOrder([T.RandomVerticalFlip(1.0), T.CenterCrop((140, 100))])],
                                                p=0.7),
                                  T.RandomChoice([T.RandomResizedCrop((64, 48), scale=(0.5, 1.0)),
                                                  T.CenterCrop((64, 48))], p=[0.25, 0.75]),
                                  T.ToTensor()])),
    "augment": ([{"op": "random_resized_crop", "size": 96},
                 {"op": "trivial_augment_wide", "interpolation": "bilinear"},
                 {"op": "random_choice", "ops": [{"op": "rand_augment", "num_ops": 2, "magnitude": 9},
                                                 {"op": "auto_augment", "policy": "imagenet", "fill": [0, 64, 128]}]},
                 {"op": "color_jitter", "brightness": [0.6, 1.4], "contrast": [0.6, 1.4], "saturation": [0.6, 1.4],
                  "hue": [-0.1, 0.1]},
                 {"op": "random_grayscale", "p": 0.2},
                 {"op": "random_apply", "p": 0.5, "ops": [{"op": "gaussian_blur", "kernel_size": 5}]},
                 {"op": "pil_to_tensor"}, {"op": "convert_image_dtype", "dtype": "float32"},
                 {"op": "normalize", "mean": MEAN, "std": STD}],
                lambda: T.Compose([T.RandomResizedCrop(96), T.TrivialAugmentWide(interpolation=IM.BILINEAR),
                                   T.RandomChoice([T.RandAugment(), T.AutoAugment(fill=[0, 64, 128])]),
                                   T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomGrayscale(0.2),
                                   T.RandomApply([T.GaussianBlur(5)]), T.PILToTensor(),
                                   T.ConvertImageDtype(torch.float), T.Normalize(MEAN, STD)])),
    "eval": ([{"op": "resize", "size": 232}, {"op": "center_crop", "size": 224}, {"op": "pil_to_tensor"},
              {"op": "convert_image_dtype", "dtype": "float32"}, {"op": "normalize", "mean": MEAN, "std": STD}],
             lambda: ClassificationPresetEval(crop_size=224, resize_size=232)),
}
SHAPES = {"train": (3, 176, 176), "nested": (3, 64, 48), "augment": (3, 96, 96), "eval": (3, 224, 224)}

# The torchvision reference "new recipe" as a whole (crop 176, ta_wide, random erase 0.1, mixup 0.2 / cutmix 1.0):
# its auto-augment, erasing and batch ops come from the op families merged separately.
NEW_RECIPE_OPS = [{"op": "random_resized_crop", "size": 176}, {"op": "horizontal_flip", "p": 0.5},
                  {"op": "trivial_augment_wide", "interpolation": "bilinear"}, {"op": "pil_to_tensor"},
                  {"op": "convert_image_dtype", "dtype": "float32"}, {"op": "normalize", "mean": MEAN, "std": STD},
                  {"op": "random_erasing", "p": 0.1}]
NEW_RECIPE_BATCH_OPS = [{"op": "random_choice", "ops": [{"op": "mixup", "alpha": 0.2, "p": 1.0},
                                                        {"op": "cutmix", "alpha": 1.0, "p": 1.0}]}]


def _toml_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _daemon_with_pipelines(pipelines):
    """A daemon serving the test image folder as "photos", with `pipelines` (name -> (ops, batch_ops)) as
    [pipelines.NAME] tables; yields its socket."""
    if not os.path.isdir(IMAGES):
        pytest.fail(f"{IMAGES} is missing: make it with tests/data/make_testdata.sh {TESTDATA} "
                    "(ctest runs it as the make_testdata fixture)")
    with tempfile.TemporaryDirectory(prefix="batchd-py-spec-") as tmp:
        config = os.path.join(tmp, "batchd.toml")
        with open(config, "w") as f:
            f.write(f'[datasets.photos]\nformat = "imagefolder"\nroot = "{IMAGES}"\n\n')
            for name, (ops, batch_ops) in pipelines.items():
                f.write(f"[pipelines.{name}]\nops = {_toml_value(ops)}\n")
                if batch_ops:
                    f.write(f"batch_ops = {_toml_value(batch_ops)}\n")
        yield from _run_daemon(tmp, ["--config", config, "--cache-dir", ""])


@pytest.fixture(scope="module")
def photos_daemon():
    yield from _daemon_with_pipelines({f"recipe_{name}": (ops, []) for name, (ops, _) in RECIPES.items()})


def loader(sock, **kw):
    kw.setdefault("batch_size", 8)
    kw.setdefault("seed", 11)
    return batchd.Loader("photos", socket=sock, **{"as_dict": True, "shuffle": True, **kw})


def first_batches(l, n):
    out = []
    for batch in l:
        out.append({k: v.clone() for k, v in batch.items()})
        if len(out) == n:
            break
    l.close()
    return out


def assert_same_batches(a, b, what):
    assert len(a) == len(b)
    for i, (x, y) in enumerate(zip(a, b)):
        assert x.keys() == y.keys(), what
        for k in x:
            assert x[k].dtype == y[k].dtype and x[k].shape == y[k].shape, (what, i, k)
            assert torch.equal(x[k], y[k]), f"{what}: batch {i} tensor {k} differs"


def assert_one_pipeline(loaders, batches_each=3):
    """Every loader of `loaders` (name -> Loader) has the same canonical spec and makes the same batches."""
    specs = {name: l.spec for name, l in loaders.items()}
    first = next(iter(specs))
    for name, spec in specs.items():
        assert spec == specs[first], f"canonical spec of {name} differs from {first}'s"
    assert specs[first]["ops"][0]["op"] == "decode", "the canonical spec starts with decode"
    batches = {name: first_batches(l, batches_each) for name, l in loaders.items()}
    for name in batches:
        assert_same_batches(batches[first], batches[name], f"{name} vs {first}")
    return specs[first], batches[first]


@pytest.mark.parametrize("recipe", sorted(RECIPES))
def test_a_recipe_as_op_dicts_compose_and_toml_is_one_pipeline(photos_daemon, recipe):
    ops, make_transform = RECIPES[recipe]
    shuffle = recipe != "eval"
    spec, batches = assert_one_pipeline({
        "op dicts": loader(photos_daemon, transform=ops, shuffle=shuffle),
        "torchvision": loader(photos_daemon, transform=make_transform(), shuffle=shuffle),
        "TOML": loader(photos_daemon, pipeline=f"recipe_{recipe}", shuffle=shuffle),
    })
    assert len(spec["ops"]) == len(ops) + 1 and spec["batch_ops"] == []
    image = batches[0]["image"]
    assert image.dtype == torch.float32 and image.shape == (8, *SHAPES[recipe])
    assert batches[0]["label"].dtype == torch.int64
    # The random ops do draw: another seed gives other pixels (the eval recipe has none).
    other = first_batches(loader(photos_daemon, transform=ops, shuffle=shuffle, seed=12), 1)[0]
    if recipe != "eval":
        same_samples = other["index"].tolist() == batches[0]["index"].tolist()
        assert not same_samples or not torch.equal(other["image"], image)


def test_color_jitter_given_as_a_number_makes_the_bytes_of_the_compose(photos_daemon):
    # ColorJitter(0.4) stores [0.6, 1.4]; {"brightness": 0.4} means the same range (torchvision's _check_input),
    # so the draws and the pixels are the same.
    tail = [{"op": "center_crop", "size": 64}, {"op": "to_tensor"}]
    numbers = [{"op": "color_jitter", "brightness": 0.4, "contrast": 0.3, "saturation": 0.2, "hue": 0.1}, *tail]
    compose = T.Compose([T.ColorJitter(0.4, 0.3, 0.2, 0.1), T.CenterCrop(64), T.ToTensor()])
    a = first_batches(loader(photos_daemon, transform=numbers), 2)
    b = first_batches(loader(photos_daemon, transform=compose), 2)
    assert_same_batches(a, b, "ColorJitter numbers vs Compose")


def test_the_new_recipe_with_mixup_and_cutmix_is_one_pipeline():
    classes = len(os.listdir(IMAGES))
    with tempfile.TemporaryDirectory(prefix="batchd-py-probe-") as tmp:  # which ops this daemon has
        for sock in _run_daemon(tmp, ["--cache-dir", "", "--config", _photos_only_config(tmp)]):
            try:
                len(loader(sock, transform=NEW_RECIPE_OPS, batch_transform=NEW_RECIPE_BATCH_OPS))
            except batchd.BatchdError as e:
                if "unknown op" not in str(e):
                    raise
                pytest.skip(f"an op of the new recipe is not in this build yet: {e}")
    compose = ClassificationPresetTrain(crop_size=176, interpolation=IM.BILINEAR, auto_augment_policy="ta_wide",
                                        random_erase_prob=0.1)
    mix = T.RandomChoice([RandomMixup(classes, p=1.0, alpha=0.2), RandomCutmix(classes, p=1.0, alpha=1.0)])
    for sock in _daemon_with_pipelines({"new_recipe": (NEW_RECIPE_OPS, NEW_RECIPE_BATCH_OPS)}):
        _, batches = assert_one_pipeline({
            "op dicts": loader(sock, transform=NEW_RECIPE_OPS, batch_transform=NEW_RECIPE_BATCH_OPS),
            "torchvision": loader(sock, transform=compose, batch_transform=mix),
            "TOML": loader(sock, pipeline="new_recipe"),
        })
    label = batches[0]["label"]
    assert batches[0]["image"].shape == (8, 3, 176, 176)
    assert label.dtype == torch.float32 and label.shape == (8, classes)
    assert torch.allclose(label.sum(1), torch.ones(8)), "mixed one-hot labels sum to 1"


def _photos_only_config(tmp):
    path = os.path.join(tmp, "photos.toml")
    with open(path, "w") as f:
        f.write(f'[datasets.photos]\nformat = "imagefolder"\nroot = "{IMAGES}"\n')
    return path


@pytest.mark.parametrize("dtype", [torch.float, torch.float16, torch.bfloat16])
def test_a_compose_with_exact_decode_makes_what_torchvision_makes(photos_daemon, dtype):
    from torchvision.datasets import ImageFolder
    compose = T.Compose([T.Resize(232), T.CenterCrop(224), T.PILToTensor(), T.ConvertImageDtype(dtype),
                         T.Normalize(MEAN, STD)])
    reference = ImageFolder(IMAGES, transform=compose)
    l = loader(photos_daemon, transform=compose, exact_decode=True, shuffle=False)
    assert l.spec["ops"][0] == {"op": "decode", "exact_decode": True, "max_side": 0.0}
    for batch in first_batches(l, 2):
        for k, i in enumerate(batch["index"].tolist()):
            image, label = reference[i]
            assert batch["label"][k].item() == label
            assert batch["image"].dtype == dtype
            assert torch.equal(batch["image"][k], image), f"sample {i}"


def test_a_spec_the_daemon_refuses_names_the_op_position_and_key(photos_daemon):
    bad = [*RECIPES["eval"][0][:4], {"op": "normalize", "mean": [0.5, 0.5], "std": STD}]
    with pytest.raises(batchd.BatchdError, match=r"ops\[4\] \(normalize\): mean: has 2 numbers") as e:
        len(loader(photos_daemon, transform=bad))
    assert e.value.code == "invalid argument"
    nested = [{"op": "random_apply", "ops": [{"op": "resize", "size": 8, "interpolation": "lanczos"}]}]
    with pytest.raises(batchd.BatchdError, match=r"ops\[0\]\.ops\[0\] \(resize\): interpolation"):
        len(loader(photos_daemon, transform=nested + RECIPES["eval"][0]))
