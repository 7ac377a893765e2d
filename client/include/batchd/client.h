// batchd/client.h — the client library a trainer links to read batches from a batchd daemon.
//
//   auto client = batchd::Client::connect("/run/batchd/batchd.sock");   // or "" for $BATCHD_SOCKET / default
//   if (!client.ok()) { std::cerr << client.error().message(); ... }
//   batchd::StreamOptions opts;
//   opts.dataset = "fashion-mnist"; opts.pipeline = "fmnist"; opts.batch_size = 256; opts.num_epochs = 2;
//   auto stream = client->open_stream(opts);
//   for (;;) {
//     auto batch = stream->next();            // Result<std::optional<Batch>>
//     if (!batch.ok()) { ...error... }        // e.g. a corrupt sample with on_error=fail, daemon shut down
//     if (!*batch) break;                     // end of the last epoch
//     const batchd::Tensor* image = (*batch)->find("image");   // float32 [B,1,28,28], in shared memory
//     ...use image->data_as<float>()...
//   }                                         // each Batch releases its slot when destroyed
//
// Data path: the daemon's workers write each batch once, into a slot of the stream's shared-memory segment; the
// client maps that segment once per stream (file_descriptor: the fd arrives over the socket; file_system: opened
// by name) and hands out tensors that point into it. No CPU copy happens in the client.
//
// Errors: every fallible call returns Result/Status (batchd/result.h); no exception leaves this library. Messages
// name the socket, dataset, stream or file involved and the next step.
//
// Deadlines: every exchange with the daemon except waiting for a batch has one (ConnectOptions::request_timeout,
// 30 s by default, $BATCHD_TIMEOUT): a daemon that accepts connections but never answers (stopped, hung) fails the
// call with kUnavailable instead of blocking forever.
//
// Whom you talk to: connect() reads the daemon's uid from the kernel (daemon_credentials()); require one with
// ConnectOptions::expected_owner or $BATCHD_EXPECT_OWNER when the socket lies where other users could create it.
//
// Thread-safety: a Client and its Streams may be used from several threads; calls on one Stream are serialized
// internally (next() from two threads at once on one Stream is allowed but pointless). Batches may be released or
// destroyed on any thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "batchd/batch.h"
#include "batchd/connect.h"
#include "batchd/folder.h"
#include "batchd/pipeline_spec.h"
#include "batchd/result.h"

