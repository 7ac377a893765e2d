#include "streams/status_page.h"

#include <google/protobuf/io/coded_stream.h>

namespace batchd::daemon {

namespace {

// Bytes an element of a repeated message field with a one-byte tag (fields 1 to 15) adds to the encoding.
size_t element_bytes(const google::protobuf::Message& m) {
  const size_t n = m.ByteSizeLong();
  return 1 + google::protobuf::io::CodedOutputStream::VarintSize64(n) + n;
}

}  // namespace

StatusLister::StatusLister(wire::StatusReply* status, const StatusPage& page)
    : status_(status), page_(page), used_(status->ByteSizeLong() + kReservedBytes) {}

void StatusLister::add(wire::StreamInfo stream, wire::SegmentInfo segment) {
  const size_t bytes = element_bytes(stream) + element_bytes(segment);
  const bool fits = used_ <= page_.max_reply_bytes && bytes <= page_.max_reply_bytes - used_;
  if (full_ || (listed_ > 0 && !fits)) return omit(segment.bytes());
  used_ += bytes;
  ++listed_;
  last_listed_ = stream.stream_id();
  *status_->add_streams() = std::move(stream);
  *status_->add_segments() = std::move(segment);
}

void StatusLister::omit(uint64_t segment_bytes) {
  if (!full_) {
    full_ = true;
    // The first stream of a page is always listed, so last_listed_ is above after_stream_id: paging advances.
    status_->set_next_after_stream_id(listed_ > 0 ? last_listed_ : page_.after_stream_id);
  }
  status_->set_streams_omitted(status_->streams_omitted() + 1);
  status_->set_segment_bytes_omitted(status_->segment_bytes_omitted() + segment_bytes);
}

}  // namespace batchd::daemon
