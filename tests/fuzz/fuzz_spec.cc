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

#include "data/dataset.h"
#include "transforms/ops/spec_plan.h"
#include "transforms/spec_pipeline.h"

namespace {

using namespace batchd::daemon;

// A 9 x 7 RGB PNG (PIL-made), as every sample.
constexpr uint8_t kPng[] = {
    137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0, 9, 0, 0, 0, 7, 8, 2, 0, 0, 0, 85, 249,
    240, 55, 0, 0, 0, 29, 73, 68, 65, 84, 120, 156, 99, 228, 58, 33, 199, 128, 3, 48, 225, 146, 32, 90, 238, 171,
    197, 35, 52, 57, 70, 26, 216, 7, 0, 216, 113, 3, 252, 242, 92, 59, 158, 0, 0, 0, 0, 73, 69, 78, 68, 174, 66,
    96, 130};

class TinyImages final : public Dataset, public ImageSamples {
 public:
  const std::string& name() const override { return name_; }
  const char* format() const override { return "memory"; }
  uint64_t size() const override { return 3; }
  const ImageSamples* images() const override { return this; }
  batchd::Status read_image(uint64_t i, std::vector<uint8_t>* bytes, int64_t* label) const override {
    bytes->assign(std::begin(kPng), std::end(kPng));
    *label = static_cast<int64_t>(i);
    return batchd::ok_status();
  }
  void sample_name(uint64_t i, std::string* out) const override { *out = "tiny " + std::to_string(i); }
  using ImageSamples::sample_name;
  FileStamp stamp(uint64_t) const override { return {}; }  // no file: never cached

 private:
  std::string name_ = "tiny";
};

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
