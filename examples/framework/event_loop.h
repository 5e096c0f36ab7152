#pragma once
// A small event loop in the style of CMSSW's and art's frameworks, on oneTBB: S streams each
// process one event at a time (events handed out in order), and every module call is a task in
// one arena of T threads, the framework's only threads. A module is synchronous (produce runs
// in the task) or ExternalWork (acquire starts work outside the framework, e.g. an asynchronous
// call to kaas-server, and returns the thread to the framework; when the work calls the holder,
// the event goes on with produce as a new task). This is the pattern SonicTriton uses inside
// CMSSW.

#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace kaas::examples::framework {

// Handed to an ExternalWork module's acquire: call done() once, from any thread, when the work
// ends (with the error if it failed).
class WaitingTaskHolder {
 public:
  explicit WaitingTaskHolder(std::function<void(std::exception_ptr)> resume)
      : resume_(std::move(resume)) {}
  void done(std::exception_ptr error = nullptr) const { resume_(std::move(error)); }

 private:
  std::function<void(std::exception_ptr)> resume_;
};

template <class Event>
class Module {
 public:
  virtual ~Module() = default;
  virtual const char* name() const = 0;
  virtual bool external_work() const { return false; }
  // ExternalWork only: starts the work and returns.
  virtual void acquire(Event&, int /*stream*/, WaitingTaskHolder holder) { holder.done(); }
  virtual void produce(Event& event, int stream) = 0;
};

// Peak thread count of this process (Threads: of /proc/self/status), sampled at module calls.
int process_threads();

template <class Event>
class EventLoop {
 public:
  using Modules = std::vector<Module<Event>*>;
  using EventDone = std::function<void(const Event&)>;

  // threads: the arena's size (all of them workers: the thread that calls run() only waits).
  EventLoop(int threads, int streams)
      : threads_(threads),
        streams_(streams),
        // TBB's default worker limit is the core count minus one; the arena asks for `threads`.
        workers_(::tbb::global_control::max_allowed_parallelism, size_t(threads) + 1),
        arena_(threads, 0) {}

  int threads() const { return threads_; }
  int peak_threads() const { return peak_threads_.load(); }

  // Processes events 0 .. events-1 through `modules` in order, calling `done` (on a framework
  // thread) as each event finishes; returns when all have. The first error stops handing out
  // events and is rethrown here.
  void run(int events, Modules modules, EventDone done) {
    events_ = events;
    modules_ = std::move(modules);
    done_ = std::move(done);
    next_event_ = 0;
    streams_running_ = streams_;
    for (int s = 0; s < streams_; ++s) start_next(s);
    std::unique_lock lock(mutex_);
    all_done_.wait(lock, [this] { return streams_running_ == 0; });
    if (failure_) std::rethrow_exception(failure_);
  }

 private:
  struct InFlight {
    Event event;
    int stream = 0;
  };

  void start_next(int stream) {
    const int number = failed_ ? events_ : next_event_++;
    if (number >= events_) {
      std::lock_guard lock(mutex_);
      if (--streams_running_ == 0) all_done_.notify_all();
      return;
    }
    auto work = std::make_shared<InFlight>();
    work->event.number = number;
    work->stream = stream;
    arena_.enqueue([this, work] { run_module(work, 0); });
  }

  // Module `index` onwards, in this task until an ExternalWork module hands the event out.
  void run_module(std::shared_ptr<InFlight> work, size_t index) {
    try {
      for (; index < modules_.size(); ++index) {
        note_threads();
        Module<Event>& module = *modules_[index];
        if (!module.external_work()) {
          module.produce(work->event, work->stream);
          continue;
        }
        module.acquire(work->event, work->stream,
                       WaitingTaskHolder([this, work, index](std::exception_ptr error) {
                         // Back into the framework: produce and the rest as a new task.
                         arena_.enqueue([this, work, index, error] {
                           if (error) return fail(work, error);
                           try {
                             modules_[index]->produce(work->event, work->stream);
                           } catch (...) {
                             return fail(work, std::current_exception());
                           }
                           run_module(work, index + 1);
                         });
                       }));
        return;
      }
      note_threads();
      done_(work->event);
    } catch (...) {
      return fail(work, std::current_exception());
    }
    start_next(work->stream);
  }

  void fail(const std::shared_ptr<InFlight>& work, std::exception_ptr error) {
    {
      std::lock_guard lock(mutex_);
      if (!failure_) failure_ = error;
    }
    failed_ = true;
    start_next(work->stream);
  }

  void note_threads() {
    const int now = process_threads();
    int peak = peak_threads_.load();
    while (now > peak && !peak_threads_.compare_exchange_weak(peak, now)) {
    }
  }

  const int threads_, streams_;
  ::tbb::global_control workers_;
  ::tbb::task_arena arena_;
  int events_ = 0;
  Modules modules_;
  EventDone done_;
  std::atomic<int> next_event_{0};
  std::atomic<bool> failed_{false};
  std::atomic<int> peak_threads_{0};
  std::mutex mutex_;
  std::condition_variable all_done_;
  int streams_running_ = 0;
  std::exception_ptr failure_;
};

}  // namespace kaas::examples::framework
