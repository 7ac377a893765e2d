// batchd/mutex.h — internal: the lock of the client and of the daemon, annotated so that the compiler checks what
// each lock guards.
//
// Mutex is std::mutex with Clang's capability attributes; MutexLock holds one for a scope. State a lock guards is
// declared GUARDED_BY(mu_), functions that expect the caller to hold it REQUIRES(mu_), functions that take it
// themselves (and so must not be called with it held) EXCLUDES(mu_). Clang's -Wthread-safety then reports every
// access without the lock and every call without the required one; the CI builds client/ that way with -Werror
// (setup.sh: build-tsa/, BATCHD_THREAD_SAFETY=ON), and the daemon's files that hold a lock too (daemon/CMakeLists.txt,
// daemon_thread_safety: a daemon file that holds a Mutex goes on its list), so a violation fails the run. With
// other compilers the macros expand to nothing and Mutex is a plain std::mutex.
//
// The analysis is static and per function: it does not follow pointers into other objects, and it skips
// constructors and destructors (no other thread can hold a reference there).
#pragma once

#include <mutex>

#if defined(__clang__)
#define BATCHD_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define BATCHD_THREAD_ANNOTATION(x)
#endif

// A type that is a lock (a "capability").
#define CAPABILITY(name) BATCHD_THREAD_ANNOTATION(capability(name))
// An RAII type that holds a capability for its lifetime.
#define SCOPED_CAPABILITY BATCHD_THREAD_ANNOTATION(scoped_lockable)
// Data that may be read or written only with the capability held.
#define GUARDED_BY(x) BATCHD_THREAD_ANNOTATION(guarded_by(x))
// A function the caller must hold the capability to call.
#define REQUIRES(...) BATCHD_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
// A function that takes the capability (and returns holding it) / gives it up.
#define ACQUIRE(...) BATCHD_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) BATCHD_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
// A function that takes the capability itself: the caller must not hold it (std::mutex is not recursive).
#define EXCLUDES(...) BATCHD_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// Lock order: this capability is taken while already holding the ones named. Documentation for now: clang 14
// checks it only under -Wthread-safety-beta, which the CI build does not enable.
#define ACQUIRED_AFTER(...) BATCHD_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))

namespace batchd {

class CAPABILITY("mutex") Mutex final {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }

 private:
  std::mutex mu_;
};

// Holds `*mu` from construction to destruction, except between unlock() and lock() (work done without the lock,
// e.g. a transfer): the destructor releases it only if held. BasicLockable, so std::condition_variable_any waits
// on it.
class SCOPED_CAPABILITY MutexLock final {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->lock(); }
  ~MutexLock() RELEASE() {
    if (held_) mu_->unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void unlock() RELEASE() {
    held_ = false;
    mu_->unlock();
  }
  void lock() ACQUIRE() {
    mu_->lock();
    held_ = true;
  }

 private:
  Mutex* const mu_;
  bool held_ = true;
};

}  // namespace batchd
