#include "streams/stream_core.h"

#include <cstring>

#include "batchd/wire/convert.h"
#include "batchd/wire/segment_layout.h"
#include "core/wire_mapping.h"

namespace batchd::detail {

StreamCore::StreamCore(std::shared_ptr<ClientCore> client, wire::StreamOpened opened, wire::Mapping mapping)
    : client_(std::move(client)),
      opened_(std::move(opened)),
      mapping_(std::move(mapping)),
      info_(stream_info(opened_)) {}

StreamCore::~StreamCore() { (void)close(); }

Result<std::shared_ptr<StreamCore>> StreamCore::open(std::shared_ptr<ClientCore> client, Received received,
                                                     bool writable) {
  const wire::StreamOpened& o = received.reply.stream_opened();
  wire::UniqueFd fd = std::move(received.fd);
  if (o.strategy() == wire::FILE_SYSTEM) {
    auto shm = wire::SharedMemory::open_named(o.segment_name(), writable);
    if (!shm.ok()) return shm.error();
    fd.reset(::dup(shm->fd()));
  }
  if (!fd.valid()) return Error(ErrorCode::kProtocol, "stream opened without a segment to map");
  auto mapping = wire::Mapping::map(fd.get(), o.segment_bytes(), writable, /*populate=*/true);
  if (!mapping.ok()) return mapping.error().with_context("mapping the segment of stream " +
                                                         std::to_string(o.stream_id()));
  BATCHD_RETURN_IF_ERROR(check_stream_opened(o, mapping->size()));
  wire::SegmentHeader header;
  std::memcpy(&header, mapping->data(), sizeof(header));
  if (header.magic != wire::kSegmentMagic || header.version != wire::kLayoutVersion ||
      header.stream_id != o.stream_id()) {
    return Error(ErrorCode::kProtocol, "segment of stream " + std::to_string(o.stream_id()) +
                                           " has an unknown header (layout version " + std::to_string(header.version) +
                                           "); are client and daemon the same batchd version?");
  }
  return std::shared_ptr<StreamCore>(new StreamCore(std::move(client), o, std::move(mapping).value()));
}

Result<std::vector<Tensor>> StreamCore::tensors_of(const wire::BatchReady& r) const {
  const std::string where = "stream " + std::to_string(info_.id) + " batch " + std::to_string(r.sequence());
  if (r.slot() >= opened_.slot_count() || r.num_samples() == 0 || r.num_samples() > opened_.batch_size()) {
    return Error(ErrorCode::kProtocol, where + ": slot or sample count out of range");
  }
  const char* slot = mapping_.data() + opened_.slot_offset() + r.slot() * opened_.slot_stride();
  wire::SlotHeader header;
  std::memcpy(&header, slot, sizeof(header));
  if (header.magic != wire::kSlotMagic || header.stream_id != info_.id || header.sequence != r.sequence() ||
      header.num_samples != r.num_samples()) {
    return Error(ErrorCode::kInternal,
                 where + ": the slot does not hold the announced batch (" +
                     (opened_.share().empty() ? std::string("daemon bug")
                                              : "its share dropped this subscriber and reused the slot; a "
                                                "StreamFailed naming why follows") + ")");
  }
  std::vector<Tensor> tensors;
  tensors.reserve(opened_.tensors_size());
  for (const auto& spec : opened_.tensors()) {
    Tensor t;
    t.name = spec.name();
    t.dtype = from_wire(spec.dtype()).value_or(DType::kUInt8);  // check_stream_opened refused unknown dtypes
    t.shape.push_back(r.num_samples());
    t.shape.insert(t.shape.end(), spec.sample_shape().begin(), spec.sample_shape().end());
    t.data = slot + spec.offset();
    t.nbytes = spec.sample_bytes() * r.num_samples();
    tensors.push_back(std::move(t));
  }
  return tensors;
}

Error StreamCore::fail(Error error) {
  failed_ = std::move(error);
  return *failed_;
}

Result<std::optional<Batch>> StreamCore::next(const Deadline& deadline) {
  MutexLock lock(&mu_);
  if (closed_.load()) return Error(ErrorCode::kInvalidArgument, "stream " + std::to_string(info_.id) + " is closed");
  if (failed_) return *failed_;
  if (ended_) return std::optional<Batch>();
  if (leased_.load() >= info_.depth) {
    return Error(ErrorCode::kResourceExhausted,
                 "all " + std::to_string(info_.depth) + " slots of stream " + std::to_string(info_.id) +
                     " are held by Batches that were not released; release or destroy one before calling next(), "
                     "or open the stream with a larger depth");
  }
  // A shared stream's subscriber dropped by the daemon gets the failure before any batch still queued: its slots
  // went back to the production (StreamFailed.leases_revoked).
  auto event = client_->next_event(info_.id, /*revocable=*/!opened_.share().empty(), deadline);
  if (!event.ok() && event.error().code() == ErrorCode::kDeadlineExceeded) return event.error();  // not a failure
  if (!event.ok()) return fail(event.error());
  switch (event->body_case()) {
    case wire::Reply::kBatchReady: {
      const wire::BatchReady& r = event->batch_ready();
      auto tensors = tensors_of(r);
      if (!tensors.ok()) return fail(tensors.error());
      Batch batch;
      batch.core_ = shared_from_this();
      batch.sequence_ = r.sequence();
      batch.epoch_ = r.epoch();
      batch.batch_ = r.batch();
      batch.num_samples_ = r.num_samples();
      batch.skipped_ = r.skipped();
      batch.tensors_ = std::move(tensors).value();
      leased_.fetch_add(1);
      return std::optional<Batch>(std::move(batch));
    }
    case wire::Reply::kStreamEnd:
      ended_ = true;
      return std::optional<Batch>();
    case wire::Reply::kStreamFailed:
      return fail(wire::from_wire(event->stream_failed().error())
                      .with_context("stream " + std::to_string(info_.id) + " failed"));
    default:
      return fail(Error(ErrorCode::kProtocol, "unexpected event for stream " + std::to_string(info_.id)));
  }
}

Status StreamCore::close() {
  MutexLock lock(&mu_);
  if (closed_.exchange(true)) return ok_status();
  wire::Request request;
  request.mutable_close_stream()->set_stream_id(info_.id);
  auto reply = client_->call(std::move(request));
  client_->forget_stream(info_.id);
  if (!reply.ok() && reply.error().code() == ErrorCode::kUnavailable) return ok_status();  // daemon gone: freed
  if (!reply.ok()) return reply.error();
  return ok_status();
}

void StreamCore::release(uint64_t sequence) {
  leased_.fetch_sub(1);
  if (closed_.load()) return;  // the daemon reclaimed every slot at close
  wire::Request request;
  request.mutable_release()->set_stream_id(info_.id);
  request.mutable_release()->set_sequence(sequence);
  (void)client_->send(std::move(request));  // a broken connection surfaces in the next next()
}

}  // namespace batchd::detail
