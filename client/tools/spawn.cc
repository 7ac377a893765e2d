#include "spawn.h"

#include <grp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "batchd/client.h"

namespace batchd::tools {

std::string daemon_binary() {
  if (const char* env = std::getenv("BATCHD_BIN"); env != nullptr && *env != '\0') return env;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (ec ? std::filesystem::path(".") : self.parent_path()) / "batchd";
}

Result<SpawnedDaemon> SpawnedDaemon::start(const SpawnOptions& options) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "batchd-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) return posix_error("mkdtemp " + tmpl, errno);
  const std::string socket = tmpl + "/batchd.sock";
  const std::string binary = daemon_binary();
  if (::access(binary.c_str(), X_OK) != 0) {
    std::filesystem::remove_all(tmpl);
    return Error(ErrorCode::kNotFound, "cannot run the daemon " + binary + ": " + std::strerror(errno) +
                                           "; build it (./setup.sh) or set BATCHD_BIN");
  }
  std::vector<std::string> args = {binary, "--socket", socket, "--log-level", options.log_level};
  if (options.workers > 0) args.insert(args.end(), {"--workers", std::to_string(options.workers)});
  if (!options.strategy.empty()) args.insert(args.end(), {"--shm-strategy", options.strategy});
  if (!options.config_path.empty()) args.insert(args.end(), {"--config", options.config_path});
  args.insert(args.end(), options.extra_args.begin(), options.extra_args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  const bool switch_user = options.uid != static_cast<uid_t>(-1);
  if (switch_user && ::chown(tmpl.c_str(), options.uid, options.gid) != 0) {
    const int err = errno;
    std::filesystem::remove_all(tmpl);
    return posix_error("cannot give " + tmpl + " to uid " + std::to_string(options.uid), err);
  }
  const pid_t pid = ::fork();
  if (pid < 0) return posix_error("fork", errno);
  if (pid == 0) {
    if (switch_user && (::setgroups(0, nullptr) != 0 || ::setresgid(options.gid, options.gid, options.gid) != 0 ||
                        ::setresuid(options.uid, options.uid, options.uid) != 0)) {
      std::_Exit(126);
    }
    ::execv(binary.c_str(), argv.data());
    std::_Exit(127);
  }
  SpawnedDaemon daemon(pid, tmpl, socket);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    if (Client::connect(socket).ok()) return daemon;
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      daemon.pid_ = -1;
      return Error(ErrorCode::kUnavailable, "batchd exited during start-up (" +
                                                (WIFEXITED(status) ? "status " + std::to_string(WEXITSTATUS(status))
                                                                   : std::string("killed by a signal")) +
                                                "); its log above says why");
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return Error(ErrorCode::kUnavailable, "batchd did not accept connections on " + socket + " within 30 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

SpawnedDaemon::SpawnedDaemon(SpawnedDaemon&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), dir_(std::move(other.dir_)), socket_(std::move(other.socket_)) {
  other.dir_.clear();
}

SpawnedDaemon::~SpawnedDaemon() {
  (void)stop();
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

Result<int> SpawnedDaemon::stop(int timeout_ms) {
  if (pid_ <= 0) return 0;
  ::kill(pid_, SIGTERM);
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) break;
    if (r < 0 && errno != EINTR) return posix_error("waitpid", errno);
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
      return Error(ErrorCode::kInternal, "batchd did not exit within " + std::to_string(timeout_ms) +
                                             " ms of SIGTERM; killed it");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  pid_ = -1;
  return status;
}

}  // namespace batchd::tools
