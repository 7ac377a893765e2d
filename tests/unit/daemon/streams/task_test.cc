// The watchdog's budget for a task: max(task_timeout_min_s, per_sample_timeout_ms × its samples), so a large batch
// gets time in proportion and a small one the minimum.
#include "base/task.h"

#include <gtest/gtest.h>

namespace batchd::daemon {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(TaskTimeoutsTest, ASmallTaskGetsTheMinimumAndALargeOneTimePerSample) {
  const TaskTimeouts sut{seconds(30), milliseconds(200)};
  EXPECT_EQ(sut.budget(1), seconds(30));
  EXPECT_EQ(sut.budget(150), seconds(30)) << "150 × 200 ms = 30 s: the minimum still";
  EXPECT_EQ(sut.budget(151), milliseconds(30200));
  EXPECT_EQ(sut.budget(65536), milliseconds(65536LL * 200)) << "a batch of 65536 samples is never cut short";
  EXPECT_EQ(sut.budget(0), seconds(30));
}

TEST(TaskTimeoutsTest, TheDeadlineIsTheAssignmentPlusTheBudgetAndNeverOverflows) {
  const TaskTimeouts sut{seconds(2), milliseconds(10)};
  const auto now = Task::Clock::now();
  EXPECT_EQ(sut.deadline(now, 10), now + seconds(2));
  EXPECT_EQ(sut.deadline(now, 1000), now + seconds(10));
  const TaskTimeouts huge{seconds(86400), milliseconds(3600000)};
  EXPECT_EQ(huge.budget(uint64_t{1} << 62), milliseconds::max()) << "saturates";
  EXPECT_EQ(huge.deadline(now, uint64_t{1} << 62), Task::Clock::time_point::max());
}

TEST(TaskTimeoutsTest, TheDefaultsAreTheConfigDefaults) {
  const TaskTimeouts sut;
  EXPECT_EQ(sut.min, seconds(kDefaultTaskTimeoutMinS));
  EXPECT_EQ(sut.per_sample, milliseconds(kDefaultPerSampleTimeoutMs));
  Task t;
  for (int i = 0; i < 7; ++i) t.work.add_indices(i);
  EXPECT_EQ(t.samples(), 7u);
}

}  // namespace
}  // namespace batchd::daemon
