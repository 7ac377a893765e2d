#include "transforms/presets/pipeline.h"

#include "batchd/wire/convert.h"
#include "batchd/wire/segment_layout.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>

#include "transforms/presets/presets.h"
#include "transforms/spec/compile_spec.h"

namespace batchd::daemon {

void SampleProgress::crash() {
  ::signal(SIGSEGV, SIG_DFL);
  ::raise(SIGSEGV);
  std::abort();
}

void SampleProgress::hang() {
  for (;;) ::pause();  // until the daemon's watchdog kills this worker
}

Status share_fault_flags(FaultInjection* faults) {
  if (faults->crash_in_cache_fill < 0) return ok_status();
  void* page = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return posix_error("mmap of the fault injection's shared flags", errno);
  faults->cache_fill_crashed = new (page) std::atomic<uint32_t>(0);  // the process's life: never unmapped
  return ok_status();
}

uint64_t TensorDesc::sample_bytes() const {
  return wire::checked_sample_bytes(wire::dtype_size(dtype), sample_shape).value_or(UINT64_MAX);
}

Result<std::unique_ptr<Pipeline>> make_pipeline(const std::string& name, std::shared_ptr<const Dataset> dataset,
                                                const wire::PipelineOptions& options, const wire::PipelineSpec& spec,
                                                const CacheBinding& cache) {
  auto planned = plan_for_dataset(name, options, spec, *dataset, ops::kNoLimits);
  if (!planned.ok()) return planned.error();
  return compile_planned(std::move(planned).value(), std::move(dataset), cache);
}

}  // namespace batchd::daemon
