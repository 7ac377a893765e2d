// shm_scan: name parsing, the instance probe, and the garbage-collection rule (which files may go, which stay and
// why), on a private directory.
#include "batchd/wire/shm_scan.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace batchd::wire {
namespace {

namespace fs = std::filesystem;

constexpr const char* kLive = "0123456789abcdef";
constexpr const char* kGone = "fedcba9876543210";

TEST(ShmScanTest, ParsesInstanceLegacyAndForeignNames) {
  auto seg = parse_shm_name("batchd.0123456789abcdef.7");
  EXPECT_EQ(seg.kind, ShmName::Kind::kSegment);
  EXPECT_EQ(seg.instance, kLive);
  EXPECT_EQ(seg.stream_id, 7u);
  auto lock = parse_shm_name("batchd.0123456789abcdef.lock");
  EXPECT_EQ(lock.kind, ShmName::Kind::kInstanceLock);
  EXPECT_EQ(lock.instance, kLive);
  auto legacy = parse_shm_name("batchd.1234.5");
  EXPECT_EQ(legacy.kind, ShmName::Kind::kLegacySegment);
  EXPECT_EQ(legacy.legacy_pid, 1234);
  EXPECT_EQ(legacy.stream_id, 5u);
  for (const char* other : {"batchd.0123456789ABCDEF.7", "batchd.0123456789abcde.7", "batchd.1234.lock",
                            "batchd.12a4.5", "batchd.test-foreign.1", "batchd.0123456789abcdef.7.tmp", "batchd.",
                            "batchd.0.1", "torch_1_x", "sem.batchd"}) {
    EXPECT_EQ(parse_shm_name(other).kind, ShmName::Kind::kOther) << other;
  }
  EXPECT_EQ(segment_name(kLive, 3), "batchd.0123456789abcdef.3");
  EXPECT_EQ(instance_lock_name(kLive), "batchd.0123456789abcdef.lock");
}

class ShmDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "shm-scan-" + std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (held_ >= 0) ::close(held_);
    fs::remove_all(dir_);
  }
  void touch(const std::string& name) { std::ofstream(dir_ + "/" + name) << "x"; }
  // Holds `instance`'s lock as its daemon would.
  void hold(const std::string& instance) {
    touch(instance_lock_name(instance));
    held_ = ::open((dir_ + "/" + instance_lock_name(instance)).c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_EQ(::flock(held_, LOCK_EX | LOCK_NB), 0);
  }
  static const ShmEntry* find(const std::vector<ShmEntry>& v, const std::string& name) {
    for (const auto& e : v) {
      if (e.name == name) return &e;
    }
    return nullptr;
  }

  std::string dir_;
  int held_ = -1;
};

TEST_F(ShmDirTest, AnInstanceIsGoneOnlyWhenItsLockIsFreeOrMissing) {
  EXPECT_EQ(probe_instance(dir_, kGone), InstanceState::kGone) << "no lock file: gone";
  touch(instance_lock_name(kGone));
  EXPECT_EQ(probe_instance(dir_, kGone), InstanceState::kGone) << "a lock file nobody holds: gone";
  hold(kLive);
  EXPECT_EQ(probe_instance(dir_, kLive), InstanceState::kLive);
  EXPECT_EQ(probe_instance(dir_, kLive), InstanceState::kLive) << "probing does not take the lock away";
  fs::create_symlink("/etc/passwd", dir_ + "/" + instance_lock_name("00000000000000aa"));
  std::string why;
  EXPECT_EQ(probe_instance(dir_, "00000000000000aa", &why), InstanceState::kUndecided);
  EXPECT_NE(why.find("cannot open its lock"), std::string::npos) << why;
}

