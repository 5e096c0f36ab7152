#pragma once
// How many OpenMP threads kaas's parallel regions ask for. OpenMP keeps its thread count per
// thread, and a thread the caller starts (Triton's model-instance threads, a std::thread, the
// server's workers) begins with the process's initial value, not what another thread set with
// omp_set_num_threads. So every kaas region names its team size explicitly: kaas's own request
// (host_threads.h: the calling thread's, else the process's), else OpenMP's own for this thread
// (OMP_NUM_THREADS, the cores it may use).

#include "kaas/backends/cpu/host_threads.h"

namespace kaas::openmp {

// Team size for a region started on this thread now (>= 1).
int requested_team();

using host::note_team;
using host::set_process_request;
using host::set_thread_request;
using host::take_widest_team;

}  // namespace kaas::openmp
