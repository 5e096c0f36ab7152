#include "kaas/server_adapter/server/infer_codec.h"

#include <algorithm>
#include <climits>
#include <cstdlib>

#include "grpc_service.pb.h"
#include "kaas/common/error.h"

namespace kaas::server {

namespace {

using nlohmann::json;

[[noreturn]] void bad_request(const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, message);
}

const json& member(const json& object, const char* key, const std::string& where) {
  const auto it = object.find(key);
  if (it == object.end()) bad_request(where + " has no '" + key + "'");
  return *it;
}

std::string string_member(const json& object, const char* key, const std::string& where) {
  const json& value = member(object, key, where);
  if (!value.is_string()) bad_request(where + ": '" + key + "' must be a string");
  return value.get<std::string>();
}

// Flattens nested JSON arrays (row-major) into `out`; depth is bounded by the parser.
void flatten(const json& data, std::vector<const json*>& out) {
  if (data.is_array()) {
    for (const auto& item : data) flatten(item, out);
  } else {
    out.push_back(&data);
  }
}

void store_value(HostTensor& t, size_t i, const json& v) {
  const std::string& name = t.name;
  if (!v.is_number()) bad_request("input '" + name + "': data holds a non-number");
  switch (t.dtype) {
    case DataType::kFloat32:
      t.values<float>()[i] = v.get<float>();
      return;
    case DataType::kInt32: {
      const bool fits = v.is_number_unsigned() ? v.get<uint64_t>() <= uint64_t(INT32_MAX)
                        : v.is_number_integer()
                            ? v.get<int64_t>() >= INT32_MIN && v.get<int64_t>() <= INT32_MAX
                            : false;
      if (!fits)
        bad_request("input '" + name + "': INT32 data must be integers in " +
                    std::to_string(INT32_MIN) + ".." + std::to_string(INT32_MAX) + ", value " +
                    std::to_string(i) + " is " + dump_json(v));
      t.values<int32_t>()[i] = v.get<int32_t>();
      return;
    }
    case DataType::kInt64:
      if (!v.is_number_integer() ||
          (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)))
        bad_request("input '" + name + "': INT64 data must be integers in the int64 range, value " +
                    std::to_string(i) + " is " + dump_json(v));
      t.values<int64_t>()[i] = v.get<int64_t>();
      return;
    case DataType::kUint8:
      if (!v.is_number_unsigned() || v.get<uint64_t>() > 255)
        bad_request("input '" + name + "': UINT8 data must be integers 0..255");
      t.values<uint8_t>()[i] = v.get<uint8_t>();
      return;
    case DataType::kFloat16:
    case DataType::kBFloat16:
      break;  // refused before any value is read (tensor_from_json)
  }
  bad_request("input '" + name + "': " + std::string(models::triton_name(t.dtype)) +
              " data in JSON is not supported");
}

bool is_half(DataType dtype) {
  return dtype == DataType::kFloat16 || dtype == DataType::kBFloat16;
}

// The shared-memory parameters of one tensor (REST JSON or gRPC parameters).
struct SharedMemoryParameters {
  std::optional<std::string> region;
  std::optional<uint64_t> offset, byte_size;
};

std::optional<SharedMemoryRef> shared_memory_ref(const SharedMemoryParameters& p,
                                                 const std::string& where) {
  if (!p.region && !p.offset && !p.byte_size) return std::nullopt;
  if (!p.region || !p.byte_size)
    bad_request(where +
                ": shared_memory_region and shared_memory_byte_size must be given together "
                "(shared_memory_offset is optional)");
  return SharedMemoryRef{*p.region, p.offset.value_or(0), *p.byte_size};
}

SharedMemoryParameters json_shared_memory(const json& params, const std::string& where) {
  SharedMemoryParameters p;
  if (!params.is_object()) return p;
  if (const auto it = params.find("shared_memory_region"); it != params.end()) {
    if (!it->is_string()) bad_request(where + ": shared_memory_region must be a string");
    p.region = it->get<std::string>();
  }
  auto size = [&](const char* key, std::optional<uint64_t>& out) {
    const auto it = params.find(key);
    if (it == params.end()) return;
    if (!it->is_number_integer() || (!it->is_number_unsigned() && it->get<int64_t>() < 0))
      bad_request(where + ": " + key + " must be a non-negative integer");
    out = it->get<uint64_t>();
  };
  size("shared_memory_offset", p.offset);
  size("shared_memory_byte_size", p.byte_size);
  return p;
}

