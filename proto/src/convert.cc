#include "batchd/wire/convert.h"

#include <cstdlib>

namespace batchd::wire {

std::string default_socket_path() {
  const char* env = std::getenv("BATCHD_SOCKET");
  if (env != nullptr && *env != '\0') return env;
  return "/run/batchd/batchd.sock";
}

size_t dtype_size(wire::DType dtype) {
  switch (dtype) {
    case wire::UINT8: return 1;
    case wire::FLOAT32: return 4;
    case wire::INT64: return 8;
    default: return 0;
  }
}

uint64_t total_batches(const wire::StreamOpened& opened) {
  return opened.batches_per_epoch() * opened.num_epochs() - opened.start_batch();
}

}  // namespace batchd::wire
