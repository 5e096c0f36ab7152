#include "kaas/server_adapter/server/http_server.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <condition_variable>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "kaas/common/error.h"

namespace kaas::server {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

std::optional<std::string_view> HttpRequest::header(std::string_view name) const {
  for (const auto& [key, value] : headers)
    if (beast::iequals(key, beast::string_view(name.data(), name.size())))
      return std::string_view(value);
  return std::nullopt;
}

HttpResponse json_error(int status, const std::string& message) {
  const nlohmann::json body{{"error", message}};
  return HttpResponse{status,
                      "application/json",
                      {},
                      body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
}

std::string percent_decode(std::string_view text) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() + 0 && hex(text[i + 1]) >= 0 &&
        hex(text[i + 2]) >= 0) {
      out.push_back(char(hex(text[i + 1]) * 16 + hex(text[i + 2])));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

namespace {

std::string seconds_text(std::chrono::milliseconds d) {
  return std::to_string(double(d.count()) / 1000.0).substr(0, 5) + " s";
}

struct SessionBase {
  virtual ~SessionBase() = default;
  virtual void stop_if_idle() = 0;  // closes the connection unless a request is running
  virtual void stop() = 0;
};

}  // namespace

// Members in this order so that what sessions use (the registry, the TLS context) outlives the
// io_context, whose destruction destroys any handler still pending.
struct HttpServer::Impl {
  HttpServerOptions options;
  HttpHandler handler;
  mutable std::mutex mutex;
  std::condition_variable all_closed;
  std::map<uint64_t, std::weak_ptr<SessionBase>> sessions;
  uint64_t next_id = 0;
  std::atomic<bool> stopping{false};
  bool stopped = false;
  int port = 0;
  std::optional<net::ssl::context> tls;
  net::io_context ioc;
  net::executor_work_guard<net::io_context::executor_type> work{ioc.get_executor()};
  tcp::acceptor acceptor{net::make_strand(ioc)};
  net::steady_timer accept_retry{acceptor.get_executor()};
  net::thread_pool workers;
  std::vector<std::thread> io_threads;

  Impl(const HttpServerOptions& o, HttpHandler h)
      : options(o), handler(std::move(h)), ioc(o.io_threads), workers(size_t(o.worker_threads)) {}

  void accept();
  void open(tcp::socket socket);
  void remove(uint64_t id) {
    std::lock_guard lock(mutex);
    sessions.erase(id);
    if (sessions.empty()) all_closed.notify_all();
  }
  std::vector<std::shared_ptr<SessionBase>> open_sessions() {
    std::vector<std::shared_ptr<SessionBase>> open;
    std::lock_guard lock(mutex);
    for (const auto& [id, weak] : sessions)
      if (auto session = weak.lock()) open.push_back(std::move(session));
    return open;
  }
  bool wait_closed(std::chrono::milliseconds limit) {
    std::unique_lock lock(mutex);
    return all_closed.wait_for(lock, limit, [this] { return sessions.empty(); });
  }
};

namespace {

template <class Stream>
class Session : public SessionBase, public std::enable_shared_from_this<Session<Stream>> {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  Session(HttpServer::Impl* server, Stream stream, uint64_t id)
      : server_(server), stream_(std::move(stream)), id_(id), timer_(stream_.get_executor()) {}
  ~Session() override { server_->remove(id_); }

  void start() {
    if constexpr (kTls) {
      arm(server_->options.header_timeout);
      stream_.async_handshake(net::ssl::stream_base::server,
                              [self = this->shared_from_this()](beast::error_code ec) {
                                if (self->outcome(ec)) return self->close_now();
                                self->wait_request();
                              });
    } else {
      wait_request();
    }
  }

  net::any_io_executor executor() { return stream_.get_executor(); }

  void stop_if_idle() override {
    net::post(stream_.get_executor(), [self = this->shared_from_this()] {
      if (!self->busy_) self->close_now();
    });
  }
  void stop() override {
    net::post(stream_.get_executor(), [self = this->shared_from_this()] { self->close_now(); });
  }

 private:
  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }

  // Timeouts by a timer that cancels the pending operation rather than tcp_stream's expiry,
  // which closes the socket: a timed-out body must still get its 400.
  void arm(std::chrono::milliseconds limit) {
    timed_out_ = false;
    timer_.expires_after(limit);
    timer_.async_wait([weak = this->weak_from_this()](beast::error_code ec) {
      const auto self = weak.lock();
      if (ec || !self) return;
      self->timed_out_ = true;
      beast::error_code ignored;
      self->lowest().socket().cancel(ignored);
    });
  }
  void disarm() { timer_.cancel(); }
  // The error an operation ended with, a cancellation by the timer reading as a timeout.
  beast::error_code outcome(beast::error_code ec) {
    disarm();
    if (ec == net::error::operation_aborted && timed_out_) return beast::error::timeout;
    return ec;
  }
  const HttpServerOptions& options() const { return server_->options; }

  // Between requests: wait (idle timeout) for the first byte of the next one.
  void wait_request() {
    if (server_->stopping) return close_now();
    parser_.emplace();
    parser_->header_limit(std::uint32_t(std::min<size_t>(options().max_header_bytes, UINT32_MAX)));
    parser_->body_limit(std::uint64_t(options().max_body_bytes));
    if (buffer_.size() > 0) return read_header();  // pipelined: the next request is here already
    arm(options().idle_timeout);
    stream_.async_read_some(buffer_.prepare(4096),
                            [self = this->shared_from_this()](beast::error_code ec, size_t n) {
                              if (self->outcome(ec))
                                return self->close_now();  // idle timeout, client gone, shutdown
                              self->buffer_.commit(n);
                              self->read_header();
                            });
  }

  void read_header() {
    arm(options().header_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = this->shared_from_this()](beast::error_code ec, size_t) {
                              ec = self->outcome(ec);
                              if (ec) return self->on_read_error(ec, "request header");
                              const auto& header = self->parser_->get();
                              if (beast::iequals(header[http::field::expect], "100-continue") &&
                                  !self->parser_->is_done())
                                return self->send_continue();
                              self->read_body();
                            });
  }

  void send_continue() {
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    net::async_write(stream_, net::buffer(kContinue.data(), kContinue.size()),
                     [self = this->shared_from_this()](beast::error_code ec, size_t) {
                       if (ec) return self->close_now();
                       self->read_body();
                     });
  }

  // The body in pieces, so the body timeout bounds each pause, not the whole transfer.
  void read_body() {
    if (parser_->is_done()) return dispatch();
    arm(options().body_timeout);
    http::async_read_some(stream_, buffer_, *parser_,
                          [self = this->shared_from_this()](beast::error_code ec, size_t) {
                            ec = self->outcome(ec);
                            if (ec) return self->on_read_error(ec, "request body");
                            self->read_body();
                          });
  }

  void on_read_error(beast::error_code ec, const char* part) {
    if (ec == http::error::end_of_stream || ec == net::error::eof ||
        ec == net::error::operation_aborted || ec == net::error::connection_reset ||
        ec == http::error::partial_message)
      return close_now();  // nobody left to answer
    if (ec == http::error::header_limit)
      return reply_and_close(json_error(
          431,
          "request header larger than " + std::to_string(options().max_header_bytes) + " bytes"));
    if (ec == http::error::body_limit)
      return reply_and_close(json_error(
          413, "request body larger than " + std::to_string(options().max_body_bytes) + " bytes"));
    if (ec == beast::error::timeout) {
      if (std::string_view(part) == "request body")
        return reply_and_close(json_error(
            400, "incomplete request body (nothing received for " +
                     seconds_text(options().body_timeout) +
                     "; shorter than Content-Length or a chunked body without its last chunk)"));
      return reply_and_close(json_error(
          408, "request header not complete within " + seconds_text(options().header_timeout)));
    }
    reply_and_close(json_error(400, std::string("malformed HTTP ") + part + ": " + ec.message()));
  }

  void dispatch() {
    auto message = parser_->release();
    HttpRequest request;
    request.method = std::string(message.method_string());
    const std::string_view target(message.target().data(), message.target().size());
    const size_t question = target.find('?');
    request.path = percent_decode(target.substr(0, question));
    if (question != target.npos) request.query = std::string(target.substr(question + 1));
    for (const auto& field : message)
      request.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    request.body = std::move(message.body());
    keep_alive_ = message.keep_alive();
    busy_ = true;
    disarm();
    net::post(server_->workers, [self = this->shared_from_this(),
                                 request = std::move(request)]() mutable {
      HttpResponse response;
      try {
        response = self->server_->handler(request);
      } catch (const std::exception& e) {
        response = json_error(500, std::string("internal error: ") + e.what());
      }
      net::post(self->stream_.get_executor(), [self, response = std::move(response)]() mutable {
        self->write(std::move(response));
      });
    });
  }

  void reply_and_close(HttpResponse response) {
    keep_alive_ = false;
    busy_ = true;
    write(std::move(response));
  }

  void write(HttpResponse response) {
    auto message = std::make_shared<http::response<http::string_body>>();
    message->version(11);
    message->result(static_cast<unsigned>(response.status));
    message->set(http::field::server, "kaas-server");
    message->set(http::field::content_type, response.content_type);
    for (const auto& [name, value] : response.headers) message->set(name, value);
    message->body() = std::move(response.body);
    keep_alive_ = keep_alive_ && !server_->stopping;
    message->keep_alive(keep_alive_);
    message->prepare_payload();
    arm(options().body_timeout);  // a client that does not read
    http::async_write(stream_, *message,
                      [self = this->shared_from_this(), message](beast::error_code ec, size_t) {
                        self->busy_ = false;
                        if (self->outcome(ec)) return self->close_now();
                        if (!self->keep_alive_) return self->close_gracefully();
                        self->wait_request();
                      });
  }

  // Sends FIN, then reads and drops what the client still sends for a moment, so an early
  // reply (413, 400) is not lost to a TCP reset from unread data.
  void close_gracefully() {
    arm(std::chrono::seconds(2));
    if constexpr (kTls) {
      stream_.async_shutdown([self = this->shared_from_this()](beast::error_code) {
        self->disarm();
        self->close_now();
      });
    } else {
      beast::error_code ignored;
      lowest().socket().shutdown(tcp::socket::shutdown_send, ignored);
      drain();
    }
  }

  void drain() {
    buffer_.consume(buffer_.size());
    stream_.async_read_some(
        buffer_.prepare(65536), [self = this->shared_from_this()](beast::error_code ec, size_t) {
          if (ec) return self->close_now();  // EOF, or the timer's cancel ends the drain
          self->drain();
        });
  }

  void close_now() {
    disarm();
    beast::error_code ignored;
    lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
    lowest().close();
  }

  HttpServer::Impl* server_;
  Stream stream_;
  uint64_t id_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  net::steady_timer timer_;
  bool timed_out_ = false;
  bool busy_ = false;
  bool keep_alive_ = true;
};

}  // namespace

