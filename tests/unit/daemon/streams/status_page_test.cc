// StatusLister on synthetic streams: a page stays under its bound, counts what it leaves out exactly, says where the
// next page starts, and the pages together list every stream once (issue 23, item 4).
#include "streams/status_page.h"

#include <gtest/gtest.h>

namespace batchd::daemon {
namespace {

constexpr uint64_t kSegmentBytes = 1 << 20;

wire::StreamInfo stream(uint64_t id) {
  wire::StreamInfo s;
  s.set_stream_id(id);
  s.set_dataset("fashion-mnist-test");
  s.set_pipeline("fmnist");
  s.set_batch_size(1);
  s.set_client_pid(4242);
  s.set_state("running");
  s.set_on_error("fail");
  s.set_open_seconds(12.5);
  for (int w = 0; w < 8; ++w) s.add_chunks_by_worker(1000 + w);
  return s;
}

wire::SegmentInfo segment(uint64_t id) {
  wire::SegmentInfo s;
  s.set_stream_id(id);
  s.set_name("memfd:batchd.0123456789abcdef." + std::to_string(id));
  s.set_bytes(kSegmentBytes);
  s.set_slots(4);
  s.set_owner_pid(4242);
  s.set_owner_uid(1000);
  return s;
}

// A reply as the daemon starts one: everything but the streams.
wire::StatusReply base() {
  wire::StatusReply r;
  r.set_daemon_pid(1);
  r.set_version("0.2.0");
  for (int w = 0; w < 8; ++w) r.add_workers()->set_state("idle");
  r.add_datasets("fashion-mnist-test (10000 samples)");
  return r;
}

// One page of streams 1..n after `after`, as StreamManager::fill_status offers them.
wire::StatusReply page(uint64_t n, uint64_t after, size_t max_bytes) {
  wire::StatusReply r = base();
  StatusLister sut(&r, StatusPage{after, max_bytes});
  for (uint64_t id = 1; id <= n; ++id) {
    if (!sut.wants(id)) continue;
    if (sut.full()) {
      sut.omit(kSegmentBytes);
    } else {
      sut.add(stream(id), segment(id));
    }
  }
  r.set_instance_id("0123456789abcdef");  // set after the lister, within its reserve
  r.set_streams_of_others(7);
  return r;
}

TEST(StatusPageTest, APageStaysUnderItsBoundAndCountsWhatItLeavesOut) {
  const size_t bound = 4096;
  const auto r = page(7000, 0, bound);  // the shape: thousands of one user's streams
  EXPECT_LE(r.ByteSizeLong(), bound);
  ASSERT_GT(r.streams_size(), 5) << "a page is filled, not cut short";
  ASSERT_EQ(r.segments_size(), r.streams_size());
  EXPECT_EQ(r.streams_omitted(), 7000u - r.streams_size());
  EXPECT_EQ(r.segment_bytes_omitted(), r.streams_omitted() * kSegmentBytes);
  EXPECT_EQ(r.next_after_stream_id(), r.streams(r.streams_size() - 1).stream_id());
  const wire::StatusReply one_more = [&] {
    wire::StatusReply bigger = r;
    *bigger.add_streams() = stream(99999);
    *bigger.add_segments() = segment(99999);
    return bigger;
  }();
  EXPECT_GT(one_more.ByteSizeLong() + StatusLister::kReservedBytes, bound) << "the page is full, not half empty";
}

TEST(StatusPageTest, PagesTogetherListEveryStreamOnceInOrder) {
  std::vector<uint64_t> seen;
  uint64_t after = 0;
  int pages = 0;
  do {
    const auto r = page(500, after, 4096);
    EXPECT_LE(r.ByteSizeLong(), 4096u);
    for (const auto& s : r.streams()) seen.push_back(s.stream_id());
    ASSERT_TRUE(r.next_after_stream_id() == 0 || r.next_after_stream_id() > after) << "paging advances";
    after = r.next_after_stream_id();
    ASSERT_LT(++pages, 500);
  } while (after != 0);
  ASSERT_EQ(seen.size(), 500u);
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], i + 1);
  EXPECT_GT(pages, 1);
}

TEST(StatusPageTest, TheFirstStreamOfAPageIsListedEvenOverTheBound) {
  const auto r = page(3, 1, 64);  // a bound smaller than the reply without streams
  ASSERT_EQ(r.streams_size(), 1);
  EXPECT_EQ(r.streams(0).stream_id(), 2u);
  EXPECT_EQ(r.streams_omitted(), 1u);
  EXPECT_EQ(r.next_after_stream_id(), 2u);
}

TEST(StatusPageTest, UnboundedListsEverythingAndOmitsNothing) {
  const auto r = page(7000, 0, StatusPage{}.max_reply_bytes);
  EXPECT_EQ(r.streams_size(), 7000);
  EXPECT_EQ(r.streams_omitted(), 0u);
  EXPECT_EQ(r.next_after_stream_id(), 0u);
  EXPECT_GT(r.ByteSizeLong(), 1u << 19) << "what one reply of the issue's size would have been";
}

}  // namespace
}  // namespace batchd::daemon