template <class ParameterMap>
SharedMemoryParameters grpc_shared_memory(const ParameterMap& params, const std::string& where) {
  SharedMemoryParameters p;
  if (const auto it = params.find("shared_memory_region"); it != params.end()) {
    if (it->second.parameter_choice_case() != inference::InferParameter::kStringParam)
      bad_request(where + ": shared_memory_region must be a string_param");
    p.region = it->second.string_param();
  }
  auto size = [&](const char* key, std::optional<uint64_t>& out) {
    const auto it = params.find(key);
    if (it == params.end()) return;
    const auto& v = it->second;
    if (v.parameter_choice_case() == inference::InferParameter::kUint64Param) {
      out = v.uint64_param();
    } else if (v.parameter_choice_case() == inference::InferParameter::kInt64Param &&
               v.int64_param() >= 0) {
      out = uint64_t(v.int64_param());
    } else {
      bad_request(where + ": " + key + " must be a non-negative int64_param or uint64_param");
    }
  };
  size("shared_memory_offset", p.offset);
  size("shared_memory_byte_size", p.byte_size);
  return p;
}

// An output named twice in one request is refused (as Triton since 2026): its reply would
// carry the tensor twice, or two shared memory slices would compete for it.
void refuse_repeated_output(const std::vector<std::string>& requested, const std::string& name) {
  if (std::find(requested.begin(), requested.end(), name) != requested.end())
    bad_request("output '" + escape_for_message(name) + "' is requested more than once");
}

RegionSlice find_slice(const SharedMemoryRegistry* registry, const SharedMemoryRef& ref,
                       const std::string& tensor) {
  if (registry == nullptr)
    throw Error(ErrorCode::kUnimplemented, "tensor '" + escape_for_message(tensor) +
                                               "' names a shared memory region, which is not "
                                               "served here");
  return registry->slice(ref, tensor);
}

// An input read from a shared memory slice, whose size must be the tensor's exactly.
HostTensor tensor_from_slice(const std::string& name, std::string_view datatype,
                             std::vector<int64_t> shape, const RegionSlice& slice) {
  const DataType dtype = parse_datatype(datatype, name);
  const int64_t elements = checked_elements(shape, name);
  const size_t expected = size_t(elements) * models::element_size(dtype);
  if (slice.byte_size() != expected)
    bad_request("input '" + escape_for_message(name) + "': shared_memory_byte_size " +
                std::to_string(slice.byte_size()) + " disagrees with shape " +
                models::shape_string(shape) + " " + std::string(datatype) + ", which needs " +
                std::to_string(expected) + " bytes");
  // As much as a gRPC message may carry: a region is no licence to make the server allocate
  // what the client's sparse object only pretends to hold.
  if (expected > size_t(INT32_MAX))
    bad_request("input '" + escape_for_message(name) + "': " + std::to_string(expected) +
                " bytes from shared memory exceed the " + std::to_string(INT32_MAX) +
                " bytes a tensor may carry");
  HostTensor t{name, dtype, std::move(shape), {}};
  t.bytes.resize(expected);
  if (expected > 0) slice.read(t.bytes.data());
  return t;
}

// Writes an output into the slice its request named; false when it goes in the reply.
bool place_in_shared_memory(const std::optional<RegionSlice>& slice, const HostTensor& t) {
  if (!slice) return false;
  if (t.bytes.size() > slice->byte_size())
    bad_request("output '" + escape_for_message(t.name) + "': " + std::to_string(t.bytes.size()) +
                " bytes (shape " + models::shape_string(t.shape) +
                ") do not fit the shared_memory_byte_size " + std::to_string(slice->byte_size()) +
                " given for region '" + escape_for_message(slice->region_name()) + "'");
  slice->write(t.bytes);
  return true;
}

