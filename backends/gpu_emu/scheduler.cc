#include "kaas/backends/gpu_emu/scheduler.h"

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "kaas/backends/buffer.h"
#include "kaas/backends/gpu_emu/fiber_sanitizers.h"
#include "kaas/common/error.h"

namespace kaas::gpu_emu {

namespace {

// Thrown out of sync() to unwind element threads once the launch has been aborted.
struct LaunchAborted {};

enum class ThreadState { kRunning, kAtBarrier, kReturned };

// Kernel bodies keep small locals. Small on purpose: ASan clears the shadow of the whole target
// stack at every swapcontext (64 KiB: test_models.gpu_emu 64 s under ASan, 362 s with 512 KiB).
constexpr size_t kStackBytes = size_t{64} << 10;

// Stacks for the element threads of one launching OS thread, kept between launches so a launch
// costs no mmap. Each stack has a PROT_NONE guard page below it: an overflow faults.
class StackPool {
 public:
  ~StackPool() { release(); }

  // Stack `i` of at least `count`; throws kResourceExhausted when the mapping fails.
  unsigned char* stack(size_t i) const { return base_ + i * stride() + page(); }
  void reserve(size_t count) {
    if (count <= count_) return;
    release();
    void* base = mmap(nullptr, count * stride(), PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED)
      throw Error(ErrorCode::kResourceExhausted,
                  "could not map stacks for " + std::to_string(count) +
                      " emulated element threads: " + std::strerror(errno));
    base_ = static_cast<unsigned char*>(base);
    count_ = count;
    for (size_t i = 0; i < count; ++i) (void)mprotect(base_ + i * stride(), page(), PROT_NONE);
  }

 private:
  static size_t page() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }
  static size_t stride() { return kStackBytes + page(); }
  void release() {
    if (base_ != nullptr) munmap(base_, count_ * stride());
    base_ = nullptr;
    count_ = 0;
  }
  unsigned char* base_ = nullptr;
  size_t count_ = 0;
};

thread_local StackPool stack_pool;

// A switch between the launcher and an element thread saves and restores only what the compiler
// needs (stack and frame pointers, the resume address; every register is taken as clobbered at
// __builtin_setjmp): swapcontext also saves and restores the signal mask, two rt_sigprocmask
// system calls per switch, which were half of the emulator's time (5.2 s of system time in a
// 10.8 s gpu_emu test; 960,000 calls). makecontext + swapcontext still start each fiber on its
// stack, once per launch. GCC and Clang builtins; a jump must not come from the function that
// set the buffer, hence the small functions. Their callers must take every caller-saved register
// as clobbered: GCC's interprocedural register allocation saw that switch_context touches no
// rcx and kept a value there across the call (noipa turns that off; Clang does not do it).
// They are not instrumented by AddressSanitizer: before a longjmp it calls
// __asan_handle_no_return, which takes the stack as abandoned (a sigaltstack system call and a
// memset of the whole stack's shadow at every switch, 2x the time of swapcontext there), while a
// fiber switch leaves both stacks live; the fibers' stack bounds are told to ASan by
// fiber_sanitizers.h. test_kernels on gpu_emu under ASan: 32.7 s with swapcontext, 16-19.5 s.
// Under ThreadSanitizer the switch stays swapcontext: it keeps a shadow call stack per fiber that
// only its interceptors unwind (a jump failed its checks).
#if defined(KAAS_FIBER_TSAN)
#define KAAS_FIBER_JUMPS 0
#else
#define KAAS_FIBER_JUMPS 1
#endif
using JumpBuffer = void* [5];
#if KAAS_FIBER_JUMPS
#if defined(__clang__)
#define KAAS_CONTEXT_SWITCH [[gnu::noinline]] __attribute__((no_sanitize("address")))
#else
#define KAAS_CONTEXT_SWITCH [[gnu::noipa]] __attribute__((no_sanitize("address")))
#endif

KAAS_CONTEXT_SWITCH void jump_to(JumpBuffer& to) {
  __builtin_longjmp(to, 1);
}

// Saves where the caller stands in `here` and continues at `to`; returns once a jump to `here`.
KAAS_CONTEXT_SWITCH void switch_context(JumpBuffer& here, JumpBuffer& to) {
  if (__builtin_setjmp(here) == 0) jump_to(to);
}

// The same, to a fiber's first entry (its ucontext from makecontext).
KAAS_CONTEXT_SWITCH void start_context(JumpBuffer& here, ucontext_t& scratch, ucontext_t& fiber) {
  if (__builtin_setjmp(here) == 0) swapcontext(&scratch, &fiber);
}
#endif

}  // namespace

