// A real daemon serving Fashion-MNIST to the client library: shapes, values, sampler semantics, leases.
#include <set>

#include "daemon_fixture.h"

namespace batchd::testing {
namespace {

class EndToEndTest : public SharedDaemonTest {
 protected:  void SetUp() override {
    auto c = Client::connect(daemon().socket_path());
    ASSERT_TRUE(c.ok()) << c.error().message();
    client_.emplace(std::move(c).value());
  }
  Stream open(const StreamOptions& o) {
    auto s = client_->open_stream(o);
    EXPECT_TRUE(s.ok()) << s.error().message();
    if (!s.ok()) std::abort();
    return std::move(s).value();
  }
  Error open_error(const StreamOptions& o) {
    auto s = client_->open_stream(o);
    EXPECT_FALSE(s.ok());
    return s.ok() ? Error(ErrorCode::kInternal, "") : s.error();
  }

  std::optional<Client> client_;
};

TEST_F(EndToEndTest, ImageValuesAreToTensorThenNormalizeOfTheIdxPixels) {
  const auto images = IdxFile::load(FMNIST_DIR "/train-images-idx3-ubyte.gz");
  const auto labels = IdxFile::load(FMNIST_DIR "/train-labels-idx1-ubyte.gz");
  auto o = fmnist_options("fashion-mnist", 64);
  o.seed = 3;
  Stream stream = open(o);
  for (int b = 0; b < 5; ++b) {
    auto batch = stream.next();
    ASSERT_TRUE(batch.ok() && *batch);
    const Tensor* image = (*batch)->find("image");
    const Tensor* label = (*batch)->find("label");
    const Tensor* index = (*batch)->find("index");
    ASSERT_TRUE(image && label && index);
    EXPECT_EQ(image->dtype, DType::kFloat32);
    EXPECT_EQ(image->shape, (std::vector<int64_t>{64, 1, 28, 28}));
    EXPECT_EQ(label->dtype, DType::kInt64);
    EXPECT_EQ(label->shape, (std::vector<int64_t>{64}));
    EXPECT_EQ(index->shape, (std::vector<int64_t>{64}));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(image->data) % 256, 0u);
    for (int i = 0; i < 64; ++i) {
      const int64_t idx = index->data_as<int64_t>()[i];
      ASSERT_GE(idx, 0);
      ASSERT_LT(idx, 60000);
      EXPECT_EQ(label->data_as<int64_t>()[i], labels.label(idx));
      for (int p = 0; p < 784; ++p) {
        const float expected = (images.pixel(idx, p) / 255.0f - 0.2860f) / 0.3530f;
        ASSERT_FLOAT_EQ(image->data_as<float>()[i * 784 + p], expected) << "sample " << idx << " pixel " << p;
      }
    }
  }
}

TEST_F(EndToEndTest, Uint8PipelineCarriesTheRawPixels) {
  const auto images = IdxFile::load(FMNIST_DIR "/t10k-images-idx3-ubyte.gz");
  auto o = fmnist_options();
  o.pipeline = "fmnist_u8";
  Stream stream = open(o);
  auto batch = stream.next();
  ASSERT_TRUE(batch.ok() && *batch);
  const Tensor* image = (*batch)->find("image");
  EXPECT_EQ(image->dtype, DType::kUInt8);
  EXPECT_EQ(image->nbytes, 100u * 784);
  const Tensor* index = (*batch)->find("index");
  for (int i = 0; i < 100; ++i) {
    const int64_t idx = index->data_as<int64_t>()[i];
    ASSERT_EQ(0, std::memcmp(image->data_as<uint8_t>() + i * 784, &images.bytes[16 + idx * 784], 784));
  }
}

TEST_F(EndToEndTest, UnshuffledStreamIsInDatasetOrderWithAShortLastBatch) {
  auto o = fmnist_options("fashion-mnist-test", 300);
  o.shuffle = false;
  Stream stream = open(o);
  EXPECT_EQ(stream.info().batches_per_epoch, 34u);
  const auto indices = read_all_indices(stream);
  ASSERT_EQ(indices.size(), 10000u);
  for (int64_t i = 0; i < 10000; ++i) ASSERT_EQ(indices[i], i);
}

TEST_F(EndToEndTest, DropLastDropsTheShortBatch) {
  auto o = fmnist_options("fashion-mnist-test", 300);
  o.drop_last = true;
  Stream stream = open(o);
  EXPECT_EQ(read_all_indices(stream).size(), 9900u);
}

TEST_F(EndToEndTest, EveryEpochHoldsEveryIndexOnceAndEpochsAreReshuffled) {
  auto o = fmnist_options();
  o.epoch = 3;
  o.num_epochs = 2;
  Stream stream = open(o);
  std::vector<std::vector<int64_t>> epochs(2);
  for (;;) {
    auto batch = stream.next();
    ASSERT_TRUE(batch.ok());
    if (!*batch) break;
    ASSERT_GE((*batch)->epoch(), 3u);
    const Tensor* index = (*batch)->find("index");
    auto& e = epochs.at((*batch)->epoch() - 3);
    e.insert(e.end(), index->data_as<int64_t>(), index->data_as<int64_t>() + index->numel());
  }
  for (const auto& e : epochs) {
    ASSERT_EQ(e.size(), 10000u);
    EXPECT_EQ(std::set<int64_t>(e.begin(), e.end()).size(), 10000u);
  }
  EXPECT_NE(epochs[0], epochs[1]);
}

TEST_F(EndToEndTest, RanksShardAnEpochExactlyOnce) {
  std::multiset<int64_t> all;
  for (uint32_t rank = 0; rank < 4; ++rank) {
    auto o = fmnist_options("fashion-mnist-test", 128);
    o.rank = rank;
    o.world_size = 4;
    o.seed = 11;
    Stream stream = open(o);
    EXPECT_EQ(stream.info().samples_per_epoch, 2500u);
    for (int64_t i : read_all_indices(stream)) all.insert(i);
  }
  ASSERT_EQ(all.size(), 10000u);
  for (int64_t i = 0; i < 10000; ++i) ASSERT_EQ(all.count(i), 1u) << i;
}

TEST_F(EndToEndTest, StartBatchResumesExactlyWhereAFullReadWas) {
  auto o = fmnist_options();
  o.seed = 5;
  o.epoch = 2;
  Stream full = open(o);
  const auto all = read_all_indices(full);
  o.start_batch = 37;
  Stream resumed = open(o);
  const auto rest = read_all_indices(resumed);
  ASSERT_EQ(rest.size(), all.size() - 3700);
  EXPECT_TRUE(std::equal(rest.begin(), rest.end(), all.begin() + 3700));
}

TEST_F(EndToEndTest, HoldingEveryLeaseMakesNextFailInsteadOfHanging) {
  auto o = fmnist_options();
  o.depth = 2;
  Stream stream = open(o);
  auto a = stream.next();
  auto b = stream.next();
  ASSERT_TRUE(a.ok() && *a && b.ok() && *b);
  auto c = stream.next();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code(), ErrorCode::kResourceExhausted);
  (*a)->release();
  auto d = stream.next();
  ASSERT_TRUE(d.ok() && *d) << "a released slot is refilled";
  EXPECT_EQ((*d)->sequence(), 2u);
}

