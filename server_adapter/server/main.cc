// kaas-server: serves a Triton-layout model repository over KServe v2 gRPC and REST, with
// Prometheus metrics. SIGTERM (what orchestrators send, then wait): not ready (health
// NOT_SERVING) but still serving for --drain-seconds (3 s: balancers checking every second see
// it), then stop accepting, answer every accepted request, exit 0. SIGINT (a person at a
// terminal): the same without the not-ready period. A second signal exits at once (status 1).

#include <sys/resource.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "kaas/backends/backend.h"
#include "kaas/common/cli.h"
#include "kaas/server_adapter/server/log.h"
#include "kaas/server_adapter/server/server.h"

// Every open connection is a descriptor: the soft limit (often 1024) is raised to the hard one
// so that idle connections cannot use up what new clients and model files need.
void raise_descriptor_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

namespace {

// What the command line sets beyond ServerOptions.
struct CommandLine {
  kaas::server::ServerOptions options;
  std::string control = "none";
  int cpu_threads = 0;
  double drain_seconds = 3;
  int log_verbose = 0;
  double header_timeout = 10, body_timeout = 60, idle_timeout = 120;
};

void add_server_options(kaas::cli::App& app, CommandLine& line) {
  auto& options = line.options;
  app.add_option("--model-repository", options.model_repository, "Triton-layout model repository")
      ->required();
  app.add_option("--host", options.host, "address to listen on");
  app.add_option("--http-port", options.http_port, "REST port (0: any free port)")
      ->check(kaas::cli::range(0, 65535));
  app.add_option("--grpc-port", options.grpc_port, "gRPC port (0: any free port)")
      ->check(kaas::cli::range(0, 65535));
  app.add_option("--metrics-port", options.metrics_port, "Prometheus /metrics port (0: any)")
      ->check(kaas::cli::range(0, 65535));
  app.add_option("--backend", options.backend, "one of: " + kaas::backend_choices());
  app.add_option("--threads", line.cpu_threads,
                 "OpenMP threads per model execution on the openmp backend (0: OpenMP's own, "
                 "OMP_NUM_THREADS or the cores)")
      ->capture_default_str()
      ->check(kaas::cli::range(0, 4096));
  app.add_option("--drain-seconds", line.drain_seconds,
                 "after SIGTERM: seconds to report not ready (grpc.health.v1 NOT_SERVING) "
                 "while still serving, so balancers and clients move away before it stops "
                 "(SIGINT stops without this period)")
      ->capture_default_str()
      ->check(kaas::cli::range(0.0, 3600.0));
  app.add_option("--max-request-bytes", options.max_request_bytes,
                 "largest inference request, its tensors' bytes: gRPC messages (after "
                 "decompression) and compressed REST bodies stop there; a model whose inputs all "
                 "have fixed shapes is limited to its max batch of them")
      ->capture_default_str()
      ->check(kaas::cli::range(size_t(1) << 16, size_t(1) << 31));
  app.add_option("--max-response-bytes", options.max_response_bytes,
                 "largest reply a request may ask for (binary bytes, or REST JSON text at 24 "
                 "characters per element), refused before the model runs")
      ->capture_default_str()
      ->check(kaas::cli::range(size_t(1) << 16, size_t(1) << 40));
  app.add_option("--allow-client-shm", options.client_shm.allowed,
                 "let clients register system and CUDA shared memory regions (true/false). Any "
                 "client that reaches the ports can then read and write any object this user can "
                 "open: for trusted clients on the same node only")
      ->capture_default_str();
  app.add_option("--client-shm-key-prefixes", options.client_shm.key_prefixes,
                 "with --allow-client-shm=true: the system shared memory keys clients may "
                 "register start with one of these (comma-separated; default: any key)")
      ->delimiter(',');
  app.add_option("--log-verbose", line.log_verbose,
                 "1: also log what happens to single requests (drops before execution, why)")
      ->capture_default_str()
      ->check(kaas::cli::range(0, 2));
  app.add_option("--model-control-mode", line.control,
                 "none (load all) or explicit (load/unload RPCs)")
      ->check(kaas::cli::one_of({"none", "explicit"}));
  app.add_option("--tls-cert", options.tls_cert_file, "PEM certificate: gRPC TLS and HTTPS");
  app.add_option("--tls-key", options.tls_key_file, "PEM private key for --tls-cert");
  app.add_option("--grpc-handler-threads", options.grpc_handler_threads,
                 "gRPC handler threads kept between calls (a call holds one until its answer is "
                 "sent; more calls at once get a thread created for the call)")
      ->capture_default_str()
      ->check(kaas::cli::range(2, 4096));
  app.add_option("--grpc-reflection", options.grpc_reflection,
                 "serve gRPC server reflection (true/false; grpcurl): its requests are inflated by "
                 "gRPC whole, without kaas's bound on compressed messages")
      ->capture_default_str();
}

void add_http_options(kaas::cli::App& app, CommandLine& line) {
  auto& http = line.options.http;
  app.add_option("--http-threads", http.worker_threads,
                 "REST worker threads: requests executing at once (connections hold none)")
      ->capture_default_str()
      ->check(kaas::cli::range(1, 1024));
  app.add_option("--http-io-threads", http.io_threads, "REST I/O threads (all connections)")
      ->capture_default_str()
      ->check(kaas::cli::range(1, 64));
  app.add_option("--http-header-timeout", line.header_timeout,
                 "seconds from a request's first byte to its last header line (else 408)")
      ->capture_default_str()
      ->check(kaas::cli::range(0.01, 86400.0));
  app.add_option("--http-body-timeout", line.body_timeout,
                 "seconds a request body (or a reply) may pause (else 400, incomplete body)")
      ->capture_default_str()
      ->check(kaas::cli::range(0.01, 86400.0));
  app.add_option("--http-idle-timeout", line.idle_timeout,
                 "seconds a keep-alive connection may wait for its next request")
      ->capture_default_str()
      ->check(kaas::cli::range(0.01, 86400.0));
  app.add_option("--http-max-header-bytes", http.max_header_bytes,
                 "largest request line + headers (else 431)")
      ->capture_default_str()
      ->check(kaas::cli::range(size_t(1024), size_t(1) << 24));
  app.add_option("--http-max-body-bytes", http.max_body_bytes,
                 "largest request body, as received and after decompression (else 413 / 400)")
      ->capture_default_str()
      ->check(kaas::cli::range(size_t(1024), size_t(1) << 32));
  app.add_option("--http-max-connections", http.max_connections,
                 "open REST connections; more are closed at once")
      ->capture_default_str()
      ->check(kaas::cli::range(1, 1 << 20));
}

void print_models(kaas::server::Server& server) {
  for (const auto& e : server.repository().index(false)) {
    std::printf("kaas-server: model %s version %s %s%s%s\n", e.name.c_str(),
                e.version.empty() ? "-" : e.version.c_str(), e.state.c_str(),
                e.reason.empty() ? "" : ": ", e.reason.c_str());
    if (e.state != "READY") continue;
    for (const std::string& plan_line : server.repository().get(e.name, "")->plan)
      std::printf("kaas-server: model %s: %s\n", e.name.c_str(), plan_line.c_str());
  }
}

// Serves until SIGTERM or SIGINT (blocked in every thread: `signals`), then drains and stops.
int serve(const CommandLine& line, const sigset_t& signals) {
  const auto& options = line.options;
  try {
    // Before any model loads: the planner measures with the count requests will run on, and the
    // scheduler's worker threads (not this one) take it from the process-wide setting.
    for (const kaas::Backend* backend : kaas::compiled_backends())
      backend->set_process_threads(line.cpu_threads);
    kaas::server::Server server(options);
    print_models(server);
    std::printf("kaas-server: listening host=%s http=%d grpc=%d metrics=%d\n", options.host.c_str(),
                server.http_port(), server.grpc_port(), server.metrics_port());
    std::fflush(stdout);
    int received = 0;
    sigwait(&signals, &received);
    const double drain = received == SIGTERM ? line.drain_seconds : 0.0;
    std::printf("kaas-server: signal %d: not ready, serving for %g s more, then stopping\n",
                received, drain);
    std::fflush(stdout);
    // A second signal ends the process at once, whatever the drain is waiting for.
    std::thread([signals] {
      int again = 0;
      sigwait(&signals, &again);
      std::printf("kaas-server: signal %d again: exiting now\n", again);
      std::fflush(stdout);
      std::_Exit(1);
    }).detach();
    server.begin_drain();
    std::this_thread::sleep_for(std::chrono::duration<double>(drain));
    std::printf("kaas-server: drain over: answering what is in flight, then exiting\n");
    std::fflush(stdout);
    server.shutdown();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kaas-server: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  kaas::cli::App app{"kaas-server: KServe v2 / Triton-compatible inference server for kaas models"};
  CommandLine line;
  add_server_options(app, line);
  add_http_options(app, line);
  if (const auto status = app.parse(argc, argv)) return *status;
  auto& options = line.options;
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    std::fprintf(stderr, "kaas-server: --tls-cert and --tls-key go together\n");
    return 2;
  }
  auto milliseconds = [](double seconds) {
    return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  };
  options.http.header_timeout = milliseconds(line.header_timeout);
  options.http.body_timeout = milliseconds(line.body_timeout);
  options.http.idle_timeout = milliseconds(line.idle_timeout);
  raise_descriptor_limit();
  kaas::server::set_log_verbosity(line.log_verbose);
  options.control = line.control == "explicit" ? kaas::server::ModelControl::kExplicit
                                               : kaas::server::ModelControl::kNone;
  // Signals are taken by sigwait below; every thread started from here on inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return serve(line, signals);
}
