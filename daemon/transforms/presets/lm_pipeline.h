// lm_pipeline.h — the `lm` pipeline: language-model windows of a token dataset (see pipeline.h, token_dataset.h).
//
// A stream of pipeline lm has a window length T (LmOptions.seq_len; 0 = the dataset's seq_len) and a sampling
// (LmOptions.sampling) that says where sample i starts in the token file of N tokens:
//   TILED_WINDOWS     at token i*T:  floor((N - 1) / T) samples (consecutive windows overlap by one token)
//   RANDOM_WINDOWS    at token i:    N - T samples, one per offset in [0, N - T - 1] (nanoGPT's
//                                    torch.randint(len(data) - block_size, ...); streams/window_sampler.h draws them)
// For each sample index i of a batch of B, with w = tokens[start(i) : start(i) + T + 1]:
//   input_ids  int64 [B,T] = w[:-1]
//   targets    int64 [B,T] = w[1:]
// (what nanoGPT's get_batch builds from np.memmap: x = data[i:i+T], y = data[i+1:i+1+T], as int64). Tokens are
// widened from the file's uint16/uint32 straight into the slot; nothing else is copied. Vision options are refused
// (resolve_pipeline_options); the dataset's tokens() must not be null (format "tokens").
//
// Per-sample errors (kDataError, obeying on_error): a window past the end of a file truncated since it was opened.
// Not thread-safe (one object per worker and stream, as every Pipeline).
#pragma once

#include "transforms/presets/pipeline.h"

namespace batchd::daemon {

// `requested` with its default applied (seq_len 0 = the dataset's). kInvalidArgument naming the option, its bound
// and the fix: seq_len over kMaxSeqLen, or seq_len + 1 over the N tokens of `dataset`, or `dataset` holds no token
// windows (naming its format).
Result<wire::LmOptions> resolve_lm_options(const wire::LmOptions& requested, const Dataset& dataset);

// The samples a stream with `resolved` options reads from (indices [0, n)): floor((N - 1) / T) tiled, N - T for
// random windows; and the windows of T that one pass over the file holds, floor((N - 1) / T), whatever the sampling.
uint64_t lm_samples(const TokenWindows& tokens, const wire::LmOptions& resolved);
uint64_t lm_windows(const TokenWindows& tokens, const wire::LmOptions& resolved);

// kInvalidArgument as resolve_lm_options (the pipeline resolves `options` itself; resolved ones pass unchanged).
Result<std::unique_ptr<Pipeline>> make_lm_pipeline(std::shared_ptr<const Dataset> dataset,
                                                   const wire::LmOptions& options);

// The hot loop, exposed for its test: inputs[k] = window[k], targets[k] = window[k + 1] for k < t, widened to int64.
// `window` holds t + 1 tokens of `dtype`; neither output may overlap it.
void widen_window(const void* window, TokenWindows::Dtype dtype, uint32_t t, int64_t* inputs, int64_t* targets);

}  // namespace batchd::daemon
