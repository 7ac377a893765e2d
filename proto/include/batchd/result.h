// batchd/result.h — errors as values for the batchd client library and daemon.
//
// Every fallible call in batchd returns `Result<T>` (a value or an `Error`) or `Status` (= `Result<void>`).
// No exception crosses the client library's API. An `Error` carries a machine-readable `ErrorCode` and a message
// that names the thing involved (socket path, dataset, stream, segment, file) and the next step for the user.
//
// Thread-safety: plain values; copy or move freely between threads.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace batchd {

// Broad classes of failure, stable across releases (also used on the wire, see proto/batchd_types.proto).
enum class ErrorCode {
  kInvalidArgument = 1,   // the caller asked for something malformed or out of range; fix the request
  kNotFound = 2,          // a named thing (dataset, pipeline, stream, file) does not exist
  kUnavailable = 3,       // the daemon is not reachable or is shutting down; start it or retry
  kResourceExhausted = 4, // a limit (frame size, depth, /dev/shm, fds) was hit; raise it or ask for less
  kProtocol = 5,          // a malformed or unexpected message; the connection is closed
  kIo = 6,                // a system call failed; the message carries errno's text
  kDataError = 7,         // a sample could not be read or decoded; the message names the file
  kInternal = 8,          // a bug in batchd; please report it with the message
  kPermissionDenied = 9,  // the caller's uid/groups may not do this (an admin request, another user's stream)
  kDeadlineExceeded = 10, // a wait the caller bounded (Stream::next(timeout)) ran out; nothing else changed
};

// Human-readable name of an ErrorCode ("invalid argument", ...).
const char* to_string(ErrorCode code);

class Error {
 public:
  Error(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns a copy whose message is "<context>: <message>".
  Error with_context(const std::string& context) const { return Error(code_, context + ": " + message_); }

 private:
  ErrorCode code_;
  std::string message_;
};

// Converts errno (or any POSIX error number) into an Error: "<what>: <strerror(err)>". One helper for the whole
// codebase (like LevelDB's PosixError), so every system-call failure reads the same way.
Error posix_error(const std::string& what, int err);

// A T or an Error. Accessing value() of an error (or error() of a value) is a programming bug (asserts).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor): implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { assert(ok()); return std::get<0>(v_); }
  const T& value() const& { assert(ok()); return std::get<0>(v_); }
  T&& value() && { assert(ok()); return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }

  const Error& error() const { assert(!ok()); return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Success or an Error.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { assert(!ok_); return error_; }

 private:
  Error error_{ErrorCode::kInternal, ""};
  bool ok_ = true;
};

using Status = Result<void>;

inline Status ok_status() { return Status(); }

}  // namespace batchd

// Propagates an error from an expression returning Status or Result<T>.
#define BATCHD_RETURN_IF_ERROR(expr)             \
  do {                                           \
    auto batchd_status_ = (expr);                \
    if (!batchd_status_.ok()) return batchd_status_.error(); \
  } while (0)
