#pragma once
// RemoteClient: the InferenceClient API over KServe v2 gRPC (kaas-server, or Triton itself),
// with the client stubs generated from the project's own proto.
//  - creation checks that the server is live and the model ready, and reads the model's
//    signature (ModelMetadata, ModelConfig): an unknown model is kNotFound here, not later;
//  - messages up to INT32_MAX bytes; optional gzip request compression;
//  - every request carries the call's deadline; UNAVAILABLE and DEADLINE_EXCEEDED answers are
//    retried with exponential backoff (other errors are the request's fault and are not);
//  - the address may name several servers ("h1:p,h2:p", or a DNS name with several addresses):
//    requests are balanced round robin over those whose grpc.health.v1 status is SERVING, and a
//    retry goes to the next one, so a failed or draining server costs a retry, not the call;
//  - when every attempt failed and a fallback is configured (typically a DirectClient on the
//    same repository), the call and later ones run on the fallback; every probe_interval a call
//    first asks the servers whether the model is ready, and goes back to them when it is;
//  - rectangular mode sends one request with the entries joined; ragged mode one request per
//    entry, up to max_in_flight outstanding at once on the shared channel;
//  - every call, blocking or asynchronous, runs on gRPC's asynchronous API and ends on the
//    connection's completion threads (ConnectionOptions::completion_threads, 2): an asynchronous
//    call in flight holds no thread (64 calls in flight, SONIC's ExternalWork pattern, on 2
//    threads), and its callback runs on a completion thread.

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "kaas/client/inference_client.h"

namespace kaas::client {

namespace detail {
class RegionPool;
}

struct ConnectionOptions {
  bool gzip = false;              // compress requests (responses come back as the server sends)
  std::string root_certificates;  // PEM; non-empty = TLS
  // Threads that end every call on this connection (its gRPC completion queue): asynchronous
  // callbacks run on them, so callbacks must be short and must not block.
  int completion_threads = 2;
};

// One gRPC channel to a server: any number of clients and threads may share it.
class RemoteConnection {
 public:
  static std::shared_ptr<RemoteConnection> connect(const std::string& url,
                                                   const ConnectionOptions& options = {});
  ~RemoteConnection();
  const std::string& url() const { return url_; }
  bool gzip() const { return gzip_; }
  struct Impl;
  Impl& impl() const { return *impl_; }

 private:
  RemoteConnection() = default;
  std::string url_;
  bool gzip_ = false;
  std::unique_ptr<Impl> impl_;
};

struct RemoteOptions {
  std::string model;
  std::string version;  // empty: the version the server serves
  BatchMode batch_mode = BatchMode::kRectangular;
  std::chrono::milliseconds ready_timeout{10'000};  // creation: server live + model ready
  int retries = 2;                                  // attempts = 1 + retries
  std::chrono::milliseconds backoff{50};            // before the first retry; doubles each time
  std::chrono::milliseconds max_backoff{2'000};
  // Made when every attempt of a call has failed; it must serve the same model signature.
  std::function<std::unique_ptr<InferenceClient>()> fallback;
  std::chrono::milliseconds probe_interval{1'000};  // on the fallback: how often to ask again
  int max_in_flight = 8;  // ragged mode: requests outstanding at once per call
  // Workers for asynchronous calls that run on the fallback (in process). Calls to the servers
  // hold no thread while in flight: they end on the connection's completion threads.
  int async_threads = 2;
  // Same-node server: inputs and outputs through system shared memory (regions this client
  // creates and registers once, reused by later calls) instead of the gRPC messages. Checked at
  // creation: a server that cannot open the client's region is kUnavailable there.
  bool shared_memory = false;
};

// The server's counters for one model (ModelStatistics), cumulative since it loaded.
struct ServerStatistics {
  uint64_t inference_count = 0, execution_count = 0;
  uint64_t success_ns = 0, queue_ns = 0;
  uint64_t compute_input_ns = 0, compute_infer_ns = 0, compute_output_ns = 0;
};

class RemoteClient final : public InferenceClient {
 public:
  static std::unique_ptr<RemoteClient> create(std::shared_ptr<RemoteConnection> connection,
                                              const RemoteOptions& options);
  static std::unique_ptr<RemoteClient> create(const std::string& url, const RemoteOptions& options,
                                              const ConnectionOptions& connection = {});
  ~RemoteClient() override;

  std::string describe() const override;
  bool on_fallback() const { return on_fallback_.load(); }
  std::string fallback_reason() const;  // why it switched (empty while on the server)
  ServerStatistics statistics() const;

 protected:
  InferResult execute(const CallRequest& request) override;
  void start_async(std::shared_ptr<const CallRequest> request, Callback callback) override;

 public:
  class AsyncCall;  // one call's requests and attempts on the completion queue (the .cc)

 private:
  struct Outcome;
  RemoteClient(std::shared_ptr<RemoteConnection> connection, const RemoteOptions& options,
               models::ModelSignature signature);
  // Sends the call's requests; `done` runs once on a completion thread with how they went.
  void start_remote(std::shared_ptr<const CallRequest> request, std::function<void(Outcome)> done);
  void call_finished();
  // On the fallback: true once a probe finds the model ready on a server again.
  bool servers_back();
  InferResult run_on_fallback(const CallRequest& request, const CallInfo& info,
                              const std::string& why, std::chrono::steady_clock::time_point start);

  std::shared_ptr<RemoteConnection> connection_;
  RemoteOptions options_;
  std::atomic<bool> on_fallback_{false};
  mutable std::mutex fallback_mutex_;
  std::unique_ptr<InferenceClient> fallback_;
  std::string fallback_reason_;
  std::atomic<int64_t> next_probe_ns_{0};        // steady clock
  std::unique_ptr<detail::RegionPool> regions_;  // shared_memory: free regions
  std::mutex calls_mutex_;
  std::condition_variable calls_done_;
  int calls_in_flight_ = 0;  // started by start_remote, not yet finished
};

}  // namespace kaas::client
