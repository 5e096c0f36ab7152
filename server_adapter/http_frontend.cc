#include "server_adapter/http_frontend.h"

#include <google/protobuf/util/json_util.h>
#include <httplib.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

#include "backends/error.h"
#include "server_adapter/tensor_codec.h"

namespace kaas::server {

namespace {

using nlohmann::json;

// Deeper JSON than any KServe request needs is refused before it is copied or walked (the
// copies, walks and dumps of a JSON value recurse).
constexpr int kMaxJsonDepth = 32;

json parse_json(std::string_view text) {
  return json::parse(text, [](int depth, json::parse_event_t event, json&) {
    if (event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) {
      if (depth >= kMaxJsonDepth)
        throw Error(ErrorCode::kInvalidArgument,
                    "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    }
    return true;
  });
}

// Invalid UTF-8 from a request (a name, a path) is replaced, never thrown on.
std::string dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

void reply_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(dump(body), "application/json");
}

void reply_error(httplib::Response& res, const std::exception& e) {
  const auto* k = dynamic_cast<const Error*>(&e);
  reply_json(res, k ? http_status_code(k->code()) : 500, json{{"error", e.what()}});
}

template <class F>
void guarded(httplib::Response& res, F&& f) {
  try {
    f();
  } catch (const json::exception& e) {
    reply_json(res, 400,
               json{{"error", "malformed JSON request: " + escape_for_message(e.what())}});
  } catch (const std::exception& e) {
    reply_error(res, e);
  }
}

[[noreturn]] void bad_request(const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, message);
}

json tensor_metadata(const models::TensorSpec& spec) {
  return json{{"name", spec.name},
              {"datatype", std::string(models::triton_name(spec.dtype))},
              {"shape", spec.shape}};
}

json duration_json(const Duration& d) {
  return json{{"count", d.count}, {"ns", d.ns}};
}

json statistics_json(const ServedModel& m) {
  const StatsSnapshot s = m.stats->snapshot();
  json batches = json::array();
  for (const auto& [size, b] : s.batches) {
    batches.push_back({{"batch_size", size},
                       {"compute_input", duration_json(b.compute_input)},
                       {"compute_infer", duration_json(b.compute_infer)},
                       {"compute_output", duration_json(b.compute_output)}});
  }
  return json{{"name", m.name},
              {"version", std::to_string(m.version)},
              {"last_inference", s.last_inference_ms},
              {"inference_count", s.inference_count},
              {"execution_count", s.execution_count},
              {"inference_stats",
               {{"success", duration_json(s.success)},
                {"fail", duration_json(s.fail)},
                {"queue", duration_json(s.queue)},
                {"compute_input", duration_json(s.compute_input)},
                {"compute_infer", duration_json(s.compute_infer)},
                {"compute_output", duration_json(s.compute_output)},
                {"cache_hit", duration_json({})},
                {"cache_miss", duration_json({})}}},
              {"batch_stats", batches}};
}

// Flattens nested JSON arrays (row-major) into `out`.
void flatten(const json& data, std::vector<const json*>& out) {
  if (data.is_array()) {
    for (const auto& item : data) flatten(item, out);
  } else {
    out.push_back(&data);
  }
}

HostTensor tensor_from_json(const json& in, std::string_view* binary, size_t* binary_used) {
  if (!in.is_object()) bad_request("each input must be a JSON object");
  const std::string name = in.at("name").get<std::string>();
  const std::string datatype = in.at("datatype").get<std::string>();
  std::vector<int64_t> shape;
  for (const auto& d : in.at("shape")) {
    if (!d.is_number_integer()) bad_request("input '" + name + "': shape must hold integers");
    shape.push_back(d.get<int64_t>());
  }
  const DataType dtype = parse_datatype(datatype, name);
  const int64_t elements = checked_elements(shape, name);
  if (in.contains("parameters") && in["parameters"].contains("binary_data_size")) {
    const json& size_value = in["parameters"]["binary_data_size"];
    if (!size_value.is_number_integer())
      bad_request("input '" + name + "': binary_data_size must be an integer");
    const auto size = size_value.get<int64_t>();
    if (size < 0 || size_t(size) > binary->size() - *binary_used)
      bad_request("input '" + name + "': binary_data_size " + std::to_string(size) +
                  " exceeds the " + std::to_string(binary->size() - *binary_used) +
                  " bytes left in the body (truncated body?)");
    const auto raw = binary->substr(*binary_used, size_t(size));
    *binary_used += size_t(size);
    return tensor_from_raw(name, datatype, shape, raw);
  }
  if (!in.contains("data"))
    bad_request("input '" + name + "' has neither data nor binary_data_size");
  std::vector<const json*> values;
  flatten(in["data"], values);
  if (int64_t(values.size()) != elements)
    bad_request("input '" + name + "': " + std::to_string(values.size()) +
                " values in data, shape " + models::shape_string(shape) + " needs " +
                std::to_string(elements));
  HostTensor t{name, dtype, shape, {}};
  t.bytes.resize(size_t(elements) * models::element_size(dtype));
  for (size_t i = 0; i < values.size(); ++i) {
    const json& v = *values[i];
    if (!v.is_number()) bad_request("input '" + name + "': data holds a non-number");
    switch (dtype) {
      case DataType::kFloat32:
        t.values<float>()[i] = v.get<float>();
        break;
      case DataType::kInt32: {
        const bool fits = v.is_number_unsigned() ? v.get<uint64_t>() <= uint64_t(INT32_MAX)
                          : v.is_number_integer()
                              ? v.get<int64_t>() >= INT32_MIN && v.get<int64_t>() <= INT32_MAX
                              : false;
        if (!fits)
          bad_request("input '" + name + "': INT32 data must be integers in " +
                      std::to_string(INT32_MIN) + ".." + std::to_string(INT32_MAX) + ", value " +
                      std::to_string(i) + " is " + dump(v));
        t.values<int32_t>()[i] = v.get<int32_t>();
        break;
      }
      case DataType::kInt64:
        if (!v.is_number_integer() ||
            (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)))
          bad_request("input '" + name +
                      "': INT64 data must be integers in the int64 range, value " +
                      std::to_string(i) + " is " + dump(v));
        t.values<int64_t>()[i] = v.get<int64_t>();
        break;
      case DataType::kUint8:
        if (!v.is_number_unsigned() || v.get<uint64_t>() > 255)
          bad_request("input '" + name + "': UINT8 data must be integers 0..255");
        t.values<uint8_t>()[i] = v.get<uint8_t>();
        break;
    }
  }
  return t;
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
  }
  return json::array();
}

