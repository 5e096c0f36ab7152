// kaas-reco: the reconstruction demo. Toy LArTPC events -> hits -> per-hit [track, em, none,
// michel] scores from the EmTrkMichelId CNN -> hit clusters -> per-cluster scores. The
// inference goes through kaas::client, in process (direct) or to kaas-server (remote), and
// sends either each plane's downsampled image with its hits (michel_from_image: patches are cut
// on the server) or every hit's 48 x 48 patch (emtrkmichelid). `--mode both` runs both clients
// on every event and checks that their per-hit outputs are bit-identical.

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "examples/lartpc/display.h"
#include "examples/lartpc/metrics.h"
#include "examples/lartpc/neighbourhood.h"
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
using client::InferenceClient;
using client::InferResult;
using Clock = std::chrono::steady_clock;

// A Michel working point chosen on validation events (--choose-working-point's file).
struct ChosenWorkingPoint {
  float threshold = 0.5f;
  double efficiency = 0, purity = 0;  // on the validation events
};
// Both tags' working points: the hit's own score and its neighbourhood's (neighbourhood.h).
struct ChosenWorkingPoints {
  ChosenWorkingPoint hit;
  std::optional<ChosenWorkingPoint> neighbourhood;  // files written before it existed lack it
  double radius_cm = 0;
};

struct Args {
  std::string mode = "both", server = "127.0.0.1:8001", repository, backend = "auto";
  std::vector<std::string> send = {"image"};
  std::string image_model = "michel_from_image", patch_model = "emtrkmichelid";
  int events = 3, first_event = 0, async = 1, retries = 2, deadline_ms = 0;
  bool gzip = false, fallback = false, quiet = false;
  float cluster_gap = 8.0f, michel_threshold = 0.5f;
  double michel_radius_cm = 4.0;  // the best of 1, 2, 3, 4, 6 cm on the validation events
  std::string display_dir, choose_working_point, working_point_file, roc_file, metrics_file;
  std::optional<ChosenWorkingPoints> working_point;  // read from working_point_file
  ToyEventConfig toy;
};

void add_options(kaas::cli::App& app, Args& args) {
  app.add_option("--mode", args.mode,
                 "direct (in process), remote (kaas-server) or both (checks "
                 "that they agree)")
      ->check(kaas::cli::one_of({"direct", "remote", "both"}));
  app.add_option("--server", args.server, "kaas-server gRPC address host:port");
  app.add_option("--send", args.send,
                 "image (planes + hits to michel_from_image), patches "
                 "(48x48 patches to emtrkmichelid), or both: image,patches")
      ->delimiter(',')
      ->check(kaas::cli::one_of({"image", "patches"}));
  app.add_option("--events", args.events, "events")->check(kaas::cli::range(1, 1000000));
  app.add_option("--first-event", args.first_event, "number of the first event")
      ->check(kaas::cli::range(0, 1 << 30));
  app.add_option("--backend", args.backend,
                 "client backend (" + kaas::backend_choices() +
                     "): preprocessing, aggregation and the direct client");
  app.add_option("--async", args.async, "events in flight (1: one call at a time)")
      ->check(kaas::cli::range(1, 64));
  app.add_option("--repository", args.repository,
                 "model repository for the direct client (as kaas-server's)");
  app.add_option("--image-model", args.image_model, "image + hits model name");
  app.add_option("--patch-model", args.patch_model, "patch CNN model name");
  app.add_flag("--gzip", args.gzip, "compress requests");
  app.add_option("--retries", args.retries, "remote retries on UNAVAILABLE / DEADLINE_EXCEEDED")
      ->check(kaas::cli::range(0, 100));
  app.add_option("--deadline-ms", args.deadline_ms, "per-call deadline (0: none)")
      ->check(kaas::cli::range(0, 86'400'000));
  app.add_flag("--fallback", args.fallback,
               "after the retries, run on a direct client (needs --repository)");
  app.add_flag("--quiet", args.quiet, "no per-event lines");
  app.add_option("--cluster-gap", args.cluster_gap, "largest peak-tick gap inside a cluster")
      ->check(kaas::cli::range(0.0f, 1e6f));
  app.add_option("--michel-threshold", args.michel_threshold,
                 "Michel score above which a hit or cluster counts as Michel")
      ->check(kaas::cli::range(0.0f, 1.0f));
  app.add_option("--michel-radius", args.michel_radius_cm,
                 "also tag Michel hits by the mean Michel score of the hits within this many cm "
                 "on their plane (0: off)")
      ->check(kaas::cli::range(0.0, 100.0));
  app.add_option("--choose-working-point", args.choose_working_point,
                 "choose the Michel working point on these (validation) events, the threshold "
                 "that maximizes efficiency x purity, and write it to this JSON file");
  app.add_option("--working-point", args.working_point_file,
                 "a --choose-working-point file: print the Michel tag at its threshold too "
                 "(and draw the displays at it)");
  app.add_option("--roc", args.roc_file,
                 "write the per-hit Michel ROC curve (efficiency vs false-positive rate, the "
                 "paper's points marked) to this SVG file");
  app.add_option("--metrics-json", args.metrics_file,
                 "write the truth-matched figures of the first --send path to this JSON file");
  app.add_option("--display", args.display_dir,
                 "write event displays here: event<E>_plane<P>.png (truth | prediction)");
  add_toy_event_options(app, args.toy);
}
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}
double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// What one client did over the run, for the comparison table.
struct Totals {
  int events = 0, fallbacks = 0, failed = 0;
  double infer_s = 0;
  int64_t sent = 0, received = 0;
};

