// shm_report_wire.cc — batchd/admin.h's ShmReport to proto/batchd.proto's ShmReport, field for field (admin_wire.h):
// one way only, for its JSON (batchctl shm --json).
#include "admin_wire.h"

namespace batchd::detail {

namespace {

void fill_wire(const ShmFile& f, wire::ShmFile* w) {
  w->set_name(f.name);
  w->set_bytes(f.bytes);
  w->set_age_seconds(f.age_seconds);
  w->set_daemon_pid(f.daemon_pid);
  w->set_in_use(f.in_use);
  w->set_instance_id(f.instance_id);
  w->set_owner_uid(f.owner_uid);
  w->set_kept(f.kept);
  w->set_lock_holder_pid(f.lock_holder_pid);
  w->set_lock_holder(f.lock_holder);
}

}  // namespace

wire::ShmReport to_wire(const ShmReport& r) {
  wire::ShmReport w;
  w.set_daemon_reachable(r.daemon_reachable);
  w.set_daemon_error(r.daemon_error);
  w.set_daemon_pid(r.daemon_pid);
  w.set_instance_id(r.instance_id);
  for (const auto& x : r.segments) *w.add_segments() = to_wire(x);
  for (const auto& c : r.clients) {
    auto* wc = w.add_clients();
    wc->set_pid(c.pid);
    wc->set_segment_fds(c.segment_fds);
    wc->set_segment_mappings(c.segment_mappings);
  }
  for (const auto& f : r.orphans) fill_wire(f, w.add_orphans());
  for (const auto& f : r.legacy) fill_wire(f, w.add_legacy());
  for (const auto& f : r.undecided) fill_wire(f, w.add_undecided());
  for (const auto& f : r.foreign) fill_wire(f, w.add_foreign());
  for (const auto& f : r.held) fill_wire(f, w.add_held());
  w.set_segments_missing(r.segments_missing);
  for (const auto& n : r.removed) w.add_removed(n);
  w.set_shm_total_bytes(r.shm_total_bytes);
  w.set_shm_free_bytes(r.shm_free_bytes);
  return w;
}

}  // namespace batchd::detail
