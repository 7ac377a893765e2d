"""Stand-ins for the user code that Loader(transform=..., batch_transform=...) meets in the torchvision references
(references/classification/presets.py and transforms.py, which are not installed with torchvision): classes of
the same names holding the same attributes, written here from their documented constructors. The translation
reads only those attributes, so these are what a user's copy of the references hands it."""
import torch
from torchvision.transforms import InterpolationMode, autoaugment, transforms


class ClassificationPresetTrain:
    """presets.py: self.transforms = Compose([RandomResizedCrop, flip?, auto-augment?, PILToTensor,
    ConvertImageDtype(float), Normalize, RandomErasing?])."""

    def __init__(self, *, crop_size, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225),
                 interpolation=InterpolationMode.BILINEAR, hflip_prob=0.5, auto_augment_policy=None, ra_magnitude=9,
                 random_erase_prob=0.0):
        steps = [transforms.RandomResizedCrop(crop_size, interpolation=interpolation)]
        if hflip_prob > 0:
            steps.append(transforms.RandomHorizontalFlip(hflip_prob))
        if auto_augment_policy == "ra":
            steps.append(autoaugment.RandAugment(interpolation=interpolation, magnitude=ra_magnitude))
        elif auto_augment_policy == "ta_wide":
            steps.append(autoaugment.TrivialAugmentWide(interpolation=interpolation))
        elif auto_augment_policy == "augmix":
            steps.append(autoaugment.AugMix(interpolation=interpolation))
        elif auto_augment_policy is not None:
            steps.append(autoaugment.AutoAugment(autoaugment.AutoAugmentPolicy(auto_augment_policy),
                                                 interpolation=interpolation))
        steps += [transforms.PILToTensor(), transforms.ConvertImageDtype(torch.float),
                  transforms.Normalize(mean=mean, std=std)]
        if random_erase_prob > 0:
            steps.append(transforms.RandomErasing(p=random_erase_prob))
        self.transforms = transforms.Compose(steps)

    def __call__(self, img):
        return self.transforms(img)


class ClassificationPresetEval:
    """presets.py: Resize(resize_size), CenterCrop(crop_size), PILToTensor, ConvertImageDtype(float), Normalize."""

    def __init__(self, *, crop_size, resize_size=256, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225),
                 interpolation=InterpolationMode.BILINEAR):
        self.transforms = transforms.Compose([
            transforms.Resize(resize_size, interpolation=interpolation), transforms.CenterCrop(crop_size),
            transforms.PILToTensor(), transforms.ConvertImageDtype(torch.float),
            transforms.Normalize(mean=mean, std=std)])

    def __call__(self, img):
        return self.transforms(img)


class RandomMixup(torch.nn.Module):
    """transforms.py's RandomMixup(num_classes, p=0.5, alpha=1.0, inplace=False): its attributes."""

    def __init__(self, num_classes, p=0.5, alpha=1.0, inplace=False):
        super().__init__()
        self.num_classes, self.p, self.alpha, self.inplace = num_classes, p, alpha, inplace


class RandomCutmix(RandomMixup):
    """transforms.py's RandomCutmix: the same attributes."""
