#!/usr/bin/python3
"""Train a tiny causal transformer on a token file (nanoGPT's train.bin format) for a few hundred steps on the CPU,
once with torch.utils.data.DataLoader over np.memmap windows (num_workers=2) and once with batchd.Loader
(pipeline "lm"), and print for both: data wait per step (time blocked on the loader's next(), the DataLoader's
worker start included), milliseconds per step, and the loss at the start and at the end.

    PYTHONPATH=build/python examples/train_tiny_lm.py --spawn                 # a private daemon, made for the run
    PYTHONPATH=build/python examples/train_tiny_lm.py --socket PATH --dataset NAME --tokens FILE --seq-len T

The token file defaults to build/example-data/tokens.bin, made once with ../shared/data/make_tokens.py (byte-level
tokens of real text: the Python standard library's sources). batchd serves it as a dataset of format "tokens"
(docs/operations.md, "Token files"); the daemon must declare it with the same path and seq_len, e.g.

    [datasets.tiny-lm]
    format = "tokens"
    path = "/abs/path/to/tokens.bin"
    dtype = "uint16"
    seq_len = 64

and run (build/bin/batchd --config that.toml --socket $XDG_RUNTIME_DIR/batchd.sock); --spawn does that on a private
socket. Sample i of both loaders is the window w = tokens[i*T : i*T+T+1], x = w[:-1], y = w[1:] (int64 [B,T]).
The model: token + learned position embeddings (d_model 32), 2 pre-norm transformer layers (2 heads, feed-forward
128, causal mask), a linear head over the vocabulary; AdamW 3e-3. It is tiny because Debian's python3-torch uses the
generic BLAS (a step takes ~60 ms on one core here; about a minute in all). Needs python3-torch and python3-numpy.
"""
import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn

import batchd

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAKE_TOKENS = os.path.join(ROOT, "..", "shared", "data", "make_tokens.py")


class TinyLM(nn.Module):
    def __init__(self, vocab, seq_len, d_model=32, layers=2, heads=2):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d_model), nn.Embedding(seq_len, d_model)
        layer = nn.TransformerEncoderLayer(d_model, heads, 4 * d_model, dropout=0.0, batch_first=True,
                                           norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers)
        self.norm, self.head = nn.LayerNorm(d_model), nn.Linear(d_model, vocab)
        self.register_buffer("mask", torch.triu(torch.full((seq_len, seq_len), float("-inf")), diagonal=1))

    def forward(self, x):
        h = self.tok(x) + self.pos(torch.arange(x.shape[1]))
        return self.head(self.norm(self.blocks(h, mask=self.mask[: x.shape[1], : x.shape[1]])))


