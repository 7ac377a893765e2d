#!/usr/bin/env python3
"""Train a tiny causal transformer on a token file (nanoGPT's train.bin format) on the CPU, once with a plain PyTorch
data path and once with batchd.Loader (pipeline "lm"), and print for both: data wait per step (time blocked on the
next batch), milliseconds per step, the training loss, and the loss on a fixed evaluation set after the last step.

    PYTHONPATH=build/python examples/train_tiny_lm.py --spawn                     # epochs of tiled windows
    PYTHONPATH=build/python examples/train_tiny_lm.py --spawn --sampling random --seeds 3   # nanoGPT's get_batch
    PYTHONPATH=build/python examples/train_tiny_lm.py --spawn --sampling random --data-only --batch-size 12 \
        --seq-len 1024 --steps 2000                       # the data path alone, at nanoGPT's GPT-2 shapes
    PYTHONPATH=build/python examples/train_tiny_lm.py --socket PATH --dataset NAME --tokens FILE --seq-len T

--sampling tiled (the default): sample i is the window w = tokens[i*T : i*T+T+1], x = w[:-1], y = w[1:] (int64
[B,T]), each read once per epoch in a shuffled order; the baseline is torch.utils.data.DataLoader over np.memmap
windows (num_workers=2), batchd is batchd.Loader(dataset, B, shuffle=True, pipeline="lm", seq_len=T).
--sampling random: nanoGPT's iteration-based loop, where `x, y = get_batch("train")` draws B offsets uniform in
[0, N - T - 1] with torch.randint over an np.memmap (the baseline, as nanoGPT's train.py does it), and with batchd
becomes `x, y = next(it)` over it = iter(batchd.Loader(dataset, B, pipeline="lm", seq_len=T, sampling="random",
endless=True, seed=seed)). With --seeds K each loader trains K models (seeds 0..K-1: the model's initialization and
the data's draws); the summary gives the mean evaluation loss of each and batchd's difference from the baseline in
percent; past --tolerance percent the script exits 1 (the acceptance of issue 25; docs/benchmarks.md records a run).
The evaluation set is the same for every run: 16 batches of windows at offsets drawn once with seed 1234.

The token file defaults to build/example-data/tokens.bin, made once with ../shared/data/make_tokens.py (byte-level
tokens of real text: the Python standard library's sources). batchd serves it as a dataset of format "tokens"
(docs/operations.md, "Token files"); the stream chooses its own T (seq_len=), so the daemon may declare any seq_len:

    [datasets.tiny-lm]
    format = "tokens"
    path = "/abs/path/to/tokens.bin"
    dtype = "uint16"
    seq_len = 64

--spawn starts such a daemon on a private socket for the run. The model: token + learned position embeddings
(d_model 32), 2 pre-norm transformer layers (2 heads, feed-forward 128, causal mask), a linear head over the
vocabulary; AdamW 3e-3. It is tiny so that a step takes a few tens of ms on one CPU core.
Needs torch and numpy (the project venv's: .venv/bin/python, ./setup.sh --tests).
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


def memmap_get_batch(path, b, t, seed):
    """nanoGPT's get_batch("train"): B offsets from torch.randint(len(data) - T), x = data[i:i+T], y = data[i+1:i+1+T]
    as int64, stacked (its generator seeded here, where nanoGPT seeds torch globally with 1337 + rank)."""
    data = np.memmap(path, dtype=np.uint16, mode="r")
    gen = torch.Generator().manual_seed(seed)

    def get_batch():
        ix = torch.randint(len(data) - t, (b,), generator=gen)
        x = torch.stack([torch.from_numpy(data[i:i + t].astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy(data[i + 1:i + 1 + t].astype(np.int64)) for i in ix])
        return x, y
    return get_batch


def epochs_of(loader):
    """Batches for as many steps as asked, epoch after epoch (a DataLoader's, or a tiled batchd.Loader's, passes)."""
    while True:
        yield from loader


def eval_batches(path, b, t, batches=16, seed=1234):
    """The fixed evaluation set: `batches` batches of windows at offsets drawn once (the same for every run)."""
    data = np.memmap(path, dtype=np.uint16, mode="r")
    ix = torch.randint(len(data) - t, (batches, b), generator=torch.Generator().manual_seed(seed))
    windows = [torch.stack([torch.from_numpy(data[i:i + t + 1].astype(np.int64)) for i in row]) for row in ix]
    return [(w[:, :-1], w[:, 1:]) for w in windows]


def data_only(name, get_batch, steps, seed):
    """--data-only: get_batch() `steps` times with no model (the data path alone, at shapes too large to train on a
    CPU); the same result tuple as train() with the losses left out."""
    waits = []
    for _ in range(steps):
        t0 = time.perf_counter()
        x, y = get_batch()
        waits.append(time.perf_counter() - t0)
        del x, y
    wait, median = np.mean(waits), np.median(waits)
    print(f"{name:>14} seed {seed}: data wait {1e3 * wait:6.3f} ms/step (median {1e3 * median:.3f}) over {steps} "
          f"batches, no model", flush=True)
    return wait, wait, (0.0, -1.0), 0.0, median


def train(name, get_batch, vocab, t, steps, seed, evaluation):
    """`steps` AdamW steps on get_batch()'s batches; returns (data wait s/step: mean, s/step, (first, last) train
    losses, eval loss, data wait s/step: median). The mean wait includes the first batch (a batchd stream opens
    then; a DataLoader starts its workers), the median is the steady state."""
    torch.manual_seed(seed)
    model = TinyLM(vocab, t)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    waits, losses = [], []
    start = time.perf_counter()
    for _ in range(steps):
        t0 = time.perf_counter()
        x, y = get_batch()
        waits.append(time.perf_counter() - t0)
        loss = nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    seconds = time.perf_counter() - start
    with torch.no_grad():
        ev = float(np.mean([nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten()).item()
                            for x, y in evaluation]))
    first, last, wait, median = np.mean(losses[:10]), np.mean(losses[-10:]), np.mean(waits), np.median(waits)
    print(f"{name:>14} seed {seed}: data wait {1e3 * wait:6.3f} ms/step (median {1e3 * median:.3f}), "
          f"{1e3 * seconds / steps:6.1f} ms/step, train loss {first:.2f} (first 10 steps) -> {last:.2f} (last 10), "
          f"eval loss {ev:.3f} after {steps} steps", flush=True)
    return wait, seconds / steps, (first, last), ev, median


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


def run_seed(args, sock, dataset, vocab, seed, evaluation):
    """Both loaders for one seed: [(name, train()'s result)] baseline first."""
    b, t = args.batch_size, args.seq_len
    try:
        loader = batchd.Loader(dataset, b, shuffle=True, pipeline="lm", seq_len=t, sampling=args.sampling,
                               endless=args.sampling == "random", seed=seed, socket=sock)
        len(loader)  # the daemon's plan: the dataset exists, serves "lm", and this T fits the file
    except batchd.BatchdError as e:
        sys.exit(f"batchd.Loader({dataset!r}, pipeline='lm', seq_len={t}): {e}\n\nStart a daemon that serves "
                 f"{args.tokens} (see --help for its [datasets.{dataset}] table), or run with --spawn.")
    if args.sampling == "random":  # nanoGPT: get_batch("train") -> next(it)
        base_name, base = "memmap+randint", memmap_get_batch(args.tokens, b, t, seed)
        it = iter(loader)
    else:
        torch.manual_seed(seed)
        dl = torch.utils.data.DataLoader(MemmapWindows(args.tokens, t), batch_size=b, shuffle=True, num_workers=2,
                                         persistent_workers=True)
        base_name, dl_it = "DataLoader", epochs_of(dl)
        base, it = lambda: next(dl_it), epochs_of(loader)
    run = (lambda name, get: data_only(name, get, args.steps, seed)) if args.data_only else \
        (lambda name, get: train(name, get, vocab, t, args.steps, seed, evaluation))
    results = [(base_name, run(base_name, base)), ("batchd.Loader", run("batchd.Loader", lambda: next(it)))]
    del it
    loader.close()
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spawn", action="store_true", help="start a private daemon serving --tokens for this run")
    ap.add_argument("--socket", help="a running daemon's socket (default: $BATCHD_SOCKET or /run/batchd/batchd.sock)")
    ap.add_argument("--dataset", default="tiny-lm", help="the tokens dataset's name in that daemon's config")
    ap.add_argument("--tokens", default=os.path.join(ROOT, "build", "example-data", "tokens.bin"),
                    help="uint16 token file (made with make_tokens.py if it is missing)")
    ap.add_argument("--sampling", choices=("tiled", "random"), default="tiled",
                    help="tiled: epochs of shuffled windows (DataLoader baseline); random: nanoGPT's get_batch")
    ap.add_argument("--seq-len", type=int, default=64, help="T, the stream's seq_len (any value below the tokens)")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--steps", type=int, default=300, help="K, the optimizer steps per run")
    ap.add_argument("--seeds", type=int, default=1, help="runs per loader (seeds 0 .. SEEDS-1)")
    ap.add_argument("--data-only", action="store_true",
                    help="no model: time the data path alone (data wait per step), e.g. at nanoGPT's B 12, T 1024")
    ap.add_argument("--tolerance", type=float, default=5.0,
                    help="percent: batchd's mean eval loss must be within this of the baseline's (else exit 1)")
    args = ap.parse_args()
    if not os.path.exists(args.tokens):
        os.makedirs(os.path.dirname(os.path.abspath(args.tokens)), exist_ok=True)
        subprocess.run([sys.executable, MAKE_TOKENS, args.tokens, "8"], check=True)
    torch.set_num_threads(max(1, os.cpu_count() // 2))
    vocab = int(np.memmap(args.tokens, dtype=np.uint16, mode="r").max()) + 1
    evaluation = None if args.data_only else eval_batches(args.tokens, args.batch_size, args.seq_len)
    runs = {}
    with (private_daemon(args.tokens, args.seq_len) if args.spawn
          else contextlib.nullcontext((args.socket, args.dataset))) as (sock, dataset):
        for seed in range(args.seeds):
            for name, result in run_seed(args, sock, dataset, vocab, seed, evaluation):
                runs.setdefault(name, []).append(result)
    if args.data_only:
        for name, rs in runs.items():
            print(f"{name:>14} mean of {args.seeds}: data wait {1e3 * np.mean([r[0] for r in rs]):6.3f} ms/step "
                  f"(median {1e3 * np.mean([r[4] for r in rs]):.3f})")
        return
    (base_name, base), (_, mine) = runs.items()
    mean = {name: [float(np.mean([r[i] for r in rs])) for i in (0, 4, 1, 3)] for name, rs in runs.items()}
    diff = 100.0 * (mean["batchd.Loader"][3] - mean[base_name][3]) / mean[base_name][3]
    for name, (wait, median, step, ev) in mean.items():
        print(f"{name:>14} mean of {args.seeds}: data wait {1e3 * wait:6.3f} ms/step (median {1e3 * median:.3f}), "
              f"{1e3 * step:6.1f} ms/step, eval loss {ev:.3f}")
    print(f"batchd.Loader's eval loss after {args.steps} steps is {diff:+.2f}% of {base_name}'s "
          f"(--sampling {args.sampling}, T {args.seq_len}, B {args.batch_size}, tolerance {args.tolerance}%)")
    if args.steps >= 100 and max(r[2][1] - r[2][0] for r in base + mine) > -0.5:
        sys.exit("a model did not learn (its training loss fell by less than 0.5)")
    if abs(diff) > args.tolerance:
        sys.exit(f"batchd.Loader's loss differs from {base_name}'s by more than {args.tolerance}%")


if __name__ == "__main__":
    main()