bool flag(const json& params, const char* key) {
  return params.is_object() && params.contains(key) && params[key].is_boolean() &&
         params[key].get<bool>();
}

}  // namespace

struct HttpFrontend::Impl {
  ServerState& state;
  HttpOptions options;
  std::unique_ptr<httplib::Server> server;
  std::thread thread;
  int port = 0;

  Impl(ServerState& s, const HttpOptions& o) : state(s), options(o) {}

  std::shared_ptr<ServedModel> model_of(const httplib::Request& req) {
    return state.repository->get(req.matches[1],
                                 req.matches.size() > 2 ? std::string(req.matches[2]) : "");
  }

  void infer(const httplib::Request& req, httplib::Response& res, const std::string& body) {
    if (!state.ready.load())
      throw Error(ErrorCode::kUnavailable, "the server is not ready (shutting down)");
    const auto model = model_of(req);
    size_t header_len = body.size();
    if (req.has_header("Inference-Header-Content-Length")) {
      const std::string value = req.get_header_value("Inference-Header-Content-Length");
      char* end = nullptr;
      const unsigned long long parsed = std::strtoull(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || parsed > body.size())
        bad_request("Inference-Header-Content-Length '" + escape_for_message(value) +
                    "' is not a length within the " + std::to_string(body.size()) + "-byte body");
      if (parsed == 0)
        bad_request("raw binary requests (Inference-Header-Content-Length: 0) are not supported");
      header_len = size_t(parsed);
    }
    const json request = parse_json(std::string_view(body).substr(0, header_len));
    if (!request.is_object()) bad_request("the request must be a JSON object");
    std::string_view binary = std::string_view(body).substr(header_len);
    size_t used = 0;
    InferRequest infer_request;
    if (!request.contains("inputs") || !request["inputs"].is_array())
      bad_request("the request has no inputs array");
    for (const auto& in : request["inputs"])
      infer_request.inputs.push_back(tensor_from_json(in, &binary, &used));
    if (used != binary.size())
      bad_request(std::to_string(binary.size() - used) +
                  " bytes of binary data are not claimed by any input");
    const json params = request.value("parameters", json::object());
    if (params.contains("timeout")) {
      if (!params["timeout"].is_number_integer())
        bad_request("parameter timeout must be an integer (microseconds)");
      infer_request.timeout = std::chrono::microseconds(params["timeout"].get<int64_t>());
    }
    std::vector<std::string> requested;
    std::vector<bool> binary_out;
    const bool all_binary = flag(params, "binary_data_output");
    if (request.contains("outputs")) {
      for (const auto& o : request["outputs"]) {
        requested.push_back(o.at("name").get<std::string>());
        const json op = o.value("parameters", json::object());
        binary_out.push_back(op.contains("binary_data") ? flag(op, "binary_data") : all_binary);
      }
    }
    check_requested_outputs(model->scheduler->signature(), requested, model->name);
    const auto outputs = model->scheduler->submit(std::move(infer_request)).get();
    const auto selected = select_outputs(outputs, requested, model->name);
    json response{{"model_name", model->name}, {"model_version", std::to_string(model->version)}};
    if (request.contains("id")) response["id"] = request["id"];
    json outs = json::array();
    std::string blobs;
    for (size_t i = 0; i < selected.size(); ++i) {
      const HostTensor& t = *selected[i];
      json o{{"name", t.name},
             {"datatype", std::string(models::triton_name(t.dtype))},
             {"shape", t.shape}};
      const bool as_binary = requested.empty() ? all_binary : binary_out[i];
      if (as_binary) {
        o["parameters"] = json{{"binary_data_size", t.bytes.size()}};
        blobs.append(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
      } else {
        o["data"] = data_json(t);
      }
      outs.push_back(std::move(o));
    }
    response["outputs"] = std::move(outs);
    const std::string header = dump(response);
    res.status = 200;
    if (blobs.empty()) {
      res.set_content(header, "application/json");
    } else {
      res.set_header("Inference-Header-Content-Length", std::to_string(header.size()));
      res.set_content(header + blobs, "application/octet-stream");
    }
  }

  void statistics(const httplib::Request& req, httplib::Response& res) {
    guarded(res, [&] {
      json all = json::array();
      if (req.matches.size() > 1 && req.matches[1].length() > 0) {
        all.push_back(statistics_json(*model_of(req)));
      } else {
        for (const auto& m : state.repository->ready_models()) all.push_back(statistics_json(*m));
      }
      reply_json(res, 200, json{{"model_stats", all}});
    });
  }

  void routes() {
    httplib::Server& s = *server;
    // Before routing: encodings kaas cannot decode are refused (they would be read as identity),
    // and Range is ignored on anything but GET, as RFC 9110 requires (cpp-httplib would slice
    // or multiply an inference result). The request object is the library's own mutable one.
    s.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
      if (req.method != "GET") const_cast<httplib::Request&>(req).ranges.clear();
      if (req.has_header("Content-Encoding")) {
        const std::string encoding = req.get_header_value("Content-Encoding");
        if (encoding != "gzip" && encoding != "deflate" && encoding != "identity") {
          reply_json(res, 415,
                     json{{"error", "Content-Encoding '" + escape_for_message(encoding) +
                                        "' is not supported (gzip, deflate, identity)"}});
          return httplib::Server::HandlerResponse::Handled;
        }
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
    s.Get("/v2/health/live", [](const httplib::Request&, httplib::Response& res) {
      reply_json(res, 200, json{{"live", true}});
    });
    s.Get("/v2/health/ready", [this](const httplib::Request&, httplib::Response& res) {
      const bool ready = state.ready.load();
      reply_json(res, ready ? 200 : 503, json{{"ready", ready}});
    });
    s.Get("/v2/?", [](const httplib::Request&, httplib::Response& res) {
      reply_json(res, 200,
                 json{{"name", kServerName},
                      {"version", kServerVersion},
                      {"extensions", server_extensions()}});
    });
    const std::string model = R"(/v2/models/([^/]+)(?:/versions/([0-9]+))?)";
    // Before the model routes, which would read "stats" as a model name.
    s.Get("/v2/models/stats",
          [this](const httplib::Request& req, httplib::Response& res) { statistics(req, res); });
    s.Get(model + "/?", [this](const httplib::Request& req, httplib::Response& res) {
      guarded(res, [&] {
        const auto m = model_of(req);
        json inputs = json::array(), outputs = json::array();
        for (const auto& spec : m->scheduler->signature().inputs)
          inputs.push_back(tensor_metadata(spec));
        for (const auto& spec : m->scheduler->signature().outputs)
          outputs.push_back(tensor_metadata(spec));
        reply_json(res, 200,
                   json{{"name", m->name},
                        {"versions", {std::to_string(m->version)}},
                        {"platform", model_platform(*m)},
                        {"inputs", inputs},
                        {"outputs", outputs}});
      });
    });
    s.Get(model + "/ready", [this](const httplib::Request& req, httplib::Response& res) {
      guarded(res, [&] {
        bool ready = state.ready.load();
        try {
          model_of(req);
        } catch (const Error& e) {
          if (e.code() != ErrorCode::kUnavailable) throw;
          ready = false;
        }
        reply_json(res, ready ? 200 : 503,
                   json{{"name", std::string(req.matches[1])}, {"ready", ready}});
      });
    });
    s.Get(model + "/config", [this](const httplib::Request& req, httplib::Response& res) {
      guarded(res, [&] {
        std::string text;
        google::protobuf::util::JsonPrintOptions print;
        print.preserve_proto_field_names = true;
        (void)google::protobuf::util::MessageToJsonString(model_of(req)->config, &text, print);
        res.status = 200;
        res.set_content(text, "application/json");
      });
    });
    s.Get(model + "/stats",
          [this](const httplib::Request& req, httplib::Response& res) { statistics(req, res); });
    s.Post(model + "/infer", [this](const httplib::Request& req, httplib::Response& res,
                                    const httplib::ContentReader& reader) {
      std::string body;
      bool too_large = false;
      const bool complete = reader([&](const char* data, size_t length) {
        if (body.size() + length > options.max_body_bytes) {
          too_large = true;
          return false;
        }
        body.append(data, length);
        return true;
      });
      if (too_large) {
        reply_json(
            res, 400,
            json{{"error", "request body larger than " + std::to_string(options.max_body_bytes) +
                               " bytes (after decompression)"}});
        return;
      }
      if (!complete) {  // the connection ended or timed out before the whole body arrived
        reply_json(res, 400,
                   json{{"error", "incomplete request body (" + std::to_string(body.size()) +
                                      " bytes read; shorter than Content-Length, a chunked body "
                                      "without its last chunk, or a broken compressed body)"}});
        return;
      }
      guarded(res, [&] { infer(req, res, body); });
    });
    s.Post("/v2/repository/index", [this](const httplib::Request& req, httplib::Response& res) {
      guarded(res, [&] {
        bool ready_only = false;
        if (!req.body.empty()) ready_only = parse_json(req.body).value("ready", false);
        json list = json::array();
        for (const auto& e : state.repository->index(ready_only)) {
          json entry{{"name", e.name}, {"state", e.state}, {"reason", e.reason}};
          if (!e.version.empty()) entry["version"] = e.version;
          list.push_back(std::move(entry));
        }
        reply_json(res, 200, list);
      });
    });
    s.Post(R"(/v2/repository/models/([^/]+)/(load|unload))",
           [this](const httplib::Request& req, httplib::Response& res) {
             guarded(res, [&] {
               if (req.matches[2] == "load") {
                 state.repository->load(req.matches[1]);
               } else {
                 state.repository->unload(req.matches[1]);
               }
               reply_json(res, 200, json::object());
             });
           });
    s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;
      const std::string what = res.status == 404   ? "no such endpoint"
                               : res.status == 413 ? "request body too large"
                                                   : "HTTP error " + std::to_string(res.status);
      reply_json(res, res.status,
                 json{{"error", what + ": " + escape_for_message(req.method) + " " +
                                    escape_for_message(req.path)}});
    });
  }
};

