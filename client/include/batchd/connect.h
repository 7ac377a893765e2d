// batchd/connect.h — how a client reaches a daemon (ConnectOptions: socket, request deadline, expected owner) and
// who serves the socket (DaemonCredentials). Used by Client::connect (batchd/client.h) and Admin::connect
// (batchd/admin.h); docs/operations.md, "Which daemon a client talks to, and how long it waits".
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>

namespace batchd {

// Who serves a socket, as the kernel reported it at connect: SO_PEERCRED of the daemon's listening socket (the
// process that called listen(), with the uid and gid it had then). The daemon cannot forge them.
struct DaemonCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string user;     // the uid's name in the passwd database; "" if it has none
  // Non-empty when no owner was required, the socket's directory is writable by users other than its owner (mode
  // g+w or o+w, sticky or not: /tmp, /dev/shm) and the daemon runs neither as root nor as this process's
  // effective uid: anyone who can write there could have bound that name first, so this may be another user's
  // daemon. Says so, with the fix (a socket in a private directory, or expected_owner).
  std::string warning;
};

// How to reach a daemon (Client::connect, Admin::connect). Plain value.
struct ConnectOptions {
  std::string socket_path;  // "" = $BATCHD_SOCKET, else /run/batchd/batchd.sock
  // The longest wait for the daemon in each exchange: connecting (a daemon whose listen backlog is full), and each
  // request until its reply (open_stream, plan_stream, Stream::close, the Admin requests) or, for a batch's
  // release, until it is sent. nullopt = $BATCHD_TIMEOUT (seconds, e.g. "30" or "0.5"), else 30 s; zero = wait
  // forever. Past it the call fails with kUnavailable naming the socket and the request, and the connection is
  // closed: its Streams fail with the same error (the daemon reclaims their segments) and later calls return it;
  // connect again. Stream::next() has no deadline: waiting for the next batch is not a request (a dataset may take
  // long per batch), as DataLoader's timeout = 0 waits forever. Outstanding Batches stay readable.
  std::optional<std::chrono::milliseconds> request_timeout;
  // Require the daemon to run as this user: a uid ("998") or a user name ("batchd"). "" = $BATCHD_EXPECT_OWNER,
  // else any user (see DaemonCredentials::warning).
  std::string expected_owner;
  // Print DaemonCredentials::warning to stderr, once per process and socket path. false: only report it there
  // (for callers that show it themselves, e.g. as a Python warning).
  bool warn = true;
};

}  // namespace batchd
