#pragma once
// A queue is an in-order stream of work on one device of one backend. CPU queues are blocking
// (work is done when the call returns); GPU queues wrap a stream, so call wait() before reading
// results on the host. Queues are move-only and not shared between threads without locking.

#include <memory>

#include "kaas/backends/backend.h"

namespace kaas {

class Event;

class Queue {
 public:
  explicit Queue(const Backend& backend, int device = 0);
  ~Queue();
  Queue(Queue&& other) noexcept;
  Queue& operator=(Queue&& other) noexcept;
  Queue(const Queue&) = delete;
  Queue& operator=(const Queue&) = delete;

  const Backend& backend() const { return *backend_; }
  BackendId backend_id() const { return backend_->id(); }
  int device() const { return device_; }
  // The GPU stream (cudaStream_t / hipStream_t); null on CPU backends.
  void* native_stream() const { return stream_; }
  // Blocks until all work submitted so far has finished.
  void wait() const;

 private:
  const Backend* backend_;
  int device_;
  void* stream_ = nullptr;
};

// A timing marker recorded on a queue.
class Event {
 public:
  explicit Event(const Backend& backend);
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record(const Queue& queue);
  void wait() const;
  // Milliseconds from `start` to this event; both must have been recorded and completed.
  double elapsed_ms_since(const Event& start) const;

 private:
  const Backend* backend_;
  void* event_ = nullptr;
};

}  // namespace kaas
