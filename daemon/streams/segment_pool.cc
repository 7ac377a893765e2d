#include "streams/segment_pool.h"

#include <unistd.h>

#include <cstring>

#include "batchd/wire/segment_layout.h"
#include "batchd/wire/shm_scan.h"
#include "streams/segment_acl.h"

namespace batchd::daemon {

namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

Segment::Segment(Segment&& other) noexcept
    : stream_id_(other.stream_id_),
      name_(std::move(other.name_)),
      memory_(std::move(other.memory_)),
      budget_(std::exchange(other.budget_, nullptr)) {}

Segment& Segment::operator=(Segment&& other) noexcept {
  if (this != &other) {
    release();
    stream_id_ = other.stream_id_;
    name_ = std::move(other.name_);
    memory_ = std::move(other.memory_);
    budget_ = std::exchange(other.budget_, nullptr);
  }
  return *this;
}

Segment::~Segment() { release(); }

void Segment::release() {
  if (budget_ != nullptr) budget_->remove(memory_.size());
  budget_ = nullptr;
}

std::string Segment::display_name() const {
  return memory_.name().empty() ? "memfd:" + name_ : "/dev/shm/" + memory_.name();
}

SegmentPool::SegmentPool(SegmentInstance instance, uint64_t max_shm_bytes, std::string shm_dir)
    : instance_(std::move(instance)), budget_(max_shm_bytes, std::move(shm_dir)) {}

Result<Segment> SegmentPool::create(StreamPlan* plan, uid_t client_uid) {
  wire::StreamOpened& opened = plan->opened;
  BATCHD_RETURN_IF_ERROR(budget_.admit(opened.segment_bytes(), opened.strategy()));
  const uint64_t id = next_id_++;
  const std::string name = wire::segment_name(instance_.id(), id);
  const bool named = opened.strategy() == wire::FILE_SYSTEM;
  auto memory = named ? wire::SharedMemory::create_named(name, opened.segment_bytes(), 0600)
                      : wire::SharedMemory::create_anonymous(name, opened.segment_bytes());
  if (!memory.ok()) return memory.error();
  // Before the client learns the name; on failure `memory` unlinks it.
  if (named) BATCHD_RETURN_IF_ERROR(grant_client(memory->fd(), client_uid, plan->writable, "/dev/shm/" + name));
  {
    // Only the header page is mapped, and only for as long as it takes to write it (see the header comment).
    auto header_page = wire::Mapping::map(memory->fd(), wire::kPageBytes, true, /*populate=*/false);
    if (!header_page.ok()) return header_page.error().with_context("stream " + std::to_string(id));
    wire::SegmentHeader header{wire::kSegmentMagic, wire::kLayoutVersion, opened.slot_count(), id,
                               opened.segment_bytes(), opened.slot_offset(), opened.slot_stride(), ::getpid(), 0,
                               unix_now()};
    std::memcpy(header_page->data(), &header, sizeof(header));
  }
  opened.set_stream_id(id);
  opened.set_segment_name(named ? name : "");
  opened.set_fd_attached(opened.strategy() == wire::FILE_DESCRIPTOR);
  plan->attach.set_stream_id(id);
  budget_.add(opened.segment_bytes());
  return Segment(id, name, std::move(memory).value(), &budget_);
}

}  // namespace batchd::daemon
