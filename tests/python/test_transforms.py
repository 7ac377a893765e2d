"""Loader(transform=..., batch_transform=...) without a daemon: torchvision (v1) transforms -> batchd's op dicts
(batchd/_transforms/translate.py), refusals that name the transform, the op-dict form's checks
(batchd/_transforms/spec.py), and the Loader's argument rules (checked before it connects)."""
import re

import pytest
import torch
from torchvision import transforms as T
from torchvision.transforms import InterpolationMode as IM

import batchd
from batchd._transforms.spec import spec_from
from batchd._transforms.batch import batch_ops_from_torchvision
from batchd._transforms.translate import ops_from_torchvision
from references_like import ClassificationPresetEval, ClassificationPresetTrain, RandomCutmix, RandomMixup

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]

# Each class with non-default attributes where it has any, and the op dict it must become.
CASES = [
    (T.Resize(232, interpolation=IM.BICUBIC),
     {"op": "resize", "size": 232, "interpolation": "bicubic", "antialias": True}),
    (T.Resize([256]), {"op": "resize", "size": 256, "interpolation": "bilinear", "antialias": True}),
    (T.Resize((300, 200), interpolation=IM.NEAREST, antialias=True),
     {"op": "resize", "size": [300, 200], "interpolation": "nearest", "antialias": True}),
    (T.Resize(200, max_size=400),
     {"op": "resize", "size": 200, "interpolation": "bilinear", "antialias": True, "max_size": 400}),
    (T.CenterCrop(224), {"op": "center_crop", "size": 224}),
    (T.CenterCrop((224, 160)), {"op": "center_crop", "size": [224, 160]}),
    (T.RandomCrop(32, padding=4, fill=(1, 2, 3), padding_mode="reflect"),
     {"op": "random_crop", "size": 32, "padding": 4, "pad_if_needed": False, "fill": [1, 2, 3],
      "padding_mode": "reflect"}),
    (T.RandomCrop((20, 30), padding=[1, 2, 3, 4], pad_if_needed=True),
     {"op": "random_crop", "size": [20, 30], "padding": [1, 2, 3, 4], "pad_if_needed": True, "fill": 0,
      "padding_mode": "constant"}),
    (T.RandomResizedCrop(176),
     {"op": "random_resized_crop", "size": 176, "scale": [0.08, 1.0], "ratio": [0.75, 4.0 / 3.0],
      "interpolation": "bilinear", "antialias": True}),
    (T.RandomResizedCrop((160, 128), scale=(0.25, 1), ratio=(0.5, 2), interpolation=IM.BICUBIC),
     {"op": "random_resized_crop", "size": [160, 128], "scale": [0.25, 1], "ratio": [0.5, 2],
      "interpolation": "bicubic", "antialias": True}),
    (T.RandomHorizontalFlip(), {"op": "horizontal_flip", "p": 0.5}),
    (T.RandomVerticalFlip(0.25), {"op": "vertical_flip", "p": 0.25}),
    (T.ColorJitter(0.4, 0.4, 0.4),
     {"op": "color_jitter", "brightness": [0.6, 1.4], "contrast": [0.6, 1.4], "saturation": [0.6, 1.4], "hue": 0}),
    (T.ColorJitter(brightness=(0.5, 1.5), hue=0.1),
     {"op": "color_jitter", "brightness": [0.5, 1.5], "contrast": 0, "saturation": 0, "hue": [-0.1, 0.1]}),
    (T.RandomGrayscale(), {"op": "random_grayscale", "p": 0.1}),
    (T.GaussianBlur(5), {"op": "gaussian_blur", "kernel_size": 5, "sigma": [0.1, 2.0]}),
    (T.GaussianBlur((3, 7), sigma=1.5), {"op": "gaussian_blur", "kernel_size": [3, 7], "sigma": 1.5}),
    (T.TrivialAugmentWide(), {"op": "trivial_augment_wide", "num_magnitude_bins": 31, "interpolation": "nearest"}),
    (T.TrivialAugmentWide(interpolation=IM.BILINEAR, fill=[128, 128, 128]),
     {"op": "trivial_augment_wide", "num_magnitude_bins": 31, "interpolation": "bilinear", "fill": [128, 128, 128]}),
    (T.RandAugment(num_ops=3, magnitude=5, fill=0),
     {"op": "rand_augment", "num_ops": 3, "magnitude": 5, "num_magnitude_bins": 31, "interpolation": "nearest",
      "fill": 0}),
    (T.AutoAugment(), {"op": "auto_augment", "policy": "imagenet", "interpolation": "nearest"}),
    (T.ToTensor(), {"op": "to_tensor"}),
    (T.PILToTensor(), {"op": "pil_to_tensor"}),
    (T.ConvertImageDtype(torch.float), {"op": "convert_image_dtype", "dtype": "float32"}),
    (T.ConvertImageDtype(torch.bfloat16), {"op": "convert_image_dtype", "dtype": "bfloat16"}),
    (T.ConvertImageDtype(torch.uint8), {"op": "convert_image_dtype", "dtype": "uint8"}),
    (T.Normalize(MEAN, STD, inplace=True), {"op": "normalize", "mean": MEAN, "std": STD}),
    (T.Normalize((0.5,), (0.25,)), {"op": "normalize", "mean": [0.5] * 3, "std": [0.25] * 3}),
    (T.Normalize(torch.tensor(MEAN, dtype=torch.float64), torch.tensor(STD, dtype=torch.float64)),
     {"op": "normalize", "mean": MEAN, "std": STD}),
    (T.RandomErasing(), {"op": "random_erasing", "p": 0.5, "scale": [0.02, 0.33], "ratio": [0.3, 3.3], "value": 0}),
    (T.RandomErasing(0.1, value="random", inplace=True),
     {"op": "random_erasing", "p": 0.1, "scale": [0.02, 0.33], "ratio": [0.3, 3.3], "value": "random"}),
    (T.RandomErasing(value=(0.1, 0.2, 0.3)),
     {"op": "random_erasing", "p": 0.5, "scale": [0.02, 0.33], "ratio": [0.3, 3.3], "value": [0.1, 0.2, 0.3]}),
    (T.RandomApply([T.ColorJitter(0.4)], p=0.8),
     {"op": "random_apply", "p": 0.8,
      "ops": [{"op": "color_jitter", "brightness": [0.6, 1.4], "contrast": 0, "saturation": 0, "hue": 0}]}),
    (T.RandomChoice([T.RandomHorizontalFlip(1), T.RandomVerticalFlip(1)], p=[0.3, 0.7]),
     {"op": "random_choice", "p": [0.3, 0.7],
      "ops": [{"op": "horizontal_flip", "p": 1.0}, {"op": "vertical_flip", "p": 1.0}]}),
    (T.RandomChoice([T.RandomGrayscale(1)]), {"op": "random_choice", "ops": [{"op": "random_grayscale", "p": 1.0}]}),
    (T.RandomOrder([T.RandomGrayscale(), T.GaussianBlur(3, 1.0)]),
     {"op": "random_order", "ops": [{"op": "random_grayscale", "p": 0.1},
                                    {"op": "gaussian_blur", "kernel_size": 3, "sigma": 1.0}]}),
]