HostTensor tensor_from_json(const json& in, std::string_view binary, size_t* binary_used,
                            const SharedMemoryRegistry* shared_memory,
                            std::vector<RegionSlice>& slices) {
  if (!in.is_object()) bad_request("each input must be a JSON object");
  const std::string name = string_member(in, "name", "an input");
  const std::string where = "input '" + name + "'";
  const std::string datatype = string_member(in, "datatype", where);
  const json& shape_json = member(in, "shape", where);
  if (!shape_json.is_array()) bad_request(where + ": shape must be an array");
  std::vector<int64_t> shape;
  for (const auto& d : shape_json) {
    if (!d.is_number_integer() || (d.is_number_unsigned() && d.get<uint64_t>() > INT64_MAX))
      bad_request(where + ": shape must hold integers");
    shape.push_back(d.get<int64_t>());
  }
  const DataType dtype = parse_datatype(datatype, name);
  const int64_t elements = checked_elements(shape, name);
  const auto params = in.find("parameters");
  if (params != in.end() && !params->is_object())
    bad_request(where + ": parameters must be an object");
  if (params != in.end()) {
    if (const auto ref = shared_memory_ref(json_shared_memory(*params, where), where)) {
      if (in.contains("data") || params->contains("binary_data_size"))
        bad_request(where + ": names a shared memory region and also carries data");
      slices.push_back(find_slice(shared_memory, *ref, name));
      return tensor_from_slice(name, datatype, shape, slices.back());
    }
  }
  if (params != in.end() && params->contains("binary_data_size")) {
    const json& size_value = (*params)["binary_data_size"];
    if (!size_value.is_number_integer())
      bad_request(where + ": binary_data_size must be an integer");
    const size_t left = binary.size() - *binary_used;
    if (size_value.is_number_unsigned()
            ? size_value.get<uint64_t>() > left
            : size_value.get<int64_t>() < 0 || uint64_t(size_value.get<int64_t>()) > left)
      bad_request(where + ": binary_data_size " + dump_json(size_value) + " exceeds the " +
                  std::to_string(left) + " bytes left in the body (truncated body?)");
    const size_t size = size_value.get<size_t>();
    const auto raw = binary.substr(*binary_used, size);
    *binary_used += size;
    return tensor_from_raw(name, datatype, shape, raw);
  }
  const auto data = in.find("data");
  if (data == in.end()) bad_request(where + " has neither data nor binary_data_size");
  // As Triton: 16-bit floats have no JSON form (the KServe spec leaves it undefined).
  if (is_half(dtype))
    bad_request("receiving " + datatype +
                " data via JSON is not supported. Please use the binary data format for input '" +
                name + "' (parameters.binary_data_size)");
  std::vector<const json*> values;
  flatten(*data, values);
  if (int64_t(values.size()) != elements)
    bad_request(where + ": " + std::to_string(values.size()) + " values in data, shape " +
                models::shape_string(shape) + " needs " + std::to_string(elements));
  HostTensor t{name, dtype, shape, {}};
  t.bytes.resize(size_t(elements) * models::element_size(dtype));
  for (size_t i = 0; i < values.size(); ++i) store_value(t, i, *values[i]);
  return t;
}

bool flag(const json& params, const char* key) {
  if (!params.is_object() || !params.contains(key)) return false;
  const json& value = params[key];
  if (!value.is_boolean()) bad_request(std::string("parameter ") + key + " must be a boolean");
  return value.get<bool>();
}

// As Triton: 16-bit float outputs are sent only as binary data.
std::string json_output_refusal(DataType dtype, const std::string& name) {
  return "sending " + std::string(models::triton_name(dtype)) +
         " data via JSON is not supported. Please use the binary data format for output '" + name +
         "' (parameters.binary_data: true)";
}

json data_json(const HostTensor& t) {
  switch (t.dtype) {
    case DataType::kFloat32: {
      const auto v = t.values<float>();
      return json(std::vector<float>(v.begin(), v.end()));
    }
    case DataType::kInt32: {
      const auto v = t.values<int32_t>();
      return json(std::vector<int32_t>(v.begin(), v.end()));
    }
    case DataType::kInt64: {
      const auto v = t.values<int64_t>();
      return json(std::vector<int64_t>(v.begin(), v.end()));
    }
    case DataType::kUint8: {
      const auto v = t.values<uint8_t>();
      return json(std::vector<uint8_t>(v.begin(), v.end()));
    }
    case DataType::kFloat16:
    case DataType::kBFloat16:
      bad_request(json_output_refusal(t.dtype, t.name));
  }
  return json::array();
}

