// Built only where the installed batchd has the CUDA path: prints the CUDA device count, or why there is none.
#include <cstdio>

#include "batchd/cuda.h"

int main() {
  auto n = batchd::cuda::device_count();
  if (n.ok()) std::printf("cuda devices: %d\n", *n);
  else std::printf("cuda: %s\n", n.error().message().c_str());
  return 0;
}
