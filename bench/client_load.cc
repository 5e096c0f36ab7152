// kaas-client-load: N concurrent kaas::client::RemoteClient callers against one server or a set
// of servers (client-side balancing, retries on another server, the in-process fallback), each
// answer compared with the in-process DirectClient's on the same patches. Prints one JSON line
// per second (calls, failures, fallback answers) and a summary: what the failover tests and the
// scale-out benchmark read. SIGINT or SIGTERM ends the run early, with the summary of the calls
// made so far (the tests stop a load once their checks have what they need).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "kaas/backends/backend.h"
#include "kaas/client/direct_client.h"
#include "kaas/client/remote_client.h"
#include "kaas/common/cli.h"
#include "kaas/common/error.h"
#include "kaas/models/npy.h"

namespace {

using Clock = std::chrono::steady_clock;
using kaas::client::InferenceClient;

// The end of the run: the start plus a duration in (double) seconds.
using Deadline = decltype(Clock::now() + std::chrono::duration<double>());

struct Args {
  std::string servers, model = "emtrkmichelid", repository, input = "main_input", patches;
  int clients = 8, batch = 1, retries = 4, backoff_ms = 50, probe_ms = 500, deadline_ms = 0;
  double work_ms = 0;
  double seconds = 10;
  bool fallback = false, check = true;
};

struct Totals {
  std::mutex mutex;
  int64_t calls = 0, failures = 0, fallback_calls = 0, bitwise_equal = 0, retried_calls = 0;
  float max_difference = 0;  // largest |answer - in-process| over every output value
  std::vector<double> latencies_ms;
  std::string first_error;
};

struct Second {
  std::atomic<int64_t> calls{0}, failures{0}, fallback_calls{0};
};

// One caller's counts, added to the totals when its calls are done.
struct CallerCounts {
  std::vector<double> latencies;
  int64_t calls = 0, failures = 0, fallbacks = 0, bitwise_equal = 0, retried = 0;
  float max_difference = 0;
  std::string first_error;
};

// A few distinct inputs, so a wrong routing of answers between calls would show.
constexpr int kInputs = 4;

// What the callers send (the inputs, cycled) and the in-process answers they must match.
struct Workload {
  std::vector<int64_t> shape;  // the input's, with the batch first
  std::vector<std::vector<float>> inputs;
  std::vector<std::vector<std::vector<float>>> expected;  // [input][output]
};

// What every caller shares: the options, what to send and expect, when to stop, where to count.
struct Load {
  const Args& a;
  const kaas::models::ModelSignature& spec;
  const Workload& work;
  Clock::time_point start;
  Deadline end;
  std::vector<Second>& per_second;
  Totals& totals;
};

// Set by SIGINT / SIGTERM: the callers finish their calls in flight and the summary follows.
std::atomic<bool> stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");

void request_stop(int) {
  stop_requested.store(true);
}

// Sleeps until `until` or a stop request, whichever comes first.
void sleep_until_or_stop(Clock::time_point until) {
  while (!stop_requested.load() && Clock::now() < until)
    std::this_thread::sleep_for(
        std::min<Clock::duration>(until - Clock::now(), std::chrono::milliseconds(20)));
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(q * double(v.size())))];
}

