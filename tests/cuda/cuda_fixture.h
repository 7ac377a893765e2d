// cuda_fixture.h — what the CUDA client tests share: a daemon (SharedDaemonTest), a stream opened on it, a
// consumer CUDA stream destroyed after the test, SKIP_WITHOUT_GPU(), and a synchronous copy back to the host.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "batchd/cuda.h"
#include "daemon_fixture.h"

namespace batchd::testing {

class CudaClientTest : public SharedDaemonTest {
 protected:
  Stream open(const StreamOptions& o) {
    auto client = Client::connect(daemon().socket_path());
    EXPECT_TRUE(client.ok());
    client_ = std::make_unique<Client>(std::move(client).value());
    auto stream = client_->open_stream(o);
    EXPECT_TRUE(stream.ok()) << stream.error().message();
    return std::move(stream).value();
  }
  // A trainer-side CUDA stream for this test, destroyed after it (also when an assertion ends the test early).
  cudaStream_t consumer_stream() {
    EXPECT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
    return stream_;
  }
  void TearDown() override {
    if (stream_ != nullptr) {
      EXPECT_EQ(cudaStreamDestroy(stream_), cudaSuccess);
    }
  }
  std::unique_ptr<Client> client_;
  cudaStream_t stream_ = nullptr;
};

#define SKIP_WITHOUT_GPU()                                                                   \
  if (auto n = cuda::device_count(); !n.ok()) GTEST_SKIP() << "needs a CUDA device: " << n.error().message()

// A device batch's tensor, copied back to the host (synchronously: tests only).
inline std::vector<uint8_t> to_host(const cuda::DeviceTensor& t, cudaStream_t s) {
  std::vector<uint8_t> out(t.nbytes);
  EXPECT_EQ(cudaMemcpyAsync(out.data(), t.data, t.nbytes, cudaMemcpyDeviceToHost, s), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  return out;
}

}  // namespace batchd::testing
