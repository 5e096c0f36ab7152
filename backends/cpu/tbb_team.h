#pragma once
// The oneTBB side of host_team.cc, in its own translation unit so only it includes TBB's
// headers (built when KAAS_HAVE_TBB).

#include "kaas/backends/cpu/host_team.h"

namespace kaas::host::tbb_team {

// Members of a team started here: the explicit request (host_threads.h), else the concurrency
// of the caller's arena.
int size();
// member(index) for index in [0, size), as TBB tasks in the caller's arena or, with an explicit
// request different from it, in a kaas arena of that size; isolated from the caller's other work.
void run(int size, FunctionRef<void(int)> member);
// The oneTBB version built against ("2021.8"), for backend details.
const char* version();

}  // namespace kaas::host::tbb_team
