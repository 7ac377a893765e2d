// lm_pipeline.h — the `lm` pipeline: language-model windows of a token dataset (see pipeline.h, token_dataset.h).
//
// For each sample index i of a batch of B, with T the dataset's seq_len and w = tokens[i*T : i*T + T + 1]:
//   input_ids  int64 [B,T] = w[:-1]
//   targets    int64 [B,T] = w[1:]
// (what nanoGPT's get_batch builds from np.memmap: x = w[:-1], y = w[1:], as int64). Tokens are widened from the
// file's uint16/uint32 straight into the slot; nothing else is copied. The pipeline takes no options (vision options
// are refused by resolve_pipeline_options), and needs a dataset whose tokens() is not null (format "tokens").
//
// Per-sample errors (kDataError, obeying on_error): a window past the end of a file truncated since it was opened.
// Not thread-safe (one object per worker and stream, as every Pipeline).
#pragma once

#include "transforms/pipeline.h"

namespace batchd::daemon {

// kInvalidArgument naming the dataset and its format if it holds no token windows.
Result<std::unique_ptr<Pipeline>> make_lm_pipeline(std::shared_ptr<const Dataset> dataset);

// The hot loop, exposed for its test: inputs[k] = window[k], targets[k] = window[k + 1] for k < t, widened to int64.
// `window` holds t + 1 tokens of `dtype`; neither output may overlap it.
void widen_window(const void* window, TokenWindows::Dtype dtype, uint32_t t, int64_t* inputs, int64_t* targets);

}  // namespace batchd::daemon
