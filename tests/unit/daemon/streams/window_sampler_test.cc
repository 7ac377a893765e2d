// The random-window sampler (window_sampler.h) alone and through Sampler and Stream: offsets uniform in
// [0, N - T - 1] (chi-square and Kolmogorov-Smirnov with fixed seeds and generous bounds), different per rank and
// step, the same for the same (seed, rank, step), epochs sized from floor((N - 1) / T), the draws of a batch the
// same however it is chunked, and an endless stream walking epochs without end.
#include "streams/window_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "batchd/wire/convert.h"
#include "streams/sampler.h"
#include "streams/stream.h"

namespace batchd::daemon {
namespace {

std::vector<int64_t> draw(uint64_t bound, uint64_t seed, uint32_t rank, uint64_t step, size_t b = 64) {
  std::vector<int64_t> out(b, -1);
  draw_windows(bound, seed, rank, step, out);
  return out;
}

// The random sampler of an lm stream over N tokens with windows of T (as plan_pipeline sizes it).
Sampler random_sampler(uint64_t n, uint32_t t, uint32_t batch, uint32_t rank = 0, uint32_t world = 1,
                       uint64_t seed = 0) {
  SamplerOptions o;
  o.dataset_size = n - t;
  o.batch_size = batch;
  o.seed = seed;
  o.rank = rank;
  o.world_size = world;
  o.random_epoch_windows = (n - 1) / t;
  auto s = Sampler::make(o);
  EXPECT_TRUE(s.ok()) << s.error().message();
  return std::move(s).value();
}

TEST(WindowSamplerTest, OffsetsAreUniformOverEveryOffset) {
  // 50 offsets (N - T = 50), 100000 draws over 1000 steps: each offset ~2000 times. Chi-square, 49 degrees of
  // freedom: p < 0.001 at 85.4; the bound is generous and the seed fixed, so the test is deterministic.
  const uint64_t bound = 50;
  std::vector<int> counts(bound);
  for (uint64_t step = 0; step < 1000; ++step) {
    for (int64_t o : draw(bound, 1337, 0, step, 100)) {
      ASSERT_GE(o, 0);
      ASSERT_LT(o, static_cast<int64_t>(bound));
      ++counts[static_cast<size_t>(o)];
    }
  }
  const double expected = 100000.0 / bound;
  double chi2 = 0;
  for (int c : counts) chi2 += (c - expected) * (c - expected) / expected;
  EXPECT_LT(chi2, 100.0);
  EXPECT_GT(chi2, 10.0) << "suspiciously even: a counter, not a random draw";
}

TEST(WindowSamplerTest, OffsetsOfAHugeFileAreUniformByKolmogorovSmirnov) {
  // N - T = 9e9 offsets (an OpenWebText-sized file): 20000 draws against the uniform CDF. The 0.1% critical value
  // of D is 1.95 / sqrt(n) = 0.0138; allow 0.02.
  const uint64_t bound = 9'000'000'000ull;
  std::vector<double> u;
  for (uint64_t step = 0; step < 200; ++step) {
    for (int64_t o : draw(bound, 7, 3, step, 100)) u.push_back(static_cast<double>(o) / static_cast<double>(bound));
  }
  std::sort(u.begin(), u.end());
  double d = 0;
  const double n = static_cast<double>(u.size());
  for (size_t i = 0; i < u.size(); ++i) {
    d = std::max({d, (static_cast<double>(i) + 1) / n - u[i], u[i] - static_cast<double>(i) / n});
  }
  EXPECT_LT(d, 0.02);
  EXPECT_GT(u.back(), 0.99) << "the top of the range is reached";
}

TEST(WindowSamplerTest, TheRangeIsZeroToNMinusTMinusOneInclusive) {
  // N - T = 3: offsets 0, 1, 2 each drawn, never 3 (its window would need token N).
  std::set<int64_t> seen;
  for (uint64_t step = 0; step < 50; ++step) {
    for (int64_t o : draw(3, 0, 0, step)) seen.insert(o);
  }
  EXPECT_EQ(seen, (std::set<int64_t>{0, 1, 2}));
  for (int64_t o : draw(1, 5, 2, 9)) ASSERT_EQ(o, 0) << "T + 1 = N: the one window at offset 0";
}

TEST(WindowSamplerTest, TheSameSeedRankAndStepDrawTheSameAndAnyOtherDrawsOthers) {
  const uint64_t bound = 1'000'000;
  const auto base = draw(bound, 42, 1, 100);
  EXPECT_EQ(base, draw(bound, 42, 1, 100)) << "a resumed run draws what the first drew";
  EXPECT_NE(base, draw(bound, 42, 0, 100)) << "another rank";
  EXPECT_NE(base, draw(bound, 42, 2, 100)) << "another rank";
  EXPECT_NE(base, draw(bound, 42, 1, 101)) << "the next step";
  EXPECT_NE(base, draw(bound, 43, 1, 100)) << "another seed";
  // Ranks do not share windows beyond chance: 8 ranks x 64 draws from 1e6 offsets.
  std::set<int64_t> all;
  for (uint32_t r = 0; r < 8; ++r) {
    for (int64_t o : draw(bound, 42, r, 100)) all.insert(o);
  }
  EXPECT_GE(all.size(), 8u * 64u - 2u);
  // A batch is a prefix-stable sequence of draws: a shorter batch is the head of a longer one.
  const auto head = draw(bound, 42, 1, 100, 10);
  EXPECT_TRUE(std::equal(head.begin(), head.end(), base.begin()));
}

TEST(WindowSamplerTest, AnEpochIsOnePassOfTheFileSharedByTheRanksAtLeastOneBatch) {
  // floor(floor((N - 1) / T) / (B * world)).
  EXPECT_EQ(random_window_batches(1000, 10, 1), 100u);
  EXPECT_EQ(random_window_batches(1000, 10, 4), 25u);
  EXPECT_EQ(random_window_batches(1000, 7, 3), 47u);  // 1000 / 21
  EXPECT_EQ(random_window_batches(5, 64, 8), 1u) << "a file smaller than a batch still has an epoch";
  const Sampler s = random_sampler(100001, 64, 32, 1, 2);  // 1562 windows of 64: 24 batches of 32 per rank
  EXPECT_EQ(s.batches_per_epoch(), 24u);
  EXPECT_EQ(s.samples_per_epoch(), 24u * 32u);
  EXPECT_EQ(s.batch_range(23), (std::pair<uint64_t, uint64_t>{736, 768})) << "every batch full";
}

TEST(WindowSamplerTest, EverySeqLenGivesEpochsOfDrawsInRangeStepByStep) {
  const uint64_t n = 5000;
  for (uint32_t t : {1u, 2u, 3u, 64u, 255u, 1024u, 4998u, 4999u}) {
    SCOPED_TRACE("T = " + std::to_string(t));
    const Sampler s = random_sampler(n, t, 16, 2, 3, 11);
    ASSERT_TRUE(s.random_windows());
    EXPECT_EQ(s.batches_per_epoch(), std::max<uint64_t>(1, (n - 1) / t / 48));
    const uint64_t per_epoch = s.batches_per_epoch();
    for (uint64_t epoch : {0ull, 1ull, 7ull}) {
      const auto indices = s.epoch_indices(epoch);
      ASSERT_EQ(indices.size(), s.samples_per_epoch());
      for (int64_t i : indices) ASSERT_TRUE(i >= 0 && i <= static_cast<int64_t>(n - t - 1)) << i;
      for (uint64_t b = 0; b < per_epoch; ++b) {
        // Batch b of `epoch` is step epoch * per_epoch + b, whichever way it is asked for.
        const auto step = draw(n - t, 11, 2, epoch * per_epoch + b, 16);
        ASSERT_TRUE(std::equal(step.begin(), step.end(), indices.begin() + static_cast<int64_t>(b * 16)));
        std::vector<int64_t> one(16);
        s.batch_draws(epoch, b, one);
        ASSERT_EQ(one, step);
      }
    }
  }
}

TEST(WindowSamplerTest, ShuffleAndDropLastDoNotApplyAndASubsetIsRefused) {
  SamplerOptions o;
  o.dataset_size = 990;
  o.batch_size = 7;
  o.random_epoch_windows = 100;
  const auto plain = Sampler::make(o)->epoch_indices(3);
  o.shuffle = true;
  o.drop_last = true;
  EXPECT_EQ(Sampler::make(o)->epoch_indices(3), plain);
  o.subset = SampleSubset::make([] {
               wire::SampleSubset w;
               w.add_run_starts(0);
               w.add_run_lengths(990);
               return w;
             }(), 990).value();
  EXPECT_FALSE(Sampler::make(o).ok());
}

// A Stream of random windows: 1001 tokens, T = 10, B = 8, one rank: 100 windows, 12 batches an epoch.
std::unique_ptr<Stream> random_stream(SegmentPool* pool, uint32_t workers, uint32_t num_epochs) {
  Sampler sampler = random_sampler(1001, 10, 8, 0, 1, 5);
  wire::StreamOpened opened;
  opened.set_slot_count(2);
  opened.set_segment_bytes(4096);
  opened.set_strategy(wire::FILE_DESCRIPTOR);
  opened.set_num_epochs(num_epochs);
  opened.set_dataset_size(991);
  opened.set_batch_size(8);
  opened.set_batches_per_epoch(sampler.batches_per_epoch());
  wire::WorkerAttach attach;
  attach.set_dataset("d");
  StreamPlan plan{opened, attach, std::move(sampler), wire::ON_ERROR_FAIL, false, false};
  auto segment = pool->create(&plan, ::geteuid());
  EXPECT_TRUE(segment.ok()) << segment.error().message();
  return std::make_unique<Stream>(Peer{}, std::move(plan), std::move(segment).value(), ChunkPolicy{workers, 0});
}

// The indices of the first `batches` batches, each batch's chunks put together; delivered and released as it goes.
std::vector<std::vector<int64_t>> run(Stream& stream, size_t batches) {
  std::vector<std::vector<int64_t>> out;
  while (out.size() < batches) {
    std::vector<int64_t> batch(8, -1);
    auto task = stream.next_task();
    EXPECT_TRUE(task);
    if (!task) break;
    const uint64_t sequence = task->sequence();
    for (;;) {
      for (int k = 0; k < task->work.indices_size(); ++k) batch[task->begin() + k] = task->work.indices(k);
      stream.on_done(*task);
      if (!stream.take_deliverable().empty()) break;
      task = stream.next_task();
      EXPECT_TRUE(task && task->sequence() == sequence) << "the chunks of one batch come first";
      if (!task) return out;
    }
    EXPECT_TRUE(stream.release(sequence).ok());
    out.push_back(batch);
  }
  return out;
}

TEST(WindowSamplerTest, AStreamsDrawsDoNotDependOnChunkingAndAnEndlessStreamGoesOnPastItsEpochs) {
  SegmentPool pool{std::move(SegmentInstance::claim()).value(), 1 << 20};
  auto whole = random_stream(&pool, 1, /*num_epochs=*/0);
  EXPECT_EQ(whole->info().batches_total(), wire::kEndlessBatches) << "num_epochs 0: endless";
  const auto batches = run(*whole, 30);  // 2.5 epochs of 12 batches
  ASSERT_EQ(batches.size(), 30u);
  EXPECT_FALSE(whole->all_delivered());
  const Sampler reference = random_sampler(1001, 10, 8, 0, 1, 5);
  for (size_t k = 0; k < batches.size(); ++k) {
    std::vector<int64_t> expected(8);
    reference.batch_draws(k / 12, k % 12, expected);
    ASSERT_EQ(batches[k], expected) << "batch " << k;
  }
  auto chunked = random_stream(&pool, 8, 3);  // 8 workers, 2 slots: each batch in 4 chunks
  EXPECT_EQ(chunked->info().batches_total(), 36u);
  EXPECT_EQ(run(*chunked, 30), batches);
}

}  // namespace
}  // namespace batchd::daemon
