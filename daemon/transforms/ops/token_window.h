// token_window.h — the lm pipeline's source op, token_window: language-model windows of a token dataset
// (token_dataset.h), as the op model plans them (ops/source_ops.cc) and as the stream's sampler counts them.
//
// A token_window op has a window length T (seq_len; 0 = the dataset's datasets.NAME.seq_len) and a sampling that says
// where sample i starts in the token file of N tokens:
//   "tiled"  (TILED_WINDOWS)   at token i*T:  floor((N - 1) / T) samples (consecutive windows overlap by one token)
//   "random" (RANDOM_WINDOWS)  at token i:    N - T samples, one per offset in [0, N - T - 1] (nanoGPT's
//                              torch.randint(len(data) - block_size, ...); streams/window_sampler.h draws them)
// For each sample index i of a batch of B, with w = tokens[start(i) : start(i) + T + 1]:
//   input_ids  int64 [B,T] = w[:-1]
//   targets    int64 [B,T] = w[1:]
// (what nanoGPT's get_batch builds from np.memmap: x = data[i:i+T], y = data[i+1:i+1+T], as int64). The op makes the
// whole sample: nothing follows it, and a spec has no batch_ops with it. The preset `lm` is [token_window] with the
// stream's seq_len and sampling (OpenStream.seq_len, OpenStream.sampling). Pure functions; thread-safe.
#pragma once

#include <cstdint>

#include "batchd.pb.h"
#include "batchd/result.h"
#include "data/dataset.h"

namespace batchd::daemon {

// `requested` with its default applied (seq_len 0 = the dataset's). kInvalidArgument naming the option, its bound
// and the fix: seq_len over kMaxSeqLen, or seq_len + 1 over the N tokens of `dataset`, or `dataset` holds no token
// windows (naming its format).
Result<wire::LmOptions> resolve_lm_options(const wire::LmOptions& requested, const Dataset& dataset);

// kInvalidArgument if seq_len is over kMaxSeqLen (the bound that needs no dataset).
Status check_seq_len_bound(uint64_t seq_len);

// The samples a stream with `resolved` options reads from (indices [0, n)): floor((N - 1) / T) tiled, N - T for
// random windows; and the windows of T that one pass over the file holds, floor((N - 1) / T), whatever the sampling.
uint64_t lm_samples(const TokenWindows& tokens, const wire::LmOptions& resolved);
uint64_t lm_windows(const TokenWindows& tokens, const wire::LmOptions& resolved);

// A canonical token_window op's parameters as LmOptions, and back (the op's sampling "tiled" / "random").
wire::LmOptions token_window_options(const wire::Op& op);
wire::Op token_window_op(const wire::LmOptions& options);

}  // namespace batchd::daemon
