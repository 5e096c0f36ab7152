#include "kaas/backends/gpu_emu/scheduler.h"

#include <pthread.h>
#include <sched.h>

#include <cstring>
#include <exception>
#include <memory>
#include <semaphore>
#include <string>
#include <thread>
#include <vector>

#include "kaas/backends/buffer.h"
#include "kaas/backends/error.h"

namespace kaas::gpu_emu {

namespace {

// Thrown out of sync() to unwind element threads once the launch has been aborted.
struct LaunchAborted {};

enum class ThreadState { kRunning, kAtBarrier, kReturned };

}  // namespace

class Scheduler {
 public:
  Scheduler(int64_t groups, int group_size, size_t shared_bytes, const char* kernel_name)
      : groups_(groups),
        group_size_(group_size),
        shared_bytes_(shared_bytes),
        kernel_name_(kernel_name),
        threads_(new Slot[static_cast<size_t>(group_size)]) {
    shared_ =
        static_cast<unsigned char*>(detail::allocate_host(shared_bytes > 0 ? shared_bytes : 1));
    poison_shared();
  }
  ~Scheduler() { detail::free_host(shared_); }

  void run(const std::function<void(const ThreadPlace&)>& body) {
    std::vector<std::thread> workers;
    workers.reserve(static_cast<size_t>(group_size_));
    try {
      for (int t = 0; t < group_size_; ++t) {
        workers.emplace_back([this, t, &body] { element_thread(t, body); });
        pin_to_launching_cpu(workers.back());
      }
    } catch (const std::system_error& e) {
      abort_all("could not start " + std::to_string(group_size_) +
                " emulated element threads: " + e.what());
      for (auto& w : workers) w.join();
      throw Error(ErrorCode::kResourceExhausted, failure_);
    }
    threads_[0].turn.release();  // thread 0 starts group 0
    for (auto& w : workers) w.join();
    if (first_exception_) std::rethrow_exception(first_exception_);
    if (!failure_.empty()) throw Error(ErrorCode::kInternal, failure_);
  }

  // Called by the baton holder from sync().
  void arrive_at_barrier(int thread) {
    Slot& self = threads_[static_cast<size_t>(thread)];
    self.state = ThreadState::kAtBarrier;
    ++self.syncs;
    pass_baton(thread);
    self.turn.acquire();
    if (aborted_) throw LaunchAborted{};
  }

 private:
  struct Slot {
    std::binary_semaphore turn{0};
    ThreadState state = ThreadState::kRunning;
    int64_t syncs = 0;  // sync() calls in the current group
  };

  // Only one element thread runs at a time, so keeping them all on one core turns each baton
  // pass into a local context switch instead of a cross-core wake-up (several times faster).
  static void pin_to_launching_cpu(std::thread& worker) {
    const int cpu = sched_getcpu();
    if (cpu < 0) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    (void)pthread_setaffinity_np(worker.native_handle(), sizeof set, &set);
  }

  void element_thread(int thread, const std::function<void(const ThreadPlace&)>& body) {
    Slot& self = threads_[static_cast<size_t>(thread)];
    for (int64_t g = 0; g < groups_; ++g) {
      self.turn.acquire();
      if (aborted_) return;
      try {
        body(ThreadPlace{g, groups_, group_size_, thread, shared_, this});
      } catch (const LaunchAborted&) {
        return;
      } catch (...) {
        if (!first_exception_) first_exception_ = std::current_exception();
        abort_all("");
        return;
      }
      self.state = ThreadState::kReturned;
      pass_baton(thread);
    }
  }

  // Gives the turn to the next thread; the last thread of a round decides what comes next.
  void pass_baton(int thread) {
    if (thread + 1 < group_size_) {
      threads_[static_cast<size_t>(thread) + 1].turn.release();
      return;
    }
    int waiting = 0, returned = 0;
    for (int t = 0; t < group_size_; ++t) {
      (threads_[static_cast<size_t>(t)].state == ThreadState::kAtBarrier ? waiting : returned)++;
    }
    if (waiting == group_size_) {  // everyone reached the barrier: next round
      for (int t = 0; t < group_size_; ++t)
        threads_[static_cast<size_t>(t)].state = ThreadState::kRunning;
      threads_[0].turn.release();
    } else if (returned == group_size_) {  // group finished
      if (++group_ < groups_) {
        poison_shared();
        for (int t = 0; t < group_size_; ++t) {
          threads_[static_cast<size_t>(t)].state = ThreadState::kRunning;
          threads_[static_cast<size_t>(t)].syncs = 0;
        }
        threads_[0].turn.release();
      }
    } else {
      abort_all(divergence_message());
    }
  }

  std::string divergence_message() const {
    std::string waiting_threads, returned_threads;
    int64_t waiting_syncs = -1, returned_syncs = -1;
    for (int t = 0; t < group_size_; ++t) {
      const Slot& s = threads_[static_cast<size_t>(t)];
      std::string& list = s.state == ThreadState::kAtBarrier ? waiting_threads : returned_threads;
      if (list.size() < 60) {
        if (!list.empty()) list += ',';
        list += std::to_string(t);
      }
      (s.state == ThreadState::kAtBarrier ? waiting_syncs : returned_syncs) = s.syncs;
    }
    return "barrier divergence in kernel " + std::string(kernel_name_) + ", group " +
           std::to_string(group_) + " (group_size " + std::to_string(group_size_) +
           "): element threads [" + waiting_threads + "] wait at sync() call #" +
           std::to_string(waiting_syncs) + " while threads [" + returned_threads +
           "] returned after " + std::to_string(returned_syncs) +
           " sync() calls; every element of a group must reach the same sync() calls";
  }

  // Wakes every thread so it can unwind; only the baton holder calls this.
  void abort_all(const std::string& message) {
    if (failure_.empty() && !message.empty()) failure_ = message;
    aborted_ = true;
    for (int t = 0; t < group_size_; ++t) threads_[static_cast<size_t>(t)].turn.release();
  }

  void poison_shared() { std::memset(shared_, 0xFF, shared_bytes_ > 0 ? shared_bytes_ : 1); }

  // Only the thread holding the baton touches the fields below; the semaphores order them.
  const int64_t groups_;
  const int group_size_;
  const size_t shared_bytes_;
  const char* kernel_name_;
  std::unique_ptr<Slot[]> threads_;
  unsigned char* shared_ = nullptr;
  int64_t group_ = 0;
  bool aborted_ = false;
  std::string failure_;
  std::exception_ptr first_exception_;
};

void run_emulated(int64_t groups, int group_size, size_t shared_bytes, const char* kernel_name,
                  const std::function<void(const ThreadPlace&)>& body) {
  if (groups <= 0) return;
  Scheduler scheduler(groups, group_size, shared_bytes, kernel_name);
  scheduler.run(body);
}

void barrier(const ThreadPlace& place) {
  place.scheduler->arrive_at_barrier(place.thread);
}

}  // namespace kaas::gpu_emu
