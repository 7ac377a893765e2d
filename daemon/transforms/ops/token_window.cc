#include "transforms/ops/token_window.h"

#include "data/dataset_config.h"  // kMaxSeqLen
#include "transforms/ops/op.h"

namespace batchd::daemon {

Status check_seq_len_bound(uint64_t seq_len) {
  if (seq_len <= kMaxSeqLen) return ok_status();
  return Error(ErrorCode::kInvalidArgument, "seq_len " + std::to_string(seq_len) + " is over " +
                                                std::to_string(kMaxSeqLen) + ", the largest T a stream or "
                                                "datasets.NAME.seq_len may have; lower seq_len");
}

Result<wire::LmOptions> resolve_lm_options(const wire::LmOptions& requested, const Dataset& dataset) {
  const TokenWindows* tokens = dataset.tokens();
  if (tokens == nullptr) {
    return Error(ErrorCode::kInvalidArgument, "pipeline 'lm' needs a token dataset (format = \"tokens\"); '" +
                                                  dataset.name() + "' is " + dataset.format());
  }
  wire::LmOptions resolved = requested;
  if (resolved.seq_len() == 0) resolved.set_seq_len(tokens->seq_len());
  const uint64_t t = resolved.seq_len(), n = tokens->token_count();
  BATCHD_RETURN_IF_ERROR(check_seq_len_bound(t));
  if (t + 1 > n) {
    return Error(ErrorCode::kInvalidArgument,
                 "seq_len " + std::to_string(t) + " needs windows of " + std::to_string(t + 1) + " tokens, and '" +
                     dataset.name() + "' holds " + std::to_string(n) + ": lower seq_len to at most " +
                     std::to_string(n - 1) + " (0 = the dataset's, " + std::to_string(tokens->seq_len()) + ")");
  }
  return resolved;
}

uint64_t lm_windows(const TokenWindows& tokens, const wire::LmOptions& resolved) {
  return (tokens.token_count() - 1) / resolved.seq_len();
}

uint64_t lm_samples(const TokenWindows& tokens, const wire::LmOptions& resolved) {
  if (resolved.sampling() == wire::RANDOM_WINDOWS) return tokens.token_count() - resolved.seq_len();
  return lm_windows(tokens, resolved);
}

wire::LmOptions token_window_options(const wire::Op& op) {
  wire::LmOptions options;
  options.set_seq_len(static_cast<uint32_t>(ops::number(op, "seq_len")));
  options.set_sampling(ops::text(op, "sampling") == "random" ? wire::RANDOM_WINDOWS : wire::TILED_WINDOWS);
  return options;
}

wire::Op token_window_op(const wire::LmOptions& options) {
  wire::Op op;  // params sorted by key, as the canonical form has them
  op.set_name("token_window");
  auto* sampling = op.add_params();
  sampling->set_key("sampling");
  *sampling->mutable_value() = ops::text_value(options.sampling() == wire::RANDOM_WINDOWS ? "random" : "tiled");
  auto* seq_len = op.add_params();
  seq_len->set_key("seq_len");
  *seq_len->mutable_value() = ops::number_value(options.seq_len());
  return op;
}

}  // namespace batchd::daemon