void HttpServer::Impl::accept() {
  acceptor.async_accept(
      net::make_strand(ioc), [self = this](beast::error_code ec, tcp::socket socket) {
        if (self->stopping) return;
        if (ec) {  // out of descriptors, say: try again shortly instead of spinning
          self->accept_retry.expires_after(std::chrono::milliseconds(50));
          self->accept_retry.async_wait([self](beast::error_code) {
            if (!self->stopping) self->accept();
          });
          return;
        }
        self->open(std::move(socket));
        self->accept();
      });
}

void HttpServer::Impl::open(tcp::socket socket) {
  {
    std::lock_guard lock(mutex);
    if (sessions.size() >= size_t(options.max_connections)) {
      beast::error_code ignored;
      socket.close(ignored);  // over the connection limit: refused at once
      return;
    }
  }
  beast::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);  // small replies must not wait for an ACK
  // The mutex is not held where a session can be destroyed: its destructor takes it.
  auto launch = [this](auto session, uint64_t id) {
    {
      std::lock_guard lock(mutex);
      sessions[id] = session;
    }
    net::post(session->executor(), [session] { session->start(); });
  };
  uint64_t id;
  {
    std::lock_guard lock(mutex);
    id = next_id++;
  }
  if (tls) {
    using TlsStream = beast::ssl_stream<beast::tcp_stream>;
    launch(std::make_shared<Session<TlsStream>>(this, TlsStream(std::move(socket), *tls), id), id);
  } else {
    launch(std::make_shared<Session<beast::tcp_stream>>(this, beast::tcp_stream(std::move(socket)),
                                                        id),
           id);
  }
}

