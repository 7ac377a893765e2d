"""Loader(transform=..., batch_transform=...) with torchvision.transforms.v2 objects, without a daemon: each v2 class
becomes the op its v1 class becomes (batchd/_transforms/v2.py), v2's own forms (ToImage, ToDtype, ToPureTensor,
string interpolation, RandomCrop's [left, right, top, bottom] padding, fill dicts, CutMix/MixUp), and what is
refused, by place and class. The pixels of these ops against v2 itself: tests/ops/test_transforms_v2_*.py."""
import pytest
import torch
from torchvision import transforms as T
from torchvision import tv_tensors
from torchvision.transforms import InterpolationMode as IM
from torchvision.transforms import v2

import batchd
from batchd._transforms.batch import batch_ops_from_torchvision
from batchd._transforms.translate import ops_from_torchvision

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]

# (v2 object, its v1 twin): the two must become the same ops.
TWINS = [
    (v2.Resize(232, interpolation=IM.BICUBIC), T.Resize(232, interpolation=IM.BICUBIC)),
    (v2.Resize((300, 200), interpolation="nearest"), T.Resize((300, 200), interpolation=IM.NEAREST)),
    (v2.Resize(200, max_size=400), T.Resize(200, max_size=400)),
    (v2.CenterCrop(224), T.CenterCrop(224)),
    (v2.CenterCrop((224, 160)), T.CenterCrop((224, 160))),
    (v2.RandomCrop(32, padding=4, fill=7, padding_mode="reflect"),
     T.RandomCrop(32, padding=[4, 4, 4, 4], fill=7, padding_mode="reflect")),
    (v2.RandomCrop((20, 30), padding=[1, 2, 3, 4], pad_if_needed=True),
     T.RandomCrop((20, 30), padding=[1, 2, 3, 4], pad_if_needed=True)),
    (v2.RandomCrop(16, padding=(1, 2)), T.RandomCrop(16, padding=[1, 2, 1, 2])),
    (v2.RandomResizedCrop(176, antialias=True), T.RandomResizedCrop(176)),
    (v2.RandomResizedCrop((160, 128), scale=(0.25, 1), ratio=(0.5, 2), interpolation=IM.BICUBIC),
     T.RandomResizedCrop((160, 128), scale=(0.25, 1), ratio=(0.5, 2), interpolation=IM.BICUBIC)),
    (v2.RandomHorizontalFlip(), T.RandomHorizontalFlip()),
    (v2.RandomVerticalFlip(0.25), T.RandomVerticalFlip(0.25)),
    (v2.ColorJitter(0.4, 0.4, 0.4), T.ColorJitter(0.4, 0.4, 0.4)),
    (v2.ColorJitter(brightness=(0.5, 1.5), hue=0.1), T.ColorJitter(brightness=(0.5, 1.5), hue=0.1)),
    (v2.RandomGrayscale(), T.RandomGrayscale()),
    (v2.GaussianBlur(5), T.GaussianBlur(5)),
    (v2.GaussianBlur((3, 7), sigma=1.5), T.GaussianBlur((3, 7), sigma=1.5)),
    (v2.TrivialAugmentWide(), T.TrivialAugmentWide()),
    (v2.TrivialAugmentWide(interpolation=IM.BILINEAR, fill=[128, 128, 128]),
     T.TrivialAugmentWide(interpolation=IM.BILINEAR, fill=[128, 128, 128])),
    (v2.RandAugment(num_ops=3, magnitude=5, fill=0), T.RandAugment(num_ops=3, magnitude=5, fill=0)),
    (v2.AutoAugment(), T.AutoAugment()),
    (v2.PILToTensor(), T.PILToTensor()),
    (v2.Compose([v2.PILToTensor(), v2.ConvertImageDtype(torch.bfloat16)]),
     T.Compose([T.PILToTensor(), T.ConvertImageDtype(torch.bfloat16)])),
    (v2.Normalize(MEAN, STD, inplace=True), T.Normalize(MEAN, STD)),
    (v2.RandomErasing(), T.RandomErasing()),
    (v2.RandomErasing(0.1, value="random"), T.RandomErasing(0.1, value="random")),
    (v2.RandomErasing(value=(0.1, 0.2, 0.3)), T.RandomErasing(value=(0.1, 0.2, 0.3))),
    (v2.RandomApply([v2.ColorJitter(0.4)], p=0.8), T.RandomApply([T.ColorJitter(0.4)], p=0.8)),
    (v2.RandomOrder([v2.RandomGrayscale(), v2.GaussianBlur(3, 1.0)]),
     T.RandomOrder([T.RandomGrayscale(), T.GaussianBlur(3, 1.0)])),
]


