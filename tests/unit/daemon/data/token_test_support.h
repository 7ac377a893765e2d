// token_test_support.h — shared by the token tests (TokenDataset, the lm pipeline): a private scratch directory
// for the test's files, token files written as np.ndarray.tofile writes them, and a "tokens" dataset's config.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data/dataset_config.h"

namespace batchd::daemon::token_test {

// A fixture whose dir_ is a fresh directory, removed with everything in it after the test.
class ScratchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("batchd-" + std::string(info->test_suite_name()) + "-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes `bytes` to dir_/name and returns its path.
  std::string write_bytes(const std::string& name, const std::string& bytes) const {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  // n tokens, token k = value(k) (little-endian on this host, as the file format is), at dir_/name.
  template <typename Token, typename Fn>
  std::string write_tokens(const std::string& name, size_t n, Fn value) const {
    std::vector<Token> tokens(n);
    for (size_t k = 0; k < n; ++k) tokens[k] = static_cast<Token>(value(uint64_t{k}));
    return write_bytes(name, std::string(reinterpret_cast<const char*>(tokens.data()), n * sizeof(Token)));
  }

  std::filesystem::path dir_;
};

// [datasets.lm] format = "tokens", path, dtype, seq_len.
inline DatasetConfig tokens_config(const std::string& path, const std::string& dtype, uint32_t seq_len) {
  DatasetConfig c;
  c.name = "lm";
  c.format = "tokens";
  c.path = path;
  c.dtype = dtype;
  c.seq_len = seq_len;
  return c;
}

}  // namespace batchd::daemon::token_test
