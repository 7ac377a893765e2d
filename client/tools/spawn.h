// spawn.h — starts a private batchd for a tool or a test, on a socket in a fresh temporary directory.
//
// The daemon binary is $BATCHD_BIN if set, else `batchd` next to the running executable (build/bin/). start()
// returns once the daemon accepts connections; the destructor (or stop()) sends SIGTERM, waits for it to exit and
// removes the temporary directory. Move-only RAII over the child process. SpawnOptions::uid runs it as another user
// (tests of a daemon that runs as its own user).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "batchd/result.h"

namespace batchd::tools {

struct SpawnOptions {
  uint32_t workers = 0;                 // 0: the daemon's default
  std::string strategy;                 // "" (default), "file_descriptor" or "file_system"
  std::string config_path;              // "" = embedded default config
  std::string log_level = "warn";
  std::vector<std::string> extra_args;  // appended to the command line
  // Run the daemon as this uid and gid, with no supplementary groups (the caller must be root); the socket's
  // temporary directory is given to it. -1: as the caller.
  uid_t uid = static_cast<uid_t>(-1);
  gid_t gid = static_cast<gid_t>(-1);
};

class SpawnedDaemon final {
 public:
  static Result<SpawnedDaemon> start(const SpawnOptions& options);

  SpawnedDaemon(SpawnedDaemon&& other) noexcept;
  SpawnedDaemon& operator=(SpawnedDaemon&&) = delete;
  SpawnedDaemon(const SpawnedDaemon&) = delete;
  ~SpawnedDaemon();

  const std::string& socket_path() const { return socket_; }
  pid_t pid() const { return pid_; }

  // SIGTERM, then waits up to `timeout_ms` (SIGKILL after). Returns the raw wait status. Idempotent.
  Result<int> stop(int timeout_ms = 10000);

 private:
  SpawnedDaemon(pid_t pid, std::string dir, std::string socket)
      : pid_(pid), dir_(std::move(dir)), socket_(std::move(socket)) {}

  pid_t pid_ = -1;
  std::string dir_;
  std::string socket_;
};

// The batchd binary tools use: $BATCHD_BIN, else <directory of this executable>/batchd.
std::string daemon_binary();

}  // namespace batchd::tools
