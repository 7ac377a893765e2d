"""Stand-ins for the user code that Loader(transform=..., batch_transform=..., sampler=...) meets in the torchvision
references (references/classification/presets.py, transforms.py and sampler.py, which are not installed with
torchvision) and in timm (timm/data/distributed_sampler.py): classes of the same names holding the same attributes,
written here from their documented constructors and behaviour. The translation reads only those attributes, so
these are what a user's copy of the references hands it; the samplers also iterate as theirs do (the order the
test compares batchd's with)."""
import math

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


class _RepeatedAugSampler(torch.utils.data.Sampler):
    """What RASampler and RepeatAugSampler do (DeiT's repeated augmentation): a permutation of the dataset (seeded by
    seed + epoch; timm's by epoch alone), each index repeated `repeats` times in a row, the list padded with its own
    head to num_samples * num_replicas (num_samples = ceil(n * repeats / num_replicas)), rank r taking every
    num_replicas-th entry from r, and an epoch cut to its first num_selected_samples, which both compute as
    floor(n // 256 * 256 / num_replicas) by default."""

    def __init__(self, dataset, num_replicas, rank, shuffle, seed, repeats, selected_round=256, selected_ratio=0):
        self.dataset, self.num_replicas, self.rank, self.shuffle, self.epoch = dataset, num_replicas, rank, shuffle, 0
        self._seed, self._repeats = seed, repeats
        n = len(dataset)
        self.num_samples = math.ceil(n * repeats / num_replicas)
        self.total_size = self.num_samples * num_replicas
        ratio = selected_ratio or num_replicas
        self.num_selected_samples = (int(math.floor(n // selected_round * selected_round / ratio)) if selected_round
                                     else int(math.ceil(n / ratio)))

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            order = torch.randperm(n, generator=torch.Generator().manual_seed(self._seed + self.epoch)).tolist()
        else:
            order = list(range(n))
        repeated = [i for i in order for _ in range(self._repeats)]
        padded = (repeated * math.ceil(self.total_size / len(repeated)))[:self.total_size]
        return iter(padded[self.rank::self.num_replicas][:self.num_selected_samples])

    def __len__(self):
        return self.num_selected_samples

    def set_epoch(self, epoch):
        self.epoch = epoch


class RASampler(_RepeatedAugSampler):
    """references/classification/sampler.py: RASampler(dataset, num_replicas, rank, shuffle=True, seed=0,
    repetitions=3); attributes num_replicas, rank, shuffle, seed, repetitions, epoch, num_selected_samples."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, repetitions=3):
        super().__init__(dataset, num_replicas, rank, shuffle, seed, repetitions)
        self.seed, self.repetitions = seed, repetitions


class RepeatAugSampler(_RepeatedAugSampler):
    """timm/data/distributed_sampler.py: RepeatAugSampler(dataset, num_replicas, rank, shuffle=True, num_repeats=3,
    selected_round=256, selected_ratio=0); no seed (its permutation is seeded by the epoch alone)."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, num_repeats=3, selected_round=256,
                 selected_ratio=0):
        super().__init__(dataset, num_replicas, rank, shuffle, 0, num_repeats, selected_round, selected_ratio)
        self.num_repeats = num_repeats
