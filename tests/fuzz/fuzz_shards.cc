// libFuzzer target: arbitrary bytes as a webdataset shard, through the code a daemon runs on it — the shard index
// (data/tar_index.h: libarchive's tar reader, offsets from the reader, webdataset's grouping), the index cache
// (data/index_cache.h: what was indexed, written and read back), and the dataset's reads (WebDatasetDataset:
// pread of each sample's image and label, the label parsed as an integer). The bytes are written to a memfd and
// indexed through the same functions as a shard file (index_shard_fd, and the dataset opens /proc/self/fd/N).
// Any crash, leak, hang or broken invariant below is a finding (a broken invariant aborts with what broke).
// ASan/UBSan check batchd's code; Debian's libarchive is not instrumented.
//
// What must hold:
//   - index_shard_fd either fails with a kDataError whose message starts with the shard's name, or gives an index
//     that is consistent(): parallel arrays of one length, keys in bounds, every present field's offset + size
//     within the input's length (the reader never points outside the file), at most one sample per 512 bytes;
//   - the index written to the cache and read back is the same index;
//   - the dataset over the same bytes has as many samples; every read_image either gives the image's bytes as
//     they are in the input at the recorded offset (and a label) or fails with a kDataError naming the shard and
//     sample.
//
// Built by setup.sh with clang-14 into build-fuzz/ (BATCHD_FUZZ=ON) and run by ctest for 20 s
// (tests/fuzz/run_fuzz.sh with tests/fuzz/corpus_shards and shards.dict). A long run:
//   mkdir -p /tmp/shards-corpus && nice -n 19 build-fuzz/bin/fuzz_shards -runs=1000000 -max_len=65536 \
//     -dict=tests/fuzz/shards.dict -print_final_stats=1 /tmp/shards-corpus tests/fuzz/corpus_shards
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "batchd/wire/unique_fd.h"
#include "data/index_cache.h"
#include "data/tar_index.h"
#include "data/webdataset_dataset.h"

namespace {

using namespace batchd::daemon;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_shards: invariant broken: %s\n", what.c_str());
  std::abort();
}
void check(bool ok, const std::string& what) {
  if (!ok) fail(what);
}

bool same(const ShardIndex& a, const ShardIndex& b) {
  return a.file_size == b.file_size && a.mtime_ns == b.mtime_ns && a.file == b.file && a.keys == b.keys &&
         a.key_end == b.key_end && a.image_offset == b.image_offset && a.image_size == b.image_size &&
         a.label_offset == b.label_offset && a.label_size == b.label_size;
}

// Where the cache file is written: a directory of this process, removed at exit.
const std::string& scratch_dir() {
  struct Dir {
    std::string path = "/tmp/batchd-fuzz-shards-" + std::to_string(::getpid());
    Dir() { std::filesystem::create_directories(path); }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Dir dir;
  return dir.path;
}

void check_dataset(const std::string& shard, const uint8_t* data, const ShardIndex& index) {
  const size_t samples = index.samples();
  DatasetConfig config;
  config.name = "fuzz";
  config.format = "webdataset";
  config.shards = {shard};
  auto ds = WebDatasetDataset::open(config, OpenContext{});
  if (samples == 0) {
    check(!ds.ok(), "a shard without samples opened as a dataset");
    return;
  }
  check(ds.ok(), "the dataset failed where the index did not: " + (ds.ok() ? "" : ds.error().message()));
  check((*ds)->size() == samples, "the dataset's size is not the index's");
  std::vector<uint8_t> bytes;
  for (uint64_t i = 0; i < samples && i < 64; ++i) {
    int64_t label = 0;
    auto st = (*ds)->read_image(i, &bytes, &label);
    if (!st.ok()) {
      check(st.error().code() == batchd::ErrorCode::kDataError, "read error not a kDataError: " +
                                                                    st.error().message());
      check(st.error().message().rfind((*ds)->sample_name(i), 0) == 0, "read error does not name the sample: " +
                                                                           st.error().message());
      continue;
    }
    check(bytes.size() == index.image_size[i] && index.image_size[i] > 0, "the image read is not the indexed size");
    check(std::memcmp(bytes.data(), data + index.image_offset[i], bytes.size()) == 0,
          "the image read is not the shard's bytes at the indexed offset");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  batchd::wire::UniqueFd fd(::memfd_create("fuzz-shard", MFD_CLOEXEC));
  check(fd.valid(), "memfd_create");
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::write(fd.get(), data + done, size - done);
    check(n > 0, "write to the memfd");
    done += static_cast<size_t>(n);
  }
  check(::lseek(fd.get(), 0, SEEK_SET) == 0, "lseek");
  const std::string name = "/proc/self/fd/" + std::to_string(fd.get());
  const SampleFields fields = SampleFields::parse("jpg;jpeg;png", "cls");
  auto index = index_shard_fd(fd.get(), name, fields);
  if (!index.ok()) {
    check(index.error().code() == batchd::ErrorCode::kDataError, "not a kDataError: " + index.error().message());
    check(index.error().message().rfind(name, 0) == 0, "error does not name the shard: " + index.error().message());
    return 0;
  }
  check(index->file_size == size, "file_size is not the input's length");
  check(index->consistent(), "inconsistent index (a field outside the shard, or arrays of different lengths)");
  check(index->samples() <= size / 512, "more samples than 512-byte blocks");
  for (size_t j = 0; j < index->samples(); ++j) {
    for (auto [offset, field] : {std::pair{index->image_offset[j], index->image_size[j]},
                                 std::pair{index->label_offset[j], index->label_size[j]}}) {
      check(field == kMissingField ? offset < size : offset + field <= size, "a field's offset is outside the input");
    }
  }

  const std::string cache = scratch_dir() + "/cache.idx";
  check(save_index_cache(cache, "jpg;jpeg;png|cls", {name}, {&*index}).ok(), "save_index_cache");
  auto loaded = load_index_cache(cache, "jpg;jpeg;png|cls");
  check(loaded.problem.empty(), "the cache just written was not usable: " + loaded.problem);
  check(loaded.shards.size() == 1 && same(loaded.shards.begin()->second, *index), "the cache changed the index");

  check_dataset(name, data, *index);
  return 0;
}
