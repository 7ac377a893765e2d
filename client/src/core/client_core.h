// client_core.h — internal: the client's connection to the daemon, shared by Client, Streams and Batches.
//
// Requests go out under write_mu_ (so a Batch released on any thread never waits behind a reader). Frames come in
// on one thread at a time, the reader: a waiting thread that finds no reader takes the role, reads with mu_
// released, then files what it read under mu_ (replies by request_id; events BatchReady/StreamEnd/StreamFailed
// queued per stream until that stream's next() takes them) and wakes the other waiters, one of which reads next.
// So a thread waiting for a reply never waits for another thread's batch. An fd that rides on a frame
// (SCM_RIGHTS) is handed out with that frame.
//
// Deadlines (ConnectOptions::request_timeout): call() and send() give up when theirs passes (and close the
// connection); next_event() waits as long as its caller says (Stream::next(timeout)), then leaves the connection be.
// A passed deadline closes the connection (shutdown): the late reply could still come, so nothing on it can be
// trusted; every waiter and every later call gets the same error, and the daemon reclaims the connection's streams.
//
// Lock order: mu_, then write_mu_ (no function holds both today). Thread-safe: every member function may be
// called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "batchd.pb.h"
#include "batchd/client.h"
#include "batchd/result.h"
#include "batchd/wire/framing.h"
#include "batchd/wire/unique_fd.h"
#include "core/deadline.h"
#include "batchd/mutex.h"

namespace batchd::detail {

struct Received {
  wire::Reply reply;
  wire::UniqueFd fd;  // set when the frame carried one
};

class ClientCore final {
 public:
  // Connects (by the request timeout), reads the daemon's credentials and checks the expected owner.
  // Errors as Client::connect.
  static Result<std::shared_ptr<ClientCore>> connect(const ConnectOptions& options);

  const std::string& socket_path() const { return path_; }
  const DaemonCredentials& daemon() const { return daemon_; }

  // Sends a request that gets no reply (Release), by the request timeout.
  Status send(const wire::Request& request) EXCLUDES(mu_, write_mu_);
  // Sends a request and waits for its reply, by the request timeout; an Error reply becomes the returned Error.
  Result<Received> call(wire::Request request) EXCLUDES(mu_, write_mu_);
  // Waits for the next event of `stream_id`, without a deadline. With `revocable` (a shared stream's subscriber), a
  // StreamFailed with leases_revoked that has already arrived (read without waiting from what the socket holds) is
  // returned at once, and the events queued before it are dropped: the slots they announce may be overwritten.
  // The next event of the stream; at `deadline` (never by default) kDeadlineExceeded, the connection unharmed.
  Result<wire::Reply> next_event(uint64_t stream_id, bool revocable = false,
                                 const Deadline& deadline = Deadline::never()) EXCLUDES(mu_);
  // An attached worker's connection (batchd/worker.h): the next of its events (progress_page, worker_task,
  // worker_detach), with the fd that rode on it; at `deadline` kDeadlineExceeded, the connection unharmed.
  Result<Received> next_worker_event(const Deadline& deadline) EXCLUDES(mu_);
  // Drops queued events of a closed stream.
  void forget_stream(uint64_t stream_id) EXCLUDES(mu_);

 private:
  ClientCore(wire::UniqueFd fd, std::string path, std::chrono::milliseconds timeout, DaemonCredentials daemon)
      : fd_(std::move(fd)), path_(std::move(path)), timeout_(timeout), daemon_(std::move(daemon)) {}

  // Writes `request` whole by `deadline` (the socket is non-blocking). false: the deadline passed first (the socket
  // is then shut down: a frame may be half-written).
  Result<bool> send_frame(const wire::Request& request, const Deadline& deadline) EXCLUDES(write_mu_);
  // One step of a wait: if no thread is reading, reads the frames that come next and files them; else waits until
  // the reader has filed some. The caller checks for what it waits for before each step. Errors: the connection
  // broke, or `deadline` passed (which breaks it) while waiting for `what`.
  Status step(const Deadline& deadline, const std::string& what) REQUIRES(mu_);
  // step() without its checks: waits for the reader until `deadline`, or reads what comes by then.
  void wait_or_read(const Deadline& deadline) REQUIRES(mu_);
  // Takes the reader's role: reads (with mu_ released) the frames that come by `deadline`, or with `all_there`
  // every frame already received without waiting; files them, and a read error as the break; wakes the waiters.
  void read_and_file(const Deadline& deadline, bool all_there) REQUIRES(mu_);
  // The reader's part, without mu_: appends every complete frame received, after waiting for at least one until
  // `deadline`; false if it passed first.
  Result<bool> read_frames(const Deadline& deadline, std::vector<Received>* out);
  void file(Received received) REQUIRES(mu_);
  Error broken(const Error& why) REQUIRES(mu_);
  // Breaks the connection because the daemon did not take (`sending`) or answer `what` in time.
  Error timed_out(const std::string& what, bool sending) REQUIRES(mu_);
  // The error for a request that could not be sent: the daemon's own reason when it closed the connection with one.
  Error why_send_failed(const Error& failure) REQUIRES(mu_);

  const wire::UniqueFd fd_;  // the socket (non-blocking): written under write_mu_, read by the reader
  const std::string path_;
  const std::chrono::milliseconds timeout_;  // zero: no deadline
  const DaemonCredentials daemon_;
  Mutex mu_;
  std::condition_variable_any filed_;  // the reader filed frames, or the connection broke
  Mutex write_mu_ ACQUIRED_AFTER(mu_);
  bool reading_ GUARDED_BY(mu_) = false;  // a thread is the reader
  // The reader's own (used only by the thread that set reading_, without mu_):
  wire::FrameDecoder decoder_;
  std::vector<char> buffer_ = std::vector<char>(1 << 16);
  std::deque<wire::UniqueFd> fds_;
  std::vector<wire::UniqueFd> fds_scratch_;
  uint64_t next_request_id_ GUARDED_BY(mu_) = 1;
  std::map<uint64_t, Received> replies_ GUARDED_BY(mu_);
  std::map<uint64_t, std::deque<wire::Reply>> events_ GUARDED_BY(mu_);
  std::deque<Received> worker_events_ GUARDED_BY(mu_);  // an attached worker's (next_worker_event)
  std::set<uint64_t> closed_streams_ GUARDED_BY(mu_);  // events that still arrive for these are dropped
  std::optional<Error> broken_ GUARDED_BY(mu_);
  bool told_why_ GUARDED_BY(mu_) = false;  // broken_ is the daemon's Error frame (it refused the connection)
};

// "2.5 s": a timeout as the errors write it (client_connect.cc).
std::string seconds_text(std::chrono::milliseconds timeout);
// What to do about a daemon that does not answer in time: the text every timeout's error ends with.
std::string timeout_fix();

}  // namespace batchd::detail
