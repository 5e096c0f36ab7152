#include "kaas/kernels/elementwise.h"

#include <string>

#include "kaas/kernels/detail/checks.h"

namespace kaas {

namespace {

void check_elementwise(const char* kernel, View<const float, 6> a, View<float, 6> y,
                       const char* a_name) {
  detail::check_view(a, kernel, a_name);
  detail::check_view(y, kernel, "y");
  for (int d = 0; d < 6; ++d) {
    detail::check_same_extent(y.extent[d], a.extent[d], kernel,
                              std::string(a_name) + " extent[" + std::to_string(d) + "]");
  }
}

}  // namespace

template <class T>
View<T, 6> to_rank6(T* data, std::span<const int64_t> shape, std::span<const int64_t> strides) {
  require(shape.size() <= 6, "to_rank6", "rank", "<= 6", std::to_string(shape.size()));
  require(strides.empty() || strides.size() == shape.size(), "to_rank6", "strides",
          "one per dimension", std::to_string(strides.size()));
  View<T, 6> v;
  v.data = data;
  const size_t pad = 6 - shape.size();
  int64_t dense = 1;
  for (size_t d = 6; d-- > 0;) {
    const bool real = d >= pad;
    v.extent[d] = real ? shape[d - pad] : 1;
    v.stride[d] = real && !strides.empty() ? strides[d - pad] : dense;
    dense *= v.extent[d];
  }
  return v;
}

template <class T>
View<T, 6> broadcast_view(T* data, std::span<const int64_t> shape,
                          std::span<const int64_t> target) {
  require(shape.size() <= target.size(), "broadcast", "operand rank",
          "<= " + std::to_string(target.size()), std::to_string(shape.size()));
  View<T, 6> v = to_rank6(data, shape);
  const View<T, 6> t = to_rank6(static_cast<T*>(nullptr), target);
  for (int d = 0; d < 6; ++d) {
    if (v.extent[d] == t.extent[d]) continue;
    require(v.extent[d] == 1, "broadcast", "operand shape " + shape_string(shape),
            "broadcastable to " + shape_string(target), "incompatible dimension");
    v.extent[d] = t.extent[d];
    v.stride[d] = 0;
  }
  return v;
}

template View<float, 6> to_rank6(float*, std::span<const int64_t>, std::span<const int64_t>);
template View<const float, 6> to_rank6(const float*, std::span<const int64_t>,
                                       std::span<const int64_t>);
template View<const float, 6> broadcast_view(const float*, std::span<const int64_t>,
                                             std::span<const int64_t>);

void copy_strided(const Queue& queue, View<const float, 6> src, View<float, 6> dst,
                  LaunchConfig config) {
  check_elementwise("copy_strided", src, dst, "src");
  detail::check_config(config, "copy_strided");
  // A copy is `binary` with the second operand absent (extent 0 marks it).
  KAAS_RETURN_LAUNCH(queue, binary_launch, queue, BinaryOp::kAdd, src, View<const float, 6>{}, dst,
                     config);
}

void binary(const Queue& queue, BinaryOp op, View<const float, 6> a, View<const float, 6> b,
            View<float, 6> y, LaunchConfig config) {
  check_elementwise("binary", a, y, "a");
  check_elementwise("binary", b, y, "b");
  detail::check_config(config, "binary");
  KAAS_RETURN_LAUNCH(queue, binary_launch, queue, op, a, b, y, config);
}

}  // namespace kaas
