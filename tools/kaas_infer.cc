// kaas-infer: runs an ONNX model on a kaas backend with NumPy .npy inputs and writes one .npy per
// output, with timing.
//   kaas-infer --model m.onnx --backend openmp --input main_input=patches.npy --output-dir out

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "kaas/backends/backend.h"
#include "kaas/common/cli.h"
#include "kaas/common/error.h"
#include "kaas/models/model_registry.h"
#include "kaas/models/npy.h"
#include "kaas/models/onnx_model.h"
#include "kaas/server_adapter/core/batch_pipeline.h"

namespace fs = std::filesystem;
using kaas::models::HostTensor;

namespace {

int list_backends() {
  for (const kaas::Backend* b : kaas::compiled_backends()) {
    std::printf("%-8s %s\n", std::string(b->name()).c_str(),
                b->available() ? "available" : ("unavailable: " + b->unavailable_reason()).c_str());
  }
  return 0;
}

struct Args {
  std::string model_path, backend_name = "auto", output_dir, fused = "auto", precision = "fp32",
                          sparse = "auto", plan_file;
  std::vector<std::string> inputs;  // NAME=file.npy
  int64_t batch = 0;
  int repeat = 1;
  int64_t slab_kib = kaas::models::OnnxModelOptions{}.fused_slab_bytes / 1024;
  bool list = false, describe = false;
};

void add_options(kaas::cli::App& app, Args& args) {
  app.add_option("--model", args.model_path, "model.onnx to run");
  app.add_option("--backend", args.backend_name, "one of: " + kaas::backend_choices());
  app.add_option("--input", args.inputs, "NAME=file.npy, once per model input")->take_all();
  app.add_option("--output-dir", args.output_dir, "directory for one <output name>.npy per output");
  app.add_option("--batch", args.batch, "rows per execution (default: all rows at once)")
      ->check(kaas::cli::range(int64_t(1), int64_t(1) << 24));
  app.add_option("--repeat", args.repeat, "run the whole input this many times (timing)")
      ->check(kaas::cli::range(1, 1000000));
  app.add_option("--fused", args.fused, "auto, off or require: the fused conv-dense-heads plan")
      ->check(kaas::cli::one_of({"auto", "off", "require"}));
  app.add_option("--precision", args.precision,
                 "fp32, bf16 or fp16: the heavy layers (the fused plan's conv and first dense "
                 "layer, else every large Conv and Gemm) on 16-bit weights and activations, fp32 "
                 "accumulation")
      ->check(kaas::cli::one_of({"fp32", "bf16", "fp16"}));
  app.add_option("--sparse", args.sparse,
                 "auto, dense or sparse: the fused plan skipping the conv windows that see only "
                 "zeros (auto: per patch, from its occupancy and the model's timings in its plan "
                 "file)")
      ->check(kaas::cli::one_of({"auto", "dense", "sparse"}));
  app.add_option("--fused-slab-kib", args.slab_kib, "fused plan: conv slab budget on CPU backends")
      ->check(kaas::cli::range(int64_t(1), int64_t(1) << 22));
  app.add_option("--plan-file", args.plan_file,
                 "the model's plan file: the decisions that change bits (the sparse plan's "
                 "timings, the 16-bit kernels), made once per model and read by every process "
                 "(default: kaas_plan.tsv beside the model, as kaas-server; off: this machine's "
                 "planner cache only)");
  app.add_flag("--list-backends", args.list, "list the compiled backends and exit");
  app.add_flag("--describe", args.describe, "print the execution plan");
}

std::vector<HostTensor> read_inputs(const std::vector<std::string>& specs) {
  std::vector<HostTensor> inputs;
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0)
      throw kaas::Error(kaas::ErrorCode::kInvalidArgument,
                        "--input '" + spec + "': expected NAME=file.npy");
    inputs.push_back(kaas::models::read_npy(spec.substr(eq + 1), spec.substr(0, eq)));
  }
  return inputs;
}

// The rows to run: the longest input's first dimension.
int64_t total_rows(const std::vector<HostTensor>& inputs) {
  int64_t total = 0;
  for (const auto& in : inputs) {
    if (in.shape.empty())
      throw kaas::Error(kaas::ErrorCode::kInvalidArgument,
                        "input '" + in.name + "' is a scalar; expected a batch dimension");
    total = std::max(total, in.shape[0]);
  }
  return total;
}

