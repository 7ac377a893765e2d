// batchd-cuda-bench — the CUDA client path on a machine with an NVIDIA GPU (issue 5's measurements).
//
//   batchd-cuda-bench bandwidth [--sizes-mb 1,2,4,8,16,32,64] [--repeats 20] [--json]
//     Host-to-device GB/s, cudaMemcpyAsync on one stream, from (a) a read-only MAP_SHARED mapping of a memfd
//     registered with cudaHostRegister (what a stream's segment is in a trainer), (b) cudaHostAlloc memory, (c)
//     pageable malloc memory; and registered / cudaHostAlloc. Timed with CUDA events, after one warm-up copy.
//   batchd-cuda-bench loop --spawn [--dataset fashion-mnist] [--pipeline fmnist] [--batch-size 256] [--epochs 2]
//                          [--compute-us 300] [--no-pin] [--json]
//     Consumes a stream through DeviceStream with one fixed synthetic kernel per batch (reads the batch, spins
//     --compute-us) on the trainer's stream, and reports batches/s, GPU idle time between consecutive kernels
//     (cudaEventElapsedTime from one kernel's end to the next one's start) and host waits on copies.
//     bench/compare_cuda.py runs the same loop over torch's DataLoader(pin_memory=True) + .cuda(non_blocking=True).
#include <CLI/CLI.hpp>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "batchd/cuda.h"
#include "cuda_bench_kernel.h"
#include "spawn.h"

namespace {

#define CHECK_CUDA(call)                                                                       \
  do {                                                                                         \
    if (cudaError_t e_ = (call); e_ != cudaSuccess) {                                          \
      std::fprintf(stderr, "batchd-cuda-bench: %s: %s\n", #call, cudaGetErrorString(e_));      \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

// GB/s of `repeats` copies of `bytes` from `src` to `dst` on `s`.
double h2d_gbps(void* dst, const void* src, size_t bytes, int repeats, cudaStream_t s) {
  cudaEvent_t a, b;
  CHECK_CUDA(cudaEventCreate(&a));
  CHECK_CUDA(cudaEventCreate(&b));
  CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s));  // warm-up
  CHECK_CUDA(cudaEventRecord(a, s));
  for (int i = 0; i < repeats; ++i) CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s));
  CHECK_CUDA(cudaEventRecord(b, s));
  CHECK_CUDA(cudaEventSynchronize(b));
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
  CHECK_CUDA(cudaEventDestroy(a));
  CHECK_CUDA(cudaEventDestroy(b));
  return static_cast<double>(bytes) * repeats / (ms / 1e3) / 1e9;
}

int bandwidth(const std::vector<int>& sizes_mb, int repeats, bool json) {
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  int read_only = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&read_only, cudaDevAttrHostRegisterReadOnlySupported, 0));
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  if (!json) {
    std::printf("device: %s; read-only registration %s\n\n| MB | registered segment GB/s | cudaHostAlloc GB/s | "
                "pageable GB/s | registered / cudaHostAlloc |\n|---:|---:|---:|---:|---:|\n",
                prop.name, read_only ? "supported" : "not supported (segment mapped read-write)");
  }
  for (int mb : sizes_mb) {
    const size_t bytes = size_t{static_cast<unsigned>(mb)} << 20;
    // (a) as a trainer maps a stream's segment: a memfd, MAP_SHARED, read-only where the device allows.
    const int fd = ::memfd_create("batchd-cuda-bench", MFD_CLOEXEC);
    if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(bytes)) != 0) return std::perror("memfd"), 1;
    void* w = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    std::memset(w, 1, bytes);  // a worker wrote it
    void* seg = read_only ? ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0) : w;
    CHECK_CUDA(cudaHostRegister(seg, bytes, cudaHostRegisterPortable | (read_only ? cudaHostRegisterReadOnly : 0u)));
    void* pinned = nullptr;
    CHECK_CUDA(cudaHostAlloc(&pinned, bytes, cudaHostAllocDefault));
    std::memset(pinned, 1, bytes);
    std::vector<char> pageable(bytes, 1);
    void* dev = nullptr;
    CHECK_CUDA(cudaMalloc(&dev, bytes));
    const double reg = h2d_gbps(dev, seg, bytes, repeats, s), host = h2d_gbps(dev, pinned, bytes, repeats, s),
                 page = h2d_gbps(dev, pageable.data(), bytes, repeats, s);
    if (json) {
      std::printf("{\"device\":\"%s\",\"mb\":%d,\"registered_gbps\":%.2f,\"host_alloc_gbps\":%.2f,"
                  "\"pageable_gbps\":%.2f,\"ratio\":%.3f,\"read_only_registration\":%s}\n", prop.name, mb, reg,
                  host, page, reg / host, read_only ? "true" : "false");
    } else {
      std::printf("| %d | %.2f | %.2f | %.2f | %.1f%% |\n", mb, reg, host, page, 100.0 * reg / host);
    }
    CHECK_CUDA(cudaFree(dev));
    CHECK_CUDA(cudaFreeHost(pinned));
    CHECK_CUDA(cudaHostUnregister(seg));
    if (seg != w) ::munmap(seg, bytes);
    ::munmap(w, bytes);
    ::close(fd);
  }
  CHECK_CUDA(cudaStreamDestroy(s));
  return 0;
}

