"""A LightningModule whose train_dataloader() returns batchd.Loader, trained by Lightning's DDP over 2 CPU processes
(gloo), one epoch (test_lightning_ddp.py runs it; issue 40, item 8).

    lightning_ddp.py SOCKET OUT_DIR MODE      MODE: "sampler" (a DistributedSampler given) or "plain" (none)

Each rank writes OUT_DIR/rank-R.json: the dataset indices its training steps saw, in order, and the final loss.
Lightning's strategy="ddp" starts rank 1 by running this script again with its environment set."""
import json
import os
import sys

import lightning.pytorch as pl
import torch
from torch.utils.data import Dataset, DistributedSampler

import batchd


class Numbers(Dataset):
    """64 samples: (x = [i, i, i, i] / 64 float32, y = i % 2, i)."""

    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.full((4,), i / 64.0), i % 2, i


class Model(pl.LightningModule):
    def __init__(self, sock, mode):
        super().__init__()
        self.sock, self.mode, self.seen, self.loss = sock, mode, [], None
        self.layer = torch.nn.Linear(4, 2)

    def train_dataloader(self):
        dataset = Numbers()
        sampler = DistributedSampler(dataset, shuffle=True, seed=0) if self.mode == "sampler" else None
        return batchd.Loader(dataset, batch_size=8, shuffle=sampler is None, sampler=sampler, num_workers=2,
                             socket=self.sock)

    def training_step(self, batch, batch_idx):
        x, y, i = batch
        self.seen.extend(i.tolist())
        loss = torch.nn.functional.cross_entropy(self.layer(x), y)
        self.loss = float(loss.detach())
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main():
    sock, out, mode = sys.argv[1:4]
    model = Model(sock, mode)
    trainer = pl.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=1, logger=False,
                         enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(model)
    with open(os.path.join(out, f"rank-{trainer.global_rank}.json"), "w") as f:
        json.dump({"seen": model.seen, "loss": model.loss, "world_size": trainer.world_size}, f)


if __name__ == "__main__":
    main()