// A typed-contents gRPC tensor (no raw bytes) as a HostTensor.
HostTensor tensor_from_contents(const inference::ModelInferRequest::InferInputTensor& in) {
  const DataType dtype = parse_datatype(in.datatype(), in.name());
  std::vector<int64_t> shape(in.shape().begin(), in.shape().end());
  const int64_t elements = checked_elements(shape, in.name());
  const auto& c = in.contents();
  HostTensor t{in.name(), dtype, shape, {}};
  auto fill = [&](const auto& values, auto tag) {
    using T = decltype(tag);
    if (values.size() != elements)
      bad_request("tensor '" + escape_for_message(in.name()) +
                  "': " + std::to_string(values.size()) + " values in contents, shape " +
                  models::shape_string(shape) + " needs " + std::to_string(elements));
    t.bytes.resize(size_t(elements) * sizeof(T));
    T* out = reinterpret_cast<T*>(t.bytes.data());
    for (int64_t i = 0; i < elements; ++i) out[i] = static_cast<T>(values[int(i)]);
  };
  switch (dtype) {
    case DataType::kFloat32:
      fill(c.fp32_contents(), float{});
      break;
    case DataType::kInt32:
      fill(c.int_contents(), int32_t{});
      break;
    case DataType::kInt64:
      fill(c.int64_contents(), int64_t{});
      break;
    case DataType::kUint8:
      fill(c.uint_contents(), uint8_t{});
      break;
    case DataType::kFloat16:
    case DataType::kBFloat16:
      bad_request("tensor '" + escape_for_message(in.name()) + "': " + in.datatype() +
                  " has no typed contents field; send it in raw_input_contents");
  }
  return t;
}

}  // namespace

