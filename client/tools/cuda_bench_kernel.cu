// cuda_bench_kernel.cu — the fixed synthetic "training step" of batchd-cuda-bench: one block reads the batch
// (a strided checksum, so the kernel depends on the copy) and spins for a fixed number of GPU clock cycles (the
// same idea as torch.cuda._sleep, which bench/compare_cuda.py uses on the PyTorch side).
#include "cuda_bench_kernel.h"

namespace {

__global__ void step_kernel(const unsigned char* data, size_t bytes, long long cycles, unsigned long long* sink) {
  unsigned long long sum = 0;
  for (size_t i = threadIdx.x * 4096; i < bytes; i += blockDim.x * 4096) sum += data[i];
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
  if (sum == 0xFFFFFFFFFFFFFFFFull) *sink = sum;  // keeps the reads; never true
}

}  // namespace

cudaError_t launch_step(cudaStream_t stream, const void* data, size_t bytes, long long cycles,
                        unsigned long long* sink) {
  step_kernel<<<1, 32, 0, stream>>>(static_cast<const unsigned char*>(data), bytes, cycles, sink);
  return cudaGetLastError();
}
