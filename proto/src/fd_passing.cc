#include "batchd/wire/fd_passing.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace batchd::wire {

namespace {
constexpr size_t kMaxFdsPerMessage = 8;
}

Result<size_t> send_some(int socket_fd, const void* data, size_t size, int fd_to_pass) {
  iovec iov{const_cast<void*>(data), size};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  if (fd_to_pass >= 0) {
    std::memset(control, 0, sizeof(control));
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(cmsg), &fd_to_pass, sizeof(int));
  }
  for (;;) {
    const ssize_t n = ::sendmsg(socket_fd, &msg, MSG_NOSIGNAL);
    if (n >= 0) return static_cast<size_t>(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return kWouldBlock;
    return posix_error("sendmsg on socket", errno);
  }
}

Status send_all(int socket_fd, const void* data, size_t size, int fd_to_pass) {
  const char* p = static_cast<const char*>(data);
  size_t left = size;
  while (left > 0) {
    auto n = send_some(socket_fd, p, left, fd_to_pass);
    if (!n.ok()) return n.error();
    if (*n == kWouldBlock) return Error(ErrorCode::kIo, "send_all on a non-blocking socket that is full");
    fd_to_pass = -1;  // attached to the first chunk only
    p += *n;
    left -= *n;
  }
  return ok_status();
}

Result<size_t> recv_some(int socket_fd, void* data, size_t size, std::vector<UniqueFd>* fds, size_t max_fds) {
  iovec iov{data, size};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)];
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  for (;;) {
    n = ::recvmsg(socket_fd, &msg, MSG_CMSG_CLOEXEC);
    if (n >= 0) break;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return kWouldBlock;
    return posix_error("recvmsg on socket", errno);
  }
  bool surplus = false;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (fds != nullptr && fds->size() < max_fds) {
        fds->emplace_back(fd);
      } else {
        ::close(fd);
        surplus = true;
      }
    }
  }
  if (msg.msg_flags & MSG_CTRUNC) {
    return Error(ErrorCode::kProtocol, "peer sent more file descriptors than fit in one message (truncated)");
  }
  if (surplus) return Error(ErrorCode::kProtocol, "peer sent file descriptors that were not expected; closed them");
  return static_cast<size_t>(n);
}

}  // namespace batchd::wire