// One way of sending (image or patches) with its clients.
struct Path {
  Send send;
  std::string model;
  std::unique_ptr<InferenceClient> direct;
  std::unique_ptr<client::RemoteClient> remote;
  client::ServerStatistics stats_before;
  bool have_stats = false;
  Totals direct_totals, remote_totals;
  double prep_s = 0, prep_cpu_s = 0, aggregate_s = 0;
  Evaluation evaluation;     // truth-matched, over every answered event
  Evaluation neighbourhood;  // the same with the neighbourhood Michel score (--michel-radius)
  // The cluster-level Michel selection at the working points (metrics.h), both scores.
  MichelSelection selection, neighbourhood_selection;

  const models::ModelSignature& signature() const {
    return direct ? direct->signature() : remote->signature();
  }
};

// One event on one path while its calls are in flight (the inputs stay here until answered).
struct Work {
  int event_number = 0;
  Path* path = nullptr;
  std::shared_ptr<const ToyEvent> event;
  std::shared_ptr<const Clusters> clusters;
  EventInputs inputs;
  std::future<InferResult> direct, remote;
  bool empty = false;     // no hits: nothing to send
  double occupancy = -1;  // non-zero fraction of its hits' patch pixels, where counted
};

std::string megabytes(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MB", bytes / 1e6);
  return text;
}

class Reco {
 public:
  explicit Reco(const Args& args)
      : args_(args), backend_(find_backend(args.backend)), queue_(backend_) {}

  // The whole job: open the clients, send every event (at most --async in flight per path),
  // then print the comparison table.
  int run() {
    std::printf("kaas-reco: mode %s, send %s, %d events, client backend %s%s%s, %d in flight\n",
                args_.mode.c_str(), join(args_.send).c_str(), args_.events,
                std::string(backend_.name()).c_str(), remote() ? ", server " : "",
                remote() ? args_.server.c_str() : "", args_.async);
    if (!args_.display_dir.empty()) {  // before any inference: a bad directory fails at once
      std::error_code ec;
      std::filesystem::create_directories(args_.display_dir, ec);
      if (ec || !std::filesystem::is_directory(args_.display_dir))
        throw Error(ErrorCode::kInvalidArgument, "--display " + args_.display_dir +
                                                     ": cannot create the directory" +
                                                     (ec ? ": " + ec.message() : std::string()));
    }
    open_paths();
    std::deque<std::unique_ptr<Work>> in_flight;
    const size_t window = size_t(args_.async) * paths_.size();
    for (int e = args_.first_event; e < args_.first_event + args_.events; ++e) {
      const auto gen_start = Clock::now();
      auto event = std::make_shared<const ToyEvent>(make_toy_event(args_.toy, uint64_t(e)));
      generate_s_ += seconds_since(gen_start);
      const auto cluster_start = Clock::now();
      auto clusters = std::make_shared<const Clusters>(cluster_hits(*event, args_.cluster_gap));
      cluster_s_ += seconds_since(cluster_start);
      for (auto& path : paths_) {
        in_flight.push_back(submit(e, *path, event, clusters));
        while (in_flight.size() >= window) {
          complete(*in_flight.front());
          in_flight.pop_front();
        }
      }
    }
    while (!in_flight.empty()) {
      complete(*in_flight.front());
      in_flight.pop_front();
    }
    if (progress_shown_) std::fprintf(stderr, "\n");
    print_table();
    return mismatched_events_ == 0 && lost_events_ == 0 ? 0 : 1;
  }

 private:
  bool direct() const { return args_.mode != "remote"; }
  // The path whose events count the patch occupancy: one that cuts patches anyway, if any.
  const Path* occupancy_path() const {
    for (const auto& p : paths_)
      if (p->send == Send::kPatches) return p.get();
    return paths_.front().get();
  }
  float display_threshold() const {
    return args_.working_point ? args_.working_point->hit.threshold : args_.michel_threshold;
  }
  bool remote() const { return args_.mode != "direct"; }

