// counting_new.h — the global operator new of the alloc_tests binary, counting the allocations a thread makes while
// it asks (issue 41, item 2: a worker's pipeline allocates nothing per sample once it has seen its largest sample).
//
// Every form of operator new and delete is replaced (one definition per program: counting_new.cc), forwarding to
// malloc/free; only the C++ allocations are counted, not a C library's own mallocs (libjpeg-turbo's, libspng's).
// CountAllocations counts the calls made on its own thread between its construction and count().
#pragma once

#include <cstdint>

namespace batchd::alloc_test {

class CountAllocations final {
 public:
  CountAllocations();
  ~CountAllocations();
  CountAllocations(const CountAllocations&) = delete;
  CountAllocations& operator=(const CountAllocations&) = delete;

  // operator new calls on this thread since construction.
  uint64_t count() const;

 private:
  uint64_t start_;
};

}  // namespace batchd::alloc_test
