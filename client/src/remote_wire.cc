// remote_wire.cc — batchd/remote_status.h to and from proto/batchd.proto's RemoteShardsInfo and RemoteCacheInfo, field
// for field (admin_wire.h).
#include "admin_wire.h"

namespace batchd::detail {

RemoteShardsStatus from_wire(const wire::RemoteShardsInfo& w) {
  return {.shards = w.shards(),
          .shards_here = w.shards_here(),
          .bytes = w.bytes(),
          .bytes_here = w.bytes_here(),
          .fetched = w.fetched(),
          .fetched_bytes = w.fetched_bytes(),
          .prefetched = w.prefetched(),
          .waited = w.waited(),
          .failed = w.failed(),
          .evicted = w.evicted()};
}

wire::RemoteShardsInfo to_wire(const RemoteShardsStatus& s) {
  wire::RemoteShardsInfo w;
  w.set_shards(s.shards);
  w.set_shards_here(s.shards_here);
  w.set_bytes(s.bytes);
  w.set_bytes_here(s.bytes_here);
  w.set_fetched(s.fetched);
  w.set_fetched_bytes(s.fetched_bytes);
  w.set_prefetched(s.prefetched);
  w.set_waited(s.waited);
  w.set_failed(s.failed);
  w.set_evicted(s.evicted);
  return w;
}

RemoteCacheStatus from_wire(const wire::RemoteCacheInfo& w) {
  return {.enabled = w.enabled(),
          .dir = w.dir(),
          .max_bytes = w.max_bytes(),
          .bytes = w.bytes(),
          .files = w.files(),
          .fetching = w.fetching(),
          .totals = from_wire(w.totals())};
}

wire::RemoteCacheInfo to_wire(const RemoteCacheStatus& s) {
  wire::RemoteCacheInfo w;
  w.set_enabled(s.enabled);
  w.set_dir(s.dir);
  w.set_max_bytes(s.max_bytes);
  w.set_bytes(s.bytes);
  w.set_files(s.files);
  w.set_fetching(s.fetching);
  *w.mutable_totals() = to_wire(s.totals);
  return w;
}

}  // namespace batchd::detail