  // One Path per --send with a direct and/or a remote client of its model.
  void open_paths() {
    std::shared_ptr<client::RemoteConnection> connection;
    if (remote()) {
      client::ConnectionOptions c;
      c.gzip = args_.gzip;
      connection = client::RemoteConnection::connect(args_.server, c);
    }
    client::DirectOptions direct_options;
    direct_options.batch_mode = client::BatchMode::kRagged;
    for (const std::string& s : args_.send) {
      auto path = std::make_unique<Path>();
      path->send = s == "image" ? Send::kImage : Send::kPatches;
      path->model = path->send == Send::kImage ? args_.image_model : args_.patch_model;
      if (direct())
        path->direct = client::DirectClient::from_repository(args_.repository, path->model,
                                                             backend_, direct_options);
      if (remote()) open_remote(*path, connection, direct_options);
      paths_.push_back(std::move(path));
    }
  }

  void open_remote(Path& path, std::shared_ptr<client::RemoteConnection> connection,
                   const client::DirectOptions& direct_options) {
    client::RemoteOptions options;
    options.model = path.model;
    options.batch_mode = client::BatchMode::kRagged;
    options.retries = args_.retries;
    if (args_.fallback) {
      options.fallback = [this, model = path.model, direct_options] {
        return client::DirectClient::from_repository(args_.repository, model, backend_,
                                                     direct_options);
      };
    }
    path.remote = client::RemoteClient::create(std::move(connection), options);
    try {  // for the server compute column; a server without statistics leaves it empty
      path.stats_before = path.remote->statistics();
      path.have_stats = true;
    } catch (const Error&) {
    }
  }
  static std::string join(const std::vector<std::string>& items) {
    std::string text;
    for (const auto& i : items) text += (text.empty() ? "" : ",") + i;
    return text;
  }

  client::CallOptions call_options() const {
    client::CallOptions options;
    if (args_.deadline_ms > 0) options.deadline = std::chrono::milliseconds(args_.deadline_ms);
    return options;
  }

  std::unique_ptr<Work> submit(int e, Path& path, std::shared_ptr<const ToyEvent> event,
                               std::shared_ptr<const Clusters> clusters) {
    auto w = std::make_unique<Work>();
    w->event_number = e;
    w->path = &path;
    w->event = std::move(event);
    w->clusters = std::move(clusters);
    const auto start = Clock::now();
    const double cpu = process_cpu_seconds();
    w->inputs.planes = prepare_planes(queue_, *w->event);
    if (path.send == Send::kPatches) w->inputs.patches = prepare_patches(queue_, w->inputs.planes);
    path.prep_cpu_s += process_cpu_seconds() - cpu;
    path.prep_s += seconds_since(start);
    if (&path == occupancy_path()) {  // outside the timing: patches cut here only to count
      const PatchOccupancy occupancy =
          patch_occupancy(path.send == Send::kPatches ? w->inputs.patches
                                                      : prepare_patches(queue_, w->inputs.planes));
      w->occupancy = occupancy.fraction();
      occupancy_.nonzero += occupancy.nonzero;
      occupancy_.pixels += occupancy.pixels;
    }
    w->empty = w->event->hits.empty();
    if (w->empty) return w;
    // One event at a time: direct, then remote, each on an otherwise idle machine. With K in
    // flight every call is asynchronous.
    const bool sequential = args_.async == 1;
    for (InferenceClient* c : {static_cast<InferenceClient*>(path.direct.get()),
                               static_cast<InferenceClient*>(path.remote.get())}) {
      if (!c) continue;
      set_inputs(*c, path.send, w->inputs);
      auto& future = c == path.direct.get() ? w->direct : w->remote;
      if (sequential) {
        std::promise<InferResult> done;
        try {
          done.set_value(c->run(call_options()));
        } catch (...) {
          done.set_exception(std::current_exception());
        }
        future = done.get_future();
      } else {
        future = c->run_async(call_options());
      }
    }
    return w;
  }

