#include "kaas/server_adapter/infer_codec.h"

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

HostTensor tensor_from_json(const json& in, std::string_view binary, size_t* binary_used) {
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

DecodedInfer decode_rest_infer(std::string_view body,
                               std::optional<std::string_view> header_length) {
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
    decoded.request.inputs.push_back(tensor_from_json(in, binary, &used));
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
      decoded.requested.push_back(string_member(o, "name", "a requested output"));
      const auto op = o.find("parameters");
      const bool has_flag = op != o.end() && op->is_object() && op->contains("binary_data");
      decoded.binary_output.push_back(has_flag ? flag(*op, "binary_data") : decoded.all_binary);
    }
  }
  if (const auto id = request.find("id"); id != request.end()) decoded.id = *id;
  return decoded;
}

DecodedInfer decode_grpc_infer(const inference::ModelInferRequest& q) {
  DecodedInfer decoded;
  const bool raw = q.raw_input_contents_size() > 0;
  if (raw && q.raw_input_contents_size() != q.inputs_size())
    bad_request("raw_input_contents has " + std::to_string(q.raw_input_contents_size()) +
                " entries for " + std::to_string(q.inputs_size()) + " inputs");
  for (int i = 0; i < q.inputs_size(); ++i) {
    const auto& in = q.inputs(i);
    if (raw && in.has_contents())
      bad_request("tensor '" + escape_for_message(in.name()) +
                  "': contents set although raw_input_contents is used");
    std::vector<int64_t> shape(in.shape().begin(), in.shape().end());
    decoded.request.inputs.push_back(
        raw ? tensor_from_raw(in.name(), in.datatype(), shape, q.raw_input_contents(i))
            : tensor_from_contents(in));
  }
  if (const auto it = q.parameters().find("timeout"); it != q.parameters().end()) {
    if (it->second.parameter_choice_case() != inference::InferParameter::kInt64Param)
      bad_request("parameter timeout must be an int64_param (microseconds)");
    decoded.request.timeout = std::chrono::microseconds(it->second.int64_param());
  }
  for (const auto& o : q.outputs()) decoded.requested.push_back(o.name());
  return decoded;
}

void check_json_outputs(const DecodedInfer& decoded, const models::ModelSignature& signature) {
  for (const auto& spec : signature.outputs) {
    if (!is_half(spec.dtype)) continue;
    bool as_json = false;
    if (decoded.requested.empty()) {
      as_json = !decoded.all_binary;
    } else {
      for (size_t i = 0; i < decoded.requested.size(); ++i)
        as_json = as_json || (decoded.requested[i] == spec.name && !decoded.binary_output[i]);
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
    if (as_binary) {
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

}  // namespace kaas::server
