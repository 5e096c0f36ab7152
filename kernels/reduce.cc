#include "kaas/kernels/reduce.h"

#include "kaas/backends/buffer.h"
#include "kaas/kernels/detail/checks.h"

namespace kaas {

namespace {

void check_op(ReduceOp op, const char* kernel) {
  require(op == ReduceOp::kSum || op == ReduceOp::kMax, kernel, "op", "kSum or kMax",
          std::to_string(static_cast<int>(op)));
}

}  // namespace

void reduce_rows(const Queue& queue, ReduceOp op, View2<const float> x, View1<float> out,
                 LaunchConfig config) {
  check_op(op, "reduce_rows");
  detail::check_view(x, "reduce_rows", "x");
  detail::check_view(out, "reduce_rows", "out");
  detail::check_same_extent(x.extent[0], out.extent[0], "reduce_rows", "out extent (rows of x)");
  detail::check_config(config, "reduce_rows");
  KAAS_RETURN_LAUNCH(queue, reduce_rows_launch, queue, op, x, out, config);
}

int64_t reduce_all_workspace_size(const Queue& queue, int64_t n, LaunchConfig config) {
  if (config.groups > 0) return config.groups;
  const int size = config.group_size_or(256);  // reduce_all_launch's default
  const int64_t work_groups = (n + size - 1) / size;
  const int64_t resident = queue.backend().resident_groups(queue.device());
  const int64_t groups = work_groups < resident ? work_groups : resident;
  return groups > 0 ? groups : 1;
}

void reduce_all(const Queue& queue, ReduceOp op, View1<const float> x, View1<float> out,
                View1<float> workspace, LaunchConfig config) {
  check_op(op, "reduce_all");
  detail::check_view(x, "reduce_all", "x");
  detail::check_view(out, "reduce_all", "out");
  detail::check_view(workspace, "reduce_all", "workspace");
  detail::check_same_extent(1, out.extent[0], "reduce_all", "out extent");
  detail::check_config(config, "reduce_all");
  const int64_t needed = reduce_all_workspace_size(queue, x.extent[0], config);
  require(workspace.extent[0] >= needed, "reduce_all", "workspace extent",
          ">= " + std::to_string(needed), std::to_string(workspace.extent[0]));
  workspace.extent[0] = needed;  // the launcher takes the group count from it
  KAAS_RETURN_LAUNCH(queue, reduce_all_launch, queue, op, x, out, workspace, config);
}

void reduce_all(const Queue& queue, ReduceOp op, View1<const float> x, View1<float> out,
                LaunchConfig config) {
  detail::check_config(config, "reduce_all");
  auto workspace = make_device_buffer<float>(
      queue, static_cast<size_t>(reduce_all_workspace_size(queue, x.extent[0], config)));
  reduce_all(queue, op, x, out, workspace.view(), config);
  queue.wait();  // the workspace is freed on return
}

}  // namespace kaas