  // Waits for one work item's calls, compares direct with remote, aggregates the clusters and
  // prints the event line.
  void complete(Work& w) {
    Path& path = *w.path;
    std::string calls;
    const std::optional<HitScores> direct =
        collect(w, w.direct, path.direct_totals, "direct", calls);
    const std::optional<HitScores> remote =
        collect(w, w.remote, path.remote_totals, "remote", calls);
    const bool failed = (path.direct && !direct) || (path.remote && !remote);
    if (failed && !w.empty) ++lost_events_;
    std::string verdict;
    if (direct && remote) {
      const bool same = direct->scores == remote->scores && direct->fiducial == remote->fiducial;
      verdict = same ? "; direct == remote" : "; direct != remote: MISMATCH";
      if (!same) ++mismatched_events_;
    }
    std::string line = "event " + std::to_string(w.event_number) + " [" + send_name(path.send) +
                       "]: " + std::to_string(w.event->hits.size()) + " hits, " +
                       std::to_string(w.clusters->size()) + " clusters";
    const HitScores* scores = direct ? &*direct : remote ? &*remote : nullptr;
    std::string truth_line;
    if (scores) {
      cross_check(w, *scores);
      line += cluster_summary(w, *scores, truth_line);
      if (!args_.display_dir.empty() && &path == paths_.front().get()) display(w, *scores);
    }
    ++completed_;
    if (!args_.quiet) {
      if (progress_shown_) std::fprintf(stderr, "\r\033[K");
      std::string occupancy;
      if (w.occupancy >= 0) {
        char text[64];
        std::snprintf(text, sizeof text, "; patches %.2f %% non-zero", 100.0 * w.occupancy);
        occupancy = text;
      }
      std::printf("%s%s%s%s\n", line.c_str(), occupancy.c_str(), calls.c_str(), verdict.c_str());
      if (!truth_line.empty()) std::printf("  truth: %s\n", truth_line.c_str());
      std::fflush(stdout);
    }
    show_progress();
  }

  // One client's answer for the work item (nothing if it has no such client or the call
  // failed), counted in its totals and described in `calls`.
  std::optional<HitScores> collect(const Work& w, std::future<InferResult>& f, Totals& totals,
                                   const char* who, std::string& calls) {
    if (!f.valid()) return std::nullopt;
    try {
      const InferResult r = f.get();
      HitScores out = hit_scores(r, w.path->send, w.path->signature(), w.inputs);
      ++totals.events;
      totals.infer_s += r.info().seconds;
      totals.sent += r.info().bytes_sent;
      totals.received += r.info().bytes_received;
      char text[160];
      std::snprintf(text, sizeof text, "; %s %.2f s", who, r.info().seconds);
      calls += text;
      if (r.info().bytes_sent > 0) calls += " " + megabytes(double(r.info().bytes_sent)) + " sent";
      if (r.info().attempts > 1) calls += ", " + std::to_string(r.info().attempts) + " attempts";
      if (r.info().fallback) {
        ++totals.fallbacks;
        calls += " (answered by the fallback)";
      }
      return out;
    } catch (const std::exception& e) {
      ++totals.failed;
      calls += std::string("; ") + who + " FAILED: " + e.what();
      return std::nullopt;
    }
  }

  // Per-cluster scores (aggregated on the client's backend) -> the event's class counts; the
  // truth-matched figures go to `truth_line` and the path's totals.
  std::string cluster_summary(const Work& w, const HitScores& scores, std::string& truth_line) {
    const auto start = Clock::now();
    const auto per_cluster = aggregate(queue_, scores.scores, scores.fiducial, *w.clusters);
    w.path->aggregate_s += seconds_since(start);
    const Evaluation evaluation = evaluate(*w.event, scores.scores, scores.fiducial, *w.clusters,
                                           per_cluster, args_.michel_threshold);
    w.path->evaluation += evaluation;
    w.path->selection +=
        select_michels(*w.event, scores.scores, scores.fiducial, hit_selection_threshold());
    if (args_.michel_radius_cm > 0) {
      const auto michel =
          neighbourhood_michel_scores(*w.event, scores.scores, args_.michel_radius_cm);
      const auto around = with_michel_scores(scores.scores, michel);
      w.path->neighbourhood += evaluate(*w.event, around, scores.fiducial, *w.clusters, per_cluster,
                                        args_.michel_threshold);
      if (const auto threshold = neighbourhood_selection_threshold())
        w.path->neighbourhood_selection +=
            select_michels(*w.event, around, scores.fiducial, *threshold);
    }
    truth_line = summary_line(evaluation);
    int64_t by_class[3] = {}, michel = 0;
    for (size_t c = 0; c < w.clusters->size(); ++c) {
      const float* s = &per_cluster[c * 4];
      ++by_class[std::max_element(s, s + 3) - s];
      michel += s[3] > args_.michel_threshold;
    }
    char hash[40];
    std::snprintf(hash, sizeof hash, "; outputs %016llx",
                  static_cast<unsigned long long>(fingerprint(scores)));
    return " (track " + std::to_string(by_class[0]) + ", em " + std::to_string(by_class[1]) +
           ", none " + std::to_string(by_class[2]) + "; Michel-like " + std::to_string(michel) +
           ")" + hash;
  }

