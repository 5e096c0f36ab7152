// kaas-loadgen: a C++ gRPC load generator for kaas-server (or Triton): N client threads send
// ModelInfer requests of B random patches back to back for a duration and report patches/s and
// latency percentiles. The Python clients of bench/server_load.py spend more CPU per request
// than the server does at batch 1, so this one measures what the server sustains.
//   kaas-loadgen --url 127.0.0.1:8001 --model emtrkmichelid --batch 1 --clients 64 --seconds 5

#include <grpcpp/grpcpp.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "grpc_service.grpc.pb.h"

int main(int argc, char** argv) {
  CLI::App app{"kaas-loadgen: gRPC ModelInfer load with N concurrent clients"};
  std::string url = "127.0.0.1:8001", model = "emtrkmichelid", input = "main_input";
  int batch = 1, clients = 64, channels = 4;
  double seconds = 5;
  app.add_option("--url", url, "gRPC host:port");
  app.add_option("--model", model, "model name");
  app.add_option("--input", input, "FP32 input name (shape [batch, 48, 48, 1])");
  app.add_option("--batch", batch, "patches per request")->check(CLI::Range(1, 4096));
  app.add_option("--clients", clients, "concurrent client threads")->check(CLI::Range(1, 1024));
  app.add_option("--channels", channels, "gRPC channels (connections) shared by the clients")
      ->check(CLI::Range(1, 256));
  app.add_option("--seconds", seconds, "duration")->check(CLI::Range(0.1, 3600.0));
  CLI11_PARSE(app, argc, argv);

  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(INT_MAX);
  args.SetMaxSendMessageSize(INT_MAX);
  std::vector<std::unique_ptr<inference::GRPCInferenceService::Stub>> stubs;
  for (int c = 0; c < channels; ++c) {
    args.SetInt("kaas.loadgen.channel", c);  // distinct arguments: distinct connections
    stubs.push_back(inference::GRPCInferenceService::NewStub(
        grpc::CreateCustomChannel(url, grpc::InsecureChannelCredentials(), args)));
  }
  inference::ModelInferRequest request;
  request.set_model_name(model);
  auto* in = request.add_inputs();
  in->set_name(input);
  in->set_datatype("FP32");
  for (int64_t d : {int64_t(batch), int64_t(48), int64_t(48), int64_t(1)}) in->add_shape(d);
  std::vector<float> patches(size_t(batch) * 48 * 48);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> adc(-5.0f, 15.0f);
  for (auto& v : patches) v = adc(rng);
  request.add_raw_input_contents(reinterpret_cast<const char*>(patches.data()),
                                 patches.size() * sizeof(float));

  std::atomic<int64_t> errors{0};
  std::vector<std::vector<double>> latencies(static_cast<size_t>(clients));
  const auto stop_at = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::vector<std::thread> threads;
  std::string first_error;
  std::mutex error_mutex;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      auto& stub = *stubs[size_t(c % channels)];
      while (std::chrono::steady_clock::now() < stop_at) {
        grpc::ClientContext context;
        inference::ModelInferResponse response;
        const auto t0 = std::chrono::steady_clock::now();
        const grpc::Status status = stub.ModelInfer(&context, request, &response);
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count();
        if (status.ok()) {
          latencies[size_t(c)].push_back(ms);
        } else if (errors++ == 0) {
          std::lock_guard lock(error_mutex);
          first_error = status.error_message();
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  std::vector<double> all;
  for (const auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  auto percentile = [&](double p) {
    return all.empty() ? 0.0 : all[std::min(all.size() - 1, size_t(p * double(all.size())))];
  };
  std::printf(
      "{\"protocol\": \"grpc-c++\", \"model\": \"%s\", \"batch\": %d, \"concurrency\": %d, "
      "\"requests\": %zu, \"errors\": %lld, \"first_error\": \"%s\", \"patches_per_s\": %.1f, "
      "\"requests_per_s\": %.1f, \"p50_ms\": %.3f, \"p99_ms\": %.3f}\n",
      model.c_str(), batch, clients, all.size(), static_cast<long long>(errors.load()),
      first_error.c_str(), double(all.size()) * batch / seconds, double(all.size()) / seconds,
      percentile(0.5), percentile(0.99));
  return errors.load() == 0 ? 0 : 1;
}