int loop(batchd::Client& client, const batchd::StreamOptions& opts, bool pin, uint32_t prefetch, double compute_us,
         bool json) {
  auto stream = client.open_stream(opts);
  if (!stream.ok()) return std::fprintf(stderr, "batchd-cuda-bench: %s\n", stream.error().message().c_str()), 1;
  batchd::cuda::DeviceOptions dopts;
  dopts.pin = pin;
  dopts.prefetch = prefetch;
  dopts.max_batches = std::max(dopts.max_batches, prefetch + 2);
  auto dev = batchd::cuda::DeviceStream::open(std::move(stream).value(), dopts);
  if (!dev.ok()) return std::fprintf(stderr, "batchd-cuda-bench: %s\n", dev.error().message().c_str()), 1;
  int clock_khz = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  const long long cycles = static_cast<long long>(compute_us * clock_khz / 1e3);
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  unsigned long long* sink = nullptr;
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&sink), sizeof(*sink)));
  std::vector<cudaEvent_t> begin, end;  // per batch, on the trainer's stream
  // Throughput and idle time skip the first batches (stream start-up), as compare_cuda.py does for torch.
  constexpr size_t kSkip = 5;
  uint64_t samples = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    auto b = dev->next(s);
    if (!b.ok()) return std::fprintf(stderr, "batchd-cuda-bench: %s\n", b.error().message().c_str()), 1;
    if (!*b) break;
    if (begin.size() == kSkip) t0 = std::chrono::steady_clock::now();
    const batchd::cuda::DeviceTensor& t = (*b)->tensors().front();
    cudaEvent_t e0, e1;
    CHECK_CUDA(cudaEventCreate(&e0));
    CHECK_CUDA(cudaEventCreate(&e1));
    CHECK_CUDA(cudaEventRecord(e0, s));
    CHECK_CUDA(launch_step(s, t.data, t.nbytes, cycles, sink));
    CHECK_CUDA(cudaEventRecord(e1, s));
    begin.push_back(e0);
    end.push_back(e1);
    if (begin.size() > kSkip) samples += (*b)->size();
  }  // each DeviceBatch is released after its kernel was enqueued: buffers reused once it ran
  CHECK_CUDA(cudaStreamSynchronize(s));
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // GPU idle between kernels, skipping the first few (start-up).
  const size_t skip = std::min<size_t>(kSkip, begin.size());
  double idle_ms = 0, busy_ms = 0;
  for (size_t i = skip; i < begin.size(); ++i) {
    float gap = 0, run = 0;
    if (i > 0) CHECK_CUDA(cudaEventElapsedTime(&gap, end[i - 1], begin[i]));
    CHECK_CUDA(cudaEventElapsedTime(&run, begin[i], end[i]));
    idle_ms += gap;
    busy_ms += run;
  }
  const size_t n = begin.size() - skip;
  const char* pinning = dev->pin_status().pinning == batchd::cuda::Pinning::kRegistered ? "registered" : "pageable";
  if (json) {
    std::printf("{\"system\":\"batchd\",\"pinning\":\"%s\",\"batches\":%zu,\"samples_per_s\":%.0f,"
                "\"gpu_idle_us_per_batch\":%.1f,\"gpu_busy_us_per_batch\":%.1f,\"idle_fraction\":%.4f,"
                "\"host_waits\":%llu,\"kernel_cycles\":%lld}\n", pinning, begin.size(), samples / wall, n ? idle_ms * 1e3 / n : 0.0,
                n ? busy_ms * 1e3 / n : 0.0, idle_ms / std::max(1e-9, idle_ms + busy_ms),
                static_cast<unsigned long long>(dev->host_waits()), cycles);
  } else {
    std::printf("batchd (%s): %zu batches, %.0f samples/s, GPU idle %.1f µs per batch between kernels of %.1f µs "
                "(%.1f%% idle), host waits on copies: %llu\n%s", pinning, begin.size(), samples / wall,
                n ? idle_ms * 1e3 / n : 0.0, n ? busy_ms * 1e3 / n : 0.0,
                100.0 * idle_ms / std::max(1e-9, idle_ms + busy_ms),
                static_cast<unsigned long long>(dev->host_waits()),
                pinning[0] == 'p' ? ("  pageable because: " + dev->pin_status().reason + "\n").c_str() : "");
  }
  for (size_t i = 0; i < begin.size(); ++i) {
    (void)cudaEventDestroy(begin[i]);
    (void)cudaEventDestroy(end[i]);
  }
  (void)dev->close();
  (void)cudaFree(sink);
  (void)cudaStreamDestroy(s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"batchd-cuda-bench — H2D bandwidth from a registered segment, and a GPU training loop over "
               "batchd's CUDA client path (needs an NVIDIA GPU)."};
  app.require_subcommand(1);
  app.fallthrough();  // --json after the subcommand too
  bool json = false;
  app.add_flag("--json", json, "one JSON object per result line");
  auto* bw = app.add_subcommand("bandwidth", "H2D GB/s: registered shared segment vs cudaHostAlloc vs pageable");
  std::vector<int> sizes{1, 2, 4, 8, 16, 32, 64};
  int repeats = 20;
  bw->add_option("--sizes-mb", sizes, "copy sizes in MiB")->delimiter(',')->capture_default_str();
  bw->add_option("--repeats", repeats, "copies timed per size")->check(CLI::Range(1, 10000))->capture_default_str();
  auto* lp = app.add_subcommand("loop", "a GPU loop with one fixed synthetic kernel per batch");
  bool spawn = false, no_pin = false;
  std::string socket, dataset = "fashion-mnist", pipeline = "fmnist", config;
  uint32_t batch_size = 256, epochs = 2, workers = 2, depth = 0, prefetch = 1;
  double compute_us = 300;
  lp->add_flag("--spawn", spawn, "start a private daemon (as batchd-bench --spawn)");
  lp->add_option("--socket", socket, "use the daemon serving PATH");
  lp->add_option("--config", config, "configuration of the spawned daemon");
  lp->add_option("--dataset", dataset)->capture_default_str();
  lp->add_option("--pipeline", pipeline)->capture_default_str();
  lp->add_option("--batch-size", batch_size)->capture_default_str();
  lp->add_option("--epochs", epochs)->capture_default_str();
  lp->add_option("--workers", workers, "workers of the spawned daemon")->capture_default_str();
  lp->add_option("--depth", depth, "slots per stream (0 = daemon default)");
  lp->add_option("--prefetch", prefetch, "batches copied ahead at once (DeviceOptions::prefetch; max_batches = "
                                         "prefetch + 2)")->check(CLI::Range(1, 64))->capture_default_str();
  lp->add_option("--compute-us", compute_us, "GPU time of the synthetic kernel per batch, µs")->capture_default_str();
  lp->add_flag("--no-pin", no_pin, "do not register the segment (pageable copies)");
  CLI11_PARSE(app, argc, argv);

  if (auto n = batchd::cuda::device_count(); !n.ok()) {
    std::fprintf(stderr, "batchd-cuda-bench: %s\n", n.error().message().c_str());
    return 2;
  }
  if (bw->parsed()) return bandwidth(sizes, repeats, json);
  std::optional<batchd::tools::SpawnedDaemon> daemon;
  if (spawn) {
    batchd::tools::SpawnOptions so;
    so.workers = workers;
    so.config_path = config;
    auto d = batchd::tools::SpawnedDaemon::start(so);
    if (!d.ok()) return std::fprintf(stderr, "batchd-cuda-bench: %s\n", d.error().message().c_str()), 1;
    daemon.emplace(std::move(d).value());
    socket = daemon->socket_path();
  }
  auto client = batchd::Client::connect(socket);
  if (!client.ok()) return std::fprintf(stderr, "batchd-cuda-bench: %s\n", client.error().message().c_str()), 1;
  batchd::StreamOptions opts;
  opts.dataset = dataset;
  opts.pipeline = pipeline;
  opts.batch_size = batch_size;
  opts.num_epochs = epochs;
  opts.depth = depth;
  return loop(*client, opts, !no_pin, prefetch, compute_us, json);
}