  // One display per plane of the event (the first --send path's scores).
  void display(const Work& w, const HitScores& scores) {
    namespace fs = std::filesystem;
    for (int p = 0; p < int(w.event->planes.size()); ++p) {
      const fs::path file =
          fs::path(args_.display_dir) /
          ("event" + std::to_string(w.event_number) + "_plane" + std::to_string(p) + ".png");
      DisplayLabels labels;
      labels.event_number = w.event_number;
      labels.michel_threshold = display_threshold();
      if (args_.working_point) labels.threshold_origin = "chosen on validation events";
      write_event_display(file, *w.event, p, scores.scores, scores.fiducial, labels);
      ++displays_written_;
    }
  }

  // The same event through image and patches: the per-hit scores should agree.
  void cross_check(const Work& w, const HitScores& scores) {
    if (paths_.size() < 2) return;
    auto& first = first_scores_[w.event_number];
    if (first.scores.empty()) {
      first = scores;
      return;
    }
    double max_diff = 0;
    for (size_t i = 0; i < scores.scores.size() && i < first.scores.size(); ++i)
      max_diff = std::max(max_diff, double(std::fabs(scores.scores[i] - first.scores[i])));
    max_image_patch_diff_ = std::max(max_image_patch_diff_, max_diff);
    if (scores.fiducial != first.fiducial || scores.scores.size() != first.scores.size())
      ++image_patch_disagreements_;
    first_scores_.erase(w.event_number);
  }

  void show_progress() {
    const size_t total = size_t(args_.events) * paths_.size();
    if (!isatty(STDERR_FILENO) || total < 2) return;
    const int width = 30, done = int(width * completed_ / total);
    std::fprintf(stderr, "[%s%s] %zu/%zu  %.1f s", std::string(size_t(done), '#').c_str(),
                 std::string(size_t(width - done), ' ').c_str(), completed_, total,
                 seconds_since(start_));
    std::fflush(stderr);
    progress_shown_ = true;
  }

  void print_table() {
    const double n = args_.events;
    std::printf(
        "\nper event (mean of %d): generation %.2f s, clustering %.3f s (not in the table)\n",
        args_.events, generate_s_ / n, cluster_s_ / n);
    std::printf(
        "| path | client prep s (wall / CPU) | sent per event | received | inference s | "
        "server compute s | total s |\n");
    std::printf("|---|---|---|---|---|---|---|\n");
    double image_sent = 0, patch_sent = 0;
    for (auto& path : paths_) {
      std::string server_s = "-";
      if (path->remote && path->have_stats && !path->remote->on_fallback()) {
        try {
          const auto after = path->remote->statistics();
          const double ns =
              double(after.compute_input_ns + after.compute_infer_ns + after.compute_output_ns) -
              double(path->stats_before.compute_input_ns + path->stats_before.compute_infer_ns +
                     path->stats_before.compute_output_ns);
          char text[32];
          std::snprintf(text, sizeof text, "%.2f", ns * 1e-9 / n);
          server_s = text;
        } catch (const Error&) {
        }
      }
      for (const bool is_remote : {false, true}) {
        if (!(is_remote ? static_cast<bool>(path->remote) : static_cast<bool>(path->direct)))
          continue;
        const Totals& t = is_remote ? path->remote_totals : path->direct_totals;
        const double k = std::max(t.events, 1);
        const double prep = path->prep_s / n, infer = t.infer_s / k;
        std::printf("| %s %s%s | %.3f / %.3f | %s | %s | %.2f | %s | %.2f |\n",
                    is_remote ? "remote" : "direct", send_name(path->send),
                    t.fallbacks ? " (fallback)" : "", prep, path->prep_cpu_s / n,
                    is_remote ? megabytes(double(t.sent) / k).c_str() : "0 (in process)",
                    is_remote ? megabytes(double(t.received) / k).c_str() : "-", infer,
                    is_remote ? server_s.c_str() : "-", prep + infer + path->aggregate_s / n);
        if (is_remote) (path->send == Send::kImage ? image_sent : patch_sent) = double(t.sent) / k;
      }
    }
    if (image_sent > 0 && patch_sent > 0)
      std::printf("remote bytes sent, image / patches: 1/%.1f\n", patch_sent / image_sent);
    if (paths_.size() > 1)
      std::printf("image vs patches, per-hit scores: max |difference| %.3g%s\n",
                  max_image_patch_diff_,
                  image_patch_disagreements_ ? " (fiducial flags or hit counts differ!)" : "");
    if (args_.mode == "both")
      std::printf(
          "direct vs remote: %s\n",
          mismatched_events_ == 0
              ? "identical per-hit outputs on every event"
              : (std::to_string(mismatched_events_) + " events with different outputs").c_str());
    if (lost_events_) std::printf("events without an answer: %d\n", lost_events_);
    for (auto& path : paths_) {
      std::printf("\ntruth-matched, %s (%d events; Michel score > %.2f):\n", send_name(path->send),
                  std::max(path->direct_totals.events, path->remote_totals.events),
                  double(args_.michel_threshold));
      std::printf("%s", summary_table(path->evaluation).c_str());
    }
    if (occupancy_.pixels)
      std::printf(
          "\npatch occupancy: %.2f %% of the fiducial hits' 48x48 patch pixels are non-zero "
          "(the signal is 0 outside regions of interest)\n",
          100.0 * occupancy_.fraction());
    print_working_points();
    print_paper_metrics();
    if (displays_written_)
      std::printf(
          "\nevent displays: %d PNGs in %s (event<E>_plane<P>.png; wire across, drift time "
          "down; truth, prediction, legend, zoom around the strongest Michel candidate)\n",
          displays_written_, args_.display_dir.c_str());
  }

