#pragma once
// Non-owning views handed to kernels: pointer + extents + strides (in elements). Views never
// own or copy memory; they are trivially copyable so they travel as kernel arguments.

#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "kaas/backends/portability.h"

namespace kaas {

template <class T, int Rank>
struct View {
  static_assert(Rank >= 1 && Rank <= 6, "kaas::View supports rank 1 to 6");
  using value_type = T;
  static constexpr int rank = Rank;

  T* data = nullptr;
  int64_t extent[Rank] = {};
  int64_t stride[Rank] = {};

  KAAS_HD View() = default;

  // View<T> converts to View<const T>, never the other way round.
  template <class U, class = std::enable_if_t<std::is_same_v<const U, T> && !std::is_same_v<U, T>>>
  KAAS_HD View(const View<U, Rank>& other) : data(other.data) {
    for (int d = 0; d < Rank; ++d) {
      extent[d] = other.extent[d];
      stride[d] = other.stride[d];
    }
  }

  KAAS_HD int64_t size() const {
    int64_t n = 1;
    for (int d = 0; d < Rank; ++d) n *= extent[d];
    return n;
  }

  template <class... Index>
  KAAS_HD T& operator()(Index... index) const {
    static_assert(sizeof...(Index) == Rank, "kaas::View: one index per dimension");
    const int64_t idx[Rank] = {static_cast<int64_t>(index)...};
    int64_t offset = 0;
    for (int d = 0; d < Rank; ++d) offset += idx[d] * stride[d];
    return data[offset];
  }

  KAAS_HD T& operator[](int64_t i) const {
    static_assert(Rank == 1, "kaas::View: operator[] is for rank-1 views");
    return data[i * stride[0]];
  }

  // True when the elements are densely packed in row-major order.
  KAAS_HD bool contiguous() const {
    int64_t expected = 1;
    for (int d = Rank - 1; d >= 0; --d) {
      if (extent[d] != 1 && stride[d] != expected) return false;
      expected *= extent[d];
    }
    return true;
  }
};

template <class T>
using View1 = View<T, 1>;
template <class T>
using View2 = View<T, 2>;

// A dense row-major view over `data` with the given extents.
template <int Rank, class T>
View<T, Rank> make_view(T* data, const int64_t (&extents)[Rank]) {
  View<T, Rank> v;
  v.data = data;
  int64_t s = 1;
  for (int d = Rank - 1; d >= 0; --d) {
    v.extent[d] = extents[d];
    v.stride[d] = s;
    s *= extents[d];
  }
  return v;
}

template <class T>
View<T, 1> make_view(T* data, int64_t n) {
  return make_view<1>(data, {n});
}

}  // namespace kaas
