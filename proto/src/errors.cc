#include <cerrno>
#include <cstring>

#include "batchd/result.h"

namespace batchd {

const char* to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kNotFound: return "not found";
    case ErrorCode::kUnavailable: return "unavailable";
    case ErrorCode::kResourceExhausted: return "resource exhausted";
    case ErrorCode::kProtocol: return "protocol error";
    case ErrorCode::kIo: return "I/O error";
    case ErrorCode::kDataError: return "data error";
    case ErrorCode::kInternal: return "internal error";
    case ErrorCode::kPermissionDenied: return "permission denied";
    case ErrorCode::kDeadlineExceeded: return "deadline exceeded";
  }
  return "error";
}

Error posix_error(const std::string& what, int err) {
  ErrorCode code = ErrorCode::kIo;
  switch (err) {
    case ENOENT: code = ErrorCode::kNotFound; break;
    case ENOSPC: case ENOMEM: case EMFILE: case ENFILE: code = ErrorCode::kResourceExhausted; break;
    case ECONNREFUSED: case ECONNRESET: case EPIPE: code = ErrorCode::kUnavailable; break;
    case EINVAL: code = ErrorCode::kInvalidArgument; break;
    case EACCES: case EPERM: code = ErrorCode::kPermissionDenied; break;
    default: break;
  }
  return Error(code, what + ": " + std::strerror(err));
}

}  // namespace batchd
