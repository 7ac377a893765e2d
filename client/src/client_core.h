// client_core.h — internal: the client's connection to the daemon, shared by Client, Streams and Batches.
//
// Requests go out under a write mutex (so a Batch released on any thread never waits behind a reader). Frames
// come in under the read mutex, one reader at a time; replies are matched to requests by request_id, events
// (BatchReady/StreamEnd/StreamFailed) are queued per stream until that stream's next() takes them. An fd that
// rides on a frame (SCM_RIGHTS) is handed out with that frame.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "batchd.pb.h"
#include "batchd/result.h"
#include "batchd/wire/framing.h"
#include "batchd/wire/unique_fd.h"

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
  Status send(wire::Request request);
  // Sends a request and waits for its reply; an Error reply becomes the returned Error.
  Result<Received> call(wire::Request request);
  // Waits for the next event of `stream_id`.
  Result<wire::Reply> next_event(uint64_t stream_id);
  // Drops queued events of a closed stream.
  void forget_stream(uint64_t stream_id);

 private:
  ClientCore(wire::UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
  Status read_one_frame();  // requires read_mu_
  Error broken(const Error& why);

  wire::UniqueFd fd_;
  std::string path_;
  std::mutex write_mu_;
  std::mutex read_mu_;  // guards everything below
  uint64_t next_request_id_ = 1;
  wire::FrameDecoder decoder_;
  std::vector<char> buffer_ = std::vector<char>(1 << 16);
  std::deque<wire::UniqueFd> fds_;
  std::vector<wire::UniqueFd> fds_scratch_;
  std::map<uint64_t, Received> replies_;
  std::map<uint64_t, std::deque<wire::Reply>> events_;
  std::set<uint64_t> closed_streams_;  // events that still arrive for these are dropped
  std::optional<Error> broken_;
};

}  // namespace batchd::detail