HttpFrontend::HttpFrontend(ServerState& state, const HttpOptions& options)
    : impl_(std::make_unique<Impl>(state, options)) {
  if (!options.tls_cert_file.empty() || !options.tls_key_file.empty()) {
    impl_->server = std::make_unique<httplib::SSLServer>(options.tls_cert_file.c_str(),
                                                         options.tls_key_file.c_str());
  } else {
    impl_->server = std::make_unique<httplib::Server>();
  }
  if (!impl_->server->is_valid())
    throw Error(ErrorCode::kInvalidArgument, "HTTP: cannot use the TLS certificate / key");
  impl_->server->new_task_queue = [threads = options.threads] {
    return new httplib::ThreadPool(size_t(threads));
  };
  impl_->server->set_payload_max_length(options.max_body_bytes);
  impl_->server->set_tcp_nodelay(true);  // small responses must not wait for a delayed ACK
  impl_->routes();
  impl_->port = options.port == 0
                    ? impl_->server->bind_to_any_port(options.host)
                    : (impl_->server->bind_to_port(options.host, options.port) ? options.port : -1);
  if (impl_->port <= 0)
    throw Error(ErrorCode::kUnavailable,
                "HTTP: cannot listen on " + options.host + ":" + std::to_string(options.port));
  impl_->thread = std::thread([this] { impl_->server->listen_after_bind(); });
}

HttpFrontend::~HttpFrontend() {
  shutdown();
}

int HttpFrontend::port() const {
  return impl_->port;
}

void HttpFrontend::shutdown() {
  if (impl_->thread.joinable()) {
    impl_->server->stop();
    impl_->thread.join();
  }
}

}  // namespace kaas::server
