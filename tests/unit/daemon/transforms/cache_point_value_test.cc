// CachePoint (transforms/spec/cache_point.h) over a real SampleCache: a value stored at the point and loaded back is
// the value computed, bit for bit (a hit must equal what the uncached ops make).
#include "transforms/spec/cache_point.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace batchd::daemon {
namespace {

constexpr FileStamp kStamp{1000, 12345, 77};

TEST(CachePointValueTest, ATensorWithANegativeZeroComesBackBitIdentical) {
  // pil_to_tensor -> normalize(mean = 255, std = -1) (an inverted image; torchvision allows a negative std) makes
  // 255 - x, whole numbers in 0..255, and -0.0 where x = 255: as bytes it would come back +0.0.
  auto made = SampleCache::create({4u << 20, 1u << 20});
  ASSERT_TRUE(made.ok()) << made.error().message();
  CachePoint sut({made.value().get(), 1, 0, false}, 5, CachePoint::Kind::kTensor, 0);
  ops::Sample computed;
  computed.channels = 3;
  computed.height = 1;
  computed.width = 2;
  computed.tensor = {255.0f, -0.0f, 3.0f, 0.0f, 4.0f, 254.0f};
  sut.store(0, kStamp, computed, nullptr, 7);
  ops::Sample hit;
  int64_t label = -1;
  ASSERT_TRUE(sut.load(0, kStamp, &hit, nullptr, &label));
  EXPECT_EQ(label, 7);
  ASSERT_EQ(hit.tensor.size(), computed.tensor.size());
  EXPECT_EQ(std::memcmp(hit.tensor.data(), computed.tensor.data(), computed.tensor.size() * sizeof(float)), 0)
      << "value 1 came back as " << (std::signbit(hit.tensor[1]) ? "-0.0" : "+0.0");
}

}  // namespace
}  // namespace batchd::daemon
