#include "transforms/spec/compile_spec.h"

#include "data/imagefolder_dataset.h"  // dataset_classes
#include "transforms/ops/token_window.h"
#include "transforms/spec/idx_pipeline.h"
#include "transforms/spec/spec_pipeline.h"
#include "transforms/spec/token_pipeline.h"

namespace batchd::daemon {

Result<std::unique_ptr<Pipeline>> compile_planned(ops::PlannedSpec planned, std::shared_ptr<const Dataset> dataset,
                                                  const CacheBinding& cache) {
  switch (planned.source) {
    case ops::Source::kDecode: return make_decode_pipeline(std::move(planned), std::move(dataset), cache);
    case ops::Source::kIdxImage: return make_idx_pipeline(std::move(planned), std::move(dataset));
    case ops::Source::kTokenWindow:
      return make_token_pipeline(token_window_options(planned.canonical.ops(0)), std::move(dataset));
  }
  return Error(ErrorCode::kInternal, "a spec's source op has no executor");
}

Result<std::unique_ptr<Pipeline>> make_spec_pipeline(const wire::PipelineSpec& canonical,
                                                     std::shared_ptr<const Dataset> dataset,
                                                     const CacheBinding& cache) {
  ops::OpPlanContext context{&ops::kNoLimits, dataset_classes(*dataset), dataset.get()};
  auto planned = ops::plan_spec(canonical, context);
  if (!planned.ok()) return planned.error();
  return compile_planned(std::move(planned).value(), std::move(dataset), cache);
}

}  // namespace batchd::daemon