  // The Michel tags (the hit's own score and, with --michel-radius, its neighbourhood's) at the
  // working points chosen on validation events (--working-point), and the choice on this run's
  // events (--choose-working-point).
  void print_working_points() {
    const Evaluation& evaluation = paths_.front()->evaluation;
    const Evaluation& neighbourhood = paths_.front()->neighbourhood;
    const bool with_neighbourhood = args_.michel_radius_cm > 0;
    char what[96];
    std::snprintf(what, sizeof what, "neighbourhood score (mean within %.1f cm)",
                  args_.michel_radius_cm);
    if (with_neighbourhood) {
      std::string line = std::string("Michel hits, ") + what + ", efficiency/purity at score >";
      for (size_t t = 0; t < kMichelCurve.size(); ++t) {
        char text[64];
        std::snprintf(text, sizeof text, "%s %.2f: %.3f/%.3f", t ? ";" : "",
                      double(kMichelCurve[t]), neighbourhood.michel_hit_curve[t].efficiency(),
                      neighbourhood.michel_hit_curve[t].purity());
        line += text;
      }
      std::printf("%s\n", line.c_str());
    }
    if (args_.working_point) {
      print_at(evaluation, "score", args_.working_point->hit);
      const auto& chosen = args_.working_point->neighbourhood;
      if (with_neighbourhood && chosen &&
          std::fabs(args_.working_point->radius_cm - args_.michel_radius_cm) < 1e-9)
        print_at(neighbourhood, what, *chosen);
      else if (with_neighbourhood)
        std::printf(
            "(no neighbourhood working point for %.1f cm in %s: choose one with "
            "--choose-working-point and --michel-radius %.1f)\n",
            args_.michel_radius_cm, args_.working_point_file.c_str(), args_.michel_radius_cm);
    }
    if (args_.choose_working_point.empty()) return;
    const WorkingPoint best = best_michel_working_point(evaluation);
    nlohmann::json file = {{"michel_threshold", best.threshold},
                           {"efficiency", best.michel_hits.efficiency()},
                           {"purity", best.michel_hits.purity()},
                           {"michel_hits", best.michel_hits.truth},
                           {"seed", args_.toy.seed},
                           {"first_event", args_.first_event},
                           {"events", args_.events},
                           {"chosen_by", "maximum of efficiency x purity of the Michel hits"}};
    std::printf(
        "Michel working point chosen on these events: score > %.3f, efficiency %.3f, purity "
        "%.3f\n",
        double(best.threshold), best.michel_hits.efficiency(), best.michel_hits.purity());
    if (with_neighbourhood) {
      const WorkingPoint around = best_michel_working_point(neighbourhood);
      file["neighbourhood"] = {{"radius_cm", args_.michel_radius_cm},
                               {"michel_threshold", around.threshold},
                               {"efficiency", around.michel_hits.efficiency()},
                               {"purity", around.michel_hits.purity()}};
      std::printf(
          "Michel working point chosen on these events, %s: score > %.3f, efficiency %.3f, "
          "purity %.3f\n",
          what, double(around.threshold), around.michel_hits.efficiency(),
          around.michel_hits.purity());
    }
    std::ofstream out(args_.choose_working_point);
    out << file.dump(1) << "\n";
    if (!out) throw Error(ErrorCode::kInternal, "cannot write " + args_.choose_working_point);
    std::printf("written to %s\n", args_.choose_working_point.c_str());
  }

  // The Michel selection's thresholds: the working points chosen on the validation events, or
  // --michel-threshold for the hit's own score without one.
  float hit_selection_threshold() const {
    return args_.working_point ? args_.working_point->hit.threshold : args_.michel_threshold;
  }
  std::optional<float> neighbourhood_selection_threshold() const {
    if (!args_.working_point || !args_.working_point->neighbourhood ||
        std::fabs(args_.working_point->radius_cm - args_.michel_radius_cm) >= 1e-9)
      return std::nullopt;
    return args_.working_point->neighbourhood->threshold;
  }

