#pragma once
// Deliberately broken kernels (and their fixed twins): the proof that the GPU execution model
// is checked without a GPU. Compiled for the CPU backends (serial, openmp, tbb, gpu_emu). Keep
// them.
//
//  rotate_missing_sync   (a) writes its shared slot, then reads the neighbour's slot without a
//                            sync() in between. gpu_emu: wrong, the same way every run.
//  divergent_sync        (b) sync() inside an element loop whose trip count differs between
//                            elements. gpu_emu: reports barrier divergence.
//  reverse_local_across_sync (c) keeps a per-element value in a local variable across sync().
//                            serial, openmp and tbb: wrong (one local serves the whole group).

#include "kaas/backends/queue.h"
#include "kaas/backends/view.h"
#include "kaas/build_config.h"

#define KAAS_DECLARE_BROKEN_KERNELS(ns)                                                        \
  namespace kaas::ns {                                                                         \
  void rotate_missing_sync(const Queue&, View1<const float> x, View1<float> y, int group_size, \
                           bool with_sync);                                                    \
  void divergent_sync(const Queue&, View1<const float> x, View1<float> y, int group_size);     \
  void reverse_local_across_sync(const Queue&, View1<const float> x, View1<float> y,           \
                                 int group_size, bool fixed);                                  \
  }

KAAS_DECLARE_BROKEN_KERNELS(serial)
KAAS_DECLARE_BROKEN_KERNELS(gpu_emu)
#if KAAS_HAVE_OPENMP
KAAS_DECLARE_BROKEN_KERNELS(openmp)
#endif
#if KAAS_HAVE_TBB
KAAS_DECLARE_BROKEN_KERNELS(tbb)
#endif
#undef KAAS_DECLARE_BROKEN_KERNELS
