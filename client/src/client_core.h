// client_core.h — internal: the client's connection to the daemon, shared by Client, Streams and Batches.
//
// Requests go out under write_mu_ (so a Batch released on any thread never waits behind a reader). Frames come in
// under read_mu_, one reader at a time; replies are matched to requests by request_id, events
// (BatchReady/StreamEnd/StreamFailed) are queued per stream until that stream's next() takes them. An fd that
// rides on a frame (SCM_RIGHTS) is handed out with that frame. Lock order: read_mu_, then write_mu_ (call() sends
// its request while it holds read_mu_). Thread-safe: every member function may be called from any thread.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "batchd.pb.h"
#include "batchd/result.h"
#include "batchd/wire/framing.h"
#include "batchd/wire/unique_fd.h"
#include "mutex.h"

namespace batchd::detail {

struct Received {
  wire::Reply reply;
  wire::UniqueFd fd;  // set when the frame carried one
};

class ClientCore final {
 public:
  static Result<std::shared_ptr<ClientCore>> connect(const std::string& socket_path);

  const std::string& socket_path() const { return path_; }

  // Sends a request that gets no reply (Release).
  Status send(wire::Request request) EXCLUDES(write_mu_);
  // Sends a request and waits for its reply; an Error reply becomes the returned Error.
  Result<Received> call(wire::Request request) EXCLUDES(read_mu_, write_mu_);
  // Waits for the next event of `stream_id`. With `revocable` (a shared stream's subscriber), a StreamFailed with
  // leases_revoked that has already arrived (read without waiting from what the socket holds) is returned at once,
  // and the events queued before it are dropped: the slots they announce may be overwritten.
  Result<wire::Reply> next_event(uint64_t stream_id, bool revocable = false) EXCLUDES(read_mu_);
  // Drops queued events of a closed stream.
  void forget_stream(uint64_t stream_id) EXCLUDES(read_mu_);

 private:
  ClientCore(wire::UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
  // Reads one whole frame and files it (a reply, an event in its stream's queue). With `wait` false, only a frame
  // already buffered or readable now: *got says whether one was read.
  Status read_one_frame(bool wait = true, bool* got = nullptr) REQUIRES(read_mu_);
  // Files every frame that can be read without waiting.
  Status read_available() REQUIRES(read_mu_);
  Error broken(const Error& why) REQUIRES(read_mu_);
  // The error for a request that could not be sent: the daemon's own reason when it closed the connection with one.
  Error why_send_failed(const Error& failure) REQUIRES(read_mu_);

  const wire::UniqueFd fd_;  // the socket: written under write_mu_, read under read_mu_
  const std::string path_;
  Mutex read_mu_;
  Mutex write_mu_ ACQUIRED_AFTER(read_mu_);
  uint64_t next_request_id_ GUARDED_BY(read_mu_) = 1;
  wire::FrameDecoder decoder_ GUARDED_BY(read_mu_);
  std::vector<char> buffer_ GUARDED_BY(read_mu_) = std::vector<char>(1 << 16);
  std::deque<wire::UniqueFd> fds_ GUARDED_BY(read_mu_);
  std::vector<wire::UniqueFd> fds_scratch_ GUARDED_BY(read_mu_);
  std::map<uint64_t, Received> replies_ GUARDED_BY(read_mu_);
  std::map<uint64_t, std::deque<wire::Reply>> events_ GUARDED_BY(read_mu_);
  std::set<uint64_t> closed_streams_ GUARDED_BY(read_mu_);  // events that still arrive for these are dropped
  std::optional<Error> broken_ GUARDED_BY(read_mu_);
  bool told_why_ GUARDED_BY(read_mu_) = false;  // broken_ is the daemon's Error frame (it refused the connection)
};

}  // namespace batchd::detail
