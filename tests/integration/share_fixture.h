// share_fixture.h — helpers for the shared-stream tests (share_test.cc, share_process_test.cc): the options of a
// share over Fashion-MNIST, a reader that records what each subscriber received, and the daemon's view of a share.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon_fixture.h"

namespace batchd::testing {

inline constexpr uint32_t kBatch = 2000;  // 30 batches per epoch
inline constexpr uint64_t kPerEpoch = 30;

inline StreamOptions share_options(const std::string& share, uint32_t num_epochs = 2) {
  StreamOptions o;
  o.dataset = "fashion-mnist";
  o.pipeline = "fmnist";
  o.batch_size = kBatch;
  o.seed = 7;
  o.num_epochs = num_epochs;
  o.share = share;
  return o;
}

// Hash of every tensor byte of a batch (image, label, index).
inline uint64_t digest(const Batch& batch) {
  uint64_t h = 1469598103934665603ull;
  for (const auto& t : batch.tensors()) {
    h ^= std::hash<std::string_view>()(std::string_view(static_cast<const char*>(t.data), t.nbytes));
    h *= 1099511628211ull;
  }
  return h;
}

struct Reader {
  std::optional<Client> client;
  std::optional<Stream> stream;
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> digests;  // (epoch, batch) -> digest
  std::vector<std::pair<uint64_t, uint64_t>> order;           // (epoch, batch) as received
  std::map<uint64_t, std::multiset<int64_t>> indices;         // epoch -> sample indices
  bool ended = false;

  void open(const std::string& socket, const StreamOptions& o) {
    auto c = Client::connect(socket);
    ASSERT_TRUE(c.ok()) << c.error().message();
    client.emplace(std::move(c).value());
    auto s = client->open_stream(o);
    ASSERT_TRUE(s.ok()) << s.error().message();
    stream.emplace(std::move(s).value());
  }
  // Reads one batch; false at the end.
  bool step() {
    if (ended) return false;
    auto b = stream->next();
    EXPECT_TRUE(b.ok()) << b.error().message();
    if (!b.ok() || !*b) {
      ended = true;
      return false;
    }
    const Batch& batch = **b;
    digests[{batch.epoch(), batch.index()}] = digest(batch);
    order.emplace_back(batch.epoch(), batch.index());
    const Tensor* index = batch.find("index");
    for (size_t i = 0; i < batch.size(); ++i) indices[batch.epoch()].insert(index->data_as<int64_t>()[i]);
    return true;
  }
};

inline const StreamStatus* find_share(const DaemonStatus& st, const std::string& share) {
  for (const auto& s : st.streams) {
    if (s.share == share) return &s;
  }
  return nullptr;
}

inline void expect_every_index_once(const Reader& r, uint64_t epoch) {
  const auto it = r.indices.find(epoch);
  ASSERT_NE(it, r.indices.end()) << "no batch of epoch " << epoch;
  EXPECT_EQ(it->second.size(), 60000u);
  EXPECT_EQ(std::set<int64_t>(it->second.begin(), it->second.end()).size(), 60000u) << "epoch " << epoch;
}

}  // namespace batchd::testing
