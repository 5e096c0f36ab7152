#include "kaas/server_adapter/server/http_frontend.h"

#include <google/protobuf/util/json_util.h>
#include <openssl/evp.h>

#include <nlohmann/json.hpp>
#include <optional>

#include "kaas/common/error.h"
#include "kaas/server_adapter/server/bounded_inflate.h"
#include "kaas/server_adapter/server/infer_codec.h"

namespace kaas::server {

namespace {

using nlohmann::json;
using Groups = std::vector<std::string>;

HttpResponse reply_json(int status, const json& body) {
  return HttpResponse{status, "application/json", {}, dump_json(body)};
}

HttpResponse error_reply(const std::exception& e) {
  const auto* k = dynamic_cast<const Error*>(&e);
  return json_error(k ? http_status_code(k->code()) : 500, e.what());
}

[[noreturn]] void bad_request(const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, message);
}

// Standard base64 (with padding), as the CUDA register request carries its IPC handle.
std::string base64_decode(const std::string& text) {
  if (text.size() % 4 != 0)
    bad_request("raw_handle.b64 is not base64 (length not a multiple of 4)");
  std::string out(text.size() / 4 * 3, '\0');
  const int n =
      EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                      reinterpret_cast<const unsigned char*>(text.data()), int(text.size()));
  if (n < 0) bad_request("raw_handle.b64 is not base64");
  size_t padding = 0;
  for (size_t i = text.size(); i > 0 && text[i - 1] == '=' && padding < 2; --i) ++padding;
  out.resize(size_t(n) - padding);
  return out;
}

json duration_json(const Duration& d) {
  return json{{"count", d.count}, {"ns", d.ns}};
}

