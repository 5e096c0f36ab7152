#pragma once
// How many OpenMP threads kaas's parallel regions ask for. OpenMP keeps its thread count per
// thread, and a thread the caller starts (Triton's model-instance threads, a std::thread, the
// server's workers) begins with the process's initial value, not what another thread set with
// omp_set_num_threads. So every kaas region names its team size explicitly: the count set on the
// calling thread (set_thread_request), else the process-wide count (set_process_request), else
// OpenMP's own for this thread (OMP_NUM_THREADS, the cores it may use).
//
// The team that really ran is recorded per calling thread (note_team, by the region's thread 0,
// which is the caller) so hosts and tests can see it: take_widest_team.

namespace kaas::openmp {

// Team size for a region started on this thread now (>= 1).
int requested_team();
// threads > 0: this thread's regions ask for `threads`; 0: back to the process-wide count.
void set_thread_request(int threads);
// threads > 0: every thread without its own request asks for `threads`; 0: OpenMP's own.
void set_process_request(int threads);
// Called by thread 0 of a kaas region with the team's size.
void note_team(int team);
// The widest team a kaas region started from this thread had since the last call (0: none ran
// in parallel); resets it.
int take_widest_team();

}  // namespace kaas::openmp
