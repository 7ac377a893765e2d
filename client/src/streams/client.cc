// The public types of batchd/client.h: thin handles over ClientCore / StreamCore.
#include "batchd/client.h"

#include "batchd/wire/convert.h"
#include "core/client_core.h"
#include "streams/stream_core.h"
#include "core/wire_mapping.h"

namespace batchd {

size_t dtype_size(DType dtype) { return wire::dtype_size(detail::to_wire(dtype)); }

const char* dtype_name(DType dtype) { return wire::dtype_name(detail::to_wire(dtype)); }

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
    BatchBase::operator=(std::move(other));
  }
  return *this;
}

Batch::~Batch() { release(); }

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
Result<std::optional<Batch>> Stream::next() { return core_->next(detail::Deadline::never()); }
Result<std::optional<Batch>> Stream::next(std::chrono::milliseconds timeout) {
  return core_->next(detail::Deadline::after(timeout));
}
Status Stream::close() { return core_->close(); }

// ---------------------------------------------------------------- Client

Client::Client(std::shared_ptr<detail::ClientCore> core) : core_(std::move(core)) {}
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;
Client::~Client() = default;

Result<Client> Client::connect(const std::string& socket_path) {
  ConnectOptions options;
  options.socket_path = socket_path;
  return connect(options);
}

Result<Client> Client::connect(const ConnectOptions& options) {
  auto core = detail::ClientCore::connect(options);
  if (!core.ok()) return core.error();
  return Client(std::move(core).value());
}

const std::string& Client::socket_path() const { return core_->socket_path(); }
const DaemonCredentials& Client::daemon_credentials() const { return core_->daemon(); }

Result<StreamInfo> Client::plan_stream(const StreamOptions& o) {
  wire::Request request = detail::open_request(o);
  request.mutable_open_stream()->set_dry_run(true);
  auto reply = core_->call(std::move(request));
  if (!reply.ok()) return reply.error();
  if (!reply->reply.has_stream_opened()) return Error(ErrorCode::kProtocol, "unexpected reply to a dry-run OpenStream");
  return detail::stream_info(reply->reply.stream_opened());
}

Result<Stream> Client::open_stream(const StreamOptions& o) {
  auto reply = core_->call(detail::open_request(o));
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
