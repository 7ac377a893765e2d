// The lm pipeline through make_pipeline over a real token file: its tensors, input_ids/targets against the windows
// computed by hand (uint16 and uint32; the dataset's T and any other, tiled and random windows), the bounds of a
// stream's seq_len, the progress it reports, a file truncated under it, and the refusals between it and the other
// pipeline families.
#include "transforms/ops/token_window.h"
#include "transforms/presets/presets.h"
#include "transforms/spec/token_pipeline.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <vector>

#include "data/dataset_config.h"
#include "data/token_dataset.h"
#include "../data/token_test_support.h"

namespace batchd::daemon {
namespace {

// A dataset of another kind (no token windows, no images), with no file behind it.
class PlainDataset final : public Dataset {
 public:
  const std::string& name() const override { return name_; }
  const char* format() const override { return "idx"; }
  uint64_t size() const override { return 10; }

 private:
  std::string name_ = "fashion";
};

class LmPipelineTest : public token_test::ScratchTest {
 protected:
  // A file of n tokens whose token k is value(k), opened as dataset "lm" with seq_len t.
  template <typename Token>
  std::shared_ptr<const Dataset> open(const std::string& dtype, size_t n, uint32_t t, uint64_t (*value)(uint64_t)) {
    path_ = write_tokens<Token>("train.bin", n, value);
    auto ds = open_dataset(token_test::tokens_config(path_, dtype, t), OpenContext{});
    EXPECT_TRUE(ds.ok()) << ds.error().message();
    return ds.ok() ? *ds : nullptr;
  }

  // Runs `indices` through pipeline `lm` with `options` (T = t) and checks every row against value(): sample i
  // starts at token i * stride.
  void expect_windows(std::shared_ptr<const Dataset> ds, uint32_t t, const std::vector<int64_t>& indices,
                      uint64_t (*value)(uint64_t), const wire::PipelineOptions& options = {}, uint64_t stride = 0) {
    if (stride == 0) stride = t;
    auto sut = make_pipeline("lm", ds, options);
    ASSERT_TRUE(sut.ok()) << sut.error().message();
    const auto& tensors = (*sut)->tensors();
    ASSERT_EQ(tensors.size(), 2u);
    EXPECT_EQ(tensors[0].name, "input_ids");
    EXPECT_EQ(tensors[1].name, "targets");
    for (const auto& d : tensors) {
      EXPECT_EQ(d.dtype, wire::INT64);
      EXPECT_EQ(d.sample_shape, std::vector<int64_t>{t});
    }
    const size_t b = indices.size();
    std::vector<int64_t> slot(2 * b * t, -1);
    const std::vector<uint64_t> offsets = {0, b * t * sizeof(int64_t)};
    std::atomic<int64_t> at{-1};
    const Status st = (*sut)->run(indices, reinterpret_cast<char*>(slot.data()), offsets,
                                  BatchContext{0, 0, SampleProgress(&at, {})});
    ASSERT_TRUE(st.ok()) << st.error().message();
    EXPECT_EQ(at.load(), indices.back()) << "progress.at() names each sample before it is read";
    for (size_t i = 0; i < b; ++i) {
      const auto w = static_cast<uint64_t>(indices[i]) * stride;
      for (uint32_t k = 0; k < t; ++k) {
        ASSERT_EQ(slot[i * t + k], static_cast<int64_t>(value(w + k))) << "input_ids row " << i << " col " << k;
        ASSERT_EQ(slot[b * t + i * t + k], static_cast<int64_t>(value(w + k + 1))) << "targets " << i << "," << k;
      }
    }
  }

