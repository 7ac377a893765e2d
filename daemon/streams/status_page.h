// status_page.h — which streams one StatusReply lists, so that a status stays under its bound however many streams
// the daemon serves (StatusRequest.after_stream_id; docs/protocol.md, "Status pages").
//
// A page lists, in stream-id order, the streams its view shows whose id is above after_stream_id, each as its
// StreamInfo and SegmentInfo, while the encoded StatusReply stays within max_reply_bytes (a client connection passes
// half of limits.max_frame_bytes). The first stream of a page is listed even if it alone passes the bound, so that
// paging always advances (an entry is about 200 bytes, a shared stream's 2 KiB with shares.max_subscribers = 32).
// The streams after the last one listed are only counted: StatusReply.streams_omitted and segment_bytes_omitted, and
// next_after_stream_id (the last listed id) is where the next page starts. Nothing else in the reply is paged.
//
// Use: construct on a StatusReply whose other parts (workers, datasets, ...) are filled already — the fields set
// after it may take kReservedBytes more — then offer each stream the view shows, in id order: skip it unless
// wants(id); if full(), omit() it (no entry need be built); else add() it. Not thread-safe: one reply at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include "batchd.pb.h"

namespace batchd::daemon {

struct StatusPage {
  uint64_t after_stream_id = 0;
  size_t max_reply_bytes = std::numeric_limits<size_t>::max();  // unbounded: the metrics endpoint's snapshot
};

class StatusLister final {
 public:
  // Room kept for the StatusReply fields set after the lister (totals, instance id, the paging fields).
  static constexpr size_t kReservedBytes = 256;

  // `status` must outlive the lister; its size now is what the listed entries come on top of.
  StatusLister(wire::StatusReply* status, const StatusPage& page);

  bool wants(uint64_t stream_id) const { return stream_id > page_.after_stream_id; }
  bool full() const { return full_; }
  // Lists the stream (its segment's stream_id is its id), or, when it does not fit, closes the page and omits it.
  void add(wire::StreamInfo stream, wire::SegmentInfo segment);
  // Counts a stream of this page's range that is not listed (the page is full).
  void omit(uint64_t segment_bytes);

 private:
  wire::StatusReply* status_;
  StatusPage page_;
  size_t used_;
  size_t listed_ = 0;
  uint64_t last_listed_ = 0;
  bool full_ = false;
};

}  // namespace batchd::daemon
