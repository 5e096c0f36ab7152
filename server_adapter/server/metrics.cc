#include "kaas/server_adapter/server/metrics.h"

#include "kaas/server_adapter/server/http_server.h"

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <limits>
#include <thread>

#include "kaas/common/error.h"

namespace kaas::server {

namespace {

class ModelMetrics final : public prometheus::Collectable {
 public:
  explicit ModelMetrics(ServerState& state) : state_(state) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    struct Family {
      const char* name;
      const char* help;
      prometheus::MetricType type;
      double (*value)(const StatsSnapshot&);
    };
    static const Family families[] = {
        {"nv_inference_request_success", "Number of successful inference requests",
         prometheus::MetricType::Counter,
         [](const StatsSnapshot& s) { return double(s.success.count); }},
        {"nv_inference_request_failure", "Number of failed inference requests",
         prometheus::MetricType::Counter,
         [](const StatsSnapshot& s) { return double(s.fail.count); }},
        {"nv_inference_count", "Number of inferences performed (batch elements)",
         prometheus::MetricType::Counter,
         [](const StatsSnapshot& s) { return double(s.inference_count); }},
        {"nv_inference_exec_count", "Number of model executions performed",
         prometheus::MetricType::Counter,
         [](const StatsSnapshot& s) { return double(s.execution_count); }},
        {"nv_inference_request_duration_us", "Cumulative end-to-end inference request time (us)",
         prometheus::MetricType::Counter,
         [](const StatsSnapshot& s) { return double((s.success.ns + s.fail.ns) / 1000); }},
        {"nv_inference_queue_duration_us", "Cumulative time requests spent queued (us)",
         prometheus::MetricType::Counter,
         [](const StatsSnapshot& s) { return double(s.queue.ns / 1000); }},
        {"nv_inference_compute_input_duration_us", "Cumulative compute input time (us)",
         prometheus::MetricType::Counter,
         [](const StatsSnapshot& s) { return double(s.compute_input.ns / 1000); }},
        {"nv_inference_compute_infer_duration_us", "Cumulative compute inference time (us)",
         prometheus::MetricType::Counter,
         [](const StatsSnapshot& s) { return double(s.compute_infer.ns / 1000); }},
        {"nv_inference_compute_output_duration_us", "Cumulative compute output time (us)",
         prometheus::MetricType::Counter,
         [](const StatsSnapshot& s) { return double(s.compute_output.ns / 1000); }},
        // Not in Triton: what an autoscaler or a balancer's rate limiter is tuned with.
        {"kaas_inference_queue_full_count",
         "Number of inference requests refused because the model's queue was full",
         prometheus::MetricType::Counter,
         [](const StatsSnapshot& s) { return double(s.queue_full); }},
        {"nv_inference_pending_request_count",
         "Instantaneous number of requests queued or executing", prometheus::MetricType::Gauge,
         [](const StatsSnapshot& s) { return double(s.pending); }},
    };
    std::vector<std::pair<std::shared_ptr<ServedModel>, StatsSnapshot>> models;
    for (const auto& m : state_.repository->ready_models())
      models.emplace_back(m, m->stats->snapshot());
    std::vector<prometheus::MetricFamily> out;
    for (const Family& f : families) {
      prometheus::MetricFamily family;
      family.name = f.name;
      family.help = f.help;
      family.type = f.type;
      for (const auto& [model, snap] : models) {
        prometheus::ClientMetric metric;
        metric.label = {{"model", model->name}, {"version", std::to_string(model->version)}};
        if (f.type == prometheus::MetricType::Counter) {
          metric.counter.value = f.value(snap);
        } else {
          metric.gauge.value = f.value(snap);
        }
        family.metric.push_back(std::move(metric));
      }
      out.push_back(std::move(family));
    }
    out.push_back(queue_histograms(models));
    return out;
  }

 private:
  // kaas_inference_queue_duration_us: executed requests by the time they waited in the queue.
  static prometheus::MetricFamily queue_histograms(
      const std::vector<std::pair<std::shared_ptr<ServedModel>, StatsSnapshot>>& models) {
    prometheus::MetricFamily family;
    family.name = "kaas_inference_queue_duration_us";
    family.help = "Time executed inference requests spent queued (us)";
    family.type = prometheus::MetricType::Histogram;
    for (const auto& [model, snap] : models) {
      prometheus::ClientMetric metric;
      metric.label = {{"model", model->name}, {"version", std::to_string(model->version)}};
      const QueueHistogram& h = snap.queue_histogram;
      uint64_t cumulative = 0;
      for (size_t b = 0; b <= QueueHistogram::kBuckets; ++b) {
        cumulative += h.counts[b];
        prometheus::ClientMetric::Bucket bucket;
        bucket.cumulative_count = cumulative;
        bucket.upper_bound = b < QueueHistogram::kBuckets ? double(QueueHistogram::kBoundsUs[b])
                                                          : std::numeric_limits<double>::infinity();
        metric.histogram.bucket.push_back(bucket);
      }
      metric.histogram.sample_count = cumulative;
      metric.histogram.sample_sum = double(snap.queue.ns / 1000);
      family.metric.push_back(std::move(metric));
    }
    return family;
  }

  ServerState& state_;
};

}  // namespace

// The text exposition format from prometheus-cpp's serializer, served by kaas's HTTP server
// (which, unlike prometheus-cpp's civetweb exposer, can listen on a free port picked by the
// system).
struct MetricsEndpoint::Impl {
  ModelMetrics collector;
  std::unique_ptr<HttpServer> server;
  explicit Impl(ServerState& state) : collector(state) {}
};

MetricsEndpoint::MetricsEndpoint(ServerState& state, const std::string& host, int port)
    : impl_(std::make_unique<Impl>(state)) {
  HttpServerOptions options;
  options.host = host;
  options.port = port;
  options.io_threads = 1;
  options.worker_threads = 2;
  options.max_body_bytes = 1 << 16;
  options.max_connections = 256;
  impl_->server = std::make_unique<HttpServer>(options, [this](const HttpRequest& req) {
    if (req.path != "/metrics") return json_error(404, "no such endpoint (GET /metrics)");
    if (req.method != "GET") return json_error(405, "GET /metrics only");
    return HttpResponse{200,
                        "text/plain; version=0.0.4",
                        {},
                        prometheus::TextSerializer().Serialize(impl_->collector.Collect())};
  });
}

MetricsEndpoint::~MetricsEndpoint() {
  impl_->server->shutdown();
}

int MetricsEndpoint::port() const {
  return impl_->server->port();
}

}  // namespace kaas::server
