// framing.h — length-prefixed protobuf frames.
//
// A frame is a 4-byte little-endian payload length followed by the payload (one serialized message). The decoder
// checks the announced length against its bound *before* buffering the payload, so an oversized or garbage header
// is refused without allocating, and parse_payload() checks the protobuf parse result before anyone dispatches.
#pragma once

#include <google/protobuf/message_lite.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "batchd/result.h"

namespace batchd::wire {

inline constexpr size_t kFrameHeaderBytes = 4;
// Default bound on one frame's payload. Control messages are small (a WorkerTask of 4096 indices is ~40 KiB).
inline constexpr uint32_t kDefaultMaxFrameBytes = 1u << 20;

// Serializes `message` as one frame (header + payload). Fails only if the message exceeds `max_frame_bytes`.
Result<std::string> encode_frame(const google::protobuf::MessageLite& message,
                                 uint32_t max_frame_bytes = kDefaultMaxFrameBytes);

// Parses one payload into `message`; a kProtocol error naming `what` if the bytes are not a valid message.
Status parse_payload(std::string_view payload, google::protobuf::MessageLite* message, const char* what);

// Incremental frame decoder for a byte stream. Not thread-safe; one per connection.
//
// Memory: the bytes received and not yet returned, in a buffer that grows as they arrive (never to a frame's
// announced length up front, never past the end of the frame being received) and is freed once everything was
// returned, so an idle decoder holds at most kKeptCapacity bytes.
class FrameDecoder final {
 public:
  // `limit_name` (e.g. a config key) is named in the error for an oversized frame.
  explicit FrameDecoder(uint32_t max_frame_bytes = kDefaultMaxFrameBytes, const char* limit_name = nullptr)
      : max_frame_bytes_(max_frame_bytes), limit_name_(limit_name) {}

  // Appends received bytes.
  void feed(const char* data, size_t size);

  // Pops the next complete payload into *payload and returns true; returns false if more bytes are needed;
  // returns a kResourceExhausted error if the next frame announces more than max_frame_bytes (the stream cannot
  // be resynchronised after that: close the connection).
  Result<bool> next(std::string* payload);

  // Bytes received but not yet returned as payloads (a non-zero value at EOF means a truncated frame).
  size_t buffered() const { return buffer_.size() - read_pos_; }
  // Bytes of memory the buffer holds (for tests).
  size_t capacity() const { return buffer_.capacity(); }

  static constexpr size_t kKeptCapacity = 4096;

 private:
  void release_memory();

  uint32_t max_frame_bytes_;
  const char* limit_name_;
  std::string buffer_;
  size_t read_pos_ = 0;
};

}  // namespace batchd::wire
