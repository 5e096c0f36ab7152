#pragma once
// Index ranges returned by the loop helpers (`group_elements`, `uniform_elements`,
// `uniform_groups`) of every backend. Range-for over them works in host and device code.

#include <cstdint>

#include "kaas/backends/portability.h"

namespace kaas {

struct StridedRange {
  struct iterator {
    int64_t index;
    int64_t stride;
    KAAS_HD int64_t operator*() const { return index; }
    KAAS_HD iterator& operator++() {
      index += stride;
      return *this;
    }
    // Strides may jump past the end, so "not equal" means "still before the end".
    KAAS_HD bool operator!=(const iterator& end) const { return index < end.index; }
  };

  int64_t first;
  int64_t last;  // exclusive
  int64_t stride;

  KAAS_HD iterator begin() const { return {first, stride}; }
  KAAS_HD iterator end() const { return {last, stride}; }
};

}  // namespace kaas