@pytest.mark.parametrize("transform, op", CASES, ids=[repr(t).split("(")[0] + str(i) for i, (t, _) in enumerate(CASES)])
def test_each_torchvision_class_becomes_its_op(transform, op):
    assert ops_from_torchvision(T.Compose([transform])) == [op]
    assert ops_from_torchvision(transform) == [op], "a single transform, not in a Compose"


def test_values_are_plain_python_numbers():
    op = ops_from_torchvision(T.Normalize(torch.tensor(MEAN), torch.tensor(STD)))[0]
    assert all(type(x) is float for x in op["mean"] + op["std"])
    assert type(ops_from_torchvision(T.RandomResizedCrop(torch.tensor(64).item()))[0]["size"]) is int


def test_references_presets_are_followed_through_their_transforms():
    train = ClassificationPresetTrain(crop_size=176, interpolation=IM.BILINEAR, auto_augment_policy="ta_wide",
                                      random_erase_prob=0.1)
    assert ops_from_torchvision(train) == [
        {"op": "random_resized_crop", "size": 176, "scale": [0.08, 1.0], "ratio": [0.75, 4.0 / 3.0],
         "interpolation": "bilinear", "antialias": True},
        {"op": "horizontal_flip", "p": 0.5},
        {"op": "trivial_augment_wide", "num_magnitude_bins": 31, "interpolation": "bilinear"},
        {"op": "pil_to_tensor"}, {"op": "convert_image_dtype", "dtype": "float32"},
        {"op": "normalize", "mean": MEAN, "std": STD},
        {"op": "random_erasing", "p": 0.1, "scale": [0.02, 0.33], "ratio": [0.3, 3.3], "value": 0}]
    assert ops_from_torchvision(ClassificationPresetEval(crop_size=224, resize_size=232)) == [
        {"op": "resize", "size": 232, "interpolation": "bilinear", "antialias": True},
        {"op": "center_crop", "size": 224}, {"op": "pil_to_tensor"},
        {"op": "convert_image_dtype", "dtype": "float32"}, {"op": "normalize", "mean": MEAN, "std": STD}]
    ra = ops_from_torchvision(ClassificationPresetTrain(crop_size=224, auto_augment_policy="ra", ra_magnitude=7))
    assert ra[2] == {"op": "rand_augment", "num_ops": 2, "magnitude": 7, "num_magnitude_bins": 31,
                     "interpolation": "bilinear"}
    aa = ops_from_torchvision(ClassificationPresetTrain(crop_size=224, auto_augment_policy="imagenet", hflip_prob=0))
    assert [op["op"] for op in aa[:2]] == ["random_resized_crop", "auto_augment"]