TEST_F(EndToEndTest, ABatchStaysReadableAfterItsStreamIsClosed) {
  std::optional<Batch> kept;
  std::vector<float> copy;
  {
    Stream stream = open(fmnist_options());
    auto batch = stream.next();
    ASSERT_TRUE(batch.ok() && *batch);
    kept.emplace(std::move(**batch));
    const Tensor* image = kept->find("image");
    copy.assign(image->data_as<float>(), image->data_as<float>() + image->numel());
  }
  const Tensor* image = kept->find("image");
  ASSERT_NE(image, nullptr);
  EXPECT_TRUE(std::equal(copy.begin(), copy.end(), image->data_as<float>()));
}

TEST_F(EndToEndTest, BadOptionsAreRefusedWithTheReason) {
  auto o = fmnist_options();
  o.dataset = "imagenet";
  auto e = open_error(o);
  EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  EXPECT_NE(e.message().find("fashion-mnist-test"), std::string::npos) << e.message();

  o = fmnist_options();
  o.pipeline = "resnet";
  EXPECT_NE(open_error(o).message().find("unknown pipeline 'resnet'"), std::string::npos);

  o = fmnist_options();
  o.rank = 2;
  o.world_size = 2;
  EXPECT_NE(open_error(o).message().find("rank 2"), std::string::npos);

  o = fmnist_options();
  o.depth = 100000;
  EXPECT_EQ(open_error(o).code(), ErrorCode::kResourceExhausted);

  o = fmnist_options();
  o.batch_size = 0;
  EXPECT_NE(open_error(o).message().find("batch_size 0"), std::string::npos);

  o = fmnist_options();
  o.start_batch = 100;
  EXPECT_NE(open_error(o).message().find("past the end of the epoch"), std::string::npos);

  o = fmnist_options();
  o.vision.crop_size = 128;  // options of another pipeline are refused, never ignored
  EXPECT_NE(open_error(o).message().find("takes no vision options"), std::string::npos);

  // The connection is still good after refusals.
  Stream stream = open(fmnist_options());
  auto batch = stream.next();
  EXPECT_TRUE(batch.ok() && *batch);
}

// A client from before pipeline_options (0.1) sent the vision options as top-level OpenStream fields, with its
// defaults (224, 256) for every pipeline: such a stream still opens, and other values reach the vision options.
TEST_F(EndToEndTest, LegacyTopLevelVisionFieldsOfOlderClientsAreAcceptedAndMapped) {
  RawConnection raw(daemon().socket_path());
  wire::Request request;
  request.set_request_id(1);
  auto* open = request.mutable_open_stream();
  open->set_dataset("fashion-mnist-test");
  open->set_pipeline("fmnist");
  open->set_batch_size(64);
  open->set_crop_size(224);
  open->set_resize_size(256);
  open->set_dry_run(true);
  raw.send_request(request);
  auto reply = raw.read_reply();
  ASSERT_TRUE(reply && reply->has_stream_opened()) << (reply && reply->has_error() ? reply->error().message() : "");
  EXPECT_EQ(reply->stream_opened().batches_per_epoch(), 157u);

  open->set_crop_size(96);
  request.set_request_id(2);
  raw.send_request(request);
  reply = raw.read_reply();
  ASSERT_TRUE(reply && reply->has_error());
  EXPECT_NE(reply->error().message().find("takes no vision options"), std::string::npos) << reply->error().message();
}

}  // namespace
}  // namespace batchd::testing
