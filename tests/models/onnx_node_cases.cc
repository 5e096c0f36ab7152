#include "tests/models/onnx_node_cases.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>

#include "kaas/common/error.h"
#include "kaas/models/onnx_model.h"
#include "kaas/models/onnx_ops/table.h"

namespace kaas::testing {

namespace fs = std::filesystem;
using models::HostTensor;

fs::path onnx_testdata_root() {
  const char* env = std::getenv("KAAS_ONNX_TESTDATA");
  return env != nullptr && *env != '\0' ? fs::path(env) : fs::path(KAAS_ONNX_TESTDATA_DIR);
}

bool OnnxNodeFamily::matches(const std::string& folder_name, const std::string& name) const {
  // Plain prefix / exact-name matching: std::regex trips g++ 12's -Wmaybe-uninitialized under
  // ASan.
  return folder_name == folder && (prefix ? name.rfind(family, 0) == 0 : name == family);
}

std::vector<OnnxNodeFamily> onnx_node_families() {
  std::vector<OnnxNodeFamily> families;
  for (const auto* def : models::onnx_import::op_table()) {
    for (const auto& t : def->node_tests)
      families.push_back({std::string(t.folder), std::string(t.name), t.prefix});
  }
  return families;
}

std::vector<OnnxNodeCase> onnx_node_cases() {
  const auto families = onnx_node_families();
  std::set<std::string> folders;
  for (const auto& f : families) folders.insert(f.folder);
  std::vector<OnnxNodeCase> cases;
  for (const std::string& folder : folders) {
    const fs::path dir = onnx_testdata_root() / folder;
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (std::any_of(families.begin(), families.end(),
                      [&](const auto& f) { return f.matches(folder, name); }))
        cases.push_back({entry.path(), folder + "/" + name});
    }
  }
  std::sort(cases.begin(), cases.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return cases;
}

namespace {

template <class Message>
Message parse_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  Message message;
  if (!in || !message.ParseFromIstream(&in))
    throw std::runtime_error("cannot parse " + path.string());
  return message;
}

// A FLOAT test tensor as a HostTensor (other dtypes are not kaas inputs: nullopt).
std::optional<HostTensor> host_tensor(const onnx::TensorProto& proto, const std::string& name) {
  if (proto.data_type() != onnx::TensorProto::FLOAT) return std::nullopt;
  std::vector<int64_t> shape(proto.dims().begin(), proto.dims().end());
  std::vector<float> values(size_t(models::element_count(shape)));
  if (!proto.raw_data().empty()) {
    if (proto.raw_data().size() != values.size() * sizeof(float))
      throw std::runtime_error("tensor " + name + ": raw_data size does not match dims");
    std::memcpy(values.data(), proto.raw_data().data(), proto.raw_data().size());
  } else {
    std::copy(proto.float_data().begin(), proto.float_data().end(), values.begin());
  }
  return HostTensor::make<float>(name, models::DataType::kFloat32, shape, values);
}

}  // namespace

OnnxCaseResult run_onnx_node_case(const Backend& backend, const OnnxNodeCase& c) {
  OnnxCaseResult result;
  const auto original = models::read_onnx_file(c.directory / "model.onnx");
  std::vector<fs::path> data_sets;
  for (const auto& entry : fs::directory_iterator(c.directory)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0)
      data_sets.push_back(entry.path());
  }
  std::sort(data_sets.begin(), data_sets.end());
  for (const auto& set : data_sets) {
    // Reshape's target shape is a runtime INT64 input in these tests; exported models carry it
    // as a constant, the only form kaas imports. Bake such inputs into initializers.
    onnx::ModelProto proto = original;
    std::vector<HostTensor> inputs;
    auto* graph_inputs = proto.mutable_graph()->mutable_input();
    std::set<std::string> initializers;
    for (const auto& init : proto.graph().initializer()) initializers.insert(init.name());
    for (int i = 0, file = 0; i < graph_inputs->size(); ++file) {
      const auto& in = graph_inputs->Get(i);
      if (initializers.count(in.name())) {  // old exporters list weights as inputs too
        ++i, --file;
        continue;
      }
      auto tensor = parse_file<onnx::TensorProto>(set / ("input_" + std::to_string(file) + ".pb"));
      if (tensor.data_type() == onnx::TensorProto::INT64 &&
          in.type().tensor_type().elem_type() == onnx::TensorProto::INT64) {
        tensor.set_name(in.name());
        *proto.mutable_graph()->add_initializer() = tensor;
        graph_inputs->DeleteSubrange(i, 1);
        continue;
      }
      if (auto t = host_tensor(tensor, in.name())) inputs.push_back(std::move(*t));
      ++i;
    }
    std::unique_ptr<models::Model> model;
    try {
      model = models::make_onnx_model(proto, backend);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kUnimplemented) throw;
      result.skip_reason = e.what();
      return result;
    }
    const auto outputs = model->run(inputs);
    for (size_t o = 0; o < outputs.size(); ++o) {
      const auto expected_proto =
          parse_file<onnx::TensorProto>(set / ("output_" + std::to_string(o) + ".pb"));
      const auto expected = host_tensor(expected_proto, "expected");
      ++result.outputs_compared;
      const auto got = outputs[o].values<float>();
      if (!expected || expected->shape != outputs[o].shape) {
        ++result.mismatches;
        result.first_mismatch = "output " + outputs[o].name + " has shape " +
                                models::shape_string(outputs[o].shape) + ", expected " +
                                (expected ? models::shape_string(expected->shape) : "non-float");
        continue;
      }
      const auto want = expected->values<float>();
      for (size_t i = 0; i < got.size(); ++i) {
        // numpy.testing.assert_allclose(rtol=1e-3, atol=1e-7), as ONNX's backend test runner
        const bool close =
            std::abs(double(got[i]) - want[i]) <= 1e-7 + 1e-3 * std::abs(double(want[i]));
        if (!close && result.mismatches++ == 0) {
          result.first_mismatch = set.filename().string() + " output " + outputs[o].name + "[" +
                                  std::to_string(i) + "] = " + std::to_string(got[i]) +
                                  ", expected " + std::to_string(want[i]);
        }
      }
    }
  }
  result.ran = true;
  return result;
}

}  // namespace kaas::testing
