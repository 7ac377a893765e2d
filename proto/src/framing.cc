#include "batchd/wire/framing.h"

#include <algorithm>
#include <cstring>

namespace batchd::wire {

Result<std::string> encode_frame(const google::protobuf::MessageLite& message, uint32_t max_frame_bytes) {
  const size_t size = message.ByteSizeLong();
  if (size > max_frame_bytes) {
    return Error(ErrorCode::kResourceExhausted,
                 "message of " + std::to_string(size) + " bytes exceeds the frame limit of " +
                     std::to_string(max_frame_bytes) + " bytes; send less per message");
  }
  std::string frame(kFrameHeaderBytes + size, '\0');
  const auto n = static_cast<uint32_t>(size);
  const unsigned char header[4] = {static_cast<unsigned char>(n), static_cast<unsigned char>(n >> 8),
                                   static_cast<unsigned char>(n >> 16), static_cast<unsigned char>(n >> 24)};
  std::memcpy(frame.data(), header, sizeof(header));
  if (!message.SerializeToArray(frame.data() + kFrameHeaderBytes, static_cast<int>(size))) {
    return Error(ErrorCode::kInternal, "could not serialize a protobuf message (missing required field?)");
  }
  return frame;
}

Status parse_payload(std::string_view payload, google::protobuf::MessageLite* message, const char* what) {
  if (!message->ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return Error(ErrorCode::kProtocol, std::string("malformed ") + what + " (" + std::to_string(payload.size()) +
                                           " bytes that are not a valid protobuf message); is the peer a batchd "
                                           "of the same protocol version?");
  }
  return ok_status();
}

void FrameDecoder::feed(const char* data, size_t size) {
  if (read_pos_ > 0 && read_pos_ == buffer_.size()) {
    buffer_.clear();
    read_pos_ = 0;
  } else if (read_pos_ > 65536 && read_pos_ * 2 > buffer_.size()) {
    buffer_.erase(0, read_pos_);
    read_pos_ = 0;
  }
  const size_t needed = buffer_.size() + size;
  if (needed > buffer_.capacity()) {
    // Grow by doubling, but never past the end of the frame being received: a peer that announces a large frame
    // and sends part of it costs what it sent, not what it announced.
    size_t grow = std::max(needed, 2 * buffer_.capacity());
    if (buffered() >= kFrameHeaderBytes) {
      const auto* h = reinterpret_cast<const unsigned char*>(buffer_.data() + read_pos_);
      const uint32_t frame = uint32_t{h[0]} | (uint32_t{h[1]} << 8) | (uint32_t{h[2]} << 16) | (uint32_t{h[3]} << 24);
      const size_t frame_end = read_pos_ + kFrameHeaderBytes + frame;
      if (frame <= max_frame_bytes_) grow = std::max(needed, std::min(grow, frame_end));
    }
    buffer_.reserve(grow);
  }
  buffer_.append(data, size);
}

void FrameDecoder::release_memory() {
  if (buffered() == 0 && buffer_.capacity() > kKeptCapacity) {
    std::string().swap(buffer_);
    read_pos_ = 0;
  }
}

Result<bool> FrameDecoder::next(std::string* payload) {
  if (buffered() < kFrameHeaderBytes) return false;
  const auto* h = reinterpret_cast<const unsigned char*>(buffer_.data() + read_pos_);
  const uint32_t size = uint32_t{h[0]} | (uint32_t{h[1]} << 8) | (uint32_t{h[2]} << 16) | (uint32_t{h[3]} << 24);
  if (size > max_frame_bytes_) {
    const std::string limit = limit_name_ != nullptr ? std::string(" (") + limit_name_ + ")" : "";
    return Error(ErrorCode::kResourceExhausted, "frame announces " + std::to_string(size) +
                                                    " bytes, over the limit of " + std::to_string(max_frame_bytes_) +
                                                    " bytes" + limit + ": corrupt stream or not a batchd client");
  }
  if (buffered() < kFrameHeaderBytes + size) return false;
  payload->assign(buffer_, read_pos_ + kFrameHeaderBytes, size);
  read_pos_ += kFrameHeaderBytes + size;
  release_memory();
  return true;
}

}  // namespace batchd::wire
