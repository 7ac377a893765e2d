"""The collated cases of bench/compare_own_dataset.py (issue 40): a user's own Dataset whose batches are not one
stack of fixed-shape tensors, shaped after real training code. Each case: (make the dataset, its collate_fn or
None for default_collate, the dataset indices of a batch, for the exactly-once check). No work per sample beyond
making it (the transport dominates: the case batchd must win at least 1.5x in, by the issue).

  padding     8,192 token lists of 16-271 tokens with a padding collate_fn returning input_ids, attention_mask
              and labels int64 [B, longest] (the shape of transformers' DataCollatorWithPadding)
  detection   1,024 uint8 images 3 x (240-400) x (240-400) with dict targets (boxes, labels, image_id), collated
              by tuple(zip(*batch)) (torchvision's detection references)
  captions    8,192 (float32 3 x 64 x 64 image, str caption, index) samples with default_collate (the str makes
              them collated whole: no fixed layout)
  iterable    an IterableDataset stream of 8,192 (float32 3 x 64 x 64 image, index) samples, each worker iterating
              its own shard (get_worker_info(), as webdataset and streaming datasets split their shards), with
              default_collate; not shuffled (DataLoader refuses shuffle= for an IterableDataset)
"""
import torch
from torch.utils.data import Dataset, IterableDataset, get_worker_info


class Tokens(Dataset):
    def __len__(self):
        return 8192

    def __getitem__(self, i):
        return {"input_ids": [(i * 31 + k) % 50000 for k in range(16 + (i * 7) % 256)], "label": i}


def pad_collate(batch):
    """The shape of transformers' DataCollatorWithPadding: input_ids and attention_mask padded to the longest."""
    longest = max(len(s["input_ids"]) for s in batch)
    ids = torch.zeros(len(batch), longest, dtype=torch.int64)
    mask = torch.zeros(len(batch), longest, dtype=torch.int64)
    for row, sample in enumerate(batch):
        ids[row, :len(sample["input_ids"])] = torch.tensor(sample["input_ids"])
        mask[row, :len(sample["input_ids"])] = 1
    return {"input_ids": ids, "attention_mask": mask, "labels": torch.tensor([s["label"] for s in batch])}


class Detection(Dataset):
    def __len__(self):
        return 1024

    def __getitem__(self, i):
        h, w = 240 + (i * 37) % 161, 240 + (i * 53) % 161
        image = torch.full((3, h, w), i % 256, dtype=torch.uint8)
        boxes = torch.tensor([[j * 10.0, j * 10.0, j * 10.0 + 50, j * 10.0 + 60] for j in range(1 + i % 5)])
        return image, {"boxes": boxes, "labels": torch.arange(1 + i % 5), "image_id": i}


def detection_collate(batch):
    """references/detection/utils.py's collate_fn."""
    return tuple(zip(*batch))


class Captioned(Dataset):
    def __len__(self):
        return 8192

    def __getitem__(self, i):
        return torch.full((3, 64, 64), float(i)), f"a photograph, number {i}", i


class Stream(IterableDataset):
    def __len__(self):
        return 8192

    def __iter__(self):
        info = get_worker_info()
        w, n = (info.id, info.num_workers) if info is not None else (0, 1)
        for i in range(w, 8192, n):
            yield torch.full((3, 64, 64), float(i)), i


CASES = {
    "padding": (Tokens, pad_collate, lambda batch: batch["labels"].tolist()),
    "detection": (Detection, detection_collate, lambda batch: [t["image_id"] for t in batch[1]]),
    "captions": (Captioned, None, lambda batch: batch[2].tolist()),
    "iterable": (Stream, None, lambda batch: batch[1].tolist()),
}
