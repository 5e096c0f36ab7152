// kaas-server: serves a Triton-layout model repository over KServe v2 gRPC and REST, with
// Prometheus metrics. SIGTERM / SIGINT: not ready, stop accepting, answer every accepted
// request, exit 0.

#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>

#include "server_adapter/server.h"

int main(int argc, char** argv) {
  CLI::App app{"kaas-server: KServe v2 / Triton-compatible inference server for kaas models"};
  kaas::server::ServerOptions options;
  std::string control = "none";
  app.add_option("--model-repository", options.model_repository, "Triton-layout model repository")
      ->required();
  app.add_option("--host", options.host, "address to listen on");
  app.add_option("--http-port", options.http_port, "REST port (0: any free port)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--grpc-port", options.grpc_port, "gRPC port (0: any free port)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--metrics-port", options.metrics_port, "Prometheus /metrics port (0: any)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--backend", options.backend, "auto, serial, openmp, gpu_emu, cuda or hip");
  app.add_option("--model-control-mode", control, "none (load all) or explicit (load/unload RPCs)")
      ->check(CLI::IsMember({"none", "explicit"}));
  app.add_option("--tls-cert", options.tls_cert_file, "PEM certificate: gRPC TLS and HTTPS");
  app.add_option("--tls-key", options.tls_key_file, "PEM private key for --tls-cert");
  app.add_option("--http-threads", options.http_threads, "REST worker threads")
      ->check(CLI::Range(1, 1024));
  CLI11_PARSE(app, argc, argv);
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    std::fprintf(stderr, "kaas-server: --tls-cert and --tls-key go together\n");
    return 2;
  }
  options.control = control == "explicit" ? kaas::server::ModelControl::kExplicit
                                          : kaas::server::ModelControl::kNone;
  // Signals are taken by sigwait below; every thread started from here on inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  try {
    kaas::server::Server server(options);
    for (const auto& e : server.repository().index(false)) {
      std::printf("kaas-server: model %s version %s %s%s%s\n", e.name.c_str(),
                  e.version.empty() ? "-" : e.version.c_str(), e.state.c_str(),
                  e.reason.empty() ? "" : ": ", e.reason.c_str());
    }
    std::printf("kaas-server: listening host=%s http=%d grpc=%d metrics=%d\n", options.host.c_str(),
                server.http_port(), server.grpc_port(), server.metrics_port());
    std::fflush(stdout);
    int received = 0;
    sigwait(&signals, &received);
    std::printf("kaas-server: signal %d: draining and stopping\n", received);
    std::fflush(stdout);
    server.shutdown();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kaas-server: %s\n", e.what());
    return 1;
  }
  return 0;
}
