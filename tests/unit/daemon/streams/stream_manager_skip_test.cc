// StreamManager with a fake pool: a skip stream over a long run of bad samples next to another connection's
// stream. Counts, not clocks: the other stream is served every other task throughout the run, each bad sample
// costs one redo of one sample, and every good sample is made once.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "batchd/wire/convert.h"
#include "fake_workers.h"
#include "streams/stream_manager.h"

namespace batchd::daemon {
namespace {

struct RecordingSink final : EventSink {
  void send_event(const wire::Reply& event) override { events.push_back(event); }
  std::vector<wire::Reply> events;
};

class StreamManagerSkipTest : public ::testing::Test {
 protected:
  static constexpr int64_t kWindows = 22'000;           // the token dataset's samples
  static constexpr int64_t kFirstBad = 1'000 + 128;     // mid-batch: a batch's first 128 samples are good
  static constexpr int64_t kBad = 20'000;               // samples [kFirstBad, kFirstBad + kBad) are bad
  static constexpr uint32_t kBatch = 256;

  static StreamSettings config() {
    StreamSettings c;
    c.limits.max_shm_bytes = 1ull << 30;
    return c;
  }
  // A token file of kWindows one-token windows (seq_len 1): "lm", beside Fashion-MNIST as "fmnist".
  static DatasetRegistry registry(const std::string& path) {
    std::vector<uint16_t> tokens(kWindows + 1, 7);
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(tokens.size() * 2));
    DatasetConfig lm;
    lm.name = "lm";
    lm.format = "tokens";
    lm.path = path;
    lm.seq_len = 1;
    DatasetConfig fm;
    fm.name = "fmnist";
    fm.format = "idx";
    fm.images = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";
    fm.labels = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz";
    auto registry = DatasetRegistry::open_all({lm, fm});
    std::filesystem::remove(path);  // mapped: the dataset keeps it
    return registry;
  }
  static bool bad(int64_t sample) { return sample >= kFirstBad && sample < kFirstBad + kBad; }

  // Releases every delivered batch; true once the skip stream (connection 7) has ended.
  bool release_all(RecordingSink& sink, uint64_t connection) {
    bool ended = false;
    for (const auto& e : sink.events) {
      if (e.has_batch_ready()) {
        EXPECT_TRUE(sut_.release(e.batch_ready().stream_id(), e.batch_ready().sequence(), connection).ok());
        skipped_ += connection == 7 ? e.batch_ready().skipped() : 0;
      }
      EXPECT_FALSE(e.has_stream_failed()) << e.stream_failed().error().message();
      ended |= e.has_stream_end() || e.has_stream_failed();
    }
    sink.events.clear();
    return ended;
  }

  StreamSettings config_ = config();
  DatasetRegistry datasets_ = registry(::testing::TempDir() + "skip-run-" + std::to_string(::getpid()) + ".bin");
  testing::FakeWorkers workers_{2};
  StreamManager sut_{config_, datasets_, workers_, std::move(SegmentInstance::claim()).value()};
  RecordingSink skip_sink_, other_sink_;
  uint64_t skipped_ = 0;
};

TEST_F(StreamManagerSkipTest, ARunOf20000BadSamplesCostsOneRedoEachAndTheOtherStreamKeepsItsTurns) {
  wire::OpenStream other = testing::fmnist_u8_request(100, 4);
  other.set_num_epochs(1000);  // always has work
  ASSERT_TRUE(sut_.open(other, Peer{8, 200, 2000}, &other_sink_).ok());
  wire::OpenStream skip;
  skip.set_dataset("lm");
  skip.set_pipeline("lm");
  skip.set_batch_size(kBatch);
  skip.set_depth(4);
  skip.set_shuffle(false);
  skip.set_on_error(wire::ON_ERROR_SKIP);
  auto opened = sut_.open(skip, Peer{7, 100, 1000}, &skip_sink_);
  ASSERT_TRUE(opened.ok()) << opened.error().message();
  const uint64_t skip_id = opened->reply.stream_id();
  const uint64_t skip_batches = opened->reply.batches_per_epoch();

  uint64_t skip_tasks = 0, failures = 0, made = 0, in_a_row = 0, most_in_a_row = 0;
  size_t seen = workers_.assigned.size();
  // Bounded: the whole stream in fewer tasks than this, or the test fails.
  const uint64_t budget = 3 * (kBad + skip_batches);
  bool ended = false;
  for (uint64_t step = 0; !ended && step < budget; ++step) {
    for (size_t w = 0; w < workers_.size(); ++w) {
      if (!workers_.busy(w)) continue;
      Task t = workers_.take(w);
      wire::WorkerDone done = testing::done_for(t);
      if (t.stream_id() == skip_id) {  // a worker's view: from the first position not made yet to the first bad one
        ++skip_tasks;
        for (int p = static_cast<int>(t.work.made()); p < t.work.indices_size(); ++p) {
          ++made;
          if (bad(t.work.indices(p))) {
            *done.mutable_error() = wire::to_wire(Error(ErrorCode::kDataError, "window gone"));
            done.set_sample_failed(true);
            done.set_failed_sample(t.work.indices(p));
            ++failures;
            break;
          }
        }
      }
      sut_.on_task_done(w, done, t);
    }
    for (; seen < workers_.assigned.size(); ++seen) {
      in_a_row = workers_.assigned[seen].second.stream_id() == skip_id ? in_a_row + 1 : 0;
      most_in_a_row = std::max(most_in_a_row, in_a_row);
    }
    ended = release_all(skip_sink_, 7);
    release_all(other_sink_, 8);
    ASSERT_LE(most_in_a_row, 1u) << "after " << failures << " bad samples the skip stream got " << most_in_a_row
                                 << " tasks in a row while the other stream had work";
  }
  ASSERT_TRUE(ended) << "the skip stream did not end within " << budget << " tasks";
  EXPECT_EQ(failures, static_cast<uint64_t>(kBad)) << "each bad sample fails once";
  EXPECT_LE(skip_tasks, kBad + skip_batches) << "one redo per bad sample";
  EXPECT_EQ(made, static_cast<uint64_t>(kWindows + kBad))
      << "every position made once (its sample, or the replacement of a bad one), each bad sample tried once";
  EXPECT_EQ(skipped_, static_cast<uint64_t>(kBad));
}

}  // namespace
}  // namespace batchd::daemon
