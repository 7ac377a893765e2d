"""batchd.Loader's options of pipeline "lm" (token datasets): seq_len= and sampling= (docs/python.md, "Token files").

They become the stream's OpenStream.seq_len and OpenStream.sampling. The daemon checks what needs the dataset (the
pipeline is "lm", T + 1 <= the file's tokens, the segment fits its limits) when the stream is planned: len(), or the
first iteration; BatchdError then names the bound and the fix.
"""
import numbers

_SAMPLINGS = {
    "tiled": "the file cut into windows of T, each read once per epoch in the sampler's order (the default)",
    "random": "nanoGPT's get_batch: each batch draws batch_size offsets uniform in [0, N - T - 1], seeded by "
              "(seed, rank, step)",
}
# The daemon's bound (kMaxSeqLen, daemon/data/dataset_config.h), here so that no uint32 overflows.
_MAX_SEQ_LEN = 1 << 24


def lm_options(seq_len, sampling):
    """The stream options for seq_len= and sampling= ({} when both are None: the dataset's seq_len, tiled windows).

    ValueError for a seq_len that is not an int in [1, 16777216], or a sampling other than "tiled" and "random"."""
    out = {}
    if seq_len is not None:
        if isinstance(seq_len, bool) or not isinstance(seq_len, numbers.Integral) or not 1 <= seq_len <= _MAX_SEQ_LEN:
            raise ValueError(f"batchd.Loader: seq_len must be an int in [1, {_MAX_SEQ_LEN}] (the window length T; "
                             f"None = the dataset's seq_len), not {seq_len!r}")
        out["seq_len"] = int(seq_len)
    if sampling is not None:
        if sampling not in _SAMPLINGS:
            raise ValueError(f"batchd.Loader: sampling must be one of " +
                             "; ".join(f"{name!r} ({what})" for name, what in _SAMPLINGS.items()) +
                             f"; not {sampling!r}")
        out["sampling"] = sampling
    return out
