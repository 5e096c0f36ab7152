#include "kaas/server_adapter/server/health_service.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/method_handler.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>

#include "health.grpc.pb.h"
#include "kaas/server_adapter/server/grpc_bounded.h"

namespace kaas::server {
namespace {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;
using HealthReply = HealthCheckResponse::ServingStatus;

// A health request names a service: a few bytes.
const InflateLimit kHealthRequestLimit{
    .bytes = 1024, .code = ErrorCode::kResourceExhausted, .why = "a health check request"};

bool known_service(const std::string& service) {
  return service.empty() || service == "inference.GRPCInferenceService";
}

class BoundedHealth final : public grpc::health::v1::Health::Service {
 public:
  BoundedHealth() {
    // Check: the request as received (streamed unary); Watch likewise (split server streaming).
    using Bytes = grpc::ByteBuffer;
    MarkMethodStreamed(
        0, new grpc::internal::StreamedUnaryHandler<Bytes, Bytes>(
               [this](grpc::ServerContext*, grpc::ServerUnaryStreamer<Bytes, Bytes>* s) {
                 return check(s);
               }));
    MarkMethodStreamed(
        1, new grpc::internal::SplitServerStreamingHandler<Bytes, Bytes>(
               [this](grpc::ServerContext* context, grpc::ServerSplitStreamer<Bytes, Bytes>* s) {
                 return watch(context, s);
               }));
  }

  void set(bool serving, bool stopping) {
    {
      const std::lock_guard lock(mutex_);
      serving_ = serving;
      stopping_ = stopping_ || stopping;
    }
    changed_.notify_all();
  }

 private:
  template <class Stream>
  static grpc::Status read(Stream* stream, HealthCheckRequest& request) {
    grpc::ByteBuffer received;
    if (!stream->Read(&received))
      return grpc::Status(grpc::StatusCode::INTERNAL, "no request message");
    return parse_bounded(
        received, [] { return kHealthRequestLimit; }, request);
  }

  template <class Stream>
  static bool write(Stream* stream, HealthReply status) {
    HealthCheckResponse response;
    response.set_status(status);
    grpc::ByteBuffer bytes;
    bool own = false;
    return grpc::SerializationTraits<HealthCheckResponse>::Serialize(response, &bytes, &own).ok() &&
           stream->Write(bytes);
  }

  HealthReply status_of(const std::string& service) const {
    if (!known_service(service)) return HealthCheckResponse::SERVICE_UNKNOWN;
    return serving_ ? HealthCheckResponse::SERVING : HealthCheckResponse::NOT_SERVING;
  }

  grpc::Status check(grpc::ServerUnaryStreamer<grpc::ByteBuffer, grpc::ByteBuffer>* stream) {
    HealthCheckRequest request;
    if (const grpc::Status parsed = read(stream, request); !parsed.ok()) return parsed;
    if (!known_service(request.service()))
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown service " + request.service());
    HealthReply status;
    {
      const std::lock_guard lock(mutex_);
      status = status_of(request.service());
    }
    if (!write(stream, status))
      return grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
    return grpc::Status::OK;
  }

  // The status now, then every change, until the client cancels or the server stops.
  grpc::Status watch(grpc::ServerContext* context,
                     grpc::ServerSplitStreamer<grpc::ByteBuffer, grpc::ByteBuffer>* stream) {
    HealthCheckRequest request;
    if (const grpc::Status parsed = read(stream, request); !parsed.ok()) return parsed;
    std::unique_lock lock(mutex_);
    bool first = true;
    HealthReply sent = HealthCheckResponse::UNKNOWN;
    while (true) {
      const HealthReply now = status_of(request.service());
      if (first || now != sent) {
        lock.unlock();
        if (!write(stream, now)) return grpc::Status::OK;  // the client went away
        lock.lock();
        sent = now;
        first = false;
      }
      if (stopping_) return grpc::Status::OK;
      // Woken by a change; every 100 ms it also looks for a cancelled call.
      changed_.wait_for(lock, std::chrono::milliseconds(100));
      if (context->IsCancelled()) return grpc::Status::CANCELLED;
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  bool serving_ = false, stopping_ = false;
};

}  // namespace

struct HealthService::Impl {
  BoundedHealth service;
};

HealthService::HealthService() : impl_(std::make_unique<Impl>()) {}
HealthService::~HealthService() = default;

grpc::Service* HealthService::service() {
  return &impl_->service;
}

void HealthService::set_serving(bool serving) {
  impl_->service.set(serving, false);
}

void HealthService::shut_down() {
  impl_->service.set(false, true);
}

}  // namespace kaas::server
