// kaas-framework: EmTrkMichelId inside a framework-style event loop (event_loop.h: S streams, one
// oneTBB arena of T threads). Modules, in order:
//   hits    toy LArTPC event -> hits -> one 48 x 48 patch per hit (kernels on --backend)
//   direct  EmTrkMichelId in process on --backend (tbb: in the framework's arena)
//   remote  EmTrkMichelId on kaas-server, ExternalWork: acquire sends the call asynchronously
//           and returns the thread; the answer's callback resumes the event with produce
// Every event line carries the FNV-1a of its per-hit outputs, so runs with other stream counts,
// backends or the server can be compared exactly; direct and remote are checked against each
// other on every event.

#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "examples/framework/event_loop.h"
#include "examples/lartpc/reco.h"
#include "examples/lartpc/reco_calls.h"
#include "examples/lartpc/toy_options.h"
#include "kaas/backends/backend.h"
#include "kaas/client/direct_client.h"
#include "kaas/client/remote_client.h"
#include "kaas/common/cli.h"

namespace {

using namespace kaas;
using namespace kaas::examples;
using framework::Module;
using framework::WaitingTaskHolder;

struct Args {
  int events = 8, streams = 2, threads = 2, completion_threads = 1;
  std::vector<std::string> modules = {"direct"};
  std::string backend = "tbb", server = "127.0.0.1:8001", repository, model = "emtrkmichelid";
  bool quiet = false;
  ToyEventConfig toy;
};

struct EventData {
  int number = 0;
  ToyEvent event;
  EventInputs inputs;
  client::InferResult remote_answer;
  uint64_t direct = 0, remote = 0;
};

class HitsModule final : public Module<EventData> {
 public:
  HitsModule(const Backend& backend, const ToyEventConfig& toy) : backend_(backend), toy_(toy) {}
  const char* name() const override { return "hits"; }
  void produce(EventData& e, int) override {
    const Queue queue(backend_);
    e.event = make_toy_event(toy_, uint64_t(e.number));
    e.inputs.planes = prepare_planes(queue, e.event);
    e.inputs.patches = prepare_patches(queue, e.inputs.planes);
  }

 private:
  const Backend& backend_;
  const ToyEventConfig toy_;
};

// In process: a pool of model instances, one per module call running at once (at most the
// arena's size); each call takes one and gives it back.
class DirectModule final : public Module<EventData> {
 public:
  DirectModule(const Args& args, const Backend& backend) : args_(args), backend_(backend) {
    for (int i = 0; i < args.threads; ++i) free_.push_back(make());
  }
  const char* name() const override { return "direct"; }
  void produce(EventData& e, int) override {
    std::unique_ptr<client::DirectClient> c;
    {
      std::lock_guard lock(mutex_);
      if (!free_.empty()) {
        c = std::move(free_.back());
        free_.pop_back();
      }
    }
    if (!c) c = make();
    set_inputs(*c, Send::kPatches, e.inputs);
    e.direct = fingerprint(hit_scores(c->run(), Send::kPatches, c->signature(), e.inputs));
    std::lock_guard lock(mutex_);
    free_.push_back(std::move(c));
  }

 private:
  std::unique_ptr<client::DirectClient> make() const {
    client::DirectOptions options;
    options.batch_mode = client::BatchMode::kRagged;
    return client::DirectClient::from_repository(args_.repository, args_.model, backend_, options);
  }
  const Args& args_;
  const Backend& backend_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<client::DirectClient>> free_;
};

// On kaas-server, ExternalWork: one client per stream on one connection.
class RemoteModule final : public Module<EventData> {
 public:
  explicit RemoteModule(const Args& args) {
    client::ConnectionOptions connection_options;
    connection_options.completion_threads = args.completion_threads;
    const auto connection = client::RemoteConnection::connect(args.server, connection_options);
    client::RemoteOptions options;
    options.model = args.model;
    options.batch_mode = client::BatchMode::kRagged;
    for (int s = 0; s < args.streams; ++s)
      clients_.push_back(client::RemoteClient::create(connection, options));
  }
  const char* name() const override { return "remote"; }
  bool external_work() const override { return true; }
  void acquire(EventData& e, int stream, WaitingTaskHolder holder) override {
    client::RemoteClient& c = *clients_[size_t(stream)];
    set_inputs(c, Send::kPatches, e.inputs);  // the patches stay in the event until produce
    c.run_async([&e, holder](client::InferResult result, std::exception_ptr error) {
      e.remote_answer = std::move(result);
      holder.done(error);
    });
  }
  void produce(EventData& e, int stream) override {
    const client::RemoteClient& c = *clients_[size_t(stream)];
    e.remote = fingerprint(hit_scores(e.remote_answer, Send::kPatches, c.signature(), e.inputs));
    e.remote_answer = {};
  }

