#include "kaas/kernels/scan.h"

#include "kaas/backends/buffer.h"
#include "kaas/kernels/detail/checks.h"

namespace kaas {

int64_t exclusive_scan_workspace_size(const Queue& queue, int64_t n, LaunchConfig config) {
  if (config.groups > 0) return config.groups;
  const int size = config.group_size_or(256);  // exclusive_scan_launch's default
  const int64_t work_groups = (n + size - 1) / size;
  const int64_t resident = queue.backend().resident_groups(queue.device());
  const int64_t groups = work_groups < resident ? work_groups : resident;
  return groups > 0 ? groups : 1;
}

template <class T>
void exclusive_scan(const Queue& queue, View1<const T> x, View1<T> y, View1<T> workspace,
                    LaunchConfig config) {
  detail::check_view(x, "exclusive_scan", "x");
  detail::check_view(y, "exclusive_scan", "y");
  detail::check_view(workspace, "exclusive_scan", "workspace");
  detail::check_same_extent(x.extent[0], y.extent[0], "exclusive_scan", "y extent (same as x)");
  detail::check_config(config, "exclusive_scan");
  const int64_t needed = exclusive_scan_workspace_size(queue, x.extent[0], config);
  require(workspace.extent[0] >= needed, "exclusive_scan", "workspace extent",
          ">= " + std::to_string(needed), std::to_string(workspace.extent[0]));
  // In place is fine; partial overlap is not (a chunk would read what another one wrote).
  const bool same = static_cast<const void*>(x.data) == static_cast<const void*>(y.data) &&
                    x.stride[0] == y.stride[0];
  const T* x_end = x.data + x.extent[0] * x.stride[0];
  const T* y_end = y.data + y.extent[0] * y.stride[0];
  const bool disjoint = x_end <= y.data || y_end <= x.data;
  require(x.extent[0] == 0 || same || disjoint, "exclusive_scan", "y memory",
          "the same as x or disjoint from it", "a partial overlap");
  workspace.extent[0] = needed;
  KAAS_RETURN_LAUNCH(queue, exclusive_scan_launch, queue, x, y, workspace, config);
}

template <class T>
void exclusive_scan(const Queue& queue, View1<const T> x, View1<T> y, LaunchConfig config) {
  detail::check_config(config, "exclusive_scan");
  auto workspace = make_device_buffer<T>(
      queue, static_cast<size_t>(exclusive_scan_workspace_size(queue, x.extent[0], config)));
  exclusive_scan(queue, x, y, workspace.view(), config);
  queue.wait();  // the workspace is freed on return
}

#define KAAS_INSTANTIATE_SCAN(T)                                                         \
  template void exclusive_scan<T>(const Queue&, View1<const T>, View1<T>, LaunchConfig); \
  template void exclusive_scan<T>(const Queue&, View1<const T>, View1<T>, View1<T>, LaunchConfig);
KAAS_INSTANTIATE_SCAN(int32_t)
KAAS_INSTANTIATE_SCAN(int64_t)
KAAS_INSTANTIATE_SCAN(float)
#undef KAAS_INSTANTIATE_SCAN

}  // namespace kaas
