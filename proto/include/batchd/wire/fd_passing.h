// fd_passing.h — sendmsg/recvmsg with SCM_RIGHTS on Unix sockets.
//
// Both calls retry EINTR. recv_some() keeps at most `max_fds` received descriptors and closes any surplus (a
// peer cannot make us leak fds), and reports truncated ancillary data (MSG_CTRUNC) as an error. All received fds
// are made close-on-exec (MSG_CMSG_CLOEXEC).
#pragma once

#include <cstddef>
#include <vector>

#include "batchd/result.h"
#include "batchd/wire/unique_fd.h"

namespace batchd::wire {

// Returned by send_some/recv_some on a non-blocking socket that is not ready (EAGAIN).
inline constexpr size_t kWouldBlock = static_cast<size_t>(-1);

// Sends up to `size` bytes; if `fd_to_pass` >= 0 it is attached to the first byte sent. Returns bytes sent (>= 1
// unless size == 0), or kWouldBlock. MSG_NOSIGNAL: a vanished peer is an error, not SIGPIPE.
Result<size_t> send_some(int socket_fd, const void* data, size_t size, int fd_to_pass = -1);

// Sends all bytes (blocking socket), the fd attached to the first chunk.
Status send_all(int socket_fd, const void* data, size_t size, int fd_to_pass = -1);

// Receives up to `size` bytes. Returns bytes received (0 = orderly EOF) or kWouldBlock. Received fds are appended
// to *fds (up to max_fds in total); surplus ones are closed and reported as a kProtocol error.
Result<size_t> recv_some(int socket_fd, void* data, size_t size, std::vector<UniqueFd>* fds, size_t max_fds);

}  // namespace batchd::wire