  static nlohmann::json selection_json(const MichelSelection& s, float threshold) {
    return {{"threshold", threshold},
            {"decays", s.decays},
            {"decays_kept", s.efficiency()},
            {"captures", s.captures},
            {"captures_rejected", s.rejection()}};
  }

  static void print_selection(const char* what, const MichelSelection& s, float threshold) {
    std::printf(
        "Michel selection at stopping-muon ends, %s > %.3f (>= %d such hits within %.0f cm): "
        "decays kept %.3f (%lld of %lld), captures rejected %.3f (%lld of %lld) (paper: 73 %% "
        "of mu+ decays kept, 90-92 %% of pi+ rejected)\n",
        what, double(threshold), kSelectionMinHits, kSelectionRadiusCm, s.efficiency(),
        static_cast<long long>(s.decays_tagged), static_cast<long long>(s.decays), s.rejection(),
        static_cast<long long>(s.captures - s.captures_tagged), static_cast<long long>(s.captures));
  }

  // The per-hit Michel tag as the DUNE paper quotes it (roc.h): efficiency at its two
  // false-positive rates, the ROC area and curve; --metrics-json keeps the figures.
  void print_paper_metrics() {
    const Evaluation& e = paths_.front()->evaluation;
    if (e.michel_scores.michel.empty() || e.michel_scores.other.empty()) return;
    const double hits = double(e.michel_scores.michel.size() + e.michel_scores.other.size());
    const auto curve = roc_curve(e.michel_scores);
    std::string line = "Michel hits per hit, as DUNE's EPJC 82 (2022) 903 measures them:";
    nlohmann::json at_rates = nlohmann::json::array();
    for (const PaperPoint& paper : kPaperMichelPoints) {
      const RocPoint p = at_false_positive_rate(e.michel_scores, paper.false_positive_rate);
      char text[160];
      std::snprintf(text, sizeof text,
                    " efficiency %.3f at %.2f %% false-positive rate (score > %.4f; paper %.3f);",
                    p.efficiency, 100.0 * paper.false_positive_rate, double(p.threshold),
                    paper.efficiency);
      line += text;
      at_rates.push_back({{"false_positive_rate", paper.false_positive_rate},
                          {"threshold", p.threshold},
                          {"efficiency", p.efficiency},
                          {"paper_efficiency", paper.efficiency}});
    }
    char text[160];
    std::snprintf(text, sizeof text,
                  " ROC area %.4f; Michel hits are %.2f %% of the fiducial hits (paper: 0.075 %%)",
                  roc_area(e.michel_scores), 100.0 * double(e.michel_scores.michel.size()) / hits);
    std::printf("%s%s\n", line.c_str(), text);
    const Path& first = *paths_.front();
    print_selection("hit score", first.selection, hit_selection_threshold());
    const auto around_threshold = neighbourhood_selection_threshold();
    if (around_threshold)
      print_selection("neighbourhood score", first.neighbourhood_selection, *around_threshold);
    if (!args_.roc_file.empty()) {
      std::ofstream(args_.roc_file)
          << roc_svg(curve, "Michel hits: " + std::to_string(args_.events) + " toy events, seed " +
                                std::to_string(args_.toy.seed));
      std::printf("Michel ROC curve: %s\n", args_.roc_file.c_str());
    }
    if (!args_.metrics_file.empty()) write_metrics_json(at_rates);
  }

  // --metrics-json: the figures printed above, of the first --send path.
  void write_metrics_json(const nlohmann::json& at_rates) const {
    const Path& first = *paths_.front();
    const Evaluation& e = first.evaluation;
    const auto around_threshold = neighbourhood_selection_threshold();
    const double hits = double(e.michel_scores.michel.size() + e.michel_scores.other.size());
    nlohmann::json out = {
        {"seed", args_.toy.seed},
        {"first_event", args_.first_event},
        {"events", args_.events},
        {"track_em_accuracy", e.track_em_accuracy()},
        {"michel_hit_fraction", double(e.michel_scores.michel.size()) / hits},
        {"michel_roc_area", roc_area(e.michel_scores)},
        {"michel_at_false_positive_rate", at_rates},
        {"michel_at_0_5",
         {{"efficiency", e.michel_hits.efficiency()}, {"purity", e.michel_hits.purity()}}},
        {"michel_selection", selection_json(first.selection, hit_selection_threshold())}};
    if (around_threshold)
      out["michel_selection_neighbourhood"] =
          selection_json(first.neighbourhood_selection, *around_threshold);
    if (args_.working_point) {
      const ClassCounts at =
          michel_hits_above(e, int(std::lround(args_.working_point->hit.threshold * kScoreBins)));
      out["michel_at_validation_working_point"] = {
          {"threshold", args_.working_point->hit.threshold},
          {"efficiency", at.efficiency()},
          {"purity", at.purity()}};
      const auto& chosen = args_.working_point->neighbourhood;
      if (chosen && args_.michel_radius_cm > 0) {
        const ClassCounts around = michel_hits_above(
            first.neighbourhood, int(std::lround(chosen->threshold * kScoreBins)));
        out["michel_neighbourhood_at_validation_working_point"] = {
            {"radius_cm", args_.michel_radius_cm},
            {"threshold", chosen->threshold},
            {"efficiency", around.efficiency()},
            {"purity", around.purity()}};
      }
    }
    std::ofstream file(args_.metrics_file);
    file << out.dump(1) << "\n";
    if (!file) throw Error(ErrorCode::kInternal, "cannot write " + args_.metrics_file);
  }