class MemmapWindows(torch.utils.data.Dataset):
    """What a hand-written token loader does: sample i = tokens[i*T : i*T+T+1] of np.memmap, as int64."""

    def __init__(self, path, seq_len):
        self.path, self.t = path, seq_len
        self.n = (os.path.getsize(path) // 2 - 1) // seq_len
        self.data = None

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.data is None:  # opened in each worker
            self.data = np.memmap(self.path, dtype=np.uint16, mode="r")
        w = torch.from_numpy(self.data[i * self.t: i * self.t + self.t + 1].astype(np.int64))
        return w[:-1], w[1:]


def batches(loader):
    """Batches for as many steps as asked, epoch after epoch."""
    while True:
        yield from loader


def train(name, loader, vocab, seq_len, steps):
    torch.manual_seed(0)
    model = TinyLM(vocab, seq_len)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    it, wait, losses = batches(loader), 0.0, []
    start = time.perf_counter()
    for _ in range(steps):
        t = time.perf_counter()
        x, y = next(it)
        wait += time.perf_counter() - t
        loss = nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    seconds = time.perf_counter() - start
    first, last = np.mean(losses[:10]), np.mean(losses[-10:])
    print(f"{name:>14}: data wait {1e3 * wait / steps:6.2f} ms/step, {1e3 * seconds / steps:6.1f} ms/step, "
          f"loss {first:.2f} (first 10 steps) -> {last:.2f} (last 10) over {steps} steps", flush=True)
    return first, last


@contextlib.contextmanager
def private_daemon(tokens, seq_len):
    with tempfile.TemporaryDirectory(prefix="batchd-tiny-lm-") as tmp:
        config, sock = os.path.join(tmp, "batchd.toml"), os.path.join(tmp, "batchd.sock")
        with open(config, "w") as f:
            f.write(f'[datasets.tiny-lm]\nformat = "tokens"\npath = "{os.path.abspath(tokens)}"\n'
                    f'dtype = "uint16"\nseq_len = {seq_len}\n')
        proc = subprocess.Popen([os.path.join(ROOT, "build", "bin", "batchd"), "--config", config, "--socket", sock,
                                 "--workers", "2", "--cache-dir", "", "--log-level", "warn"])
        try:
            while not os.path.exists(sock):
                if proc.poll() is not None:
                    sys.exit("batchd did not start (build it first: cmake --build build --target batchd)")
                time.sleep(0.02)
            yield sock, "tiny-lm"
        finally:
            proc.terminate()
            proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spawn", action="store_true", help="start a private daemon serving --tokens for this run")
    ap.add_argument("--socket", help="a running daemon's socket (default: $BATCHD_SOCKET or /run/batchd/batchd.sock)")
    ap.add_argument("--dataset", default="tiny-lm", help="the tokens dataset's name in that daemon's config")
    ap.add_argument("--tokens", default=os.path.join(ROOT, "build", "example-data", "tokens.bin"),
                    help="uint16 token file (made with make_tokens.py if it is missing)")
    ap.add_argument("--seq-len", type=int, default=64, help="T; the daemon's seq_len for the dataset must match")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--steps", type=int, default=300)
    args = ap.parse_args()
    if not os.path.exists(args.tokens):
        os.makedirs(os.path.dirname(os.path.abspath(args.tokens)), exist_ok=True)
        subprocess.run([sys.executable, MAKE_TOKENS, args.tokens, "8"], check=True)
    torch.set_num_threads(max(1, os.cpu_count() // 2))
    tokens = np.memmap(args.tokens, dtype=np.uint16, mode="r")
    vocab, b, t = int(tokens.max()) + 1, args.batch_size, args.seq_len

    windows = MemmapWindows(args.tokens, t)
    with (private_daemon(args.tokens, t) if args.spawn else contextlib.nullcontext((args.socket, args.dataset))) \
            as (sock, dataset):
        try:
            loader = batchd.Loader(dataset, b, shuffle=True, pipeline="lm", socket=sock)
            batches_per_epoch = len(loader)  # the daemon's plan: the dataset exists, serves "lm", has this size
        except batchd.BatchdError as e:
            sys.exit(f"batchd.Loader({dataset!r}, pipeline='lm'): {e}\n\nStart a daemon that serves {args.tokens} "
                     f"(see --help for its [datasets.{dataset}] table), or run with --spawn.")
        if batches_per_epoch != -(-len(windows) // b):
            sys.exit(f"dataset {dataset!r} has {batches_per_epoch} batches of {b} per epoch, but {args.tokens} with "
                     f"--seq-len {t} gives {len(windows)} windows: declare it with this path and seq_len")
        dl = torch.utils.data.DataLoader(windows, batch_size=b, shuffle=True, num_workers=2, persistent_workers=True)
        dl_loss = train("DataLoader", dl, vocab, t, args.steps)
        del dl
        bd_loss = train("batchd.Loader", loader, vocab, t, args.steps)
        loader.close()
    if args.steps >= 100 and max(dl_loss[1] - dl_loss[0], bd_loss[1] - bd_loss[0]) > -0.5:
        sys.exit("a model did not learn (its loss fell by less than 0.5)")


if __name__ == "__main__":
    main()