kaas::models::OnnxModelOptions model_options(const Args& args, int64_t total) {
  kaas::models::OnnxModelOptions options;
  const fs::path path(args.model_path);
  options.name = path.parent_path().parent_path().filename().string();  // <repo>/<name>/<v>/
  if (options.name.empty()) options.name = path.stem().string();
  options.max_batch = args.batch > 0 ? args.batch : std::max<int64_t>(total, 1);
  options.fused = args.fused == "off"       ? kaas::models::FusedPlan::kOff
                  : args.fused == "require" ? kaas::models::FusedPlan::kRequire
                                            : kaas::models::FusedPlan::kAuto;
  options.fused_slab_bytes = args.slab_kib * 1024;
  options.precision = kaas::models::precision_from_string(args.precision, "--precision");
  options.sparse = kaas::models::sparse_plan_from_string(args.sparse, "--sparse");
  if (args.plan_file != "off")
    options.plan_file = args.plan_file.empty()
                            ? (path.parent_path() / kaas::models::kModelPlanFilename).string()
                            : args.plan_file;
  return options;
}

// All rows once, in executions of at most max_batch rows.
std::vector<HostTensor> run_all_rows(kaas::models::Model& model,
                                     const std::vector<HostTensor>& inputs, int64_t total) {
  const auto& sig = model.signature();
  if (sig.max_batch == 0) return model.run(inputs);
  // Chunks of at most max_batch rows, their outputs joined back (the serving batch pipeline's
  // own join and split).
  std::vector<std::vector<HostTensor>> chunks;
  for (int64_t begin = 0; begin < total; begin += sig.max_batch) {
    const int64_t end = std::min(total, begin + sig.max_batch);
    std::vector<HostTensor> part;
    for (const auto& in : inputs)
      part.push_back(kaas::serving::tensor_rows(in, begin, std::min(end, in.shape[0]) - begin));
    chunks.push_back(model.run(part));
  }
  if (chunks.size() == 1) return std::move(chunks.front());
  std::vector<kaas::serving::BatchPart> parts(chunks.size());
  for (size_t c = 0; c < chunks.size(); ++c) {
    for (const HostTensor& out : chunks[c]) parts[c].inputs.push_back(out.view());
    parts[c].rows = chunks[c].front().shape[0];
  }
  return kaas::serving::join_parts(parts);
}

void write_outputs(const std::vector<HostTensor>& outputs, const std::string& output_dir) {
  fs::create_directories(output_dir);
  for (const auto& out : outputs) {
    std::string file = out.name;
    std::replace(file.begin(), file.end(), '/', '_');  // "em_trk_none_netout/Softmax"
    const fs::path path = fs::path(output_dir) / (file + ".npy");
    kaas::models::write_npy(path, out);
    std::printf("wrote %s %s\n", path.c_str(), kaas::models::shape_string(out.shape).c_str());
  }
}

int run(const Args& args) {
  const kaas::Backend& backend = kaas::find_backend(args.backend_name);
  const auto proto = kaas::models::read_onnx_file(args.model_path);
  // Inputs first: their rows decide the batch the model is planned for.
  const std::vector<HostTensor> inputs = read_inputs(args.inputs);
  const int64_t total = total_rows(inputs);
  auto model = kaas::models::make_onnx_model(proto, backend, model_options(args, total));
  std::printf("model %s on %s (max batch %lld)\n", args.model_path.c_str(),
              std::string(backend.name()).c_str(),
              static_cast<long long>(model->signature().max_batch));
  if (args.describe) {
    for (const auto& line : model->describe()) std::printf("  %s\n", line.c_str());
  }
  std::vector<HostTensor> outputs;
  std::vector<double> seconds;
  for (int r = 0; r < args.repeat; ++r) {
    const auto start = std::chrono::steady_clock::now();
    outputs = run_all_rows(*model, inputs, total);
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  std::printf("%lld rows, %d run(s): median %.3f ms, min %.3f ms, %.1f rows/s\n",
              static_cast<long long>(total), args.repeat, median * 1e3, seconds.front() * 1e3,
              median > 0 ? double(total) / median : 0.0);
  if (!args.output_dir.empty()) write_outputs(outputs, args.output_dir);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  kaas::cli::App app{
      "kaas-infer: run an ONNX model on a kaas backend with .npy inputs and outputs"};
  Args args;
  add_options(app, args);
  if (const auto status = app.parse(argc, argv)) return *status;
  if (args.list) return list_backends();
  if (args.model_path.empty()) {
    std::fprintf(stderr, "kaas-infer: --model is required (see --help)\n");
    return 2;
  }
  try {
    return run(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kaas-infer: %s\n", e.what());
    return 1;
  }
}
