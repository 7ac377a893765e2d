// The first two batches of every preset pipeline through a real daemon, digested tensor by tensor (XXH3-128 of the
// name, dtype, shape and bytes) and compared with the digests recorded in preset_golden_digests.h: the guard of
// issue 24 ("Pipelines as data"), which rewrites these presets as lists of ops and must keep their output bit for bit
// until the speed work. Also: the digests do not depend on which worker made which chunk of a batch.
//
// BATCHD_RECORD_GOLDEN=1 prints a new table (to paste into preset_golden_digests.h) instead of comparing, and marks
// the comparing test SKIPPED, so that re-recording is deliberate and never passes silently.
#include <xxhash.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <numeric>
#include <sstream>

#include "preset_golden_digests.h"
#include "webdataset_fixture.h"

namespace batchd::testing {
namespace {

// The streams guarded, under fixed options (PresetGoldenTest::options): a label for messages and the table, the
// dataset (photos: make_testdata.sh's imagefolder, 60 JPEGs and one PNG), the pipeline, vision.exact_decode.
struct Preset {
  const char* label;
  const char* dataset;
  const char* pipeline;
  bool exact_decode;
};
constexpr Preset kPresets[] = {
    {"train224", "photos", "train224", false},
    {"train224_u8", "photos", "train224_u8", false},
    {"val224", "photos", "val224", false},
    {"val224+exact_decode", "photos", "val224", true},
    {"fmnist", "fashion-mnist-test", "fmnist", false},
    {"fmnist_u8", "fashion-mnist-test", "fmnist_u8", false},
};
constexpr int kBatches = 2;

const char* const kHowToRecord =
    "If this change of output is deliberate (allowed only as preset_golden_digests.h says: bit for bit until the "
    "speed work of issue 24, then within the fidelity tolerances), re-record on this machine image with "
    "BATCHD_RECORD_GOLDEN=1 build/bin/imagefolder_tests --gtest_filter='PresetGoldenTest.*' and replace the table "
    "in tests/integration/preset_golden_digests.h with the one it prints, saying why in the commit.";

// "float32[16,3,224,224]"
std::string layout_of(const Tensor& t) {
  std::string s = std::string(dtype_name(t.dtype)) + "[";
  for (size_t i = 0; i < t.shape.size(); ++i) s += (i ? "," : "") + std::to_string(t.shape[i]);
  return s + "]";
}

// XXH3-128 of the tensor's name, dtype, shape and bytes, each length-prefixed; 32 hex digits (canonical order).
std::string digest_of(const Tensor& t) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_128bits_reset(state);
  auto add = [&](const void* data, uint64_t bytes) {
    XXH3_128bits_update(state, &bytes, sizeof(bytes));
    XXH3_128bits_update(state, data, bytes);
  };
  add(t.name.data(), t.name.size());
  const std::string dtype = dtype_name(t.dtype);
  add(dtype.data(), dtype.size());
  add(t.shape.data(), t.shape.size() * sizeof(int64_t));
  add(t.data, t.nbytes);
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, XXH3_128bits_digest(state));
  XXH3_freeState(state);
  char hex[33];
  for (int i = 0; i < 16; ++i) std::snprintf(hex + 2 * i, 3, "%02x", canonical.digest[i]);
  return hex;
}

// (preset label, batch, tensor) -> (layout, digest)
using Digests = std::map<std::tuple<std::string, int, std::string>, std::pair<std::string, std::string>>;

class PresetGoldenTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string config = "[datasets.photos]\nformat = \"imagefolder\"\nroot = \"" + kData + "/imagefolder\"\n"
                               "[datasets.fashion-mnist-test]\nformat = \"idx\"\n"
                               "images = \"" FMNIST_DIR "/t10k-images-idx3-ubyte.gz\"\n"
                               "labels = \"" FMNIST_DIR "/t10k-labels-idx1-ubyte.gz\"\n";
    suite_ = std::make_unique<SuiteDaemon>("golden", config, std::vector<std::string>{}, std::vector<std::string>{});
  }
  static void TearDownTestSuite() { suite_.reset(); }
  static std::string config_path() { return suite_->dir.path + "/batchd.toml"; }

  static StreamOptions options(const Preset& p, uint32_t depth) {
    StreamOptions o;
    o.dataset = p.dataset;
    o.pipeline = p.pipeline;
    o.batch_size = 16;
    o.shuffle = true;
    o.seed = 24;
    o.epoch = 0;
    o.rank = 0;
    o.world_size = 1;
    o.depth = depth;
    o.vision.exact_decode = p.exact_decode;
    return o;
  }

  // The digests of every tensor of the first kBatches batches of every preset, read from the daemon at `socket`;
  // *chunks (if given): the chunks its workers made for these streams, read before each stream closes.
  static Digests read_digests(const std::string& socket, uint32_t depth = 0, uint64_t* chunks = nullptr) {
    Digests out;
    auto client = Client::connect(socket);
    EXPECT_TRUE(client.ok()) << client.error().message();
    if (!client.ok()) return out;
    for (const Preset& p : kPresets) {
      auto stream = client->open_stream(options(p, depth));
      EXPECT_TRUE(stream.ok()) << p.label << ": " << stream.error().message();
      if (!stream.ok()) continue;
      for (int b = 0; b < kBatches; ++b) {
        auto batch = stream->next();
        EXPECT_TRUE(batch.ok() && *batch) << p.label << " batch " << b << ": "
                                          << (batch.ok() ? "stream ended" : batch.error().message());
        if (!batch.ok() || !*batch) break;
        for (const Tensor& t : (*batch)->tensors()) out[{p.label, b, t.name}] = {layout_of(t), digest_of(t)};
      }
      if (chunks != nullptr) {
        for (const auto& st : daemon_status(socket).streams) {
          if (st.stream_id == stream->info().id) *chunks += std::accumulate(st.chunks_by_worker.begin(),
                                                                            st.chunks_by_worker.end(), uint64_t{0});
        }
      }
    }
    return out;
  }

  static inline std::unique_ptr<SuiteDaemon> suite_;
};

