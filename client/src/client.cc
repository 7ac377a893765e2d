// The public types of batchd/client.h: thin handles over ClientCore / StreamCore.
#include "batchd/client.h"

#include "batchd/wire/convert.h"
#include "client_core.h"
#include "stream_core.h"

namespace batchd {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kUInt8: return 1;
    case DType::kFloat32: return 4;
    case DType::kInt64: return 8;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kUInt8: return "uint8";
    case DType::kFloat32: return "float32";
    case DType::kInt64: return "int64";
  }
  return "?";
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// ---------------------------------------------------------------- Batch

Batch::Batch(Batch&& other) noexcept { *this = std::move(other); }

Batch& Batch::operator=(Batch&& other) noexcept {
  if (this != &other) {
    release();
    core_ = std::move(other.core_);
    sequence_ = other.sequence_;
    epoch_ = other.epoch_;
    batch_ = other.batch_;
    num_samples_ = other.num_samples_;
    skipped_ = other.skipped_;
    tensors_ = std::move(other.tensors_);
  }
  return *this;
}

Batch::~Batch() { release(); }

const Tensor* Batch::find(std::string_view name) const {
  for (const auto& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

void Batch::release() {
  if (!core_) return;
  core_->release(sequence_);
  core_.reset();
  tensors_.clear();
}

// ---------------------------------------------------------------- Stream

Stream::Stream(std::shared_ptr<detail::StreamCore> core) : core_(std::move(core)) {}
Stream::Stream(Stream&&) noexcept = default;
Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    if (core_) (void)core_->close();
    core_ = std::move(other.core_);
  }
  return *this;
}
Stream::~Stream() {
  if (core_) (void)core_->close();
}

const StreamInfo& Stream::info() const { return core_->info(); }
MappedSegment Stream::segment() const { return core_->segment(); }
Result<std::optional<Batch>> Stream::next() { return core_->next(); }
Status Stream::close() { return core_->close(); }

// ---------------------------------------------------------------- Client

Client::Client(std::shared_ptr<detail::ClientCore> core) : core_(std::move(core)) {}
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;
Client::~Client() = default;

Result<Client> Client::connect(const std::string& socket_path) {
  auto core = detail::ClientCore::connect(socket_path);
  if (!core.ok()) return core.error();
  return Client(std::move(core).value());
}

const std::string& Client::socket_path() const { return core_->socket_path(); }

namespace {

wire::Request open_request(const StreamOptions& o) {
  wire::Request request;
  auto* open = request.mutable_open_stream();
  open->set_dataset(o.dataset);
  open->set_pipeline(o.pipeline);
  open->set_batch_size(o.batch_size);
  open->set_shuffle(o.shuffle);
  open->set_seed(o.seed);
  open->set_epoch(o.epoch);
  open->set_num_epochs(o.num_epochs);
  open->set_rank(o.rank);
  open->set_world_size(o.world_size);
  open->set_drop_last(o.drop_last);
  open->set_depth(o.depth);
  open->set_start_batch(o.start_batch);
  open->set_strategy(o.strategy == SharingStrategy::kFileDescriptor ? wire::FILE_DESCRIPTOR
                     : o.strategy == SharingStrategy::kFileSystem   ? wire::FILE_SYSTEM
                                                                    : wire::STRATEGY_DEFAULT);
  open->set_on_error(o.on_error == OnError::kSkip ? wire::ON_ERROR_SKIP : wire::ON_ERROR_FAIL);
  open->set_crop_size(o.crop_size);
  open->set_resize_size(o.resize_size);
  open->set_exact_decode(o.exact_decode);
  open->set_writable(o.writable);
  return request;
}

}  // namespace

Result<StreamInfo> Client::plan_stream(const StreamOptions& o) {
  wire::Request request = open_request(o);
  request.mutable_open_stream()->set_dry_run(true);
  auto reply = core_->call(std::move(request));
  if (!reply.ok()) return reply.error();
  const auto& p = reply->reply.stream_opened();
  StreamInfo info;
  info.strategy = p.strategy() == wire::FILE_SYSTEM ? SharingStrategy::kFileSystem : SharingStrategy::kFileDescriptor;
  info.segment_bytes = p.segment_bytes();
  info.depth = p.slot_count();
  info.dataset_size = p.dataset_size();
  info.samples_per_epoch = p.samples_per_epoch();
  info.batches_per_epoch = p.batches_per_epoch();
  info.total_batches = p.batches_per_epoch() * p.num_epochs() - p.start_batch();
  return info;
}

Result<Stream> Client::open_stream(const StreamOptions& o) {
  wire::Request request = open_request(o);
  auto reply = core_->call(std::move(request));
  if (!reply.ok()) return reply.error().with_context("cannot open a stream on dataset '" + o.dataset + "'");
  if (!reply->reply.has_stream_opened()) return Error(ErrorCode::kProtocol, "unexpected reply to OpenStream");
  const uint64_t id = reply->reply.stream_opened().stream_id();
  auto core = detail::StreamCore::open(core_, std::move(reply).value(), o.writable);
  if (!core.ok()) {
    wire::Request close;  // the daemon made it; do not leave it behind
    close.mutable_close_stream()->set_stream_id(id);
    (void)core_->call(std::move(close));
    return core.error();
  }
  return Stream(std::move(core).value());
}

}  // namespace batchd
