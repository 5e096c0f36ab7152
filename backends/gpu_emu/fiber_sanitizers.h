#pragma once
// Tells AddressSanitizer and ThreadSanitizer about the emulator's fiber switches (each element
// thread runs on its own stack on the launching OS thread). Without it ASan takes a switched
// stack for an overflow and TSan mixes up the shadow stacks. Compiled away in other builds
// (KAAS_FIBER_ASAN / KAAS_FIBER_TSAN come from CMake: the TSan build undefines
// __SANITIZE_THREAD__ for the sake of Debian's uninstrumented protobuf headers).

#include <cstddef>

#if defined(KAAS_FIBER_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(KAAS_FIBER_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

namespace kaas::gpu_emu {

class FiberSanitizerState {
 public:
  // The launching OS thread's own stack (ASan learns its extent on the first switch back).
  static FiberSanitizerState current_thread() {
    FiberSanitizerState state;
#if defined(KAAS_FIBER_TSAN)
    state.tsan_fiber_ = __tsan_get_current_fiber();
#endif
    return state;
  }
  static FiberSanitizerState new_fiber([[maybe_unused]] void* stack_bottom,
                                       [[maybe_unused]] size_t stack_bytes) {
    FiberSanitizerState state;
#if defined(KAAS_FIBER_ASAN)
    state.stack_bottom_ = stack_bottom;
    state.stack_bytes_ = stack_bytes;
#endif
#if defined(KAAS_FIBER_TSAN)
    state.tsan_fiber_ = __tsan_create_fiber(0);
    state.owns_tsan_fiber_ = true;
#endif
    return state;
  }
  // A fiber about to start on `stack_bottom` (a stack earlier fibers may have left with
  // poisoned frames): its shadow cleared once. ASan's swapcontext interceptor would clear the
  // target's whole uc_stack on every switch instead; the scheduler leaves uc_stack empty after
  // makecontext (its only reader) for that reason.
  static void clear_stack([[maybe_unused]] void* stack_bottom,
                          [[maybe_unused]] size_t stack_bytes) {
#if defined(KAAS_FIBER_ASAN)
    __asan_unpoison_memory_region(stack_bottom, stack_bytes);
#endif
  }
  void destroy() {
#if defined(KAAS_FIBER_TSAN)
    if (owns_tsan_fiber_) __tsan_destroy_fiber(tsan_fiber_);
    owns_tsan_fiber_ = false;
#endif
  }

  // Called by the context about to switch to `target`, right before swapcontext.
  void switch_to([[maybe_unused]] const FiberSanitizerState& target) {
#if defined(KAAS_FIBER_ASAN)
    __sanitizer_start_switch_fiber(&fake_stack_, target.stack_bottom_, target.stack_bytes_);
#endif
#if defined(KAAS_FIBER_TSAN)
    __tsan_switch_to_fiber(target.tsan_fiber_, 0);  // 0: the switch orders memory
#endif
  }
  // The same, for a fiber that leaves its stack and never comes back.
  void leave_for_good([[maybe_unused]] const FiberSanitizerState& target) {
#if defined(KAAS_FIBER_ASAN)
    __sanitizer_start_switch_fiber(nullptr, target.stack_bottom_, target.stack_bytes_);
#endif
#if defined(KAAS_FIBER_TSAN)
    __tsan_switch_to_fiber(target.tsan_fiber_, 0);
#endif
  }
  // Called by the context that has just been switched to, coming from `from` (whose stack
  // extent ASan reports here: how the launcher's own stack becomes known).
  void arrived([[maybe_unused]] FiberSanitizerState& from) {
#if defined(KAAS_FIBER_ASAN)
    const void* bottom = nullptr;
    size_t bytes = 0;
    __sanitizer_finish_switch_fiber(fake_stack_, &bottom, &bytes);
    from.stack_bottom_ = bottom;
    from.stack_bytes_ = bytes;
#endif
  }

 private:
#if defined(KAAS_FIBER_ASAN)
  void* fake_stack_ = nullptr;
  const void* stack_bottom_ = nullptr;
  size_t stack_bytes_ = 0;
#endif
#if defined(KAAS_FIBER_TSAN)
  void* tsan_fiber_ = nullptr;
  bool owns_tsan_fiber_ = false;
#endif
};

}  // namespace kaas::gpu_emu
