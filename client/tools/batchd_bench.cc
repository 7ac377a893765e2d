// batchd-bench — streams epochs from a batchd daemon through the client library and reports throughput.
//
//   batchd-bench --spawn --dataset fashion-mnist --epochs 2          (a private daemon, embedded default config)
//   batchd-bench --socket /run/batchd/batchd.sock --dataset fashion-mnist --json
//
// Each epoch is timed from the moment the previous one ended (epoch 0: from OpenStream, so it includes the
// segment's creation and the first batch's latency); the loop does what the PyTorch peer's loop does (takes each
// batch, counts its samples, releases it) plus counting distinct sample indices, which checks exactly-once.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <optional>
#include <thread>
#include <vector>

#include "batchd/admin.h"
#include "batchd/client.h"
#include "spawn.h"

namespace {

struct EpochStats {
  uint64_t samples = 0;
  uint64_t unique = 0;
  double seconds = 0;
  double first_batch_ms = 0;
  double checksum = 0;
};

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// Where the workers' time went, from the daemon's per-stream stage counters (batchctl status --json has them too).
void print_stages(const std::string& socket, uint64_t stream_id, bool json) {
  auto admin = batchd::Admin::connect(socket);
  if (!admin.ok()) return;
  auto streams = admin->streams();
  if (!streams.ok()) return;
  for (const auto& s : *streams) {
    if (s.stream_id != stream_id || s.stages.samples == 0) continue;
    const auto& st = s.stages;
    const double n = static_cast<double>(st.samples);
    const double read = st.read_nanos / n / 1e3, decode = st.decode_nanos / n / 1e3,
                 resize = st.resize_nanos / n / 1e3, norm = st.normalize_nanos / n / 1e3;
    if (json) {
      std::printf("{\"system\":\"batchd\",\"stages_us_per_sample\":{\"read\":%.2f,\"decode\":%.2f,"
                  "\"crop_resize\":%.2f,\"normalize_collate\":%.2f,\"total\":%.2f},\"samples\":%llu}\n",
                  read, decode, resize, norm, read + decode + resize + norm,
                  static_cast<unsigned long long>(st.samples));
    } else {
      std::printf("worker time per sample (µs): read %.1f, decode %.1f, crop/resize %.1f, normalize+collate %.1f "
                  "= %.1f over %llu samples\n",
                  read, decode, resize, norm, read + decode + resize + norm,
                  static_cast<unsigned long long>(st.samples));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("batchd-bench — measure batchd's throughput end to end through the client library.\n\n"
               "Prints one line per epoch (samples, seconds, samples/s, distinct sample indices seen, time to the\n"
               "epoch's first batch). Compare with ../shared/bench/torch_peer.py via bench/compare_fmnist.py.",
               "batchd-bench");
  bool spawn = false, json = false, touch = false, no_shuffle = false, exact_decode = false, stages = false;
  uint32_t crop_size = 0, resize_size = 0;
  std::string socket, dataset = "fashion-mnist", pipeline, strategy, log_level = "warn", config, share;
  uint32_t batch_size = 256, epochs = 2, workers = 2, depth = 0;
  uint64_t seed = 0;
  auto* spawn_opt = app.add_flag("--spawn", spawn, "start a private daemon on a temporary socket (embedded default "
                                                   "config) and stop it at the end");
  app.add_option("--socket", socket, "use the daemon already serving PATH (default: $BATCHD_SOCKET or "
                                     "/run/batchd/batchd.sock)")
      ->excludes(spawn_opt);
  app.add_option("--dataset", dataset, "dataset name from the daemon's config")->capture_default_str();
  app.add_option("--pipeline", pipeline, "transform pipeline (default: fmnist for fashion-mnist*)");
  app.add_option("--batch-size", batch_size, "samples per batch")->capture_default_str()->check(CLI::Range(1, 1 << 24));
  app.add_option("--epochs", epochs, "epochs to read")->capture_default_str()->check(CLI::Range(1, 1000000));
  app.add_option("--workers", workers, "worker processes of the spawned daemon (with --spawn)")
      ->capture_default_str()
      ->needs(spawn_opt)
      ->check(CLI::Range(1, 1024));
  app.add_option("--strategy", strategy, "sharing strategy: file_descriptor or file_system (default: the daemon's)")
      ->check(CLI::IsMember({"file_descriptor", "file_system"}));
  app.add_option("--depth", depth, "slots per stream (0 = daemon default)");
  app.add_option("--config", config, "configuration file of the spawned daemon (with --spawn; default: embedded)")
      ->needs(spawn_opt)
      ->check(CLI::ExistingFile);
  app.add_option("--crop-size", crop_size, "vision pipelines: output side in pixels (default: 224)");
  app.add_option("--resize-size", resize_size, "val224: shorter side before the center crop (default: 256)");
  app.add_flag("--exact-decode", exact_decode, "vision pipelines: decode JPEGs at full size (no DCT scaling)");
  app.add_flag("--stages", stages, "at the end, print where the workers' time went per sample (read, decode, "
                                   "crop/resize, normalize + write)");
  app.add_option("--seed", seed, "sampler seed")->capture_default_str();
  app.add_option("--share", share, "join (or create) the shared production of this name (StreamOptions::share): "
                                   "several batchd-bench processes with the same options read one decode");
  app.add_flag("--no-shuffle", no_shuffle, "read in dataset order");
  app.add_flag("--touch", touch, "read every byte of every tensor (sum), as a consumer that uses the data would");
  app.add_flag("--json", json, "one JSON object per epoch on stdout");
  app.add_option("--log-level", log_level, "log level of the spawned daemon")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (pipeline.empty()) pipeline = "fmnist";
  if (!spawn && socket.empty()) socket = "";  // the client's default: $BATCHD_SOCKET or /run/batchd/batchd.sock

  std::optional<batchd::tools::SpawnedDaemon> daemon;
  if (spawn) {
    batchd::tools::SpawnOptions so;
    so.workers = workers;
    so.strategy = strategy;
    so.log_level = log_level;
    so.config_path = config;
    auto d = batchd::tools::SpawnedDaemon::start(so);
    if (!d.ok()) {
      std::fprintf(stderr, "batchd-bench: %s\n", d.error().message().c_str());
      return 1;
    }
    daemon.emplace(std::move(d).value());
    socket = daemon->socket_path();
  }
  auto client = batchd::Client::connect(socket);
  if (!client.ok()) {
    std::fprintf(stderr, "batchd-bench: %s\n", client.error().message().c_str());
    return 1;
  }
  batchd::StreamOptions opts;
  opts.dataset = dataset;
  opts.pipeline = pipeline;
  opts.batch_size = batch_size;
  opts.num_epochs = epochs;
  opts.shuffle = !no_shuffle;
  opts.seed = seed;
  opts.depth = depth;
  opts.share = share;
  opts.vision = {crop_size, resize_size, exact_decode};
  opts.strategy = strategy == "file_system"       ? batchd::SharingStrategy::kFileSystem
                  : strategy == "file_descriptor" ? batchd::SharingStrategy::kFileDescriptor
                                                  : batchd::SharingStrategy::kDefault;
  using clock = std::chrono::steady_clock;
  // A dataset indexed in the background (webdataset) refuses streams until it is done: wait for it, untimed (epoch 0
  // starts with the OpenStream that succeeds, as for every other dataset).
  auto epoch_start = clock::now();
  auto stream = client->open_stream(opts);
  for (const auto give_up = clock::now() + std::chrono::minutes(30);
       !stream.ok() && stream.error().code() == batchd::ErrorCode::kUnavailable &&
       stream.error().message().find(" is indexing (") != std::string::npos && clock::now() < give_up;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    epoch_start = clock::now();
    stream = client->open_stream(opts);
  }
  if (!stream.ok()) {
    std::fprintf(stderr, "batchd-bench: %s\n", stream.error().message().c_str());
    return 1;
  }
  const auto& info = stream->info();
  if (!json) {
    std::printf("batchd-bench: dataset %s (%llu samples), pipeline %s, batch %u, %s workers, depth %u, %s\n",
                dataset.c_str(), static_cast<unsigned long long>(info.dataset_size), pipeline.c_str(), batch_size,
                spawn ? std::to_string(workers).c_str() : "daemon's", info.depth,
                info.strategy == batchd::SharingStrategy::kFileSystem ? "file_system" : "file_descriptor");
  }
  std::vector<uint8_t> seen(info.dataset_size);
  EpochStats stats;
  uint64_t current_epoch = 0;
  bool have_epoch = false;
  auto report = [&](uint64_t epoch, const EpochStats& s) {
    const double rate = s.seconds > 0 ? s.samples / s.seconds : 0;
    if (json) {
      std::printf("{\"system\":\"batchd\",\"dataset\":\"%s\",\"pipeline\":\"%s\",\"batch_size\":%u,\"workers\":%s,"
                  "\"epoch\":%llu,\"samples\":%llu,\"seconds\":%.4f,\"samples_per_s\":%.1f,\"unique_indices\":%llu,"
                  "\"first_batch_ms\":%.3f}\n",
                  json_escape(dataset).c_str(), json_escape(pipeline).c_str(), batch_size,
                  spawn ? std::to_string(workers).c_str() : "null", static_cast<unsigned long long>(epoch),
                  static_cast<unsigned long long>(s.samples), s.seconds, rate,
                  static_cast<unsigned long long>(s.unique), s.first_batch_ms);
    } else {
      std::printf("epoch %llu: %llu samples in %.3f s = %.0f samples/s (first batch after %.2f ms; %llu distinct "
                  "indices)\n",
                  static_cast<unsigned long long>(epoch), static_cast<unsigned long long>(s.samples), s.seconds,
                  rate, s.first_batch_ms, static_cast<unsigned long long>(s.unique));
    }
    std::fflush(stdout);
  };
  for (;;) {
    auto batch = stream->next();
    if (!batch.ok()) {
      std::fprintf(stderr, "batchd-bench: %s\n", batch.error().message().c_str());
      return 1;
    }
    const auto now = clock::now();
    if (!*batch) break;
    batchd::Batch& b = **batch;
    if (!have_epoch || b.epoch() != current_epoch) {
      if (have_epoch) {
        stats.seconds = std::chrono::duration<double>(now - epoch_start).count();
        report(current_epoch, stats);
        epoch_start = now;
        std::fill(seen.begin(), seen.end(), 0);
        stats = EpochStats{};
      }
      have_epoch = true;
      current_epoch = b.epoch();
      stats.first_batch_ms = std::chrono::duration<double, std::milli>(now - epoch_start).count();
    }
    stats.samples += b.size();
    const batchd::Tensor* index = b.find("index");
    for (int64_t i = 0; i < index->numel(); ++i) {
      const int64_t v = index->data_as<int64_t>()[i];
      if (v >= 0 && static_cast<uint64_t>(v) < seen.size() && !seen[v]) {
        seen[v] = 1;
        ++stats.unique;
      }
    }
    if (touch) {
      for (const auto& t : b.tensors()) {
        const auto* p = static_cast<const uint8_t*>(t.data);
        uint64_t sum = 0;
        for (size_t i = 0; i < t.nbytes; ++i) sum += p[i];
        stats.checksum += static_cast<double>(sum);
      }
    }
  }
  if (have_epoch) {
    stats.seconds = std::chrono::duration<double>(clock::now() - epoch_start).count();
    report(current_epoch, stats);
  }
  if (stages) print_stages(client->socket_path(), info.id, json);
  return 0;
}