void add_options(kaas::cli::App& app, Args& a) {
  app.add_option("--servers", a.servers, "host:port[,host:port...] or dns:///name:port")
      ->required();
  app.add_option("--repository", a.repository,
                 "model repository of the servers: the in-process reference and the fallback")
      ->required();
  app.add_option("--model", a.model, "model name (batched, one FP32 input)");
  app.add_option("--input", a.input, "the model's FP32 input");
  app.add_option("--patches", a.patches,
                 "rows of the input from this .npy (FP32, the input's shape per row; cycled), "
                 "e.g. zero-suppressed patches that take the sparse plan (default: noise "
                 "everywhere)")
      ->check(kaas::cli::existing_file());
  app.add_option("--clients", a.clients, "concurrent callers")->check(kaas::cli::range(1, 1024));
  app.add_option("--batch", a.batch, "patches per call")->check(kaas::cli::range(1, 4096));
  app.add_option("--seconds", a.seconds, "duration")->check(kaas::cli::range(0.1, 3600.0));
  app.add_option("--retries", a.retries, "retries per call (each may go to another server)")
      ->check(kaas::cli::range(0, 100));
  app.add_option("--backoff-ms", a.backoff_ms, "before the first retry")
      ->check(kaas::cli::range(0, 60'000));
  app.add_option("--probe-ms", a.probe_ms, "on the fallback: how often to ask the servers")
      ->check(kaas::cli::range(1, 600'000));
  app.add_option("--deadline-ms", a.deadline_ms, "per request (0: none)")
      ->check(kaas::cli::range(0, 600'000));
  app.add_option("--work-ms", a.work_ms,
                 "per event before its call: the client's other work, simulated by sleeping (a "
                 "client with a core of its own, as in the SONIC capacity model)")
      ->check(kaas::cli::range(0.0, 600'000.0));
  app.add_flag("--fallback", a.fallback, "run in process when every attempt failed");
  app.add_flag("!--no-check", a.check, "do not compare answers with in-process kaas");
}

// The rows of --patches (empty without it), checked against the input's shape.
std::vector<float> read_patch_rows(const Args& a, const std::vector<int64_t>& shape) {
  std::vector<float> rows;
  if (a.patches.empty()) return rows;
  const kaas::models::HostTensor file = kaas::models::read_npy(a.patches, a.input);
  if (file.dtype != kaas::models::DataType::kFloat32 || file.shape.empty() || file.shape[0] == 0 ||
      std::vector<int64_t>(file.shape.begin() + 1, file.shape.end()) !=
          std::vector<int64_t>(shape.begin() + 1, shape.end()))
    throw kaas::Error(kaas::ErrorCode::kInvalidArgument,
                      "--patches " + a.patches + ": expected FP32 rows of the input's shape");
  const auto values_of = file.values<float>();
  rows.assign(values_of.begin(), values_of.end());
  return rows;
}

// The inputs (noise, or the rows of --patches) and the reference's answers to each.
Workload make_workload(const Args& a, InferenceClient& reference) {
  const auto& spec = reference.signature();
  if (spec.inputs.size() != 1 || spec.max_batch == 0)
    throw kaas::Error(kaas::ErrorCode::kInvalidArgument,
                      "model '" + a.model + "': kaas-client-load drives batched one-input models");
  Workload work;
  work.shape = spec.inputs.front().shape;
  work.shape[0] = a.batch;
  int64_t values = 1;
  for (int64_t d : work.shape) values *= d;
  work.inputs.assign(kInputs, std::vector<float>(size_t(values)));
  work.expected.resize(kInputs);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> adc(-5.f, 15.f);
  const std::vector<float> rows = read_patch_rows(a, work.shape);  // --patches
  for (int k = 0; k < kInputs; ++k) {
    auto& in = work.inputs[size_t(k)];
    if (rows.empty()) {
      for (float& v : in) v = adc(rng);
    } else {  // rows k * batch, k * batch + 1, ... of the file, cycled
      const size_t row_values = in.size() / size_t(a.batch), file_rows = rows.size() / row_values;
      for (size_t r = 0; r < size_t(a.batch); ++r)
        std::copy_n(
            rows.begin() + std::ptrdiff_t((size_t(k * a.batch) + r) % file_rows * row_values),
            row_values, in.begin() + std::ptrdiff_t(r * row_values));
    }
    reference.set_input<float>(a.input, work.inputs[size_t(k)], work.shape);
    const auto result = reference.run();
    for (const auto& out : spec.outputs) {
      const auto o = result.output<float>(out.name);
      work.expected[size_t(k)].emplace_back(o.begin(), o.end());
    }
  }
  return work;
}

// One RemoteClient per caller, all on one connection to the servers.
std::vector<std::unique_ptr<kaas::client::RemoteClient>> make_callers(
    const Args& a, const kaas::Backend& backend) {
  kaas::client::RemoteOptions options;
  options.model = a.model;
  options.retries = a.retries;
  options.backoff = std::chrono::milliseconds(a.backoff_ms);
  options.probe_interval = std::chrono::milliseconds(a.probe_ms);
  if (a.fallback) {
    options.fallback = [&a, &backend] {
      return std::unique_ptr<InferenceClient>(
          kaas::client::DirectClient::from_repository(a.repository, a.model, backend));
    };
  }
  auto connection = kaas::client::RemoteConnection::connect(a.servers);
  std::vector<std::unique_ptr<kaas::client::RemoteClient>> callers;
  for (int c = 0; c < a.clients; ++c)
    callers.push_back(kaas::client::RemoteClient::create(connection, options));
  return callers;
}

// Whether every output of `result` equals `want` bit for bit; raises `max_difference` to the
// largest |answer - in-process| seen.
bool compare_outputs(const kaas::client::InferResult& result,
                     const kaas::models::ModelSignature& spec,
                     const std::vector<std::vector<float>>& want_outputs, float& max_difference) {
  bool bitwise = true;
  for (size_t o = 0; o < spec.outputs.size(); ++o) {
    const auto got = result.output<float>(spec.outputs[o].name);
    const auto& want = want_outputs[o];
    if (got.size() != want.size()) {
      bitwise = false;
      max_difference = INFINITY;
      continue;
    }
    for (size_t i = 0; i < want.size(); ++i) {
      const float d = std::abs(got[i] - want[i]);
      if (!(d <= max_difference)) max_difference = d;  // NaN counts
      bitwise = bitwise && std::memcmp(&got[i], &want[i], sizeof(float)) == 0;
    }
  }
  return bitwise;
}

void add_to_totals(Totals& totals, const CallerCounts& counts) {
  std::lock_guard lock(totals.mutex);
  totals.calls += counts.calls;
  totals.failures += counts.failures;
  totals.fallback_calls += counts.fallbacks;
  totals.bitwise_equal += counts.bitwise_equal;
  totals.max_difference = std::max(totals.max_difference, counts.max_difference);
  totals.retried_calls += counts.retried;
  totals.latencies_ms.insert(totals.latencies_ms.end(), counts.latencies.begin(),
                             counts.latencies.end());
  if (totals.first_error.empty()) totals.first_error = counts.first_error;
}

// Caller `c`: calls back to back (after --work-ms each) until the end or a stop request.
void run_caller(InferenceClient& client, int c, const Load& load) {
  const Args& a = load.a;
  kaas::client::CallOptions call;
  if (a.deadline_ms > 0) call.with_deadline(std::chrono::milliseconds(a.deadline_ms));
  CallerCounts counts;
  for (int k = c % kInputs; Clock::now() < load.end && !stop_requested.load();
       k = (k + 1) % kInputs) {
    if (a.work_ms > 0)
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(a.work_ms));
    const auto t0 = Clock::now();
    Second& bin =
        load.per_second[std::min(size_t(std::chrono::duration<double>(t0 - load.start).count()),
                                 load.per_second.size() - 1)];
    client.set_input<float>(a.input, load.work.inputs[size_t(k)], load.work.shape);
    ++counts.calls;
    ++bin.calls;
    try {
      const auto result = client.run(call);
      counts.latencies.push_back(
          std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      if (result.info().fallback) {
        ++counts.fallbacks;
        ++bin.fallback_calls;
      }
      if (result.info().attempts > 1) ++counts.retried;
      if (a.check)
        counts.bitwise_equal += compare_outputs(result, load.spec, load.work.expected[size_t(k)],
                                                counts.max_difference);
    } catch (const std::exception& e) {
      ++counts.failures;
      ++bin.failures;
      if (counts.first_error.empty()) counts.first_error = e.what();
    }
  }
  add_to_totals(load.totals, counts);
}

// One line per second while the callers run (the test reads when the fallback ended).
// Only whole seconds are printed: after a stop request the partial one is in the summary.
void print_seconds(Clock::time_point start, const std::vector<Second>& per_second, int seconds) {
  for (int s = 1; s <= seconds; ++s) {
    sleep_until_or_stop(start + std::chrono::seconds(s));
    if (stop_requested.load()) break;
    const Second& bin = per_second[size_t(s - 1)];
    std::printf("%s\n", nlohmann::json{{"second", s - 1},
                                       {"calls", bin.calls.load()},
                                       {"failures", bin.failures.load()},
                                       {"fallback_calls", bin.fallback_calls.load()}}
                            .dump()
                            .c_str());
    std::fflush(stdout);
  }
}

void print_summary(const Args& a, const Totals& totals, double elapsed) {
  nlohmann::json summary = {
      {"servers", a.servers},
      {"clients", a.clients},
      {"batch", a.batch},
      {"calls", totals.calls},
      {"failures", totals.failures},
      {"first_error", totals.first_error},
      {"fallback_calls", totals.fallback_calls},
      {"retried_calls", totals.retried_calls},
      {"bitwise_equal_calls", totals.bitwise_equal},
      {"max_abs_difference", totals.max_difference},
      {"checked", a.check},
      {"patches_per_s", double(totals.calls - totals.failures) * a.batch / elapsed},
      {"work_ms", a.work_ms},
      // Wall time per event and client: the work plus the call, as the capacity model has it.
      {"event_ms", totals.calls > 0 ? elapsed * 1e3 * a.clients / double(totals.calls) : 0.0},
      {"p50_ms", percentile(totals.latencies_ms, 0.5)},
      {"p99_ms", percentile(totals.latencies_ms, 0.99)},
      {"max_ms", percentile(totals.latencies_ms, 1.0)}};
  std::printf("%s\n", summary.dump().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  kaas::cli::App app{"kaas-client-load: concurrent RemoteClient calls against a set of servers"};
  Args a;
  add_options(app, a);
  if (const auto status = app.parse(argc, argv)) return *status;
  std::signal(SIGINT, request_stop);
  std::signal(SIGTERM, request_stop);

  try {
    const kaas::Backend& backend = kaas::default_backend();
    auto reference = kaas::client::DirectClient::from_repository(a.repository, a.model, backend);
    const Workload work = make_workload(a, *reference);
    const auto callers = make_callers(a, backend);

    Totals totals;
    const int seconds = int(a.seconds + 0.999);
    std::vector<Second> per_second(size_t(seconds) + 1);
    const auto start = Clock::now();
    const Load load{.a = a,
                    .spec = reference->signature(),
                    .work = work,
                    .start = start,
                    .end = start + std::chrono::duration<double>(a.seconds),
                    .per_second = per_second,
                    .totals = totals};
    std::vector<std::thread> threads;
    for (int c = 0; c < a.clients; ++c)
      threads.emplace_back([&, c] { run_caller(*callers[size_t(c)], c, load); });
    print_seconds(start, per_second, seconds);
    for (auto& t : threads) t.join();
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    print_summary(a, totals, elapsed);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kaas-client-load: %s\n", e.what());
    return 1;
  }
  return 0;
}
