#include "kaas/backends/queue.h"

#include <utility>

#include "kaas/common/error.h"

namespace kaas {

Queue::Queue(const Backend& backend, int device) : backend_(&backend), device_(device) {
  if (!backend.available()) {
    throw Error(ErrorCode::kUnavailable, "backend '" + std::string(backend.name()) +
                                             "' is not available: " + backend.unavailable_reason());
  }
  const auto device_count = static_cast<int>(backend.devices().size());
  if (device < 0 || device >= device_count) {
    throw Error(ErrorCode::kInvalidArgument,
                "Queue: device: expected 0.." + std::to_string(device_count - 1) + " on backend '" +
                    std::string(backend.name()) + "', received " + std::to_string(device));
  }
  stream_ = backend.create_stream(device);
}

Queue::~Queue() {
  if (backend_ && stream_) backend_->destroy_stream(stream_);
}

Queue::Queue(Queue&& other) noexcept
    : backend_(other.backend_),
      device_(other.device_),
      stream_(std::exchange(other.stream_, nullptr)) {}

Queue& Queue::operator=(Queue&& other) noexcept {
  if (this != &other) {
    if (stream_) backend_->destroy_stream(stream_);
    backend_ = other.backend_;
    device_ = other.device_;
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

void Queue::wait() const {
  backend_->synchronize(stream_);
}

Event::Event(const Backend& backend) : backend_(&backend), event_(backend.create_event()) {}

Event::~Event() {
  if (event_) backend_->destroy_event(event_);
}

Event::Event(Event&& other) noexcept
    : backend_(other.backend_), event_(std::exchange(other.event_, nullptr)) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    if (event_) backend_->destroy_event(event_);
    backend_ = other.backend_;
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

void Event::record(const Queue& queue) {
  backend_->record_event(event_, queue.native_stream());
}

void Event::wait() const {
  backend_->wait_event(event_);
}

double Event::elapsed_ms_since(const Event& start) const {
  return backend_->elapsed_ms(start.event_, event_);
}

}  // namespace kaas