// The table as preset_golden_digests.h holds it.
std::string table_of(const Digests& digests) {
  std::ostringstream s;
  for (const Preset& p : kPresets) {  // in kPresets' order, not the map's
    for (const auto& [key, value] : digests) {
      const auto& [label, batch, tensor] = key;
      if (label != p.label) continue;
      s << "    {\"" << label << "\", " << batch << ", \"" << tensor << "\", \"" << value.first << "\", \""
        << value.second << "\"},\n";
    }
  }
  return s.str();
}

TEST_F(PresetGoldenTest, FirstBatchesOfEveryPresetMatchTheRecordedDigests) {
  const Digests got = read_digests(suite_->daemon.socket_path());
  ASSERT_FALSE(got.empty());
  if (const char* record = std::getenv("BATCHD_RECORD_GOLDEN"); record != nullptr && *record != '\0') {
    std::printf("// kPresetGolden, recorded by BATCHD_RECORD_GOLDEN=1:\n%s", table_of(got).c_str());
    GTEST_SKIP() << "BATCHD_RECORD_GOLDEN is set: printed the digests above instead of comparing them with "
                    "tests/integration/preset_golden_digests.h (unset it to test)";
  }
  Digests golden;
  for (const GoldenDigest& g : kPresetGolden) golden[{g.preset, g.batch, g.tensor}] = {g.layout, g.xxh3_128};
  for (const auto& [key, want] : golden) {
    const auto& [label, batch, tensor] = key;
    const auto it = got.find(key);
    if (it == got.end()) {
      ADD_FAILURE() << "preset " << label << ", batch " << batch << ": no tensor '" << tensor << "' (recorded as "
                    << want.first << ").\n" << kHowToRecord;
    } else if (it->second != want) {
      ADD_FAILURE() << "preset " << label << ", batch " << batch << ", tensor '" << tensor << "' differs from its "
                    << "golden digest: now " << it->second.first << " " << it->second.second << ", recorded "
                    << want.first << " " << want.second << ".\n" << kHowToRecord;
    }
  }
  for (const auto& [key, value] : got) {
    if (golden.count(key) == 0) {
      ADD_FAILURE() << "preset " << std::get<0>(key) << ", batch " << std::get<1>(key) << ": tensor '"
                    << std::get<2>(key) << "' (" << value.first << ") has no golden digest.\n" << kHowToRecord;
    }
  }
}

TEST_F(PresetGoldenTest, DigestsDoNotDependOnWhichWorkerMadeWhichChunk) {
  const Digests two_workers = read_digests(suite_->daemon.socket_path());
  auto one_worker = start_daemon("", 1, {"--config", config_path()});
  // Three workers, no lower bound on chunks, depth 1: each batch is split into chunks made by different workers.
  auto chunked = start_daemon("", 3, {"--config", config_path(), "--min-chunk-us", "0"});
  Digests one = read_digests(one_worker.socket_path());
  uint64_t chunks = 0;
  Digests three = read_digests(chunked.socket_path(), 1, &chunks);
  ASSERT_EQ(two_workers.size(), static_cast<size_t>(std::size(kPresets)) * kBatches * 3) << "image, label, index";
  for (const auto& [key, value] : two_workers) {
    const auto& [label, batch, tensor] = key;
    EXPECT_EQ(one[key], value) << label << " batch " << batch << " tensor " << tensor << ": 1 worker vs 2";
    EXPECT_EQ(three[key], value) << label << " batch " << batch << " tensor " << tensor << ": 3 workers in chunks vs 2";
  }
  EXPECT_GT(chunks, 2 * std::size(kPresets) * kBatches) << "the 3-worker daemon made the batches in chunks";
}

}  // namespace
}  // namespace batchd::testing
