// kaas-loadgen: a C++ gRPC load generator for kaas-server (or Triton): N client threads send
// ModelInfer requests of B random patches back to back for a duration and report patches/s and
// latency percentiles. The Python clients of bench/server_load.py spend more CPU per request
// than the server does at batch 1, so this one measures what the server sustains.
//   kaas-loadgen --url 127.0.0.1:8001 --model emtrkmichelid --batch 1 --clients 64 --seconds 5
// With --shared-memory system each client puts its input and outputs in its own POSIX shared
// memory regions, registered once (as perf_analyzer and SonicTriton do): same-node serving.

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "grpc_service.grpc.pb.h"

namespace {

// One client's shared memory: a POSIX object holding its input then its outputs, registered
// with the server as one region; unregistered and removed when the client is done.
class ClientRegion {
 public:
  ClientRegion(inference::GRPCInferenceService::Stub& stub, int client, size_t input_bytes,
               size_t output_bytes, const std::vector<float>& input)
      : stub_(stub),
        name_("kaas_loadgen_" + std::to_string(getpid()) + "_" + std::to_string(client)),
        key_("/" + name_),
        bytes_(input_bytes + output_bytes) {
    const int fd = shm_open(key_.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, off_t(bytes_)) != 0) throw std::runtime_error("shm " + key_);
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) throw std::runtime_error("mmap " + key_);
    std::memcpy(p, input.data(), input_bytes);
    munmap(p, bytes_);
    grpc::ClientContext context;
    inference::SystemSharedMemoryRegisterRequest request;
    request.set_name(name_);
    request.set_key(key_);
    request.set_byte_size(bytes_);
    inference::SystemSharedMemoryRegisterResponse response;
    const auto status = stub_.SystemSharedMemoryRegister(&context, request, &response);
    if (!status.ok()) {
      shm_unlink(key_.c_str());
      throw std::runtime_error("register " + key_ + ": " + status.error_message());
    }
  }
  ~ClientRegion() {
    grpc::ClientContext context;
    inference::SystemSharedMemoryUnregisterRequest request;
    request.set_name(name_);
    inference::SystemSharedMemoryUnregisterResponse response;
    (void)stub_.SystemSharedMemoryUnregister(&context, request, &response);
    shm_unlink(key_.c_str());
  }
  const std::string& name() const { return name_; }

 private:
  inference::GRPCInferenceService::Stub& stub_;
  std::string name_, key_;
  size_t bytes_;
};

void set_region(google::protobuf::Map<std::string, inference::InferParameter>& params,
                const std::string& region, size_t offset, size_t bytes) {
  params["shared_memory_region"].set_string_param(region);
  params["shared_memory_offset"].set_int64_param(int64_t(offset));
  params["shared_memory_byte_size"].set_int64_param(int64_t(bytes));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kaas-loadgen: gRPC ModelInfer load with N concurrent clients"};
  std::string url = "127.0.0.1:8001", model = "emtrkmichelid", input = "main_input";
  int batch = 1, clients = 64, channels = 4;
  double seconds = 5;
  std::string shared_memory = "none";
  std::vector<std::string> outputs = {"em_trk_none_netout/Softmax", "michel_netout/Sigmoid"};
  std::vector<int> output_widths = {3, 1};
  app.add_option("--url", url, "gRPC host:port");
  app.add_option("--model", model, "model name");
  app.add_option("--input", input, "FP32 input name (shape [batch, 48, 48, 1])");
  app.add_option("--batch", batch, "patches per request")->check(CLI::Range(1, 4096));
  app.add_option("--clients", clients, "concurrent client threads")->check(CLI::Range(1, 1024));
  app.add_option("--channels", channels, "gRPC channels (connections) shared by the clients")
      ->check(CLI::Range(1, 256));
  app.add_option("--seconds", seconds, "duration")->check(CLI::Range(0.1, 3600.0));
  app.add_option("--shared-memory", shared_memory,
                 "none: tensors in the messages; system: input and outputs in POSIX shared memory")
      ->check(CLI::IsMember({"none", "system"}));
  app.add_option("--output", outputs, "FP32 outputs read from shared memory")->expected(1, -1);
  app.add_option("--output-width", output_widths, "values per patch of each --output")
      ->expected(1, -1);
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
  const size_t input_bytes = patches.size() * sizeof(float);
  const bool use_shm = shared_memory == "system";
  if (!use_shm)
    request.add_raw_input_contents(reinterpret_cast<const char*>(patches.data()), input_bytes);
  if (use_shm && outputs.size() != output_widths.size()) {
    std::fprintf(stderr, "--output and --output-width must pair up\n");
    return 2;
  }
  size_t output_bytes = 0;
  for (int w : output_widths) output_bytes += size_t(batch) * size_t(w) * sizeof(float);

  std::atomic<int64_t> errors{0};
  std::vector<std::vector<double>> latencies(static_cast<size_t>(clients));
  const auto stop_at = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::vector<std::thread> threads;
  std::string first_error;
  std::mutex error_mutex;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      auto& stub = *stubs[size_t(c % channels)];
      std::unique_ptr<ClientRegion> region;
      inference::ModelInferRequest own = request;
      if (use_shm) {
        try {
          region = std::make_unique<ClientRegion>(stub, c, input_bytes, output_bytes, patches);
        } catch (const std::exception& e) {
          std::lock_guard lock(error_mutex);
          if (errors++ == 0) first_error = e.what();
          return;
        }
        set_region(*own.mutable_inputs(0)->mutable_parameters(), region->name(), 0, input_bytes);
        size_t offset = input_bytes;
        for (size_t o = 0; o < outputs.size(); ++o) {
          auto* out = own.add_outputs();
          out->set_name(outputs[o]);
          const size_t bytes = size_t(batch) * size_t(output_widths[o]) * sizeof(float);
          set_region(*out->mutable_parameters(), region->name(), offset, bytes);
          offset += bytes;
        }
      }
      while (std::chrono::steady_clock::now() < stop_at) {
        grpc::ClientContext context;
        inference::ModelInferResponse response;
        const auto t0 = std::chrono::steady_clock::now();
        const grpc::Status status = stub.ModelInfer(&context, own, &response);
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count();
        if (status.ok()) {
          latencies[size_t(c)].push_back(ms);
        } else {
          std::lock_guard lock(error_mutex);
          if (errors++ == 0) first_error = status.error_message();
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
      "{\"protocol\": \"grpc-c++\", \"shared_memory\": \"%s\", \"model\": \"%s\", \"batch\": %d, "
      "\"concurrency\": %d, "
      "\"requests\": %zu, \"errors\": %lld, \"first_error\": \"%s\", \"patches_per_s\": %.1f, "
      "\"requests_per_s\": %.1f, \"p50_ms\": %.3f, \"p99_ms\": %.3f}\n",
      shared_memory.c_str(), model.c_str(), batch, clients, all.size(),
      static_cast<long long>(errors.load()), first_error.c_str(),
      double(all.size()) * batch / seconds, double(all.size()) / seconds, percentile(0.5),
      percentile(0.99));
  return errors.load() == 0 ? 0 : 1;
}
