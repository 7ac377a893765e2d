// fault_server_fixture.h — tests/remote/fault_server.py as a child process of a test: started on a free port of
// 127.0.0.1 over a root directory, stopped (SIGTERM, then SIGKILL; reaped) when the FaultServer is destroyed; its
// request log read back as parsed JSON lines. Also the test CA (tests/remote/make_test_ca.sh) and small file helpers.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace batchd::daemon::remote::testing {

namespace fs = std::filesystem;
inline constexpr const char* kPython = BATCHD_PYTHON;  // tests/CMakeLists.txt: the project venv's Python

inline std::string remote_script(const std::string& name) {
  return std::string(BATCHD_SOURCE_DIR) + "/tests/remote/" + name;
}

// Starts argv (argv[0] a path) with its stdout on a pipe, whose read end goes to *read_end (the caller closes it).
// The child's pid, or -1.
inline pid_t spawn_piped(const std::vector<std::string>& argv, int* read_end) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  if (::posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  *read_end = out[0];
  return pid;
}

// Runs argv to completion, its stdout returned; *ok = false if it could not run or exited non-zero.
inline std::string run_command(const std::vector<std::string>& argv, bool* ok) {
  int fd = -1;
  const pid_t pid = spawn_piped(argv, &fd);
  std::string text;
  char buf[4096];
  for (ssize_t n; pid > 0 && (n = ::read(fd, buf, sizeof buf)) != 0;) {
    if (n > 0) text.append(buf, static_cast<size_t>(n));
    else if (errno != EINTR) break;
  }
  if (fd >= 0) ::close(fd);
  int status = 0;
  *ok = pid > 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return text;
}

struct LoggedRequest {
  std::string method, target;
  int peer_port = 0;  // the client's port: one per connection
  std::vector<std::pair<std::string, std::string>> headers;
  std::string header(const std::string& name) const {
    for (const auto& [k, v] : headers) {
      if (strcasecmp(k.c_str(), name.c_str()) == 0) return v;
    }
    return "";
  }
};

// fault_server.py's --log: one JSON object per line.
inline std::vector<LoggedRequest> read_request_log(const std::string& path) {
  std::vector<LoggedRequest> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    boost::property_tree::ptree tree;
    std::istringstream text(line);
    boost::property_tree::read_json(text, tree);
    LoggedRequest r{tree.get<std::string>("method"), tree.get<std::string>("target"), tree.get<int>("peer"), {}};
    for (const auto& [_, pair] : tree.get_child("headers")) {
      auto it = pair.begin();
      const std::string name = it->second.data();
      r.headers.emplace_back(name, (++it)->second.data());
    }
    out.push_back(std::move(r));
  }
  return out;
}

class FaultServer {
 public:
  // extra: more arguments ("--fault", "503:2", "--cert", ...). ok() false (with why()) if it did not start.
  FaultServer(const fs::path& root, const std::vector<std::string>& extra) : log_(root.string() + ".log.jsonl") {
    fs::remove(log_);
    std::vector<std::string> argv = {kPython, remote_script("fault_server.py"), "--root", root.string(), "--port", "0",
                                     "--log", log_};
    argv.insert(argv.end(), extra.begin(), extra.end());
    int out = -1;
    pid_ = spawn_piped(argv, &out);
    std::string line;
    pollfd p{out, POLLIN, 0};
    while (pid_ > 0 && line.find('\n') == std::string::npos && ::poll(&p, 1, 15000) == 1) {
      char buf[64];
      const ssize_t n = ::read(out, buf, sizeof buf);
      if (n <= 0) break;
      line.append(buf, static_cast<size_t>(n));
    }
    if (out >= 0) ::close(out);
    port_ = std::atoi(line.c_str());
  }
  ~FaultServer() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < 100 && ::waitpid(pid_, nullptr, WNOHANG) == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (::kill(pid_, SIGKILL) == 0) ::waitpid(pid_, nullptr, 0);
  }
  FaultServer(const FaultServer&) = delete;
  FaultServer& operator=(const FaultServer&) = delete;

  bool ok() const { return port_ > 0; }
  int port() const { return port_; }
  std::string url(const std::string& scheme = "http") const {
    return scheme + "://127.0.0.1:" + std::to_string(port_);
  }
  const std::string& log_path() const { return log_; }

  std::vector<LoggedRequest> requests() const { return read_request_log(log_); }

 private:
  std::string log_;
  pid_t pid_ = -1;
  int port_ = 0;
};

inline std::string random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

inline void write_file(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

inline std::string read_fd_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A port nothing listens on (bound, then closed).
inline int closed_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(s);
  return ntohs(a.sin_port);
}

}  // namespace batchd::daemon::remote::testing
