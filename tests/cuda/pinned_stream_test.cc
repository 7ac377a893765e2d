// PinnedStream (batchd/cuda.h): host batches in a page-locked segment, each lease released only after the copies
// the trainer enqueued from it. Against a real daemon; tests that need a GPU skip, with the reason, without one.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "cuda_fixture.h"

namespace batchd::testing {
namespace {

using cuda::PinnedStream;

TEST_F(CudaClientTest, PinnedStreamWithoutADeviceFailsClearlyAndTheStreamIsClosed) {
  if (cuda::device_count().ok()) GTEST_SKIP() << "this machine has a CUDA device; the no-device path is not reachable";
  auto pinned = PinnedStream::open(open(fmnist_options()));
  ASSERT_FALSE(pinned.ok());
  EXPECT_EQ(pinned.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(pinned.error().message().find("read batches on the host"), std::string::npos)
      << pinned.error().message();
  EXPECT_TRUE(eventually([&] { return daemon_status(daemon().socket_path()).streams.empty(); }));
  const std::string instance = instance_of(daemon());
  EXPECT_TRUE(eventually([&] { return shm_names_of(instance).empty(); }));
}

TEST_F(CudaClientTest, PinnedStreamTensorsArePageLockedAndEveryBatchComesOnce) {
  SKIP_WITHOUT_GPU();
  auto pinned = PinnedStream::open(open(fmnist_options()));
  ASSERT_TRUE(pinned.ok()) << pinned.error().message();
  ASSERT_EQ(pinned->pin_status().pinning, cuda::Pinning::kRegistered) << pinned->pin_status().reason;
  cudaStream_t s = consumer_stream();
  ASSERT_NE(s, nullptr);
  std::vector<bool> seen(10000, false);
  for (;;) {
    auto b = pinned->next();
    ASSERT_TRUE(b.ok()) << b.error().message();
    if (!*b) break;
    for (const Tensor& t : (*b)->tensors()) {
      cudaPointerAttributes attr{};
      ASSERT_EQ(cudaPointerGetAttributes(&attr, t.data), cudaSuccess) << t.name;
      EXPECT_EQ(attr.type, cudaMemoryTypeHost) << t.name << ": not page-locked";
    }
    const Tensor* idx = (*b)->find("index");
    for (size_t i = 0; i < (*b)->size(); ++i) {
      const int64_t k = idx->data_as<int64_t>()[i];
      ASSERT_FALSE(seen[k]) << "sample " << k << " twice";
      seen[k] = true;
    }
    ASSERT_TRUE(pinned->release_after(std::move(**b), s).ok());
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), true), 10000);
  ASSERT_TRUE(pinned->close().ok());
}

// The rule the class exists for: a slot handed back while a copy from it waits on the GPU is not refilled before
// the copy has run. The consumer stream is held up by a host function (300 ms) before the copy is enqueued; then
// the batch is handed back and two more batches are read and held, so the second needs the first one's slot (depth
// 2). Had the lease gone back at once, the daemon would have refilled the slot before the copy read it.
TEST_F(CudaClientTest, PinnedStreamNeverRefillsASlotWhileACopyFromItIsInFlight) {
  SKIP_WITHOUT_GPU();
  StreamOptions o = fmnist_options();
  o.shuffle = true;
  o.depth = 2;
  auto pinned = PinnedStream::open(open(o));
  ASSERT_TRUE(pinned.ok()) << pinned.error().message();
  cudaStream_t s = consumer_stream();
  ASSERT_NE(s, nullptr);
  auto first = pinned->next();
  ASSERT_TRUE(first.ok() && first->has_value());
  const Tensor* image = (**first).find("image");
  const std::vector<uint8_t> want(static_cast<const uint8_t*>(image->data),
                                  static_cast<const uint8_t*>(image->data) + image->nbytes);
  void* dev = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, image->nbytes), cudaSuccess);
  auto hold_up = [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(300)); };
  ASSERT_EQ(cudaLaunchHostFunc(s, hold_up, nullptr), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(dev, image->data, image->nbytes, cudaMemcpyHostToDevice, s), cudaSuccess);
  ASSERT_TRUE(pinned->release_after(std::move(**first), s).ok());
  std::vector<Batch> held;
  for (int i = 0; i < 2; ++i) {  // the second needs the first batch's slot: it must come back after the copy only
    auto b = pinned->next();
    ASSERT_TRUE(b.ok() && b->has_value()) << (b.ok() ? "ended" : b.error().message());
    held.push_back(std::move(**b));
  }
  EXPECT_GE(pinned->host_waits(), 1u) << "next() never waited for the copy: was the slot refilled under it?";
  std::vector<uint8_t> got(want.size());
  ASSERT_EQ(cudaMemcpyAsync(got.data(), dev, got.size(), cudaMemcpyDeviceToHost, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_TRUE(got == want) << "the copy read a refilled slot";
  ASSERT_EQ(cudaFree(dev), cudaSuccess);
  ASSERT_TRUE(pinned->close().ok());
}

}  // namespace
}  // namespace batchd::testing
