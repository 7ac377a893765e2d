// The CUDA client path (batchd/cuda.h) against a real daemon. Tests that need a GPU skip, with the reason, when
// cudaGetDeviceCount finds none; the no-device behaviour is tested everywhere.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <vector>

#include "cuda_fixture.h"

namespace batchd::testing {
namespace {

using cuda::DeviceBatch;
using cuda::DeviceOptions;
using cuda::DeviceStream;

TEST_F(CudaClientTest, WithoutADeviceOpenFailsClearlyAndTheStreamIsClosed) {
  if (cuda::device_count().ok()) GTEST_SKIP() << "this machine has a CUDA device; the no-device path is not reachable";
  const auto n = cuda::device_count();
  EXPECT_EQ(n.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(n.error().message().find("no CUDA device: cudaGetDeviceCount"), std::string::npos) << n.error().message();
  auto dev = DeviceStream::open(open(fmnist_options()));
  ASSERT_FALSE(dev.ok());
  EXPECT_EQ(dev.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(dev.error().message().find("read batches on the host"), std::string::npos) << dev.error().message();
  // The stream given to open() was closed with it: the daemon holds no stream and no segment for it.
  EXPECT_TRUE(eventually([&] { return daemon_status(daemon().socket_path()).streams.empty(); }));
  const std::string instance = instance_of(daemon());
  EXPECT_TRUE(eventually([&] { return shm_names_of(instance).empty(); }));
  // The CPU path still works on this connection's daemon.
  Stream again = open(fmnist_options());
  EXPECT_EQ(read_all_indices(again).size(), 10000u);
}

TEST_F(CudaClientTest, FewerThanTwoDeviceBatchesIsRefusedOnAnyMachine) {
  DeviceOptions opts;
  opts.max_batches = 1;
  auto dev = DeviceStream::open(open(fmnist_options()), opts);
  ASSERT_FALSE(dev.ok());
  EXPECT_EQ(dev.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(dev.error().message().find("max_batches must be at least 2"), std::string::npos);
}

TEST_F(CudaClientTest, PrefetchNeedsABufferSetEachAndIsCheckedOnAnyMachine) {
  DeviceOptions opts;
  opts.prefetch = 0;
  auto dev = DeviceStream::open(open(fmnist_options()), opts);
  ASSERT_FALSE(dev.ok());
  EXPECT_NE(dev.error().message().find("prefetch must be at least 1"), std::string::npos) << dev.error().message();
  opts.prefetch = 3;
  opts.max_batches = 3;
  dev = DeviceStream::open(open(fmnist_options()), opts);
  ASSERT_FALSE(dev.ok());
  EXPECT_EQ(dev.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(dev.error().message().find("at least prefetch + 1"), std::string::npos) << dev.error().message();
}

// Several copies in flight: the same batches, in order, each index once.
TEST_F(CudaClientTest, SeveralCopiesInFlightDeliverEveryBatchOnceInOrder) {
  SKIP_WITHOUT_GPU();
  StreamOptions o = fmnist_options();
  o.shuffle = false;
  DeviceOptions opts;
  opts.prefetch = 3;
  opts.max_batches = 5;
  auto dev = DeviceStream::open(open(o), opts);
  ASSERT_TRUE(dev.ok()) << dev.error().message();
  cudaStream_t s = consumer_stream();
  std::set<int64_t> seen;
  uint64_t expected_sequence = 0;
  for (;;) {
    auto d = dev->next(s);
    ASSERT_TRUE(d.ok()) << d.error().message();
    if (!*d) break;
    ASSERT_EQ((*d)->sequence(), expected_sequence++);
    const std::vector<uint8_t> idx = to_host(*(*d)->find("index"), s);
    const auto* v = reinterpret_cast<const int64_t*>(idx.data());
    seen.insert(v, v + (*d)->size());
  }
  EXPECT_EQ(seen.size(), 10000u);
  ASSERT_TRUE(dev->close().ok());
}

// Holding every device batch makes next() fail with kResourceExhausted without losing a batch; after a release
// the sequence continues where it was.
TEST_F(CudaClientTest, AllBuffersHeldIsANonStickyErrorThatLosesNothing) {
  SKIP_WITHOUT_GPU();
  StreamOptions o = fmnist_options();
  o.shuffle = false;
  DeviceOptions opts;
  opts.max_batches = 2;
  auto dev = DeviceStream::open(open(o), opts);
  ASSERT_TRUE(dev.ok()) << dev.error().message();
  cudaStream_t s = consumer_stream();
  ASSERT_NE(s, nullptr);
  auto b0 = dev->next(s);
  auto b1 = dev->next(s);
  ASSERT_TRUE(b0.ok() && b1.ok() && b0->has_value() && b1->has_value());
  EXPECT_EQ((*b1)->sequence(), 1u);
  auto none = dev->next(s);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code(), ErrorCode::kResourceExhausted) << none.error().message();
  b0->reset();
  auto b2 = dev->next(s);
  ASSERT_TRUE(b2.ok()) << b2.error().message();
  ASSERT_TRUE(b2->has_value());
  EXPECT_EQ((*b2)->sequence(), 2u);
  b1->reset();
  b2->reset();
  ASSERT_TRUE(dev->close().ok());
}

TEST_F(CudaClientTest, DeviceBatchesEqualHostBatchesExactlyOncePinned) {
  SKIP_WITHOUT_GPU();
  StreamOptions o = fmnist_options();
  o.seed = 3;
  Stream host = open(o);
  auto dev = DeviceStream::open(open(o));
  ASSERT_TRUE(dev.ok()) << dev.error().message();
  EXPECT_EQ(dev->pin_status().pinning, cuda::Pinning::kRegistered) << dev->pin_status().reason;
  cudaStream_t s = consumer_stream();
  ASSERT_NE(s, nullptr);
  std::set<int64_t> seen;
  for (;;) {
    auto h = host.next();
    auto d = dev->next(s);
    ASSERT_TRUE(h.ok() && d.ok());
    ASSERT_EQ(h->has_value(), d->has_value());
    if (!*h) break;
    ASSERT_EQ((*d)->sequence(), (*h)->sequence());
    for (const Tensor& t : (*h)->tensors()) {
      const cuda::DeviceTensor* dt = (*d)->find(t.name);
      ASSERT_NE(dt, nullptr) << t.name;
      ASSERT_EQ(dt->shape, t.shape);
      const std::vector<uint8_t> back = to_host(*dt, s);
      ASSERT_EQ(std::memcmp(back.data(), t.data, t.nbytes), 0) << t.name << " of batch " << (*h)->sequence();
    }
    const auto* idx = (*h)->find("index");
    seen.insert(idx->data_as<int64_t>(), idx->data_as<int64_t>() + (*h)->size());
  }
  EXPECT_EQ(seen.size(), 10000u);
  ASSERT_TRUE(dev->close().ok());
}

TEST_F(CudaClientTest, PageableFallbackWhenPinningIsOffGivesTheSameData) {
  SKIP_WITHOUT_GPU();
  StreamOptions o = fmnist_options();
  o.shuffle = false;
  DeviceOptions opts;
  opts.pin = false;
  auto dev = DeviceStream::open(open(o), opts);
  ASSERT_TRUE(dev.ok()) << dev.error().message();
  EXPECT_EQ(dev->pin_status().pinning, cuda::Pinning::kPageable);
  EXPECT_NE(dev->pin_status().reason.find("DeviceOptions::pin = false"), std::string::npos);
  cudaStream_t s = consumer_stream();
  ASSERT_NE(s, nullptr);
  auto first = dev->next(s);
  ASSERT_TRUE(first.ok() && first->has_value());
  const std::vector<uint8_t> idx = to_host(*(*first)->find("index"), s);
  const int64_t* i = reinterpret_cast<const int64_t*>(idx.data());
  for (int k = 0; k < 100; ++k) ASSERT_EQ(i[k], k);
  first->reset();
  ASSERT_TRUE(dev->close().ok());
}

// Held device batches keep their data while later ones are copied, up to max_batches; slots are recycled (a
// depth-2 stream of 100 batches completes).
TEST_F(CudaClientTest, HeldBatchesStayIntactAndSlotsAreRecycled) {
  SKIP_WITHOUT_GPU();
  StreamOptions o = fmnist_options();
  o.shuffle = false;
  o.depth = 2;
  DeviceOptions opts;
  opts.max_batches = 3;
  auto dev = DeviceStream::open(open(o), opts);
  ASSERT_TRUE(dev.ok()) << dev.error().message();
  cudaStream_t s = consumer_stream();
  ASSERT_NE(s, nullptr);
  auto held = dev->next(s);
  ASSERT_TRUE(held.ok() && held->has_value());
  size_t batches = 1;
  for (;;) {
    auto d = dev->next(s);
    ASSERT_TRUE(d.ok()) << d.error().message();
    if (!*d) break;
    ++batches;
  }
  EXPECT_EQ(batches, 100u);
  const std::vector<uint8_t> idx = to_host(*(*held)->find("index"), s);
  EXPECT_EQ(reinterpret_cast<const int64_t*>(idx.data())[99], 99);  // batch 0 still holds indices 0..99
  held->reset();
  ASSERT_TRUE(dev->close().ok());
}

}  // namespace
}  // namespace batchd::testing