json parse_request_json(std::string_view text) {
  try {
    return json::parse(text, [](int depth, json::parse_event_t event, json&) {
      const bool opens =
          event == json::parse_event_t::object_start || event == json::parse_event_t::array_start;
      if (opens && depth >= kMaxJsonDepth)
        throw Error(ErrorCode::kInvalidArgument,
                    "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
      return true;
    });
  } catch (const json::exception& e) {
    bad_request("malformed JSON request: " + escape_for_message(e.what()));
  }
}

std::string dump_json(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

DecodedInfer decode_rest_infer(std::string_view body, std::optional<std::string_view> header_length,
                               const SharedMemoryRegistry* shared_memory) {
  size_t header_len = body.size();
  if (header_length) {
    const std::string value(*header_length);
    char* end = nullptr;
    const unsigned long long parsed = std::strtoull(value.c_str(), &end, 10);
    const bool digits = !value.empty() && value.find_first_not_of("0123456789") == value.npos;
    if (!digits || *end != '\0' || parsed > body.size())
      bad_request("Inference-Header-Content-Length '" + escape_for_message(value) +
                  "' is not a length within the " + std::to_string(body.size()) + "-byte body");
    if (parsed == 0)
      bad_request("raw binary requests (Inference-Header-Content-Length: 0) are not supported");
    header_len = size_t(parsed);
  }
  const json request = parse_request_json(body.substr(0, header_len));
  if (!request.is_object()) bad_request("the request must be a JSON object");
  const std::string_view binary = body.substr(header_len);
  size_t used = 0;
  DecodedInfer decoded;
  const auto inputs = request.find("inputs");
  if (inputs == request.end() || !inputs->is_array())
    bad_request("the request has no inputs array");
  for (const auto& in : *inputs)
    decoded.request.inputs.push_back(
        tensor_from_json(in, binary, &used, shared_memory, decoded.input_slices));
  if (used != binary.size())
    bad_request(std::to_string(binary.size() - used) +
                " bytes of binary data are not claimed by any input");
  const auto params_it = request.find("parameters");
  const json params = params_it == request.end() ? json::object() : *params_it;
  if (!params.is_object()) bad_request("parameters must be an object");
  if (params.contains("timeout")) {
    const json& timeout = params["timeout"];
    if (!timeout.is_number_integer() ||
        (timeout.is_number_unsigned() && timeout.get<uint64_t>() > INT64_MAX))
      bad_request("parameter timeout must be an integer (microseconds)");
    decoded.request.timeout = std::chrono::microseconds(timeout.get<int64_t>());
  }
  decoded.all_binary = flag(params, "binary_data_output");
  if (const auto outputs = request.find("outputs"); outputs != request.end()) {
    if (!outputs->is_array()) bad_request("outputs must be an array");
    for (const auto& o : *outputs) {
      if (!o.is_object()) bad_request("each requested output must be a JSON object");
      const std::string name = string_member(o, "name", "a requested output");
      refuse_repeated_output(decoded.requested, name);
      decoded.requested.push_back(name);
      const auto op = o.find("parameters");
      const bool has_flag = op != o.end() && op->is_object() && op->contains("binary_data");
      decoded.binary_output.push_back(has_flag ? flag(*op, "binary_data") : decoded.all_binary);
      const std::string where = "output '" + escape_for_message(name) + "'";
      const auto ref =
          op == o.end() ? std::nullopt : shared_memory_ref(json_shared_memory(*op, where), where);
      decoded.output_slices.push_back(ref ? std::optional(find_slice(shared_memory, *ref, name))
                                          : std::nullopt);
    }
  }
  if (const auto id = request.find("id"); id != request.end()) decoded.id = *id;
  return decoded;
}

DecodedInfer decode_grpc_infer(const inference::ModelInferRequest& q,
                               const SharedMemoryRegistry* shared_memory) {
  DecodedInfer decoded;
  std::vector<std::optional<SharedMemoryRef>> refs;
  for (const auto& in : q.inputs()) {
    const std::string where = "tensor '" + escape_for_message(in.name()) + "'";
    refs.push_back(shared_memory_ref(grpc_shared_memory(in.parameters(), where), where));
  }
  // As tritonclient sends them: one raw_input_contents entry per input not in shared memory.
  const auto in_message = std::count(refs.begin(), refs.end(), std::nullopt);
  const bool raw = q.raw_input_contents_size() > 0;
  if (raw && q.raw_input_contents_size() != in_message)
    bad_request("raw_input_contents has " + std::to_string(q.raw_input_contents_size()) +
                " entries for " + std::to_string(in_message) + " inputs not in shared memory");
  int raw_index = 0;
  for (int i = 0; i < q.inputs_size(); ++i) {
    const auto& in = q.inputs(i);
    std::vector<int64_t> shape(in.shape().begin(), in.shape().end());
    if (refs[size_t(i)]) {
      if (in.has_contents())
        bad_request("tensor '" + escape_for_message(in.name()) +
                    "': contents set although it names a shared memory region");
      decoded.input_slices.push_back(find_slice(shared_memory, *refs[size_t(i)], in.name()));
      decoded.request.inputs.push_back(
          tensor_from_slice(in.name(), in.datatype(), shape, decoded.input_slices.back()));
      continue;
    }
    if (raw && in.has_contents())
      bad_request("tensor '" + escape_for_message(in.name()) +
                  "': contents set although raw_input_contents is used");
    decoded.request.inputs.push_back(
        raw ? tensor_from_raw(in.name(), in.datatype(), shape, q.raw_input_contents(raw_index++))
            : tensor_from_contents(in));
  }
  if (const auto it = q.parameters().find("timeout"); it != q.parameters().end()) {
    if (it->second.parameter_choice_case() != inference::InferParameter::kInt64Param)
      bad_request("parameter timeout must be an int64_param (microseconds)");
    decoded.request.timeout = std::chrono::microseconds(it->second.int64_param());
  }
  for (const auto& o : q.outputs()) {
    refuse_repeated_output(decoded.requested, o.name());
    decoded.requested.push_back(o.name());
    const std::string where = "output '" + escape_for_message(o.name()) + "'";
    const auto ref = shared_memory_ref(grpc_shared_memory(o.parameters(), where), where);
    decoded.output_slices.push_back(ref ? std::optional(find_slice(shared_memory, *ref, o.name()))
                                        : std::nullopt);
  }
  return decoded;
}

void check_reply_bytes(const DecodedInfer& decoded, const models::ModelSignature& signature,
                       std::optional<int64_t> rows, size_t limit, const std::string& model,
                       bool rest) {
  constexpr double kJsonCharactersPerElement = 24;  // "-1.2345678901234567e-05,"
  double bytes = 0;
  for (const auto& spec : signature.outputs) {
    bool asked = decoded.requested.empty(), binary = !rest || decoded.all_binary;
    for (size_t i = 0; i < decoded.requested.size(); ++i) {
      if (decoded.requested[i] != spec.name) continue;
      if (decoded.output_slices[i]) break;  // written into a client's region, not the reply
      asked = true;
      binary = !rest || decoded.binary_output[i];
    }
    if (!asked) continue;
    double elements = 1;
    for (size_t d = 0; d < spec.shape.size(); ++d) {
      if (spec.shape[d] >= 0) {
        elements *= double(spec.shape[d]);
      } else if (d == 0 && rows) {
        elements *= double(std::max<int64_t>(*rows, 0));
      } else {
        return;  // known only once it has run
      }
    }
    bytes += binary ? elements * double(models::element_size(spec.dtype))
                    : elements * kJsonCharactersPerElement;
  }
  if (bytes > double(limit))
    throw Error(ErrorCode::kInvalidArgument,
                "model '" + model + "': the requested outputs would be " +
                    std::to_string(int64_t(bytes)) + " bytes" + (rest ? " (JSON as text)" : "") +
                    ", more than this server's limit of " + std::to_string(limit) +
                    " (--max-response-bytes): send fewer rows, ask for fewer outputs" +
                    (rest ? " or for binary data" : ""));
}

void check_json_outputs(const DecodedInfer& decoded, const models::ModelSignature& signature) {
  for (const auto& spec : signature.outputs) {
    if (!is_half(spec.dtype)) continue;
    bool as_json = false;
    if (decoded.requested.empty()) {
      as_json = !decoded.all_binary;
    } else {
      for (size_t i = 0; i < decoded.requested.size(); ++i)
        as_json = as_json || (decoded.requested[i] == spec.name && !decoded.binary_output[i] &&
                              !decoded.output_slices[i]);
    }
    if (as_json) bad_request(json_output_refusal(spec.dtype, spec.name));
  }
}

RestReply encode_rest_infer(const DecodedInfer& decoded, const std::vector<HostTensor>& outputs,
                            const std::string& model, int64_t version) {
  const auto selected = select_outputs(outputs, decoded.requested, model);
  json response{{"model_name", model}, {"model_version", std::to_string(version)}};
  if (!decoded.id.is_null()) response["id"] = decoded.id;
  json outs = json::array();
  std::string blobs;
  for (size_t i = 0; i < selected.size(); ++i) {
    const HostTensor& t = *selected[i];
    json o{{"name", t.name},
           {"datatype", std::string(models::triton_name(t.dtype))},
           {"shape", t.shape}};
    const bool as_binary =
        decoded.requested.empty() ? decoded.all_binary : decoded.binary_output[i];
    if (!decoded.requested.empty() && place_in_shared_memory(decoded.output_slices[i], t)) {
      o["parameters"] = json{{"shared_memory_region", decoded.output_slices[i]->region_name()},
                             {"shared_memory_byte_size", t.bytes.size()}};
    } else if (as_binary) {
      o["parameters"] = json{{"binary_data_size", t.bytes.size()}};
      blobs.append(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
    } else {
      o["data"] = data_json(t);
    }
    outs.push_back(std::move(o));
  }
  response["outputs"] = std::move(outs);
  RestReply reply{dump_json(response), 0};
  reply.header_length = reply.body.size();
  reply.body += blobs;
  return reply;
}

void encode_grpc_infer(const DecodedInfer& decoded, const std::vector<HostTensor>& outputs,
                       const std::string& model, int64_t version, const std::string& id,
                       inference::ModelInferResponse& r) {
  const auto selected = select_outputs(outputs, decoded.requested, model);
  r.set_model_name(model);
  r.set_model_version(std::to_string(version));
  r.set_id(id);
  for (size_t i = 0; i < selected.size(); ++i) {
    const HostTensor& t = *selected[i];
    auto* o = r.add_outputs();
    o->set_name(t.name);
    o->set_datatype(std::string(models::triton_name(t.dtype)));
    for (int64_t d : t.shape) o->add_shape(d);
    if (!decoded.requested.empty() && place_in_shared_memory(decoded.output_slices[i], t)) {
      auto& params = *o->mutable_parameters();
      params["shared_memory_region"].set_string_param(decoded.output_slices[i]->region_name());
      params["shared_memory_byte_size"].set_int64_param(int64_t(t.bytes.size()));
      r.add_raw_output_contents();  // keeps raw_output_contents indexed like outputs
      continue;
    }
    r.add_raw_output_contents(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
  }
}

}  // namespace kaas::server