TEST_F(ShmDirTest, GcRemovesGoneInstancesAndKeepsWhatItCannotProveUnused) {
  hold(kLive);
  for (const std::string& n : {segment_name(kLive, 1), segment_name(kGone, 1), segment_name(kGone, 2),
                              instance_lock_name(kGone), std::string("batchd.4242.1"), std::string("torch_1_idle"),
                              std::string("torch_1_busy"), std::string("sem.other")}) {
    touch(n);
  }
  const int busy = ::open((dir_ + "/" + segment_name(kGone, 2)).c_str(), O_RDONLY | O_CLOEXEC);
  const int torch_busy = ::open((dir_ + "/torch_1_busy").c_str(), O_RDONLY | O_CLOEXEC);
  auto entries = scan_shm(dir_);
  ASSERT_EQ(entries.size(), 9u);
  EXPECT_EQ(find(entries, segment_name(kLive, 1))->kind, ShmEntry::Kind::kLive);
  EXPECT_EQ(find(entries, instance_lock_name(kLive))->kind, ShmEntry::Kind::kLive);
  EXPECT_EQ(find(entries, segment_name(kGone, 1))->kind, ShmEntry::Kind::kOrphan);
  EXPECT_TRUE(find(entries, instance_lock_name(kGone))->lock_file);
  EXPECT_EQ(find(entries, "batchd.4242.1")->kind, ShmEntry::Kind::kLegacy);
  EXPECT_EQ(find(entries, "torch_1_idle")->kind, ShmEntry::Kind::kForeign);
  mark_in_use(entries, dir_);
  EXPECT_TRUE(find(entries, segment_name(kGone, 2))->in_use);

  auto out = collect_garbage(entries, dir_, GcPolicy{.euid = ::geteuid()});
  ASSERT_EQ(out.removed.size(), 2u);
  EXPECT_EQ(out.removed[0].name, segment_name(kGone, 1));
  EXPECT_EQ(out.removed[1].name, instance_lock_name(kGone)) << "the lock file goes after the segments";
  EXPECT_FALSE(fs::exists(dir_ + "/" + segment_name(kGone, 1)));
  ASSERT_NE(find(out.kept, segment_name(kGone, 2)), nullptr);
  EXPECT_EQ(find(out.kept, segment_name(kGone, 2))->note, "open or mapped by a running process");
  ASSERT_NE(find(out.kept, "batchd.4242.1"), nullptr) << "legacy names stay unless asked for";
  EXPECT_NE(find(out.kept, "batchd.4242.1")->note.find("older batchd"), std::string::npos);
  for (const std::string& n : {segment_name(kLive, 1), instance_lock_name(kLive), std::string("torch_1_idle"),
                              std::string("sem.other")}) {
    EXPECT_TRUE(fs::exists(dir_ + "/" + n)) << n;
    EXPECT_EQ(find(out.kept, n), nullptr) << n << " is not garbage at all";
  }

  entries = scan_shm(dir_);
  mark_in_use(entries, dir_);
  out = collect_garbage(entries, dir_, GcPolicy{.euid = ::geteuid(), .include_legacy = true, .include_foreign = true});
  std::vector<std::string> removed;
  for (const auto& e : out.removed) removed.push_back(e.name);
  std::sort(removed.begin(), removed.end());
  EXPECT_EQ(removed, (std::vector<std::string>{"batchd.4242.1", "torch_1_idle"}));
  EXPECT_NE(find(out.kept, "torch_1_busy"), nullptr);
  EXPECT_TRUE(fs::exists(dir_ + "/" + segment_name(kLive, 1)));
  ::close(busy);
  ::close(torch_busy);
}

TEST(GcDecisionTest, ACallerOtherThanRootRemovesOnlyItsOwnFiles) {
  ShmEntry e;
  e.name = segment_name(kGone, 1);
  e.kind = ShmEntry::Kind::kOrphan;
  e.instance = kGone;
  e.owner_uid = 1000;
  EXPECT_EQ(gc_decision(e, GcPolicy{.euid = 0}).action, GcDecision::Action::kRemove) << "root sees every process";
  EXPECT_EQ(gc_decision(e, GcPolicy{.euid = 1000}).action, GcDecision::Action::kRemove) << "its own file";
  const auto other = gc_decision(e, GcPolicy{.euid = 1001});
  EXPECT_EQ(other.action, GcDecision::Action::kKeep);
  EXPECT_NE(other.reason.find("owned by uid 1000"), std::string::npos) << other.reason;
  EXPECT_NE(other.reason.find("cannot prove it unused"), std::string::npos) << other.reason;
  e.in_use = true;
  EXPECT_EQ(gc_decision(e, GcPolicy{.euid = 0}).action, GcDecision::Action::kKeep) << "never a file in use";
  e.in_use = false;
  e.kind = ShmEntry::Kind::kLive;
  EXPECT_EQ(gc_decision(e, GcPolicy{.euid = 0}).action, GcDecision::Action::kIgnore);
  e.kind = ShmEntry::Kind::kUndecided;
  EXPECT_EQ(gc_decision(e, GcPolicy{.euid = 0}).action, GcDecision::Action::kKeep) << "what cannot be probed stays";
  e = ShmEntry{};
  e.name = "torch_5_x";
  e.owner_uid = 1001;
  EXPECT_EQ(gc_decision(e, GcPolicy{.euid = 1000}).action, GcDecision::Action::kIgnore) << "foreign needs asking";
  EXPECT_EQ(gc_decision(e, GcPolicy{.euid = 1000, .include_foreign = true}).action, GcDecision::Action::kKeep);
  EXPECT_EQ(gc_decision(e, GcPolicy{.euid = 1001, .include_foreign = true}).action, GcDecision::Action::kRemove);
  e.name = "sem.x";
  EXPECT_EQ(gc_decision(e, GcPolicy{.euid = 0, .include_foreign = true}).action, GcDecision::Action::kIgnore)
      << "only torch_* leftovers are foreign garbage";
}

}  // namespace
}  // namespace batchd::wire