// Element threads are fibers (ucontext) on the launching OS thread: a baton pass is a context
// switch in user space instead of a wake-up of another OS thread, and a launch starts no thread.
class Scheduler {
 public:
  Scheduler(int64_t groups, int group_size, size_t shared_bytes, const char* kernel_name,
            const std::function<void(const ThreadPlace&)>& body)
      : groups_(groups),
        group_size_(group_size),
        shared_bytes_(shared_bytes),
        kernel_name_(kernel_name),
        body_(body),
        fibers_(new Fiber[static_cast<size_t>(group_size)]) {
    stack_pool.reserve(static_cast<size_t>(group_size));
    shared_ =
        static_cast<unsigned char*>(detail::allocate_host(shared_bytes > 0 ? shared_bytes : 1));
    launcher_sanitizer_ = FiberSanitizerState::current_thread();
    for (int t = 0; t < group_size_; ++t) {
      Fiber& f = fibers_[static_cast<size_t>(t)];
      f.stack = stack_pool.stack(static_cast<size_t>(t));
      f.sanitizer = FiberSanitizerState::new_fiber(f.stack, kStackBytes);
    }
  }
  ~Scheduler() {
    for (int t = 0; t < group_size_; ++t) fibers_[static_cast<size_t>(t)].sanitizer.destroy();
    detail::free_host(shared_);
  }

  void run() {
    for (group_ = 0; group_ < groups_ && !aborted_; ++group_) run_group();
    unwind_suspended();
    if (first_exception_) std::rethrow_exception(first_exception_);
    if (!failure_.empty()) throw Error(ErrorCode::kInternal, failure_);
  }

  // Called on an element thread's fiber from sync(): back to the launcher until its next turn.
  void arrive_at_barrier(int thread) {
    Fiber& self = fibers_[static_cast<size_t>(thread)];
    self.state = ThreadState::kAtBarrier;
    ++self.syncs;
    yield_to_launcher(self);
    if (aborted_) throw LaunchAborted{};
  }

 private:
  struct Fiber {
    ucontext_t context;    // its first entry (makecontext)
    JumpBuffer resume_at;  // where it waits after its first entry
    unsigned char* stack = nullptr;
    FiberSanitizerState sanitizer;
    ThreadState state = ThreadState::kRunning;
    bool started = false;  // has a frame on its stack (between its first turn and its exit)
    bool entered = false;  // has run since it started (its next turn jumps to resume_at)
    int64_t syncs = 0;     // sync() calls in the current group
  };

  // One group: rounds in which every element thread runs, in order 0, 1, ..., until it reaches
  // sync() or returns; the last one of a round decides what comes next.
  void run_group() {
    poison_shared();
    for (int t = 0; t < group_size_; ++t) {
      Fiber& f = fibers_[static_cast<size_t>(t)];
      f.state = ThreadState::kRunning;
      f.syncs = 0;
    }
    for (;;) {
      for (int t = 0; t < group_size_ && !aborted_; ++t) resume(t);
      if (aborted_) return;
      int waiting = 0;
      for (int t = 0; t < group_size_; ++t)
        waiting += fibers_[static_cast<size_t>(t)].state == ThreadState::kAtBarrier;
      if (waiting == 0) return;  // every element returned: the group is done
      if (waiting < group_size_) {
        abort(divergence_message());
        return;
      }
      for (int t = 0; t < group_size_; ++t)
        fibers_[static_cast<size_t>(t)].state = ThreadState::kRunning;
    }
  }

  // Runs element thread t until its next sync() or return. A fiber's body runs once per group;
  // between groups it waits in element_main for the next one.
  void resume(int t) {
    Fiber& f = fibers_[static_cast<size_t>(t)];
    if (!f.started) {
      getcontext(&f.context);
      f.context.uc_stack.ss_sp = f.stack;
      f.context.uc_stack.ss_size = kStackBytes;
      f.context.uc_link = nullptr;
      const auto self = reinterpret_cast<uintptr_t>(this);
      makecontext(&f.context, reinterpret_cast<void (*)()>(&Scheduler::element_main), 3,
                  static_cast<unsigned>(self >> 32), static_cast<unsigned>(self & 0xFFFFFFFFu), t);
      // Only makecontext reads uc_stack. Left set, AddressSanitizer's swapcontext clears the
      // shadow of the whole 64 KiB stack at every resume: 40 % of a barrier-heavy kernel's
      // time under ASan (ReduceTest on gpu_emu). The shadow is cleared once per start instead.
      FiberSanitizerState::clear_stack(f.stack, kStackBytes);
      f.context.uc_stack.ss_sp = nullptr;
      f.context.uc_stack.ss_size = 0;
      f.started = true;
      f.entered = false;
    }
    launcher_sanitizer_.switch_to(f.sanitizer);
#if KAAS_FIBER_JUMPS
    if (!f.entered) {  // a member, not a local: GCC warns that a local might be clobbered
      f.entered = true;
      start_context(launcher_resume_at_, launcher_context_, f.context);
    } else {
      switch_context(launcher_resume_at_, f.resume_at);
    }
#else
    swapcontext(&launcher_context_, &f.context);
#endif
    launcher_sanitizer_.arrived(f.sanitizer);
  }