  std::string path_;
};

uint64_t u16_value(uint64_t k) { return (k * 40503u + 7) & 0xffff; }  // every bit pattern, top bit included
uint64_t u32_value(uint64_t k) { return (k * 2654435761u + 11) & 0xffffffffu; }

TEST_F(LmPipelineTest, InputIdsAndTargetsAreTheWindowShiftedByOneAsInt64) {
  // T = 37 (not a multiple of any vector width: the loops' tails), windows in shuffled order, the last one included.
  const uint32_t t = 37;
  auto u16 = open<uint16_t>("uint16", 1000, t, u16_value);  // floor(999 / 37) = 27 windows
  ASSERT_TRUE(u16);
  ASSERT_EQ(u16->size(), 27u);
  expect_windows(u16, t, {26, 0, 13, 5, 5, 1}, u16_value);
  auto u32 = open<uint32_t>("uint32", 1000, t, u32_value);
  ASSERT_TRUE(u32);
  expect_windows(u32, t, {3, 26, 0}, u32_value);
}

wire::PipelineOptions lm_options(uint32_t seq_len, wire::LmSampling sampling = wire::TILED_WINDOWS) {
  wire::PipelineOptions o;
  o.mutable_lm()->set_seq_len(seq_len);
  o.mutable_lm()->set_sampling(sampling);
  return o;
}

TEST_F(LmPipelineTest, AnySeqLenGivesRowsOfTTiledOrAtAnyOffset) {
  // N = 1000, the dataset's T = 37; streams ask for others, down to 1 and up to N - 1 (one window of N tokens).
  const size_t n = 1000;
  auto ds = open<uint16_t>("uint16", n, 37, u16_value);
  ASSERT_TRUE(ds);
  const TokenWindows& tokens = *ds->tokens();
  for (uint32_t t : {1u, 2u, 8u, 37u, 64u, 333u, 998u, 999u}) {
    SCOPED_TRACE("T = " + std::to_string(t));
    const auto tiled = lm_options(t);
    EXPECT_EQ(lm_samples(tokens, tiled.lm()), (n - 1) / t);
    const auto last = static_cast<int64_t>((n - 1) / t - 1);
    expect_windows(ds, t, {last, 0, last / 2}, u16_value, tiled, t);
    const auto random = lm_options(t, wire::RANDOM_WINDOWS);
    EXPECT_EQ(lm_samples(tokens, random.lm()), n - t) << "offsets 0 .. N - T - 1";
    EXPECT_EQ(lm_windows(tokens, random.lm()), (n - 1) / t);
    const auto top = static_cast<int64_t>(n - t - 1);  // its last target is token N - 1
    expect_windows(ds, t, {top, 0, top / 2, top / 3}, u16_value, random, 1);
  }
}

TEST_F(LmPipelineTest, AnIndexPastTheLastOffsetIsRefusedNotRead) {
  auto ds = open<uint16_t>("uint16", 100, 10, u16_value);
  ASSERT_TRUE(ds);
  auto sut = make_pipeline("lm", ds, lm_options(10, wire::RANDOM_WINDOWS));
  ASSERT_TRUE(sut.ok()) << sut.error().message();
  std::vector<int64_t> slot(2 * 10);
  const std::vector<int64_t> past = {90};  // N - T: its window would end at token 100, past the file
  const Status st = (*sut)->run(past, reinterpret_cast<char*>(slot.data()), std::vector<uint64_t>{0, 80},
                                BatchContext{});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code(), ErrorCode::kInternal) << st.error().message();
}

TEST_F(LmPipelineTest, AStreamsSeqLenDefaultsToTheDatasetsAndIsBoundedByTheFile) {
  auto ds = open<uint16_t>("uint16", 100, 9, u16_value);
  ASSERT_TRUE(ds);
  auto dflt = resolve_lm_options(wire::LmOptions{}, *ds);
  ASSERT_TRUE(dflt.ok()) << dflt.error().message();
  EXPECT_EQ(dflt->seq_len(), 9u) << "0 = the dataset's seq_len";
  EXPECT_EQ(dflt->sampling(), wire::TILED_WINDOWS);
  auto whole = resolve_lm_options(lm_options(99).lm(), *ds);
  ASSERT_TRUE(whole.ok()) << "T + 1 = N: one window, the whole file";
  for (uint32_t t : {100u, 101u, 5000u}) {
    auto refused = resolve_lm_options(lm_options(t).lm(), *ds);
    ASSERT_FALSE(refused.ok()) << t;
    EXPECT_EQ(refused.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(refused.error().message(), "seq_len " + std::to_string(t) + " needs windows of " +
                                             std::to_string(t + 1) + " tokens, and 'lm' holds 100: lower seq_len to "
                                             "at most 99 (0 = the dataset's, 9)");
  }
  auto huge = make_pipeline("lm", ds, lm_options(kMaxSeqLen + 1));
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.error().message().find("seq_len 16777217 is over 16777216"), std::string::npos)
      << huge.error().message();
  auto fmnist = resolve_pipeline_options("fmnist", lm_options(8));
  ASSERT_FALSE(fmnist.ok());
  EXPECT_NE(fmnist.error().message().find("seq_len and sampling are options of pipeline 'lm'"), std::string::npos)
      << fmnist.error().message();
  auto lm = resolve_pipeline_options("lm", lm_options(8, wire::RANDOM_WINDOWS));
  ASSERT_TRUE(lm.ok());
  EXPECT_EQ(lm->lm().seq_len(), 8u);
  EXPECT_EQ(lm->lm().sampling(), wire::RANDOM_WINDOWS);
}

TEST_F(LmPipelineTest, WidenWindowHandlesEveryLength) {
  std::vector<uint16_t> src(1100);
  for (size_t k = 0; k < src.size(); ++k) src[k] = static_cast<uint16_t>(u16_value(k));
  for (uint32_t t : {1u, 2u, 7u, 8u, 15u, 16u, 17u, 1023u, 1024u, 1025u}) {
    std::vector<int64_t> in(t + 1, -1), tg(t + 1, -1);
    widen_window(src.data(), TokenWindows::Dtype::kUint16, t, in.data(), tg.data());
    for (uint32_t k = 0; k < t; ++k) {
      ASSERT_EQ(in[k], static_cast<int64_t>(src[k])) << "t=" << t << " k=" << k;
      ASSERT_EQ(tg[k], static_cast<int64_t>(src[k + 1])) << "t=" << t << " k=" << k;
    }
    EXPECT_EQ(in[t], -1) << "wrote past the row, t=" << t;
    EXPECT_EQ(tg[t], -1) << "wrote past the row, t=" << t;
  }
}

TEST_F(LmPipelineTest, AWindowCutOffByATruncationIsAPerSampleDataError) {
  auto ds = open<uint16_t>("uint16", 101, 10, u16_value);
  ASSERT_TRUE(ds);
  auto sut = make_pipeline("lm", ds, wire::PipelineOptions{});
  ASSERT_TRUE(sut.ok());
  ASSERT_EQ(::truncate(path_.c_str(), 2 * 45), 0);  // windows 0..3 remain
  std::vector<int64_t> slot(2 * 3 * 10);
  std::atomic<int64_t> at{-1};
  const std::vector<int64_t> indices = {1, 8, 2};
  const Status st = (*sut)->run(indices, reinterpret_cast<char*>(slot.data()), std::vector<uint64_t>{0, 240},
                                BatchContext{0, 0, SampleProgress(&at, {})});
  ASSERT_FALSE(st.ok()) << "reading window 8 would have raised SIGBUS";
  EXPECT_EQ(st.error().code(), ErrorCode::kDataError);
  EXPECT_NE(st.error().message().find(path_ + ": tokens [80, 91) is no longer in the file"), std::string::npos)
      << st.error().message();
  EXPECT_EQ(at.load(), 8) << "the failed sample is the progress's last at(): on_error blames it alone";
}

TEST_F(LmPipelineTest, LmAndTheOtherFamiliesRefuseEachOthersDatasetsNamingTheFormat) {
  auto tokens = open<uint16_t>("uint16", 100, 9, u16_value);
  ASSERT_TRUE(tokens);
  auto plain = std::make_shared<const PlainDataset>();
  auto lm = make_pipeline("lm", plain, wire::PipelineOptions{});
  ASSERT_FALSE(lm.ok());
  EXPECT_EQ(lm.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(lm.error().message(), "pipeline 'lm' needs a token dataset (format = \"tokens\"); 'fashion' is idx");
  auto fmnist = make_pipeline("fmnist", tokens, wire::PipelineOptions{});
  ASSERT_FALSE(fmnist.ok());
  EXPECT_EQ(fmnist.error().message(), "pipeline 'fmnist' needs an idx dataset; 'lm' is tokens");
  for (const char* vision : {"train224", "train224_u8", "val224"}) {
    auto v = make_pipeline(vision, tokens, wire::PipelineOptions{});
    ASSERT_FALSE(v.ok()) << vision;
    EXPECT_NE(v.error().message().find("need an image dataset (imagefolder or webdataset); 'lm' is tokens"),
              std::string::npos)
        << v.error().message();
  }
}

TEST_F(LmPipelineTest, LmTakesNoVisionOptionsAndIsListedAmongTheKnownPipelines) {
  EXPECT_TRUE(resolve_pipeline_options("lm", wire::PipelineOptions{}).ok());
  wire::PipelineOptions vision;
  vision.mutable_vision()->set_crop_size(128);
  auto refused = resolve_pipeline_options("lm", vision);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.error().message().find("pipeline 'lm' takes no vision options"), std::string::npos);
  auto unknown = resolve_pipeline_options("gpt", wire::PipelineOptions{});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message(),
            "unknown pipeline 'gpt' (known: fmnist, fmnist_u8, train224, train224_u8, val224, val224_u8, val224_cached, "
            "val224_u8_cached, lm)");
}

}  // namespace
}  // namespace batchd::daemon
