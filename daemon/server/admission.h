// admission.h — which client connections the daemon takes on, and how it turns the others away.
//
// ConnectionCaps counts the open client connections per uid and in total against limits.max_connections and
// limits.max_connections_per_uid. A connection over either is refused: it gets one Error frame (kResourceExhausted)
// naming the cap and its config key, and is closed. The caps apply to every uid, root and admins included.
//
// FdReserve holds one descriptor (on /dev/null) for the moment accept() fails with EMFILE or ENFILE: it closes the
// reserve, accepts the pending connection in its place, tells it that the daemon is out of file descriptors (and
// what to raise), closes it and takes the reserve again. Without it the connection would stay in the listen
// backlog: the event loop would spin on the readable socket or sleep, and the client would hang.
//
// refuse() writes the one Error frame without blocking (a fresh socket's send buffer is empty) and closes the fd.
// RefusalLog writes at most one line a second, counting the refusals in between, so a flood cannot flood the log.
// Single-threaded: the daemon's io_context.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "batchd/result.h"
#include "batchd/wire/unique_fd.h"
#include "streams/stream_settings.h"

namespace batchd::daemon {

class ConnectionCaps final {
 public:
  explicit ConnectionCaps(const Limits& limits)
      : max_total_(limits.max_connections), max_per_uid_(limits.max_connections_per_uid) {}

  // Counts a connection of `uid` and returns nullopt, or returns the refusal (counting nothing).
  std::optional<Error> admit(uid_t uid);
  // A connection that admit() counted is gone.
  void leave(uid_t uid);
  size_t total() const { return total_; }

 private:
  uint32_t max_total_;
  uint32_t max_per_uid_;
  size_t total_ = 0;
  std::map<uid_t, uint32_t> per_uid_;
};

class FdReserve final {
 public:
  FdReserve();
  bool held() const { return fd_.valid(); }
  // Accepts one pending connection on `listen_fd` in the reserve's place and refuses it. Returns a description of
  // what happened for the log, or nullopt if nothing could be accepted (none pending, or no fd even so): then retry
  // later rather than at once.
  std::optional<std::string> refuse_pending(int listen_fd);

 private:
  wire::UniqueFd fd_;
};

// Sends `error` as one Reply frame (request_id 0, a connection-level error) without blocking, then closes `fd`.
void refuse(wire::UniqueFd fd, const Error& error);

class RefusalLog final {
 public:
  void warn(const std::string& what);

 private:
  std::chrono::steady_clock::time_point last_{};
  uint64_t quiet_ = 0;  // refusals not logged since the last line
};

}  // namespace batchd::daemon