def test_weights_transforms_image_classification_becomes_its_forward():
    from torchvision.transforms._presets import ImageClassification
    ops = ops_from_torchvision(ImageClassification(crop_size=224, resize_size=232, interpolation=IM.BICUBIC))
    assert ops == [{"op": "resize", "size": 232, "interpolation": "bicubic", "antialias": True},
                   {"op": "center_crop", "size": 224}, {"op": "pil_to_tensor"},
                   {"op": "convert_image_dtype", "dtype": "float32"}, {"op": "normalize", "mean": MEAN, "std": STD}]


def test_nested_containers_translate_recursively_and_compose_flattens():
    recipe = T.Compose([
        T.RandomApply([T.RandomChoice([T.GaussianBlur(3), T.RandomApply(torch.nn.ModuleList([T.RandomGrayscale(1)]),
                                                                        p=0.3)])], p=0.6),
        T.Compose([T.CenterCrop(8), torch.nn.Sequential(T.RandomVerticalFlip())]),
        [T.PILToTensor()],
    ])
    assert ops_from_torchvision(recipe) == [
        {"op": "random_apply", "p": 0.6, "ops": [
            {"op": "random_choice", "ops": [
                {"op": "gaussian_blur", "kernel_size": 3, "sigma": [0.1, 2.0]},
                {"op": "random_apply", "p": 0.3, "ops": [{"op": "random_grayscale", "p": 1.0}]}]}]},
        {"op": "center_crop", "size": 8}, {"op": "vertical_flip", "p": 0.5}, {"op": "pil_to_tensor"}]


def test_a_list_may_mix_op_dicts_and_torchvision_transforms():
    ops = ops_from_torchvision([{"op": "decode", "max_side": 512}, T.CenterCrop(64), {"op": "layout", "order": "HWC"}])
    assert ops == [{"op": "decode", "max_side": 512}, {"op": "center_crop", "size": 64},
                   {"op": "layout", "order": "HWC"}]


