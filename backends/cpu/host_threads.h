#pragma once
// How many threads kaas's CPU parallel work asks for, whatever runtime runs it (OpenMP or oneTBB).
// Thread pools keep no per-caller count that survives a new thread (a thread the caller starts
// begins with the process's initial OpenMP count; a TBB arena belongs to whoever made it), so
// kaas keeps its own: the count set on the calling thread (set_thread_request), else the
// process-wide count (set_process_request), else none (0) and the runtime's own default.
//
// The widest team that really ran is recorded per calling thread (note_team, by the team's first
// member on the caller) so hosts and tests can see it: take_widest_team.

namespace kaas::host {

// The calling thread's request, else the process's; 0 when neither was set.
int explicit_request();
// threads > 0: this thread's parallel work asks for `threads`; 0: back to the process-wide count.
void set_thread_request(int threads);
// threads > 0: every thread without its own request asks for `threads`; 0: the runtime's own.
void set_process_request(int threads);
// Called on the caller with the size of a team that ran in parallel.
void note_team(int team);
// The widest team started from this thread since the last call (0: none ran in parallel); resets
// it.
int take_widest_team();

}  // namespace kaas::host
