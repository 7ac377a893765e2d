// cuda_bench_kernel.h — see cuda_bench_kernel.cu.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

// Enqueues on `stream` one kernel that reads `bytes` of device memory at `data` and then spins `cycles` GPU clocks.
cudaError_t launch_step(cudaStream_t stream, const void* data, size_t bytes, long long cycles,
                        unsigned long long* sink);
