#include "kaas/server_adapter/core/tensor_codec.h"

#include <algorithm>
#include <cstring>

#include "kaas/common/error.h"

namespace kaas::server {

namespace {

constexpr int64_t kMaxElements = int64_t(1) << 40;

}  // namespace

DataType parse_datatype(std::string_view datatype, std::string_view tensor) {
  if (const auto d = models::data_type_from_triton(datatype)) return *d;
  std::string message = "tensor '";
  message.append(tensor).append("': datatype '").append(datatype);
  message.append("' is not served by kaas (FP32, INT32, INT64, UINT8, FP16, BF16)");
  throw Error(ErrorCode::kInvalidArgument, message);
}

int64_t checked_elements(std::span<const int64_t> shape, std::string_view tensor) {
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d > 0 && count > kMaxElements / d)) {
      std::string message = "tensor '";
      message.append(tensor).append("': shape ").append(models::shape_string(shape));
      message.append(d < 0 ? " has a negative dimension" : " has too many elements");
      throw Error(ErrorCode::kInvalidArgument, message);
    }
    count *= d;
  }
  return count;
}

HostTensor tensor_from_raw(std::string name, std::string_view datatype, std::vector<int64_t> shape,
                           std::string_view raw) {
  const DataType dtype = parse_datatype(datatype, name);
  const int64_t elements = checked_elements(shape, name);
  const size_t expected = size_t(elements) * models::element_size(dtype);
  if (raw.size() != expected) {
    std::string message = "tensor '";
    message.append(name).append("': ").append(std::to_string(raw.size()));
    message.append(" bytes of data, shape ").append(models::shape_string(shape)).append(" ");
    message.append(datatype).append(" needs ").append(std::to_string(expected));
    throw Error(ErrorCode::kInvalidArgument, message);
  }
  HostTensor t{std::move(name), dtype, std::move(shape), {}};
  t.bytes.resize(expected);
  if (expected > 0) std::memcpy(t.bytes.data(), raw.data(), expected);
  return t;
}

namespace {

[[noreturn]] void no_output(std::string_view model, const std::string& name) {
  std::string message = "model '";
  message.append(model).append("' has no output '").append(name).append("'");
  throw Error(ErrorCode::kInvalidArgument, message);
}

}  // namespace

void check_requested_outputs(const models::ModelSignature& signature,
                             std::span<const std::string> requested, std::string_view model) {
  for (const std::string& name : requested) {
    const bool known = std::any_of(signature.outputs.begin(), signature.outputs.end(),
                                   [&](const auto& spec) { return spec.name == name; });
    if (!known) no_output(model, name);
  }
}

std::vector<const HostTensor*> select_outputs(const std::vector<HostTensor>& outputs,
                                              std::span<const std::string> requested,
                                              std::string_view model) {
  std::vector<const HostTensor*> selected;
  if (requested.empty()) {
    for (const auto& o : outputs) selected.push_back(&o);
    return selected;
  }
  for (const std::string& name : requested) {
    const auto it = std::find_if(outputs.begin(), outputs.end(),
                                 [&](const HostTensor& o) { return o.name == name; });
    if (it == outputs.end()) no_output(model, name);
    selected.push_back(&*it);
  }
  return selected;
}

}  // namespace kaas::server
