// tar_writers.h — shards for the indexer's tests, written by independent tar writers (never by batchd):
// Python's tarfile (its default format is PAX; GNU and USTAR on request) and GNU tar (--format=gnu).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace batchd::testing {

namespace fs = std::filesystem;

struct Member {
  std::string name;
  std::string content;
};

// A scratch directory, removed with the object.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& what)
      : path_(fs::path(::testing::TempDir()) / (what + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

inline std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Writes `members`, in order, into the tar `out` with Python's tarfile; `format` is "pax" (tarfile's default),
// "gnu" or "ustar".
inline void python_tar(const std::string& out, const std::vector<Member>& members, const std::string& format = "pax") {
  const std::string staging = out + ".members";
  fs::create_directories(staging);
  std::string args;
  for (size_t i = 0; i < members.size(); ++i) {
    const std::string file = staging + "/" + std::to_string(i);
    std::ofstream(file, std::ios::binary) << members[i].content;
    args += " " + quoted(members[i].name) + " " + quoted(file);
  }
  const std::string script =
      "import sys, tarfile\n"
      "fmt = {'pax': tarfile.DEFAULT_FORMAT, 'gnu': tarfile.GNU_FORMAT, 'ustar': tarfile.USTAR_FORMAT}[sys.argv[2]]\n"
      "with tarfile.open(sys.argv[1], 'w', format=fmt, encoding='utf-8') as t:\n"
      "    a = sys.argv[3:]\n"
      "    for name, path in zip(a[0::2], a[1::2]):\n"
      "        info = t.gettarinfo(path, arcname=name)\n"
      "        with open(path, 'rb') as f: t.addfile(info, f)\n";
  const std::string cmd = std::string(BATCHD_PYTHON) + " -c " + quoted(script) + " " + quoted(out) + " " + format + args;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  fs::remove_all(staging);
}

// Writes `members` (names may hold directories) with GNU tar --format=gnu, in order.
inline void gnu_tar(const std::string& out, const std::vector<Member>& members) {
  const std::string staging = out + ".tree";
  std::string names;
  for (const auto& m : members) {
    fs::create_directories((fs::path(staging) / m.name).parent_path());
    std::ofstream(fs::path(staging) / m.name, std::ios::binary) << m.content;
    names += " " + quoted(m.name);
  }
  const std::string cmd = "tar --format=gnu --no-recursion -cf " + quoted(out) + " -C " + quoted(staging) + names;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  fs::remove_all(staging);
}

// `n` bytes that differ from member to member (seeded), not a multiple of 512.
inline std::string bytes_of(size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed * 7919 + (i >> 7)) & 0xff);
  return s;
}

// Bytes [offset, offset + size) of a file.
inline std::string file_bytes(const std::string& path, uint64_t offset, uint64_t size) {
  std::ifstream f(path, std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  std::string s(size, '\0');
  f.read(s.data(), static_cast<std::streamsize>(size));
  s.resize(static_cast<size_t>(f.gcount()));
  return s;
}

}  // namespace batchd::testing