 private:
  std::vector<std::unique_ptr<client::RemoteClient>> clients_;
};

bool has(const std::vector<std::string>& list, const char* item) {
  for (const auto& i : list)
    if (i == item) return true;
  return false;
}

int run(const Args& args) {
  const Backend& backend = find_backend(args.backend);
  const bool direct = has(args.modules, "direct"), remote = has(args.modules, "remote");
  if (direct && args.repository.empty())
    throw Error(ErrorCode::kInvalidArgument, "the direct module needs --repository");
  HitsModule hits(backend, args.toy);
  std::unique_ptr<DirectModule> direct_module;
  std::unique_ptr<RemoteModule> remote_module;
  std::vector<Module<EventData>*> modules{&hits};
  if (direct)
    modules.push_back((direct_module = std::make_unique<DirectModule>(args, backend)).get());
  if (remote) modules.push_back((remote_module = std::make_unique<RemoteModule>(args)).get());

  framework::EventLoop<EventData> loop(args.threads, args.streams);
  std::mutex print_mutex;
  int mismatches = 0;
  const auto start = std::chrono::steady_clock::now();
  loop.run(args.events, modules, [&](const EventData& e) {
    std::lock_guard lock(print_mutex);
    const bool differ = direct && remote && e.direct != e.remote;
    mismatches += differ;
    if (!args.quiet || differ)
      std::printf("event %d: %zu hits; direct %016llx; remote %016llx%s\n", e.number,
                  e.event.hits.size(), static_cast<unsigned long long>(e.direct),
                  static_cast<unsigned long long>(e.remote), differ ? "  DIFFER" : "");
  });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string names;
  for (const auto* m : modules) names += (names.empty() ? "" : ",") + std::string(m->name());
  std::printf(
      "kaas-framework: %d events, %d streams, arena %d threads, backend %s, modules %s: %.2f s, "
      "%.2f events/s, peak threads %d (arena + %d)\n",
      args.events, args.streams, args.threads, std::string(backend.name()).c_str(), names.c_str(),
      seconds, args.events / seconds, loop.peak_threads(), loop.peak_threads() - args.threads);
  if (mismatches > 0) {
    std::fprintf(stderr, "kaas-framework: %d events differ between direct and remote\n",
                 mismatches);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  kaas::cli::App app{
      "kaas-framework: EmTrkMichelId in a framework-style oneTBB event loop (streams, "
      "direct module, ExternalWork module on kaas-server)"};
  Args args;
  args.toy.wires = 128;
  args.toy.ticks = 1000;
  args.toy.tracks_per_plane = 2;
  args.toy.showers_per_plane = 1;
  app.add_option("--events", args.events, "events")->check(kaas::cli::range(1, 1000000));
  app.add_option("--streams", args.streams, "events processed at once")
      ->check(kaas::cli::range(1, 256));
  app.add_option("--threads", args.threads, "the framework's arena (its only worker threads)")
      ->check(kaas::cli::range(1, 1024));
  app.add_option("--modules", args.modules, "after hits: direct, remote or direct,remote")
      ->delimiter(',')
      ->check(kaas::cli::one_of({"direct", "remote"}));
  app.add_option("--backend", args.backend,
                 "kernels of the hits and direct modules (" + backend_choices() + ")");
  app.add_option("--repository", args.repository, "model repository (direct module)");
  app.add_option("--server", args.server, "kaas-server gRPC address (remote module)");
  app.add_option("--model", args.model, "patch model name");
  app.add_option("--completion-threads", args.completion_threads,
                 "the remote connection's completion threads")
      ->check(kaas::cli::range(1, 64));
  add_toy_event_options(app, args.toy);
  app.add_flag("--quiet", args.quiet, "no per-event lines");
  if (const auto status = app.parse(argc, argv)) return *status;
  try {
    return run(args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kaas-framework: %s\n", e.what());
    return 1;
  }
}
