#pragma once
// An event-driven HTTP/1.1 server (Boost.Beast on Asio): a few I/O threads own every connection,
// so slow or idle clients hold a socket and a buffer but no thread; complete requests run on a
// separate pool of worker threads. Header, body and idle timeouts, a header size limit, a body
// size limit, a connection limit, in-order pipelining, chunked bodies, Expect: 100-continue and
// optional TLS. Malformed or oversized requests are answered by the server itself with a 4xx and
// a JSON {"error": "..."} body, then the connection is closed.

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kaas::server {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;                          // 0: any free port
  std::string tls_cert_file, tls_key_file;  // both set: HTTPS
  int io_threads = 2;
  int worker_threads = 16;
  std::chrono::milliseconds header_timeout{10'000};  // first byte of a request to its last header
  std::chrono::milliseconds body_timeout{60'000};    // longest pause while a body arrives
  std::chrono::milliseconds idle_timeout{120'000};   // keep-alive wait for the next request
  size_t max_header_bytes = 64 << 10;
  size_t max_body_bytes = size_t(1) << 30;  // as received
  int max_connections = 4096;
};

struct HttpRequest {
  std::string method;
  std::string path;  // percent-decoded
  std::string query;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;  // chunked bodies already joined
  // The first header of that name (case-insensitive).
  std::optional<std::string_view> header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

// "{"error": message}" with the status; what servers built on HttpServer reply on failure.
HttpResponse json_error(int status, const std::string& message);

// Runs on a worker thread; may throw (the client gets a 500 naming the exception).
using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

class HttpServer {
 public:
  HttpServer(const HttpServerOptions& options, HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  int port() const;
  size_t open_connections() const;
  // Stops accepting, closes connections between requests, answers the requests already read
  // (with Connection: close) and waits for them, then stops the threads.
  void shutdown();

  struct Impl;  // public so that connection objects in the .cc can name it

 private:
  std::unique_ptr<Impl> impl_;
};

// Decodes %XX escapes; a malformed escape is kept as is.
std::string percent_decode(std::string_view text);

}  // namespace kaas::server