HttpServer::HttpServer(const HttpServerOptions& options, HttpHandler handler)
    : impl_(std::make_unique<Impl>(options, std::move(handler))) {
  Impl& s = *impl_;
  if (!options.tls_cert_file.empty() || !options.tls_key_file.empty()) {
    s.tls.emplace(net::ssl::context::tls_server);
    beast::error_code ec;
    s.tls->use_certificate_chain_file(options.tls_cert_file, ec);
    if (!ec) s.tls->use_private_key_file(options.tls_key_file, net::ssl::context::pem, ec);
    if (ec)
      throw Error(ErrorCode::kInvalidArgument,
                  "HTTP: cannot use the TLS certificate / key: " + ec.message());
  }
  beast::error_code ec;
  const auto address = net::ip::make_address(options.host, ec);
  if (ec)
    throw Error(ErrorCode::kInvalidArgument, "HTTP: bad listen address '" + options.host + "'");
  const tcp::endpoint endpoint(address, static_cast<unsigned short>(options.port));
  s.acceptor.open(endpoint.protocol(), ec);
  if (!ec) s.acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(endpoint, ec);
  if (!ec) s.acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec)
    throw Error(ErrorCode::kUnavailable, "HTTP: cannot listen on " + options.host + ":" +
                                             std::to_string(options.port) + ": " + ec.message());
  s.port = s.acceptor.local_endpoint().port();
  s.accept();
  for (int i = 0; i < std::max(options.io_threads, 1); ++i)
    s.io_threads.emplace_back([&s] { s.ioc.run(); });
}

HttpServer::~HttpServer() {
  shutdown();
}

int HttpServer::port() const {
  return impl_->port;
}

size_t HttpServer::open_connections() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->sessions.size();
}

void HttpServer::shutdown() {
  Impl& s = *impl_;
  if (s.stopped) return;
  s.stopped = true;
  s.stopping = true;
  net::post(s.acceptor.get_executor(), [&s] {
    beast::error_code ignored;
    s.acceptor.close(ignored);
    s.accept_retry.cancel();
  });
  for (const auto& session : s.open_sessions()) session->stop_if_idle();
  // Requests already read are answered (a client that never reads its reply is cut off by the
  // write timeout); whatever is left after that is closed.
  if (!s.wait_closed(s.options.body_timeout + std::chrono::seconds(5)))
    for (const auto& session : s.open_sessions()) session->stop();
  s.workers.join();
  s.wait_closed(std::chrono::seconds(5));
  s.work.reset();
  s.ioc.stop();
  for (auto& t : s.io_threads) t.join();
  s.workers.join();
}

}  // namespace kaas::server