  void yield_to_launcher(Fiber& self) {
    self.sanitizer.switch_to(launcher_sanitizer_);
#if KAAS_FIBER_JUMPS
    switch_context(self.resume_at, launcher_resume_at_);
#else
    swapcontext(&self.context, &launcher_context_);
#endif
    self.sanitizer.arrived(launcher_sanitizer_);
  }

  static void element_main(unsigned self_high, unsigned self_low, int thread) {
    auto* s = reinterpret_cast<Scheduler*>((uintptr_t{self_high} << 32) | self_low);
    Fiber& self = s->fibers_[static_cast<size_t>(thread)];
    self.sanitizer.arrived(s->launcher_sanitizer_);
    s->element_loop(self, thread);
    // Leaves this stack for good: the launcher never resumes this context.
    self.started = false;
    self.sanitizer.leave_for_good(s->launcher_sanitizer_);
#if KAAS_FIBER_JUMPS
    jump_to(s->launcher_resume_at_);
#else
    setcontext(&s->launcher_context_);
#endif
  }

  void element_loop(Fiber& self, int thread) {
    while (!aborted_) {
      try {
        body_(ThreadPlace{group_, groups_, group_size_, thread, shared_, this});
      } catch (const LaunchAborted&) {
        return;
      } catch (...) {
        if (!first_exception_) first_exception_ = std::current_exception();
        abort("");
        return;
      }
      self.state = ThreadState::kReturned;
      if (group_ + 1 >= groups_) return;  // the last group: nothing to wait for
      yield_to_launcher(self);            // resumed for the next group (or to unwind)
    }
  }

  // After an abort, element threads waiting in sync() (or between groups) still hold frames:
  // resume each once so LaunchAborted unwinds it and its destructors run.
  void unwind_suspended() {
    aborted_ = true;
    for (int t = 0; t < group_size_; ++t)
      if (fibers_[static_cast<size_t>(t)].started) resume(t);
  }

  std::string divergence_message() const {
    std::string waiting_threads, returned_threads;
    int64_t waiting_syncs = -1, returned_syncs = -1;
    for (int t = 0; t < group_size_; ++t) {
      const Fiber& f = fibers_[static_cast<size_t>(t)];
      std::string& list = f.state == ThreadState::kAtBarrier ? waiting_threads : returned_threads;
      if (list.size() < 60) {
        if (!list.empty()) list += ',';
        list += std::to_string(t);
      }
      (f.state == ThreadState::kAtBarrier ? waiting_syncs : returned_syncs) = f.syncs;
    }
    return "barrier divergence in kernel " + std::string(kernel_name_) + ", group " +
           std::to_string(group_) + " (group_size " + std::to_string(group_size_) +
           "): element threads [" + waiting_threads + "] wait at sync() call #" +
           std::to_string(waiting_syncs) + " while threads [" + returned_threads +
           "] returned after " + std::to_string(returned_syncs) +
           " sync() calls; every element of a group must reach the same sync() calls";
  }

  void abort(const std::string& message) {
    if (failure_.empty() && !message.empty()) failure_ = message;
    aborted_ = true;
  }

  void poison_shared() {
    std::memset(shared_, 0xFF, shared_bytes_ > 0 ? shared_bytes_ : 1);
  }

  const int64_t groups_;
  const int group_size_;
  const size_t shared_bytes_;
  const char* kernel_name_;
  const std::function<void(const ThreadPlace&)>& body_;
  std::unique_ptr<Fiber[]> fibers_;
  ucontext_t launcher_context_;  // with jumps: written by a fiber's first entry, never resumed
  JumpBuffer launcher_resume_at_;
  FiberSanitizerState launcher_sanitizer_;
  unsigned char* shared_ = nullptr;
  int64_t group_ = 0;
  bool aborted_ = false;
  std::string failure_;
  std::exception_ptr first_exception_;
};

void run_emulated(int64_t groups, int group_size, size_t shared_bytes, const char* kernel_name,
                  const std::function<void(const ThreadPlace&)>& body) {
  if (groups <= 0) return;
  // The stack pool belongs to the launching OS thread; a kernel body cannot launch again.
  thread_local bool launching = false;
  if (launching)
    throw Error(ErrorCode::kInternal,
                std::string("kernel ") + kernel_name + " launched from inside an emulated kernel");
  launching = true;
  struct Reset {
    bool& flag;
    ~Reset() { flag = false; }
  } reset{launching};
  Scheduler scheduler(groups, group_size, shared_bytes, kernel_name, body);
  scheduler.run();
}

void barrier(const ThreadPlace& place) {
  place.scheduler->arrive_at_barrier(place.thread);
}

}  // namespace kaas::gpu_emu
