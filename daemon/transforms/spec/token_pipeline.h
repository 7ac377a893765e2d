// token_pipeline.h — the executor of a spec whose source is token_window (transforms/ops/token_window.h says what
// its windows are): the lm preset ([token_window] with the stream's seq_len and sampling) and any client spec
// [token_window(seq_len, sampling)] over a token dataset.
//
// Tokens are widened from the file's uint16/uint32 straight into the slot's input_ids and targets (int64 [B,T]
// each); nothing else is copied and nothing is allocated per sample. Per-sample errors (kDataError, obeying
// on_error): a window past the end of a file truncated since it was opened. Not thread-safe (one object per worker
// and stream, as every Pipeline).
#pragma once

#include <memory>

#include "transforms/presets/pipeline.h"

namespace batchd::daemon {

// `resolved`: the canonical token_window op's options (seq_len not 0: token_window_options of the planned spec).
// kInvalidArgument if `dataset` holds no token windows (naming its format).
Result<std::unique_ptr<Pipeline>> make_token_pipeline(const wire::LmOptions& resolved,
                                                      std::shared_ptr<const Dataset> dataset);

// The hot loop, exposed for its test: inputs[k] = window[k], targets[k] = window[k + 1] for k < t, widened to int64.
// `window` holds t + 1 tokens of `dtype`; neither output may overlap it.
void widen_window(const void* window, TokenWindows::Dtype dtype, uint32_t t, int64_t* inputs, int64_t* targets);

}  // namespace batchd::daemon