def test_antialias_follows_the_input_the_transform_sees():
    # On a PIL image torchvision always antialiases; after ToTensor a tensor is antialiased as antialias says, and
    # None means False there (0.14's functional_tensor.resize and 0.29's alike), though the default is True since 0.17.
    ops = ops_from_torchvision(T.Compose([T.ToTensor(), T.Resize(64), T.Resize(48, antialias=None),
                                          T.RandomResizedCrop(32, antialias=False)]))
    assert ops[1]["antialias"] is T.Resize(64).antialias is True  # the installed default
    assert ops[2]["antialias"] is False and ops[3]["antialias"] is False


def refusal(transform, **kw):
    with pytest.raises(batchd.BatchdError) as e:
        ops_from_torchvision(transform, **kw)
    assert e.value.code == "invalid argument"
    return str(e.value)


class MyCrop(torch.nn.Module):
    def forward(self, img):
        return img


class FlipTwice(T.RandomHorizontalFlip):
    pass


@pytest.mark.parametrize("transform, place, words", [
    (T.Compose([T.CenterCrop(8), T.Lambda(lambda x: x)]), "transform.transforms[1]", ["Lambda", "Python code"]),
    (T.Compose([MyCrop()]), "transform.transforms[0]", ["MyCrop", "your own class"]),
    (T.Compose([FlipTwice()]), "transform.transforms[0]", ["FlipTwice", "subclass", "RandomHorizontalFlip"]),
    (T.Compose([T.Pad(4)]), "transform.transforms[0]", ["torchvision.transforms.transforms.Pad", "no op"]),
    (T.Compose([T.RandomRotation(10)]), "transform.transforms[0]", ["RandomRotation"]),
    (T.AugMix(), "transform", ["AugMix"]),
    (T.Compose([T.RandomApply([T.ToPILImage()])]), "transform.transforms[0].transforms[0]", ["ToPILImage"]),
    (T.Compose([T.AutoAugment(T.AutoAugmentPolicy.CIFAR10)]), "transform.transforms[0]",
     ["AutoAugment", "policy", "CIFAR10", "IMAGENET"]),
    (T.Compose([T.Resize(64, antialias=False)]), "transform.transforms[0]", ["Resize", "antialias=False"]),
    (T.Compose([T.RandomResizedCrop(64, interpolation=IM.LANCZOS)]), "transform.transforms[0]",
     ["RandomResizedCrop", "LANCZOS", "bicubic"]),
    (T.Compose([T.PILToTensor(), T.ConvertImageDtype(torch.float64)]), "transform.transforms[1]",
     ["ConvertImageDtype", "float64"]),
    (T.Compose([T.RandomCrop(8, fill={"r": 1})]), "transform.transforms[0]", ["RandomCrop", "fill"]),
    (ClassificationPresetTrain(crop_size=224, auto_augment_policy="augmix"), "transform.transforms.transforms[2]",
     ["AugMix"]),
    ("resize", "transform", ["str"]),
])
def test_what_cannot_be_translated_is_refused_by_place_and_class(transform, place, words):
    message = refusal(transform)
    assert message.startswith(f"batchd cannot translate {place}:"), message
    for word in words:
        assert word in message, (word, message)


def test_a_preset_object_whose_transforms_leads_nowhere_is_refused():
    class Loop:
        pass
    loop = Loop()
    loop.transforms = loop
    assert "Loop" in refusal(loop)


