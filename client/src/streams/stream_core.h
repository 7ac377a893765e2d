// stream_core.h — internal: one open stream on the client side; shared by its Stream and its Batches.
//
// Holds the segment mapping (read-only, mapped once, prefaulted), the tensor layout, and the count of leases
// outstanding. Kept alive by every Batch, so a Batch's tensors stay readable after its Stream is gone.
// Thread-safety: next() and close() are serialized by mu_ (which guards the stream's end state); release() may
// run on any thread at any time (atomics only); the layout and the mapping never change after open().
#pragma once

#include <atomic>
#include <memory>
#include <optional>

#include "batchd.pb.h"
#include "batchd/client.h"
#include "batchd/wire/shared_memory.h"
#include "core/client_core.h"
#include "batchd/mutex.h"

namespace batchd::detail {

class StreamCore final : public std::enable_shared_from_this<StreamCore> {
 public:
  static Result<std::shared_ptr<StreamCore>> open(std::shared_ptr<ClientCore> client, Received opened,
                                                  bool writable);
  ~StreamCore();

  const StreamInfo& info() const { return info_; }
  MappedSegment segment() { return {mapping_.data(), mapping_.size(), shared_from_this()}; }
  // See Stream::next().
  Result<std::optional<Batch>> next(const Deadline& deadline) EXCLUDES(mu_);  // never: Stream::next()
  Status close() EXCLUDES(mu_);
  // Ends the lease of `sequence` (from Batch::release on any thread).
  void release(uint64_t sequence);

  // Builds the tensors of a BatchReady; checks the slot header written by the worker.
  Result<std::vector<Tensor>> tensors_of(const wire::BatchReady& ready) const;

 private:
  StreamCore(std::shared_ptr<ClientCore> client, wire::StreamOpened opened, wire::Mapping mapping);

  // Ends the stream with `error`: next() returns it from now on.
  Error fail(Error error) REQUIRES(mu_);

  const std::shared_ptr<ClientCore> client_;
  const wire::StreamOpened opened_;
  const wire::Mapping mapping_;
  const StreamInfo info_;
  Mutex mu_;  // serializes next()/close()
  std::atomic<uint32_t> leased_{0};
  std::atomic<bool> closed_{false};
  bool ended_ GUARDED_BY(mu_) = false;
  std::optional<Error> failed_ GUARDED_BY(mu_);
};

}  // namespace batchd::detail
