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
#include <string_view>
#include <thread>
#include <vector>

#include "grpc_service.grpc.pb.h"
#include "kaas/common/cli.h"

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

struct Options {
  std::string url = "127.0.0.1:8001", model = "emtrkmichelid", input = "main_input";
  int batch = 1, clients = 64, channels = 4;
  double seconds = 5;
  std::string shared_memory = "none";
  std::vector<std::string> outputs = {"em_trk_none_netout/Softmax", "michel_netout/Sigmoid"};
  std::vector<int> output_widths = {3, 1};
};

void add_options(kaas::cli::App& app, Options& o) {
  app.add_option("--url", o.url, "gRPC host:port");
  app.add_option("--model", o.model, "model name");
  app.add_option("--input", o.input, "FP32 input name (shape [batch, 48, 48, 1])");
  app.add_option("--batch", o.batch, "patches per request")->check(kaas::cli::range(1, 4096));
  app.add_option("--clients", o.clients, "concurrent client threads")
      ->check(kaas::cli::range(1, 1024));
  app.add_option("--channels", o.channels, "gRPC channels (connections) shared by the clients")
      ->check(kaas::cli::range(1, 256));
  app.add_option("--seconds", o.seconds, "duration")->check(kaas::cli::range(0.1, 3600.0));
  app.add_option("--shared-memory", o.shared_memory,
                 "none: tensors in the messages; system: input and outputs in POSIX shared memory")
      ->check(kaas::cli::one_of({"none", "system"}));
  app.add_option("--output", o.outputs, "FP32 outputs read from shared memory")->expected(1, -1);
  app.add_option("--output-width", o.output_widths, "values per patch of each --output")
      ->expected(1, -1);
}

using Stubs = std::vector<std::unique_ptr<inference::GRPCInferenceService::Stub>>;

Stubs make_stubs(const Options& o) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(INT_MAX);
  args.SetMaxSendMessageSize(INT_MAX);
  Stubs stubs;
  for (int c = 0; c < o.channels; ++c) {
    args.SetInt("kaas.loadgen.channel", c);  // distinct arguments: distinct connections
    stubs.push_back(inference::GRPCInferenceService::NewStub(
        grpc::CreateCustomChannel(o.url, grpc::InsecureChannelCredentials(), args)));
  }
  return stubs;
}

// The request every client sends (without its shared-memory parameters): `patches` in the
// message unless the input goes through shared memory.
inference::ModelInferRequest make_request(const Options& o, const std::vector<float>& patches,
                                          bool use_shm) {
  inference::ModelInferRequest request;
  request.set_model_name(o.model);
  auto* in = request.add_inputs();
  in->set_name(o.input);
  in->set_datatype("FP32");
  for (int64_t d : {int64_t(o.batch), int64_t(48), int64_t(48), int64_t(1)}) in->add_shape(d);
  if (!use_shm)
    request.add_raw_input_contents(reinterpret_cast<const char*>(patches.data()),
                                   patches.size() * sizeof(float));
  return request;
}

// The failed calls (and regions) of every client, and the first one's message.
struct Errors {
  std::atomic<int64_t> count{0};
  std::string first;
  std::mutex mutex;

  void add(std::string_view message) {
    std::lock_guard lock(mutex);
    if (count++ == 0) first = message;
  }
};

// The end of the run: now plus a duration in (double) seconds.
using StopTime = decltype(std::chrono::steady_clock::now() + std::chrono::duration<double>());

// What every client shares.
struct Load {
  const Options& o;
  Stubs& stubs;
  const inference::ModelInferRequest& request;
  const std::vector<float>& patches;
  bool use_shm;
  size_t input_bytes, output_bytes;
  StopTime stop_at;
  Errors& errors;
};

// Points the input and the --output tensors of `request` at their places in `region`: the
// input first, then each output.
void use_region(inference::ModelInferRequest& request, const std::string& region,
                const Load& load) {
  set_region(*request.mutable_inputs(0)->mutable_parameters(), region, 0, load.input_bytes);
  size_t offset = load.input_bytes;
  for (size_t o = 0; o < load.o.outputs.size(); ++o) {
    auto* out = request.add_outputs();
    out->set_name(load.o.outputs[o]);
    const size_t bytes = size_t(load.o.batch) * size_t(load.o.output_widths[o]) * sizeof(float);
    set_region(*out->mutable_parameters(), region, offset, bytes);
    offset += bytes;
  }
}

// Client `c`: requests back to back until the stop time, each answered one's latency in
// `latencies`.
void run_client(int c, const Load& load, std::vector<double>& latencies) {
  auto& stub = *load.stubs[size_t(c % load.o.channels)];
  std::unique_ptr<ClientRegion> region;
  inference::ModelInferRequest own = load.request;
  if (load.use_shm) {
    try {
      region = std::make_unique<ClientRegion>(stub, c, load.input_bytes, load.output_bytes,
                                              load.patches);
    } catch (const std::exception& e) {
      load.errors.add(e.what());
      return;
    }
    use_region(own, region->name(), load);
  }
  while (std::chrono::steady_clock::now() < load.stop_at) {
    grpc::ClientContext context;
    inference::ModelInferResponse response;
    const auto t0 = std::chrono::steady_clock::now();
    const grpc::Status status = stub.ModelInfer(&context, own, &response);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (status.ok()) {
      latencies.push_back(ms);
    } else {
      load.errors.add(status.error_message());
    }
  }
}

void print_summary(const Options& o, const std::vector<std::vector<double>>& latencies,
                   const Errors& errors) {
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
      o.shared_memory.c_str(), o.model.c_str(), o.batch, o.clients, all.size(),
      static_cast<long long>(errors.count.load()), errors.first.c_str(),
      double(all.size()) * o.batch / o.seconds, double(all.size()) / o.seconds, percentile(0.5),
      percentile(0.99));
}

}  // namespace

int main(int argc, char** argv) {
  kaas::cli::App app{"kaas-loadgen: gRPC ModelInfer load with N concurrent clients"};
  Options o;
  add_options(app, o);
  if (const auto status = app.parse(argc, argv)) return *status;

  Stubs stubs = make_stubs(o);
  std::vector<float> patches(size_t(o.batch) * 48 * 48);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> adc(-5.0f, 15.0f);
  for (auto& v : patches) v = adc(rng);
  const bool use_shm = o.shared_memory == "system";
  const size_t input_bytes = patches.size() * sizeof(float);
  const inference::ModelInferRequest request = make_request(o, patches, use_shm);
  if (use_shm && o.outputs.size() != o.output_widths.size()) {
    std::fprintf(stderr, "--output and --output-width must pair up\n");
    return 2;
  }
  size_t output_bytes = 0;
  for (int w : o.output_widths) output_bytes += size_t(o.batch) * size_t(w) * sizeof(float);

  Errors errors;
  std::vector<std::vector<double>> latencies(static_cast<size_t>(o.clients));
  const auto stop_at = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.seconds);
  const Load load{.o = o,
                  .stubs = stubs,
                  .request = request,
                  .patches = patches,
                  .use_shm = use_shm,
                  .input_bytes = input_bytes,
                  .output_bytes = output_bytes,
                  .stop_at = stop_at,
                  .errors = errors};
  std::vector<std::thread> threads;
  for (int c = 0; c < o.clients; ++c)
    threads.emplace_back([&, c] { run_client(c, load, latencies[size_t(c)]); });
  for (auto& t : threads) t.join();
  print_summary(o, latencies, errors);
  return errors.count.load() == 0 ? 0 : 1;
}