@pytest.mark.parametrize("new, old", TWINS, ids=[type(n).__name__ + str(i) for i, (n, _) in enumerate(TWINS)])
def test_each_v2_class_becomes_the_op_of_its_v1_class(new, old):
    assert ops_from_torchvision(v2.Compose([new])) == ops_from_torchvision(T.Compose([old]))
    assert ops_from_torchvision(new) == ops_from_torchvision(old), "a single transform, not in a Compose"


def test_v2s_own_classes():
    assert ops_from_torchvision(v2.ToImage()) == [{"op": "pil_to_tensor"}]
    assert ops_from_torchvision(v2.ToPureTensor()) == []
    assert ops_from_torchvision([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)]) == [
        {"op": "pil_to_tensor"}, {"op": "convert_image_dtype", "dtype": "float32"}]
    to_half = v2.ToDtype({tv_tensors.Image: torch.float16, "others": torch.bfloat16}, scale=True)
    # v2 looks the dict up by the input's type: an Image after ToImage, a plain tensor after PILToTensor.
    assert ops_from_torchvision([v2.ToImage(), to_half]) == [
        {"op": "pil_to_tensor"}, {"op": "convert_image_dtype", "dtype": "float16"}]
    assert ops_from_torchvision([v2.PILToTensor(), to_half]) == [
        {"op": "pil_to_tensor"}, {"op": "convert_image_dtype", "dtype": "bfloat16"}]
    assert ops_from_torchvision([v2.ToImage(), v2.ToPureTensor(), to_half])[1]["dtype"] == "bfloat16"
    # what v2 leaves as it is: "others": None, any ToDtype on a PIL image
    assert ops_from_torchvision([v2.ToImage(), v2.ToDtype({tv_tensors.Mask: torch.int64, "others": None},
                                                          scale=True)]) == [{"op": "pil_to_tensor"}]
    assert ops_from_torchvision([v2.ToDtype(torch.float32, scale=True), v2.CenterCrop(8)]) == [
        {"op": "center_crop", "size": 8}]
    assert ops_from_torchvision(v2.RandomChoice([v2.RandomHorizontalFlip(1), v2.RandomVerticalFlip(1)])) == [
        {"op": "random_choice", "p": [0.5, 0.5], "ops": [{"op": "horizontal_flip", "p": 1.0},
                                                         {"op": "vertical_flip", "p": 1.0}]}]
    # fill by input type too: on a PIL image v2 reads PIL.Image.Image's entry, else "others", else 0 (no fill).
    assert ops_from_torchvision(v2.RandAugment(fill={tv_tensors.Image: 9, "others": 7}))[0]["fill"] == 7
    assert "fill" not in ops_from_torchvision(v2.RandAugment(fill={tv_tensors.Image: 9}))[0]
    assert ops_from_torchvision([v2.ToImage(), v2.RandAugment(fill={tv_tensors.Image: 9})])[0]["fill"] == 9
    # interpolation as v2 takes it: an InterpolationMode, a string, a PIL constant
    from PIL import Image
    assert ops_from_torchvision(v2.Resize(8, interpolation=Image.Resampling.BICUBIC))[0]["interpolation"] == "bicubic"
    assert ops_from_torchvision(v2.Resize(8, interpolation=0))[0]["interpolation"] == "nearest"


