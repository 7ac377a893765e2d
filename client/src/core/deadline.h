// deadline.h — internal: when a wait for the daemon ends (ConnectOptions::request_timeout).
//
// A Deadline is a point on the steady clock, or never. after(timeout) starts one now; a zero timeout means never
// (the convention of ConnectOptions, BATCHD_TIMEOUT and DataLoader's timeout: 0 = wait forever). Plain value;
// thread-safe to copy and read.
#pragma once

#include <chrono>
#include <climits>
#include <optional>

namespace batchd::detail {

class Deadline final {
 public:
  using Clock = std::chrono::steady_clock;

  static Deadline never() { return Deadline(); }
  // Already passed: a wait that takes only what is there.
  static Deadline passed() {
    Deadline d;
    d.when_ = Clock::now();
    return d;
  }
  // A timeout beyond the clock's range (ConnectOptions may hold any count) is no deadline, never an overflow into
  // the past.
  static Deadline after(std::chrono::milliseconds timeout) {
    Deadline d;
    if (timeout.count() <= 0) return d;
    const auto now = Clock::now();
    if (timeout >= std::chrono::duration_cast<std::chrono::milliseconds>(Clock::time_point::max() - now)) return d;
    d.when_ = now + timeout;
    return d;
  }

  bool is_never() const { return !when_.has_value(); }
  Clock::time_point when() const { return when_.value_or(Clock::time_point::max()); }
  bool expired() const { return when_ && Clock::now() >= *when_; }

  // poll()'s timeout: -1 for never, else the milliseconds left, rounded up (0 once passed).
  int poll_ms() const {
    if (!when_) return -1;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(*when_ - Clock::now()).count();
    return left <= 0 ? 0 : left > INT_MAX ? INT_MAX : static_cast<int>(left);
  }

 private:
  std::optional<Clock::time_point> when_;
};

}  // namespace batchd::detail
