// convert.h — batchd::Error <-> wire::Error, and the facts about wire messages both sides agree on: the default
// socket path, the size of a dtype, the number of batches a stream delivers.
#pragma once

#include <string>

#include "batchd.pb.h"
#include "batchd/result.h"

namespace batchd::wire {

inline wire::Error to_wire(const batchd::Error& e) {
  wire::Error w;
  w.set_code(static_cast<wire::ErrorCode>(static_cast<int>(e.code())));
  w.set_message(e.message());
  return w;
}

inline batchd::Error from_wire(const wire::Error& w) {
  const int c = static_cast<int>(w.code());
  const auto code = (c >= 1 && c <= 9) ? static_cast<batchd::ErrorCode>(c) : batchd::ErrorCode::kInternal;
  return batchd::Error(code, w.message());
}

// The socket a client uses when none is given: $BATCHD_SOCKET if set, else /run/batchd/batchd.sock (where the
// systemd unit's RuntimeDirectory puts it).
std::string default_socket_path();

// Bytes per element of `dtype`: 1 (uint8, bool), 2 (float16, bfloat16), 4 (float32, int32), 8 (int64, float64);
// 0 for DTYPE_UNSPECIFIED or a value this build does not know.
size_t dtype_size(wire::DType dtype);
// The torch/numpy-style name ("uint8", "float32", "int64", "float16", "bfloat16", "float64", "int32", "bool"); ""
// for DTYPE_UNSPECIFIED or an unknown value.
const char* dtype_name(wire::DType dtype);

// What total_batches() says of an endless stream (num_epochs 0): more than any run reads (2^62 batches), and far
// enough from 2^64 that counters added to it do not wrap.
inline constexpr uint64_t kEndlessBatches = uint64_t{1} << 62;

// Batches a stream delivers in all: batches_per_epoch * num_epochs - start_batch (the first epoch is resumed at
// start_batch); kEndlessBatches for an endless stream (num_epochs 0), and when the product passes it (it would
// wrap to a small number, or 0, for a large dataset read for many epochs). The daemon's Stream and the client's
// StreamInfo both take it from here.
uint64_t total_batches(const wire::StreamOpened& opened);

}  // namespace batchd::wire
