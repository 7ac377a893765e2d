// fingerprint_test_support.h — shared by the fingerprint tests: a scratch directory, files written into it, a copy
// of a tree whose files all get another mtime (as a copy on another node would), and one byte flipped in place.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace batchd::daemon::fingerprint_test {

namespace fs = std::filesystem;

// The regular files under `root`, relative to it, sorted.
inline std::vector<std::string> files_under(const fs::path& root) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) out.push_back(fs::relative(e.path(), root).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Inverts the bits of the byte at `offset` of `path`, in place (size and name unchanged).
inline void flip_byte(const std::string& path, uint64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  ASSERT_TRUE(f) << path;
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(static_cast<char>(~c));
  ASSERT_TRUE(f) << path << " offset " << offset;
}

class FingerprintTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("batchd-fp-" + std::string(info->name()) + "-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes `bytes` to dir_/relative (creating its directories); returns the path.
  std::string write(const std::string& relative, const std::string& bytes) const {
    const fs::path path = dir_ / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    return path.string();
  }

  // Copies dir_/from to dir_/to and sets every file's mtime and atime there to 2001-09-09 (utimensat: `touch -d`).
  void copy_with_other_mtimes(const std::string& from, const std::string& to) const {
    fs::create_directories((dir_ / to).parent_path());
    fs::copy(dir_ / from, dir_ / to, fs::copy_options::recursive);
    const timespec times[2] = {{1000000000, 0}, {1000000000, 0}};
    for (const auto& e : fs::recursive_directory_iterator(dir_ / to)) {
      ASSERT_EQ(::utimensat(AT_FDCWD, e.path().c_str(), times, 0), 0) << e.path();
    }
    struct stat a {}, b {};
    const auto first = files_under(dir_ / from);
    if (first.empty()) return;
    ASSERT_EQ(::stat((dir_ / from / first[0]).c_str(), &a), 0);
    ASSERT_EQ(::stat((dir_ / to / first[0]).c_str(), &b), 0);
    ASSERT_NE(a.st_mtim.tv_sec, b.st_mtim.tv_sec) << "the copy must have other mtimes";
    ASSERT_NE(a.st_ino, b.st_ino);
  }

  std::filesystem::path dir_;
};

}  // namespace batchd::daemon::fingerprint_test