json tensor_metadata(const models::TensorSpec& spec) {
  return json{{"name", spec.name},
              {"datatype", std::string(models::triton_name(spec.dtype))},
              {"shape", spec.shape}};
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

// Where a path leads: an endpoint and the model, version and action it names. Paths are split
// into segments (no regex: a 64 KiB path must not recurse).
struct Target {
  std::string endpoint;  // "live", "ready", "server", "stats", "model", "model/ready", ...
  std::string method;    // the one method the endpoint takes
  Groups groups;         // [path, model, version, action]
};

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> parts;
  size_t start = 1;
  if (path.empty() || path[0] != '/') return parts;
  while (start <= path.size()) {
    const size_t end = std::min(path.find('/', start), path.size());
    parts.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

std::optional<Target> find_target(std::string_view path) {
  auto p = split_path(path);
  if (p.empty() || p[0] != "v2") return std::nullopt;
  if (p.size() > 1 && p.back().empty()) p.pop_back();  // one trailing '/' is allowed
  const std::string whole(path);
  if (p.size() == 1) return Target{"server", "GET", {whole}};
  if (p.size() == 3 && p[1] == "health" && (p[2] == "live" || p[2] == "ready"))
    return Target{std::string(p[2]), "GET", {whole}};
  if (p.size() == 3 && p[1] == "repository" && p[2] == "index")
    return Target{"index", "POST", {whole}};
  if (p.size() == 5 && p[1] == "repository" && p[2] == "models" && !p[3].empty() &&
      (p[4] == "load" || p[4] == "unload"))
    return Target{std::string(p[4]), "POST", {whole, std::string(p[3]), "", std::string(p[4])}};
  if (p[1] == "systemsharedmemory" || p[1] == "cudasharedmemory") {
    // [/region/{name}]/status, /region/{name}/register, [/region/{name}]/unregister
    const std::string kind = p[1] == "systemsharedmemory" ? "system" : "cuda";
    const bool named = p.size() == 5 && p[2] == "region" && !p[3].empty();
    if (!named && p.size() != 3) return std::nullopt;
    const std::string action(p.back());
    const Groups groups{whole, kind, named ? std::string(p[3]) : ""};
    if (action == "status") return Target{"shm/status", "GET", groups};
    if (action == "unregister") return Target{"shm/unregister", "POST", groups};
    if (action == "register" && named) return Target{"shm/register", "POST", groups};
    return std::nullopt;
  }
  if (p.size() < 3 || p[1] != "models" || p[2].empty()) return std::nullopt;
  if (p.size() == 3 && p[2] == "stats") return Target{"stats", "GET", {whole}};
  Groups groups{whole, std::string(p[2]), ""};
  size_t next = 3;
  if (p.size() >= 5 && p[3] == "versions") {
    if (p[4].empty() || p[4].find_first_not_of("0123456789") != std::string_view::npos)
      return std::nullopt;
    groups[2] = std::string(p[4]);
    next = 5;
  }
  if (p.size() == next) return Target{"model", "GET", groups};
  if (p.size() != next + 1) return std::nullopt;
  const std::string action(p[next]);
  if (action == "ready" || action == "config" || action == "stats")
    return Target{"model/" + action, "GET", groups};
  if (action == "infer") return Target{"model/infer", "POST", groups};
  return std::nullopt;
}

}  // namespace

struct HttpFrontend::Impl {
  ServerState& state;
  HttpServerOptions options;
  std::unique_ptr<HttpServer> server;

  Impl(ServerState& s, const HttpServerOptions& o) : state(s), options(o) {}

  std::shared_ptr<ServedModel> model_of(const Groups& g) {
    return state.repository->get(g.at(1), g.size() > 2 ? g[2] : "");
  }

  HttpResponse handle(const HttpRequest& req) {
    try {
      if (const auto encoding = req.header("Content-Encoding")) {
        if (*encoding != "gzip" && *encoding != "deflate" && *encoding != "identity")
          return json_error(415, "Content-Encoding '" + escape_for_message(*encoding) +
                                     "' is not supported (gzip, deflate, identity)");
      }
      const auto target = find_target(req.path);
      if (!target)
        return json_error(404, "no such endpoint: " + escape_for_message(req.method) + " " +
                                   escape_for_message(req.path));
      if (target->method != req.method)
        return json_error(405, "method " + escape_for_message(req.method) + " not allowed for " +
                                   escape_for_message(req.path) + " (" + target->method + ")");
      return dispatch(*target, req);
    } catch (const std::exception& e) {
      return error_reply(e);
    }
  }

  // A compressed control body (repository, shared memory: small JSON) inflates to at most
  // `limit` bytes.
  std::string decoded_body(const HttpRequest& req, size_t limit = size_t(1) << 20) {
    const auto encoding = req.header("Content-Encoding");
    if (!encoding || *encoding == "identity") return req.body;
    const std::string_view body = req.body;
    return inflate_bounded(std::span(&body, 1), "Content-Encoding " + std::string(*encoding),
                           {.bytes = std::min(limit, options.max_body_bytes),
                            .code = ErrorCode::kInvalidArgument,
                            .why = "this model's requests are at most that; --max-request-bytes"});
  }

  // An inference body inflates only as far as the model could use: its request limit, plus the
  // JSON header of a binary body, or (a JSON body, numbers as text) 6 bytes of text per byte of
  // tensor (a float32 as "-1.2345678e-05, ": 16 characters).
  std::string inference_body(const HttpRequest& req, const ServedModel& model) {
    const size_t tensors =
        request_byte_limit(model.scheduler->signature(), state.max_request_bytes);
    const size_t headroom = size_t(1) << 20;
    return decoded_body(req, req.header("Inference-Header-Content-Length")
                                 ? tensors + headroom
                                 : 6 * tensors + headroom);
  }

  HttpResponse infer(const HttpRequest& req, const Groups& g) {
    if (!state.accepting.load())
      throw Error(ErrorCode::kUnavailable, "the server is shutting down");
    MemoryTrimmer::Scope trim_after(state.memory_trimmer, int64_t(req.body.size()));
    const auto model = model_of(g);
    const std::string body = inference_body(req, *model);
    trim_after.at_least(int64_t(body.size()));
    DecodedInfer decoded =
        decode_rest_infer(body, req.header("Inference-Header-Content-Length"), state.shared_memory);
    check_requested_outputs(model->scheduler->signature(), decoded.requested, model->name);
    check_json_outputs(decoded, model->scheduler->signature());
    check_reply_bytes(decoded, model->scheduler->signature(),
                      model->scheduler->output_rows(models::views_of(decoded.request.inputs)),
                      state.max_response_bytes, model->name, true);
    const auto outputs = model->scheduler->submit(std::move(decoded.request)).get();
    RestReply reply = encode_rest_infer(decoded, outputs, model->name, model->version);
    if (reply.header_length == reply.body.size())
      return HttpResponse{200, "application/json", {}, std::move(reply.body)};
    return HttpResponse{200,
                        "application/octet-stream",
                        {{"Inference-Header-Content-Length", std::to_string(reply.header_length)}},
                        std::move(reply.body)};
  }

  HttpResponse statistics(const Groups& g) {
    json all = json::array();
    if (g.size() > 1) {
      all.push_back(statistics_json(*model_of(g)));
    } else {
      for (const auto& m : state.repository->ready_models()) all.push_back(statistics_json(*m));
    }
    return reply_json(200, json{{"model_stats", all}});
  }

  HttpResponse metadata(const Groups& g) {
    const auto m = model_of(g);
    json inputs = json::array(), outputs = json::array();
    for (const auto& spec : m->scheduler->signature().inputs)
      inputs.push_back(tensor_metadata(spec));
    for (const auto& spec : m->scheduler->signature().outputs)
      outputs.push_back(tensor_metadata(spec));
    return reply_json(200, json{{"name", m->name},
                                {"versions", {std::to_string(m->version)}},
                                {"platform", model_platform(*m)},
                                {"inputs", inputs},
                                {"outputs", outputs}});
  }

  HttpResponse model_ready(const Groups& g) {
    bool ready = state.ready.load();
    try {
      model_of(g);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kUnavailable) throw;
      ready = false;
    }
    return reply_json(ready ? 200 : 503, json{{"name", g[1]}, {"ready", ready}});
  }

  HttpResponse config(const Groups& g) {
    std::string text;
    google::protobuf::util::JsonPrintOptions print;
    print.preserve_proto_field_names = true;
    (void)google::protobuf::util::MessageToJsonString(model_of(g)->config, &text, print);
    return HttpResponse{200, "application/json", {}, text};
  }

  HttpResponse repository_index(const HttpRequest& req) {
    bool ready_only = false;
    const std::string body = decoded_body(req);
    if (!body.empty()) {
      const json request = parse_request_json(body);
      if (!request.is_object()) bad_request("the index request must be a JSON object");
      if (request.contains("ready")) {
        if (!request["ready"].is_boolean()) bad_request("'ready' must be a boolean");
        ready_only = request["ready"].get<bool>();
      }
    }
    json list = json::array();
    for (const auto& e : state.repository->index(ready_only)) {
      json entry{{"name", e.name}, {"state", e.state}, {"reason", e.reason}};
      if (!e.version.empty()) entry["version"] = e.version;
      list.push_back(std::move(entry));
    }
    return reply_json(200, list);
  }

  HttpResponse shared_memory_status(const Groups& g) {
    const RegionKind kind = g[1] == "system" ? RegionKind::kSystem : RegionKind::kCuda;
    json regions = json::array();
    for (const auto& s : state.shared_memory->status(kind, g[2])) {
      if (kind == RegionKind::kSystem) {
        regions.push_back(
            {{"name", s.name}, {"key", s.key}, {"offset", s.offset}, {"byte_size", s.byte_size}});
      } else {
        regions.push_back(
            {{"name", s.name}, {"device_id", s.device_id}, {"byte_size", s.byte_size}});
      }
    }
    return reply_json(200, regions);
  }

  HttpResponse shared_memory_register(const HttpRequest& req, const Groups& g) {
    const json body = parse_request_json(decoded_body(req));
    if (!body.is_object()) bad_request("the register request must be a JSON object");
    auto number = [&](const char* key) -> json {
      const auto it = body.find(key);
      if (it == body.end() || !it->is_number_integer())
        bad_request(std::string("the register request needs an integer '") + key + "'");
      return *it;
    };
    auto unsigned_number = [&](const char* key) {
      const json v = number(key);
      if (!v.is_number_unsigned() && v.get<int64_t>() < 0)
        bad_request(std::string("'") + key + "' must not be negative");
      return v.get<uint64_t>();
    };
    if (g[1] == "system") {
      const auto key = body.find("key");
      if (key == body.end() || !key->is_string())
        bad_request("the register request needs a string 'key'");
      const uint64_t offset = body.contains("offset") ? unsigned_number("offset") : 0;
      state.shared_memory->register_system(g[2], key->get<std::string>(), offset,
                                           unsigned_number("byte_size"));
    } else {
      const auto handle = body.find("raw_handle");
      if (handle == body.end() || !handle->is_object() || !handle->contains("b64") ||
          !(*handle)["b64"].is_string())
        bad_request("the register request needs 'raw_handle': {\"b64\": <base64 string>}");
      const std::string raw = base64_decode((*handle)["b64"].get<std::string>());
      state.shared_memory->register_cuda(
          g[2], {reinterpret_cast<const std::byte*>(raw.data()), raw.size()},
          number("device_id").get<int64_t>(), unsigned_number("byte_size"));
    }
    return reply_json(200, json::object());
  }

  HttpResponse dispatch(const Target& target, const HttpRequest& req) {
    const std::string& e = target.endpoint;
    const Groups& g = target.groups;
    if (e == "live") return reply_json(200, json{{"live", true}});
    if (e == "ready") {
      const bool ready = state.ready.load();
      return reply_json(ready ? 200 : 503, json{{"ready", ready}});
    }
    if (e == "server")
      return reply_json(200,
                        json{{"name", kServerName},
                             {"version", kServerVersion},
                             {"extensions", server_extensions(state.shared_memory->allowed())}});
    if (e == "stats" || e == "model/stats") return statistics(g);
    if (e == "model") return metadata(g);
    if (e == "model/ready") return model_ready(g);
    if (e == "model/config") return config(g);
    if (e == "model/infer") return infer(req, g);
    if (e == "index") return repository_index(req);
    if (e == "shm/status") return shared_memory_status(g);
    if (e == "shm/register") return shared_memory_register(req, g);
    if (e == "shm/unregister") {
      state.shared_memory->unregister(g[1] == "system" ? RegionKind::kSystem : RegionKind::kCuda,
                                      g[2]);
      return reply_json(200, json::object());
    }
    if (e == "load") {
      state.repository->load(g[1]);
    } else {
      state.repository->unload(g[1]);
    }
    return reply_json(200, json::object());
  }
};

HttpFrontend::HttpFrontend(ServerState& state, const HttpServerOptions& options)
    : impl_(std::make_unique<Impl>(state, options)) {
  impl_->server = std::make_unique<HttpServer>(
      options, [impl = impl_.get()](const HttpRequest& req) { return impl->handle(req); });
}

HttpFrontend::~HttpFrontend() {
  shutdown();
}

int HttpFrontend::port() const {
  return impl_->server->port();
}

void HttpFrontend::shutdown() {
  impl_->server->shutdown();
}

}  // namespace kaas::server