namespace batchd {

namespace detail {
class ClientCore;
class StreamCore;
}  // namespace detail

// How the client gets a stream's segment.
enum class SharingStrategy {
  kDefault,         // whatever the daemon is configured with (file_descriptor unless changed)
  kFileDescriptor,  // unnamed memfd; its fd is passed once over the socket (SCM_RIGHTS); nothing can leak
  kFileSystem,      // named /dev/shm/batchd.<instance>.<stream-id>, opened by name (only by the stream's own uid:
                    // one POSIX ACL entry, read-only unless writable); the daemon unlinks it
};

// What happens to a sample that cannot be read, or that crashes the worker making it (twice).
enum class OnError {
  kFail,  // the stream fails; next() returns an error naming the sample
  kSkip,  // the sample is replaced by the next good one in dataset order, counted in Batch::skipped()
};

// Options of the vision pipelines (train224, train224_u8, val224). 0 / false = the daemon's default. Setting one
// for a pipeline that takes no vision options (fmnist, fmnist_u8, lm) is refused at open with kInvalidArgument.
struct VisionOptions {
  uint32_t crop_size = 0;    // output side in pixels (RandomResizedCrop / CenterCrop size), 8..4096; 0 = 224
  uint32_t resize_size = 0;  // val224: shorter side after Resize, before CenterCrop, crop_size..8192; 0 = 256
  bool exact_decode = false; // true: decode JPEGs as PIL does (full size, accurate IDCT, fancy upsampling):
                             // slower; val224 is then bit-identical to torchvision's. false: DCT-domain
                             // downscaling when the crop allows it and libjpeg-turbo's fast IDCT/upsampling
  bool any_set() const { return crop_size != 0 || resize_size != 0 || exact_decode; }
};

// How a stream of pipeline lm picks its windows of T + 1 tokens from a token file of N tokens.
enum class LmSampling {
  kTiledWindows,  // the file cut into windows: sample i at token i*T, each read once per epoch in the sampler's order
  // nanoGPT's get_batch: each batch draws batch_size offsets uniform in [0, N - T - 1] with replacement, from (seed,
  // rank, step) (step = epoch * batches_per_epoch + batch): every rank its own, a resumed stream the same ones. An
  // epoch is max(1, floor(floor((N - 1) / T) / (batch_size * world_size))) full batches; shuffle and drop_last do
  // not apply; `index` holds the offsets.
  kRandomWindows,
};

// Options of pipeline lm (token datasets). Setting one for another pipeline is refused at open (kInvalidArgument).
struct LmOptions {
  // T, the row length of input_ids and targets: 1 .. 16777216 with T + 1 <= the dataset's tokens (kInvalidArgument
  // naming the bound otherwise), the segment within the daemon's limits.max_segment_bytes; 0 = the dataset's seq_len.
  uint32_t seq_len = 0;
  LmSampling sampling = LmSampling::kTiledWindows;
};

// OpenStream.external's dataset: its length and the layout of one sample (size = 0: none, a daemon dataset).
struct ExternalDataset {
  struct Field {
    std::string name;                  // 1..64 of [A-Za-z0-9._-], not "index"
    DType dtype = DType::kFloat32;
    std::vector<int64_t> sample_shape;  // [] for a scalar per sample
  };
  uint64_t size = 0;            // len(dataset)
  std::vector<Field> fields;    // may be empty only for plan_stream (sizes only)
  uint32_t workers = 0;         // worker processes you will attach (cuts batches into as many chunks)
  std::string name;             // shown in status, e.g. the Dataset's class name
  bool whole_batches = false;   // one task per batch, never cut (your workers collate whole batches themselves)
  // Batch j to the worker attached as j % workers (AttachedWorker::Options::worker), as DataLoader's in_order=True
  // round robin. Needs whole_batches.
  bool round_robin = false;
  // Each batch delivered as soon as it is made (DataLoader's in_order=False), not in task order: Batch::sequence()
  // says which; every batch still comes once.
  bool completion_order = false;
  bool empty() const { return size == 0; }
};

// What to read. The sampler follows torch.utils.data's RandomSampler / DistributedSampler + BatchSampler:
// with `shuffle` a permutation of the dataset fixed by (seed, epoch); rank/world_size shard it so every index is
// read exactly once per epoch across ranks (padded by repeating the head, or with drop_last truncated);
// drop_last also drops the last incomplete batch, unless drop_last_batch says otherwise (DataLoader's drop_last
// beside a DistributedSampler's: each its own).
struct StreamOptions {
  std::string dataset;          // a name from the daemon's config, e.g. "fashion-mnist" ("" when `folder` is set)
  // Or the dataset named by a torchvision ImageFolder the trainer built (batchd/folder.h: what the daemon checks,
  // the errors): dataset is then "". StreamInfo::dataset names the dataset the daemon found.
  FolderRef folder;
  // Read only these dataset indices, in this order (torch.utils.data.Subset's indices); nullopt = the whole
  // dataset. The sampler shuffles, shards and batches positions 0 .. size-1 of this list and reads the indices at
  // those positions, so the `index` tensor holds dataset indices. Runs of consecutive indices travel as one (start,
  // length) pair: Subset(ds, range(a, n)) costs 16 bytes, scattered indices about 4 bytes each, within the daemon's
  // limits.max_request_bytes (64 KiB by default). kInvalidArgument for an empty list, more indices than the dataset
  // has samples, or an index >= its size (the first one named, with its position).
  std::optional<std::vector<uint64_t>> indices;
  std::string pipeline;         // e.g. "fmnist" (float32 normalized), "fmnist_u8" (raw uint8), "lm" (tokens)
  // A pipeline as data instead of a name (batchd/pipeline_spec.h: the ops, what the daemon checks, the errors):
  // pipeline is then "" and `vision` unset.
  PipelineSpec spec;
  uint32_t batch_size = 256;    // samples per batch, 1..limits.max_batch_size
  bool shuffle = true;
  uint64_t seed = 0;
  uint64_t epoch = 0;           // first epoch to read (as DistributedSampler.set_epoch)
  uint32_t num_epochs = 1;      // epochs to read back to back; batches are prefetched across epoch boundaries
  // Read until the stream is closed (num_epochs ignored): epochs follow each other from `epoch` on, next() never
  // returns nullopt. For iteration-based training. Refused with `share`.
  bool endless = false;
  uint32_t rank = 0;            // 0 <= rank < world_size
  uint32_t world_size = 1;
  bool drop_last = false;
  // Whether the last, shorter batch of each epoch is dropped; nullopt = drop_last (which then says both). Set, it
  // leaves drop_last to the uneven tail across ranks alone. Daemons before it ignore it (drop_last says both).
  std::optional<bool> drop_last_batch;
  // Repeated augmentation (the torchvision references' RASampler, timm's RepeatAugSampler): each index is read
  // repeated_aug times per epoch across ranks, its copies on consecutive positions of the list before sharding (so
  // on different ranks when world_size >= repeated_aug), each copy with its own random draws; an epoch is
  // repeated_aug times as long. 0 or 1 = off; at most 16 (kInvalidArgument). A daemon older than the option
  // ignores it (each index once).
  uint32_t repeated_aug = 1;
  // > 0: each rank reads only the first selected_samples of its samples per epoch, as RASampler's
  // num_selected_samples cuts it (batchd.Loader sets it for those samplers' objects); 0 = the whole share.
  uint64_t selected_samples = 0;
  uint32_t depth = 0;           // slots = prefetch depth (batches made ahead + leased); 0 = daemon default (4)
  uint64_t start_batch = 0;     // resume mid-epoch: skip this many batches of the first epoch
  SharingStrategy strategy = SharingStrategy::kDefault;
  OnError on_error = OnError::kFail;
  // Map the segment read-write, so the client may modify its own leased batches in place (Tensor::data stays
  // const; cast it). Default: read-only; a write then faults.
  bool writable = false;
  // Pipeline-specific options (each pipeline family has its own struct; set only your pipeline's).
  VisionOptions vision;         // train224, train224_u8, val224
  LmOptions lm;                 // lm
  // Join (or create) the shared production of this name: one decode feeds every stream opened with the same name
  // and the same options (docs/operations.md, "Shared streams"): 1..64 characters of A-Z a-z 0-9 . _ -; "" = a
  // private stream. Every option above must equal the production's except epoch, start_batch and num_epochs (a
  // stream joining mid-epoch reads the rest of that epoch, then the batches it missed, made for it alone: see
  // StreamInfo::joined_at_batch); writable must be false. Names are per uid: streams of one uid share with each
  // other only (another uid's stream of the same name is another production, for admins too).
  // Errors: kInvalidArgument naming the first option that differs; kResourceExhausted (shares.max_subscribers). A
  // subscriber that keeps the others waiting for slots (more than shares.max_lag batches behind them, stopped, or
  // holding batches after its end) fails with kResourceExhausted naming its lag, and the Batches it still holds
  // may be overwritten (see Batch); the others go on.
  std::string share;
  // A dataset of your own (batchd/worker.h; docs/operations.md "Your own Dataset"): the daemon serves the sampler,
  // slots and leases, and the worker processes you attach to the stream (AttachedWorker::attach with the stream's
  // id) make its samples. dataset, pipeline, spec, folder, indices, share and the pipeline options must be unset.
  // Batch tensors: each field's [B] + sample_shape, then "index".
  ExternalDataset external;
};

// What the daemon made for a stream.
struct StreamInfo {
  uint64_t id = 0;
  SharingStrategy strategy = SharingStrategy::kFileDescriptor;
  std::string segment_name;      // "/dev/shm/..." for kFileSystem, "" for kFileDescriptor
  uint64_t segment_bytes = 0;
  uint32_t depth = 0;            // batches it may hold at once (slots; a shared stream: its window)
  uint32_t batch_size = 0;       // samples in a full batch (the last one of an epoch may be short)
  std::string dataset;           // the dataset served (the one StreamOptions::folder named, or StreamOptions::dataset)
  uint64_t dataset_size = 0;     // samples in the dataset (lm: windows of the stream's T; see LmSampling)
  uint64_t subset_size = 0;      // StreamOptions::indices' size (0: no subset); samples_per_epoch shards these
  uint64_t samples_per_epoch = 0;  // this rank's samples per epoch
  uint64_t batches_per_epoch = 0;
  uint64_t total_batches = 0;    // batches this stream will deliver (all epochs, minus start_batch)
  bool endless = false;          // StreamOptions::endless: total_batches is then wire::kEndlessBatches (2^62)
  uint64_t first_epoch = 0;      // the epoch of its first batch (a shared stream: where it joined)
  std::string share;             // the share joined; "" for a private stream
  // A shared stream that joined at batch j > 0 of first_epoch: that epoch delivers batches j .. end, then 0 .. j-1
  // (made again for it alone); later epochs in step with the production. 0 otherwise.
  uint64_t joined_at_batch = 0;
  // The stream's pipeline in the daemon's canonical form (its source op first, every parameter with its default, keys
  // sorted); the presets' too: fmnist is [idx_image, to_tensor, normalize], lm [token_window] (docs/operations.md).
  PipelineSpec spec;
  // An imagefolder dataset's classes, as torchvision's ImageFolder.classes (sorted; label i is classes[i]): their
  // count, and their names unless those take over 512 KiB (then classes is empty while num_classes is not). 0 and
  // empty for datasets without class names (idx, tokens, webdataset).
  uint32_t num_classes = 0;
  std::vector<std::string> classes;
};

// A stream's shared-memory segment as this process maps it: every Tensor::data of the stream's batches lies in
// [data, data + bytes). `owner` keeps the mapping alive (and the stream's client-side state) while held, even after
// the Stream is closed; an accelerator runtime registers this range once (batchd/cuda.h: cudaHostRegister).
struct MappedSegment {
  const void* data = nullptr;
  size_t bytes = 0;
  std::shared_ptr<const void> owner;
};

// One iteration over a dataset. Move-only; destroying it closes the stream (outstanding Batches stay readable).
class Stream {
 public:
  Stream(Stream&&) noexcept;
  Stream& operator=(Stream&&) noexcept;
  ~Stream();

