// compile_spec.h — a planned spec into the Pipeline object that makes a stream's batches, one per worker and stream:
// the executor is chosen by the spec's source op (ops/spec_plan.h Source):
//   decode        image files through the op kernels, with the fused head and tail (spec_pipeline.h)
//   idx_image     an IDX dataset's images through one composed table (idx_pipeline.h)
//   token_window  a token dataset's windows widened into input_ids and targets (token_pipeline.h)
// Every pipeline, presets included, is built here (presets/pipeline.h make_pipeline resolves a preset's name into
// its spec first). Thread-safe; the Pipeline it returns is not.
#pragma once

#include <memory>

#include "transforms/ops/spec_plan.h"
#include "transforms/presets/pipeline.h"
#include "transforms/spec/cache_point.h"

namespace batchd::daemon {

// The executor of `planned`, planned for `dataset`. kInvalidArgument if the dataset does not hold what the source
// op reads (naming its format). `cache`: for a spec with a cache point (cache_point.h).
Result<std::unique_ptr<Pipeline>> compile_planned(ops::PlannedSpec planned, std::shared_ptr<const Dataset> dataset,
                                                  const CacheBinding& cache = {});

// plan_spec(canonical) for `dataset` under the hard bounds only (the daemon planned it under its limits.* already),
// then compile_planned. kInvalidArgument if the spec does not plan (a worker sees this only for a spec from another
// daemon version) or does not fit the dataset.
Result<std::unique_ptr<Pipeline>> make_spec_pipeline(const wire::PipelineSpec& canonical,
                                                     std::shared_ptr<const Dataset> dataset,
                                                     const CacheBinding& cache = {});

}  // namespace batchd::daemon
