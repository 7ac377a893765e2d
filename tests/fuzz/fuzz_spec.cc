// libFuzzer target: arbitrary bytes as a client's PipelineSpec (OpenStream.spec, the wire form), through the
// daemon's real plan (spec_plan.h) and, when it accepts, the worker's compile and run (spec_pipeline.h) over a
// small real PNG. Findings: a crash, a leak or UB (ASan/UBSan), a hang; a canonical spec that does not plan to
// itself again (the canonical form must be a fixed point: shares compare it byte for byte).
//
// Built by setup.sh with clang-14 into build-fuzz/ (BATCHD_FUZZ=ON); run by ctest for a bounded time:
//   build-fuzz/bin/fuzz_spec -max_total_time=20 tests/fuzz/corpus_spec
#include <spdlog/spdlog.h>

#include <cstdint>
#include <cstdlib>
#include <memory>

#include "../support/tiny_images.h"
#include "data/dataset.h"
#include "transforms/ops/spec_plan.h"
#include "transforms/spec/compile_spec.h"

namespace {

using namespace batchd::daemon;
using batchd::daemon::testing::TinyImages;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = (spdlog::set_level(spdlog::level::off), true);
  (void)quiet;
  batchd::wire::PipelineSpec spec;
  if (!spec.ParseFromArray(data, static_cast<int>(size))) return 0;
  // Small bounds keep each run fast: what is fuzzed is the checking, not the work a 4096-pixel crop costs.
  const ops::OpLimits limits{16, 64, 9, 8};
  auto planned = ops::plan_spec(spec, {&limits, 5});
  if (!planned.ok()) return 0;
  auto again = ops::plan_spec(planned->canonical, {&limits, 5});
  if (!again.ok() || again->canonical.SerializeAsString() != planned->canonical.SerializeAsString()) std::abort();
  auto pipeline = make_spec_pipeline(planned->canonical, std::make_shared<TinyImages>());
  if (!pipeline.ok()) return 0;
  const auto& tensors = (*pipeline)->tensors();
  std::vector<uint64_t> offsets;
  uint64_t total = 0;
  for (const auto& t : tensors) {
    offsets.push_back(total);
    total += t.sample_bytes() * 3;
  }
  std::vector<char> slot(total);
  const int64_t indices[] = {0, 1, 2};
  const BatchContext context{7, 1, {}, 0};
  if ((*pipeline)->run(indices, slot.data(), offsets, context).ok()) {
    (void)(*pipeline)->finish_batch(slot.data(), offsets, 3, context);
  }
  return 0;
}