  static void print_at(const Evaluation& evaluation, const char* what,
                       const ChosenWorkingPoint& point) {
    const ClassCounts at =
        michel_hits_above(evaluation, int(std::lround(point.threshold * kScoreBins)));
    std::printf(
        "Michel hits at the working point chosen on validation events (%s > %.3f; there "
        "%.3f/%.3f): efficiency %.3f, purity %.3f (%lld of %lld Michel hits, %lld tagged)\n",
        what, double(point.threshold), point.efficiency, point.purity, at.efficiency(), at.purity(),
        static_cast<long long>(at.matched), static_cast<long long>(at.truth),
        static_cast<long long>(at.predicted));
  }

  const Args& args_;
  const Backend& backend_;
  Queue queue_;
  std::vector<std::unique_ptr<Path>> paths_;
  std::map<int, HitScores> first_scores_;
  double generate_s_ = 0, cluster_s_ = 0, max_image_patch_diff_ = 0;
  int mismatched_events_ = 0, lost_events_ = 0, image_patch_disagreements_ = 0;
  int displays_written_ = 0;
  PatchOccupancy occupancy_;
  size_t completed_ = 0;
  bool progress_shown_ = false;
  Clock::time_point start_ = Clock::now();
};

// One working point of a --choose-working-point file.
ChosenWorkingPoint read_point(const nlohmann::json& entry, const std::string& where) {
  ChosenWorkingPoint point{entry.at("michel_threshold").get<float>(),
                           entry.at("efficiency").get<double>(), entry.at("purity").get<double>()};
  if (!(point.threshold > 0.0f && point.threshold < 1.0f))
    throw Error(ErrorCode::kInvalidArgument, where + "michel_threshold must lie in (0, 1), not " +
                                                 std::to_string(point.threshold));
  return point;
}

// A --choose-working-point file: its thresholds and what they gave on the validation events.
ChosenWorkingPoints read_working_point(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorCode::kNotFound, "cannot open the file");
  const auto file = nlohmann::json::parse(in);  // throws, naming the position, when malformed
  ChosenWorkingPoints points{read_point(file, ""), std::nullopt, 0};
  if (file.contains("neighbourhood")) {
    const auto& entry = file.at("neighbourhood");
    points.neighbourhood = read_point(entry, "neighbourhood.");
    points.radius_cm = entry.at("radius_cm").get<double>();
  }
  return points;
}

}  // namespace

int main(int argc, char** argv) {
  kaas::cli::App app{
      "kaas-reco: toy LArTPC reconstruction with EmTrkMichelId, direct or via kaas-server"};
  Args args;
  add_options(app, args);
  // A site's settings in a file (TOML: `server = "h1:8001,h2:8001"`, `retries = 4`, ...);
  // options on the command line override it.
  app.set_config("--config", "", "TOML file with any of the options (long names, without --)");
  if (const auto status = app.parse(argc, argv)) return *status;
  const bool needs_repository = args.mode != "remote" || args.fallback;
  if (needs_repository && args.repository.empty()) {
    std::fprintf(stderr, "kaas-reco: --repository is needed for --mode %s%s\n", args.mode.c_str(),
                 args.fallback ? " and --fallback" : "");
    return 2;
  }
  if (!args.working_point_file.empty()) {
    try {
      args.working_point = read_working_point(args.working_point_file);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "kaas-reco: --working-point %s: %s\n", args.working_point_file.c_str(),
                   e.what());
      return 2;
    }
  }
  std::sort(args.send.begin(), args.send.end());
  args.send.erase(std::unique(args.send.begin(), args.send.end()), args.send.end());
  try {
    return Reco(args).run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kaas-reco: %s\n", e.what());
    return 1;
  }
}
