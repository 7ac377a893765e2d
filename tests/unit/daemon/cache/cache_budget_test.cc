// The sample cache counts in limits.max_shm_bytes (config/cache_config.h): a new segment is refused when the open
// streams' segments plus the cache's live bytes would pass the budget, and the refusal names the cache; an absent
// cache.max_bytes on a small budget means no cache, not a daemon that cannot start.
#include <gtest/gtest.h>

#include "config/cache_config.h"
#include "base/shm_budget.h"

namespace batchd::daemon {
namespace {

TEST(CacheBudgetTest, TheCachesLiveBytesAndTheSegmentsShareTheBudget) {
  ShmBudget budget(100 << 20);
  uint64_t cache_bytes = 0;
  budget.set_also_held([&] { return cache_bytes; });
  budget.add(40 << 20);
  EXPECT_TRUE(budget.admit(50 << 20, wire::FILE_DESCRIPTOR).ok());
  cache_bytes = 20 << 20;
  const Status refused = budget.admit(50 << 20, wire::FILE_DESCRIPTOR);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(refused.error().message().find("by the sample cache"), std::string::npos) << refused.error().message();
  EXPECT_TRUE(budget.admit(40 << 20, wire::FILE_DESCRIPTOR).ok());
}

TEST(CacheBudgetTest, AnAbsentMaxBytesOnASmallBudgetIsNoCacheAndAnExplicitOneTooLargeIsRefused) {
  Config small;
  small.limits.max_shm_bytes = 2 << 20;  // a quarter: 512 KiB, below the cache's least
  auto none = make_sample_cache(&small);
  ASSERT_TRUE(none.ok()) << none.error().message();
  EXPECT_EQ(none->get(), nullptr);
  EXPECT_EQ(small.cache.max_bytes, 0);
  EXPECT_EQ(small.limits.max_shm_bytes, 2u << 20) << "the segments' budget is not lowered";

  Config roomy;
  roomy.limits.max_shm_bytes = 64 << 20;
  auto made = make_sample_cache(&roomy);
  ASSERT_TRUE(made.ok()) << made.error().message();
  ASSERT_NE(made->get(), nullptr);
  EXPECT_EQ(roomy.cache.max_bytes, 16 << 20);
  EXPECT_EQ(roomy.cache.max_bytes_per_uid, 4u << 20);

  Config huge;  // a quarter of 2^45 is past the cache's 1 TiB: the most it can be
  huge.limits.max_shm_bytes = uint64_t{1} << 45;
  auto capped = make_sample_cache(&huge);
  ASSERT_TRUE(capped.ok()) << capped.error().message();
  EXPECT_EQ(huge.cache.max_bytes, int64_t{1} << 40);
  huge.cache.max_bytes = int64_t{3} << 40;
  auto above = make_sample_cache(&huge);
  ASSERT_FALSE(above.ok());
  EXPECT_NE(above.error().message().find("above the sample cache's 1 TiB"), std::string::npos)
      << above.error().message();

  Config too_large;
  too_large.limits.max_shm_bytes = 64 << 20;
  too_large.cache.max_bytes = 64 << 20;
  auto refused = make_sample_cache(&too_large);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("leaves no room for segments"), std::string::npos);
}

}  // namespace
}  // namespace batchd::daemon
