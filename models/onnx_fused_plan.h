#pragma once
// One of OnnxModel's plans: the matched conv-dense-heads layers run as one pass over slabs of
// conv output rows (onnx_fused.h), fp32 or with the first two layers in bf16 / fp16. On the host
// SIMD backends the planner chooses its thread split and first-layer kernels, and, measuring in
// fp32, whether the model's unfused plan is faster still. Internal to models/.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kaas/backends/buffer.h"
#include "kaas/kernels/conv_dense_heads.h"
#include "kaas/kernels/gemm.h"
#include "kaas/models/onnx_sparse_execution.h"
#include "kaas/models/plan_log.h"

namespace kaas::models::onnx_import {

class ConvDenseHeadsPlan {
 public:
  // The slab and first-layer buffers for batch tiles up to max_batch (16-bit copies of the
  // weights in bf16 / fp16), and the plan's precision lines and summary in `log`.
  ConvDenseHeadsPlan(const PlanContext& context, int64_t max_batch, PlanLog& log);
  ~ConvDenseHeadsPlan();
  ConvDenseHeadsPlan(const ConvDenseHeadsPlan&) = delete;
  ConvDenseHeadsPlan& operator=(const ConvDenseHeadsPlan&) = delete;

  // On the host SIMD backends: the planner's choice of split and first-layer kernels, each
  // candidate timed through run_model(rows) (the model's whole run on the trial input at that
  // batch); `run_unfused` (empty when it is not a candidate) times the unfused plan beside
  // them. Returns false when the unfused plan was measured faster: this plan's buffers are then
  // released. Elsewhere a no-op returning true.
  bool choose_execution(int64_t batch, const std::function<void(int64_t)>& run_model,
                        const std::function<void(int64_t)>& run_unfused);

  // Runs the batch in the context's shapes.
  void run();

  // Patches per slab pass: the batch the planner times the candidates at.
  int64_t batch_tile() const { return tile_; }

 private:
  struct Kernels {
    GemmImpl dense1;
    Conv2dImpl conv;
    std::string name;
  };
  struct Reduced;  // the 16-bit layers, bf16 or fp16
  struct Choice {  // a fused candidate of the planner
    ConvDenseHeadsSplit split;
    Kernels kernels;
    int64_t rows_per_pass;
  };

  std::string make_buffers(size_t slab_elements);
  template <class T>
  std::string make_reduced(size_t slab_elements);
  void pack_dense1_panels();
  std::vector<Kernels> kernel_candidates(int64_t batch, int64_t n1, bool trans_b);
  Kernels choose_reduced_kernels(const std::vector<Kernels>& impls, int64_t batch,
                                 const std::function<void(int64_t)>& run_model);
  std::string batch_split_threshold(const std::string& point, int64_t batch,
                                    const std::function<void(int64_t)>& run_model);
  std::vector<Choice> fused_choices(const std::vector<Kernels>& impls) const;
  void write_summary();
  void copy_trial_input();
  void release();
  template <class T>
  void run_reduced(const FusedBuffers& buffers);

  PlanContext context_;
  PlanLog& log_;
  int64_t tile_ = 1;           // patches per slab pass
  int64_t rows_per_pass_ = 1;  // conv output rows per slab pass (the chosen candidate's)
  int64_t slab_rows_ = 1;      // rows per pass within fused_slab_bytes (the slab's size)
  int64_t thread_rows_ = 1;    // the batch split's smaller candidate (fused_thread_slab_bytes)
  DeviceBuffer<float> slab_, dense1_;
  std::vector<float> dense1_panel_values_;  // host memory: CPU backends only
  GemmPackedPanels dense1_panels_;
  ConvDenseHeadsSplit split_ = ConvDenseHeadsSplit::kKernels;
  int64_t batch_split_from_ = 0;  // smaller batches run the kernels split (measured)
  GemmImpl dense1_impl_ = GemmImpl::kAuto;
  Conv2dImpl conv_impl_ = Conv2dImpl::kAuto;
  std::unique_ptr<Reduced> reduced_;
};

}  // namespace kaas::models::onnx_import
