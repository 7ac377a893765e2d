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
    case wire::UINT8:
    case wire::BOOL:
    case wire::INT8: return 1;
    case wire::FLOAT16:
    case wire::BFLOAT16:
    case wire::INT16: return 2;
    case wire::FLOAT32:
    case wire::INT32: return 4;
    case wire::INT64:
    case wire::FLOAT64: return 8;
    default: return 0;
  }
}

const char* dtype_name(wire::DType dtype) {
  switch (dtype) {
    case wire::UINT8: return "uint8";
    case wire::FLOAT32: return "float32";
    case wire::INT64: return "int64";
    case wire::FLOAT16: return "float16";
    case wire::BFLOAT16: return "bfloat16";
    case wire::FLOAT64: return "float64";
    case wire::INT32: return "int32";
    case wire::BOOL: return "bool";
    case wire::INT16: return "int16";
    case wire::INT8: return "int8";
    default: return "";
  }
}

uint64_t total_batches(const wire::StreamOpened& opened) {
  if (opened.num_epochs() == 0) return kEndlessBatches;
  uint64_t all;  // a Loader asks for 2^30 epochs: with 2^34 batches each (len 2^38 at batch 16) the product wrapped
  if (__builtin_mul_overflow(opened.batches_per_epoch(), uint64_t{opened.num_epochs()}, &all) ||
      all > kEndlessBatches) {
    return kEndlessBatches;  // more than any run reads, as for an endless stream
  }
  return all - opened.start_batch();
}

}  // namespace batchd::wire
