#pragma once
// Device arrays for the differential harness: the payload sits between two guard zones and
// everything starts poisoned, so a test proves that a kernel wrote every output element and
// nothing outside its output.

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cases/guarded.h"

namespace kaas::testing {

using cases::poison_value;
using cases::same_bits;

// cases::Guarded whose read() records a test failure when a guard element changed.
template <class T>
class GuardedArray : public cases::Guarded<T> {
 public:
  using cases::Guarded<T>::Guarded;

  std::vector<T> read() const {
    int64_t guard_writes = 0;
    std::vector<T> payload = cases::Guarded<T>::read(&guard_writes);
    EXPECT_EQ(guard_writes, 0) << "writes outside the output (into the guard zones)";
    return payload;
  }
};

}  // namespace kaas::testing