def test_batch_transforms_of_the_references():
    mixup, cutmix = RandomMixup(1000, p=1.0, alpha=0.2), RandomCutmix(1000, p=1.0, alpha=1.0)
    assert batch_ops_from_torchvision(T.RandomChoice([mixup, cutmix])) == [
        {"op": "random_choice", "ops": [{"op": "mixup", "alpha": 0.2, "p": 1.0, "num_classes": 1000},
                                        {"op": "cutmix", "alpha": 1.0, "p": 1.0, "num_classes": 1000}]}]
    assert batch_ops_from_torchvision(mixup) == [{"op": "mixup", "alpha": 0.2, "p": 1.0, "num_classes": 1000}]
    assert batch_ops_from_torchvision([RandomCutmix(10)]) == [{"op": "cutmix", "alpha": 1.0, "p": 0.5,
                                                                 "num_classes": 10}]
    with pytest.raises(batchd.BatchdError, match=r"batch_transform: .*Lambda.* RandomMixup / RandomCutmix"):
        batch_ops_from_torchvision(T.Lambda(lambda b: b))
    impostor = RandomMixup(10)
    del impostor.inplace  # a class of that name without the references' attributes is not theirs
    with pytest.raises(batchd.BatchdError, match=r"batch_transform\[0\]"):
        batch_ops_from_torchvision([impostor])


def test_op_dicts_are_checked_for_form_and_normalized():
    import numpy as np
    spec = spec_from([{"op": "resize", "size": np.int64(232), "max_size": None, "scale": (0.5, np.float32(1))},
                      {"op": "random_apply", "ops": [{"op": "horizontal_flip", "p": torch.tensor(0.25)}]}],
                     [{"op": "mixup", "alpha": 0.2}])
    assert spec == {"ops": [{"op": "resize", "size": 232, "scale": [0.5, 1.0]},
                            {"op": "random_apply", "ops": [{"op": "horizontal_flip", "p": 0.25}]}],
                    "batch_ops": [{"op": "mixup", "alpha": 0.2}]}
    assert type(spec["ops"][0]["size"]) is int
    for bad, words in [([{"size": 3}], "transform[0] has no \"op\""),
                       ([{"op": "resize", "size": {"h": 1}}], "transform[0] (resize) key 'size' is a dict"),
                       ([{"op": "normalize", "mean": [0.5, "x", 0.5]}], "key 'mean'[1]"),
                       ([{"op": "random_apply", "ops": [{"op": "x"}, {"p": 1}]}], "'ops'[1] has no \"op\"")]:
        with pytest.raises(batchd.BatchdError, match=re.escape(words)) as e:
            spec_from(bad)
        assert e.value.code == "invalid argument"


def test_exact_decode_becomes_the_first_op():
    assert spec_from([T.CenterCrop(8)], exact_decode=True)["ops"] == [
        {"op": "decode", "exact_decode": True}, {"op": "center_crop", "size": 8}]
    with pytest.raises(batchd.BatchdError, match="exact_decode"):
        spec_from([{"op": "decode"}, {"op": "center_crop", "size": 8}], exact_decode=False)


@pytest.mark.parametrize("kw, words", [
    ({}, "exactly one of pipeline=.* and transform=.*neither"),
    ({"pipeline": "val224", "transform": [{"op": "center_crop", "size": 8}]}, "exactly one.*both"),
    ({"pipeline": "val224", "batch_transform": [{"op": "mixup"}]}, "batch_transform= needs transform="),
    ({"transform": [{"op": "center_crop", "size": 8}], "crop_size": 8}, "crop_size= is an option of the vision"),
    ({"transform": T.Compose([T.Lambda(lambda x: x)])}, "Lambda"),
])
def test_loader_arguments_are_refused_before_connecting(kw, words):
    with pytest.raises(batchd.BatchdError, match=words) as e:
        batchd.Loader("imagefolder", socket="/nonexistent/batchd.sock", **kw)
    assert e.value.code == "invalid argument"


def test_op_dicts_need_no_torchvision():
    import subprocess
    import sys
    code = ("import sys; sys.modules['torchvision'] = None\n"  # any import of torchvision now fails
            "from batchd._transforms.spec import spec_from\n"
            "print(spec_from([{'op': 'center_crop', 'size': 8}], [{'op': 'mixup'}]))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "{'ops': [{'op': 'center_crop', 'size': 8}], 'batch_ops': [{'op': 'mixup'}]}"