  const StreamInfo& info() const;

  // The segment this stream's batches live in (see MappedSegment).
  MappedSegment segment() const;

  // Blocks until the next batch, in sampler order. Returns std::nullopt after the last batch of the last epoch.
  // Errors: the stream failed (e.g. a sample could not be read), the daemon shut down or the connection broke
  // (kUnavailable; also when a request on the same Client timed out). After an error, next() keeps returning it.
  // No deadline: a daemon that stops making batches keeps next() waiting (ConnectOptions::request_timeout).
  // At most `depth` batches can be held at once: holding that many and calling next() fails with
  // kResourceExhausted instead of waiting forever.
  Result<std::optional<Batch>> next();
  // next() that waits at most `timeout` (> 0) for the batch: then kDeadlineExceeded, and the stream and connection
  // go on (a later next() gets the batch). As DataLoader's `timeout`.
  Result<std::optional<Batch>> next(std::chrono::milliseconds timeout);

  // Closes the stream now; the daemon frees its segment once every outstanding Batch is gone. Idempotent. A request:
  // it has the connection's deadline (ConnectOptions::request_timeout).
  Status close();

 private:
  friend class Client;
  explicit Stream(std::shared_ptr<detail::StreamCore> core);
  std::shared_ptr<detail::StreamCore> core_;
};

// A connection to a daemon. Move-only; cheap to keep for the process's lifetime.
class Client {
 public:
  // Connects to `socket_path`; "" means $BATCHD_SOCKET, else /run/batchd/batchd.sock. Returns once the kernel
  // accepted the connection (a stopped daemon's kernel still does; its first request then times out).
  // Errors: kUnavailable (no daemon listening: start one, or check the path; or its listen backlog stayed full past
  // the deadline), kIo (permission: join the socket's group), kPermissionDenied (the daemon's uid is not the
  // expected owner: the message names the socket, the daemon's pid, uid and user, and the expected one),
  // kInvalidArgument (a bad $BATCHD_TIMEOUT, or an expected owner that is neither a uid nor a known user).
  static Result<Client> connect(const std::string& socket_path = "");
  static Result<Client> connect(const ConnectOptions& options);

  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;
  ~Client();

  // Opens a stream; the daemon starts making batches at once. Errors name the bad option (unknown dataset or
  // pipeline, rank out of range, depth/batch_size over the daemon's limits, /dev/shm too small, ...).
  Result<Stream> open_stream(const StreamOptions& options);

  // What open_stream(options) would give (dataset size, samples and batches per epoch, segment size), after the
  // same validation, without creating anything: for len() before iterating.
  Result<StreamInfo> plan_stream(const StreamOptions& options);

  const std::string& socket_path() const;
  // Who serves the socket (read once, at connect).
  const DaemonCredentials& daemon_credentials() const;

 private:
  explicit Client(std::shared_ptr<detail::ClientCore> core);
  std::shared_ptr<detail::ClientCore> core_;
};

}  // namespace batchd
