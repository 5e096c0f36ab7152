#include "kaas/kernels/planner.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "kaas/backends/cpu/cpu_info.h"
#include "kaas/build_config.h"
#include "kaas/common/error.h"
#include "kaas_build/kernel_sources_digest.h"

namespace kaas::planner {

namespace {

using Clock = std::chrono::steady_clock;

struct Entry {
  std::string chosen;
  std::vector<double> ms;
  std::string cpu;  // measured on (a fourth column; older files have three)
};

// Keys carry no tabs or newlines (they separate the fields and lines of the file).
std::string clean(std::string text) {
  for (char& c : text) {
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

// A model's plan file applies on any CPU and any build of this version (its entries name the CPU
// they were measured on); the per-machine cache is keyed by CPU model and by the kernel code that
// was timed, so a rebuild with changed kernels measures again instead of reusing old timings.
std::string cache_key(const std::string& point, std::span<const Candidate> candidates,
                      bool any_cpu) {
  std::string key = any_cpu ? std::string("any CPU|kaas " KAAS_VERSION "|")
                            : clean(host_cpu_info().model) +
                                  "|kaas " KAAS_VERSION " kernels " KAAS_KERNEL_SOURCES_DIGEST "|";
  key += clean(point) + "|";
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (i > 0) key += ',';
    key += clean(candidates[i].name);
  }
  return key;
}

// A plan file or cache holds a few hundred short lines; anything larger is not one of ours and is
// read as empty (the next write replaces it), never loaded whole.
constexpr std::uintmax_t kMaxCacheBytes = 1 << 20;

// Lines "key \t chosen \t ms,ms,... [\t cpu]"; malformed ones are skipped.
std::map<std::string, Entry> read_cache(const std::string& path) {
  std::map<std::string, Entry> entries;
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec || size > kMaxCacheBytes) return entries;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const size_t a = line.find('\t');
    const size_t b = a == std::string::npos ? a : line.find('\t', a + 1);
    if (b == std::string::npos || a == 0 || b == a + 1) continue;
    Entry e;
    e.chosen = line.substr(a + 1, b - a - 1);
    size_t times_end = line.find('\t', b + 1);
    if (times_end != std::string::npos)
      e.cpu = line.substr(times_end + 1);
    else
      times_end = line.size();
    std::stringstream times(line.substr(b + 1, times_end - b - 1));
    std::string item;
    bool ok = true;
    while (std::getline(times, item, ',')) {
      char* end = nullptr;
      const double v = std::strtod(item.c_str(), &end);
      if (end == item.c_str() || *end != '\0' || !(v >= 0.0) || !std::isfinite(v)) ok = false;
      e.ms.push_back(v);
    }
    if (ok) entries[line.substr(0, a)] = std::move(e);
  }
  return entries;
}

// An exclusive flock on <path>.lock for a scope (none when the lock file cannot be opened).
class FileLock {
 public:
  explicit FileLock(const std::string& path) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    fd_ = ::open((path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ >= 0 && ::flock(fd_, LOCK_EX) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~FileLock() {
    if (fd_ < 0) return;
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// Adds one entry, the caller holding the file's lock; the file is replaced by rename (readers see
// the old or the new file, never a partial one). Returns whether it was written.
bool write_locked(const std::string& path, const std::string& key, const Entry& entry) {
  std::error_code ec;
  auto entries = read_cache(path);
  entries[key] = entry;
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    for (const auto& [k, e] : entries) {
      out << k << '\t' << e.chosen << '\t';
      for (size_t i = 0; i < e.ms.size(); ++i) out << (i ? "," : "") << e.ms[i];
      out << '\t' << clean(e.cpu) << '\n';
    }
    out.flush();
    if (!out) {
      out.close();
      std::filesystem::remove(tmp, ec);
      return false;
    }
  }
  std::filesystem::rename(tmp, path, ec);
  return !ec;
}

// Adds one entry under the file's exclusive lock. Failures are silent: the cache is an
// optimisation.
void write_cache(const std::string& path, const std::string& key, const Entry& entry) {
  const FileLock lock(path);
  if (lock.held()) write_locked(path, key, entry);
}

std::mutex& memo_mutex() {
  static std::mutex m;
  return m;
}

// Decisions of this process, so that a second model load reads no file.
std::map<std::string, Entry>& memo() {
  static std::map<std::string, Entry> entries;
  return entries;
}

std::string format_ms(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g ms", ms);
  return text;
}

}  // namespace

void forget_process_decisions() {
  std::lock_guard lock(memo_mutex());
  memo().clear();
}

Mode mode_from_environment() {
  const char* value = std::getenv("KAAS_PLANNER");
  const std::string v = value == nullptr ? "" : value;
  if (v.empty() || v == "measure") return Mode::kMeasure;
  if (v == "fixed") return Mode::kFixed;
  throw Error(ErrorCode::kInvalidArgument,
              "KAAS_PLANNER: expected measure or fixed, received '" + v + "'");
}

std::string cache_path() {
  if (const char* explicit_path = std::getenv("KAAS_PLANNER_CACHE")) {
    const std::string p = explicit_path;
    return p == "off" ? std::string() : p;
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/')
    return std::string(xdg) + "/kaas/plans.tsv";
  if (const char* home = std::getenv("HOME"); home != nullptr && home[0] == '/')
    return std::string(home) + "/.cache/kaas/plans.tsv";
  return {};
}

std::string Decision::describe(const std::string& point) const {
  std::string text = point + ": " + chosen_name;
  if (pinned) return text + " (pinned)";
  if (fixed) return text + " (fixed rule)";
  text += from_plan_file ? " (the model's plan file; measured on " + measured_on + ": "
          : from_cache   ? " (cached; measured "
                         : " (measured ";
  for (size_t i = 0; i < ms.size(); ++i) {
    text += i ? ", " : "";
    if (i < names.size()) text += names[i] + " ";
    text += ms[i] > 0.0 ? format_ms(ms[i]) : std::string("not run");
  }
  if (!from_cache) {
    char trial[48];
    std::snprintf(trial, sizeof trial, "; %.2f s trial", trial_seconds);
    text += trial;
    if (!plan_file_written) text += "; the model's plan file could not be written";
  }
  return text + ")";
}

namespace {

// One trial: every candidate timed in turn; the fastest is chosen.
void measure(std::span<const Candidate> candidates, const Budget& budget, Decision& d) {
  // Round robin: one warm-up run each, then timed runs in turn while the budget lasts, so a
  // machine-wide slowdown during the trial hits every candidate alike.
  const auto start = Clock::now();
  d.ms.assign(candidates.size(), 0.0);
  for (const Candidate& c : candidates) c.run();
  for (int round = 0; round < budget.max_runs; ++round) {
    if (round > 0 &&
        std::chrono::duration<double>(Clock::now() - start).count() > budget.max_seconds)
      break;
    for (size_t i = 0; i < candidates.size(); ++i) {
      const auto t0 = Clock::now();
      candidates[i].run();
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      if (round == 0 || ms < d.ms[i]) d.ms[i] = ms;
    }
  }
  d.trial_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  d.chosen = 0;
  for (size_t i = 1; i < candidates.size(); ++i) {
    if (d.ms[i] < d.ms[d.chosen]) d.chosen = i;
  }
  d.chosen_name = candidates[d.chosen].name;
  d.measured_on = host_cpu_info().model;
}

}  // namespace

Decision choose(const std::string& point, std::span<const Candidate> candidates, Mode mode,
                const Budget& budget, const std::string& plan_file) {
  if (candidates.empty()) throw Error(ErrorCode::kInternal, "planner: no candidate for " + point);
  Decision d;
  for (const Candidate& c : candidates) d.names.push_back(c.name);
  if (mode == Mode::kFixed || candidates.size() == 1) {
    d.fixed = true;
    d.chosen_name = candidates[0].name;
    return d;
  }
  const bool model_plan = !plan_file.empty();
  const std::string key = cache_key(point, candidates, model_plan);
  const std::string path = model_plan ? plan_file : cache_path();
  auto use = [&](const Entry& e) {
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (candidates[i].name == e.chosen && e.ms.size() == candidates.size()) {
        d.chosen = i;
        d.chosen_name = e.chosen;
        d.ms = e.ms;
        d.measured_on = e.cpu;
        d.from_cache = true;
        d.from_plan_file = model_plan;
        return true;
      }
    }
    return false;
  };
  if (model_plan) {
    // Lookup, trial and write under the plan file's lock: one process measures, the others
    // wait for its decision.
    const FileLock lock(path);
    const auto entries = read_cache(path);
    if (auto it = entries.find(key); it != entries.end() && use(it->second)) return d;
    measure(candidates, budget, d);
    d.plan_file_written =
        lock.held() && write_locked(path, key, {d.chosen_name, d.ms, d.measured_on});
    return d;
  }
  {
    std::lock_guard lock(memo_mutex());
    if (auto it = memo().find(key); it != memo().end() && use(it->second)) return d;
    if (!path.empty()) {
      const auto entries = read_cache(path);
      if (auto it = entries.find(key); it != entries.end() && use(it->second)) {
        memo()[key] = it->second;
        return d;
      }
    }
  }
  measure(candidates, budget, d);
  const Entry entry{d.chosen_name, d.ms, d.measured_on};
  std::lock_guard lock(memo_mutex());
  memo()[key] = entry;
  if (!path.empty()) write_cache(path, key, entry);
  return d;
}

}  // namespace kaas::planner