def test_the_v2_recipes_of_the_docs_and_the_references():
    """torchvision's v2 getting-started recipe and references/classification/presets.py's v2 branch."""
    train = v2.Compose([v2.ToImage(), v2.RandomResizedCrop(size=(224, 224), antialias=True),
                        v2.RandomHorizontalFlip(p=0.5), v2.ToDtype(torch.float32, scale=True),
                        v2.Normalize(mean=MEAN, std=STD), v2.ToPureTensor()])
    # ToImage first, as v2 documents it: the conversion waits for the first op that takes a tensor, the image ops
    # before it run as batchd's (PIL-style) ops.
    assert ops_from_torchvision(train) == [
        {"op": "random_resized_crop", "size": 224, "scale": [0.08, 1.0], "ratio": [0.75, 4.0 / 3.0],
         "interpolation": "bilinear", "antialias": True},
        {"op": "horizontal_flip", "p": 0.5}, {"op": "pil_to_tensor"},
        {"op": "convert_image_dtype", "dtype": "float32"}, {"op": "normalize", "mean": MEAN, "std": STD}]
    # references/classification/presets.py with use_v2 and the tensor backend: PILToTensor first, RandomErasing
    # inside a RandomApply-like container at the end.
    ra = v2.Compose([v2.PILToTensor(), v2.RandomResizedCrop(176, antialias=True), v2.RandomHorizontalFlip(),
                     v2.TrivialAugmentWide(), v2.ToDtype(torch.float, scale=True), v2.Normalize(MEAN, STD),
                     v2.RandomChoice([v2.RandomErasing(0.25), v2.RandomGrayscale(0.0)])])
    names = [op["op"] for op in ops_from_torchvision(ra)]
    assert names == ["random_resized_crop", "horizontal_flip", "trivial_augment_wide", "pil_to_tensor",
                     "convert_image_dtype", "normalize", "random_choice"]
    only_image_ops = v2.Compose([v2.ToImage(), v2.CenterCrop(8), v2.RandomApply([v2.RandomErasing()])])
    assert [op["op"] for op in ops_from_torchvision(only_image_ops)] == ["center_crop", "pil_to_tensor",
                                                                          "random_apply"]
    assert ops_from_torchvision(v2.Compose([v2.ToImage(), v2.CenterCrop(8)])) == [
        {"op": "center_crop", "size": 8}, {"op": "pil_to_tensor"}]
    evaluate = v2.Compose([v2.Resize(256, antialias=True), v2.CenterCrop(224), v2.PILToTensor(),
                           v2.ToDtype(torch.float, scale=True), v2.Normalize(mean=MEAN, std=STD)])
    assert ops_from_torchvision(evaluate) == [
        {"op": "resize", "size": 256, "interpolation": "bilinear", "antialias": True},
        {"op": "center_crop", "size": 224}, {"op": "pil_to_tensor"},
        {"op": "convert_image_dtype", "dtype": "float32"}, {"op": "normalize", "mean": MEAN, "std": STD}]


def test_antialias_on_a_tensor_follows_v2():
    # After v2's ToTensor the tensor is resized by the daemon as a tensor: antialias as given (None is False).
    with pytest.warns(UserWarning, match="ToTensor.*deprecated"):  # torchvision's own warning
        to_tensor = v2.ToTensor()
    ops = ops_from_torchvision(v2.Compose([to_tensor, v2.Resize(64), v2.Resize(48, antialias=None),
                                           v2.Resize(32, antialias=False)]))
    assert [op["antialias"] for op in ops[1:4]] == [True, False, False]
    # After ToImage batchd resizes before its pil_to_tensor, as PIL (always antialiased): only True is taken.
    assert ops_from_torchvision([v2.ToImage(), v2.Resize(64)])[0]["antialias"] is True


def test_one_conversion_whatever_follows_to_image():
    """ToImage's deferred conversion is used up by a conversion of the recipe's own, never made twice."""
    from torchvision.transforms._presets import ImageClassification
    names = [op["op"] for op in ops_from_torchvision([v2.ToImage(), ImageClassification(crop_size=8, resize_size=9)])]
    assert names == ["resize", "center_crop", "pil_to_tensor", "convert_image_dtype", "normalize"]
    with pytest.warns(UserWarning, match="ToTensor.*deprecated"):
        to_tensor = v2.ToTensor()
    assert ops_from_torchvision([v2.ToImage(), to_tensor]) == [{"op": "pil_to_tensor"}]  # v2 keeps the Image
    assert ops_from_torchvision([v2.ToImage(), v2.CenterCrop(8), {"op": "to_tensor"}]) == [
        {"op": "center_crop", "size": 8}, {"op": "to_tensor"}]


def refusal(transform):
    with pytest.raises(batchd.BatchdError) as e:
        ops_from_torchvision(transform)
    assert e.value.code == "invalid argument"
    return str(e.value)


class MyV2Flip(v2.RandomHorizontalFlip):
    pass


@pytest.mark.parametrize("transform, place, words", [
    (v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=False)]), "transform.transforms[1]",
     ["ToDtype", "scale=False"]),
    (v2.Compose([v2.ToImage(), v2.ToDtype(torch.float64, scale=True)]), "transform.transforms[1]",
     ["ToDtype", "float64"]),
    (v2.Compose([v2.Resize(None, max_size=256)]), "transform.transforms[0]", ["Resize", "size=None"]),
    (v2.Compose([v2.Resize(64, antialias=False)]), "transform.transforms[0]", ["Resize", "antialias=False"]),
    (v2.Compose([v2.RandomResizedCrop(64, interpolation=IM.NEAREST_EXACT)]), "transform.transforms[0]",
     ["RandomResizedCrop", "nearest-exact"]),
    (v2.Compose([v2.RandomRotation(10)]), "transform.transforms[0]",
     ["torchvision.transforms.v2._geometry.RandomRotation", "no op"]),
    (v2.Compose([v2.AutoAugment(v2.AutoAugmentPolicy.SVHN)]), "transform.transforms[0]", ["AutoAugment", "SVHN"]),
    (v2.Compose([MyV2Flip()]), "transform.transforms[0]", ["MyV2Flip", "subclass", "RandomHorizontalFlip"]),
    (v2.Compose([v2.RandomApply([v2.Lambda(lambda x: x)])]), "transform.transforms[0].transforms[0]", ["Lambda"]),
    (v2.Compose([v2.RandomCrop(8, padding=2, pad_if_needed=True, padding_mode="reflect")]), "transform.transforms[0]",
     ["RandomCrop", "pads once"]),
    (v2.Compose([v2.RandomApply([v2.ToImage()])]), "transform.transforms[0].transforms[0]",
     ["ToImage", "unconditionally"]),
    (v2.Compose([v2.Resize(8, interpolation=1)]), "transform.transforms[0]", ["Resize", "lanczos"]),
    (v2.Compose([v2.ToImage(), v2.RandomResizedCrop(8, antialias=False)]), "transform.transforms[1]",
     ["RandomResizedCrop", "antialias=False after ToImage", "antialias=True"]),
    (v2.Compose([v2.ToImage(), v2.ToDtype({tv_tensors.Mask: torch.int64}, scale=True)]), "transform.transforms[1]",
     ["ToDtype", "tv_tensors._image.Image", "torchvision raises here too"]),
])
def test_what_cannot_be_translated_is_refused_by_place_and_class(transform, place, words):
    message = refusal(transform)
    assert message.startswith(f"batchd cannot translate {place}:"), message
    for word in words:
        assert word in message, (word, message)


def test_cutmix_and_mixup_are_batch_transforms():
    cutmix, mixup = v2.CutMix(num_classes=1000), v2.MixUp(alpha=0.2, num_classes=1000)
    assert batch_ops_from_torchvision(v2.RandomChoice([cutmix, mixup])) == [
        {"op": "random_choice", "p": [0.5, 0.5],
         "ops": [{"op": "cutmix", "alpha": 1.0, "p": 1.0, "num_classes": 1000},
                 {"op": "mixup", "alpha": 0.2, "p": 1.0, "num_classes": 1000}]}]
    assert batch_ops_from_torchvision(v2.Compose([mixup])) == [
        {"op": "mixup", "alpha": 0.2, "p": 1.0, "num_classes": 1000}]
    with pytest.raises(batchd.BatchdError, match=r"batch_transform: CutMix with num_classes=None"):
        batch_ops_from_torchvision(v2.CutMix())
