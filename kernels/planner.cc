#include "kaas/kernels/planner.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
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

namespace kaas::planner {

namespace {

using Clock = std::chrono::steady_clock;

struct Entry {
  std::string chosen;
  std::vector<double> ms;
};

// Keys carry no tabs or newlines (they separate the fields and lines of the file).
std::string clean(std::string text) {
  for (char& c : text) {
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

std::string cache_key(const std::string& point, std::span<const Candidate> candidates) {
  std::string key = clean(host_cpu_info().model) + "|kaas " KAAS_VERSION "|" + clean(point) + "|";
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (i > 0) key += ',';
    key += clean(candidates[i].name);
  }
  return key;
}

// Lines "key \t chosen \t ms,ms,..."; malformed ones are skipped.
std::map<std::string, Entry> read_cache(const std::string& path) {
  std::map<std::string, Entry> entries;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const size_t a = line.find('\t');
    const size_t b = a == std::string::npos ? a : line.find('\t', a + 1);
    if (b == std::string::npos || a == 0 || b == a + 1) continue;
    Entry e;
    e.chosen = line.substr(a + 1, b - a - 1);
    std::stringstream times(line.substr(b + 1));
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

// Adds one entry under an exclusive lock; the file is replaced by rename (readers see the old or
// the new file, never a partial one). Failures are silent: the cache is an optimisation.
void write_cache(const std::string& path, const std::string& key, const Entry& entry) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  const int lock = ::open((path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0) return;
  if (::flock(lock, LOCK_EX) == 0) {
    auto entries = read_cache(path);
    entries[key] = entry;
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    {
      std::ofstream out(tmp, std::ios::trunc);
      for (const auto& [k, e] : entries) {
        out << k << '\t' << e.chosen << '\t';
        for (size_t i = 0; i < e.ms.size(); ++i) out << (i ? "," : "") << e.ms[i];
        out << '\n';
      }
      out.flush();
      if (!out) {
        out.close();
        std::filesystem::remove(tmp, ec);
      }
    }
    if (std::filesystem::exists(tmp, ec)) std::filesystem::rename(tmp, path, ec);
    ::flock(lock, LOCK_UN);
  }
  ::close(lock);
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
  text += from_cache ? " (cached; measured " : " (measured ";
  for (size_t i = 0; i < ms.size(); ++i) {
    text += i ? ", " : "";
    if (i < names.size()) text += names[i] + " ";
    text += ms[i] > 0.0 ? format_ms(ms[i]) : std::string("not run");
  }
  if (!from_cache) {
    char trial[48];
    std::snprintf(trial, sizeof trial, "; %.2f s trial", trial_seconds);
    text += trial;
  }
  return text + ")";
}

Decision choose(const std::string& point, std::span<const Candidate> candidates, Mode mode,
                const Budget& budget) {
  if (candidates.empty()) throw Error(ErrorCode::kInternal, "planner: no candidate for " + point);
  Decision d;
  for (const Candidate& c : candidates) d.names.push_back(c.name);
  if (mode == Mode::kFixed || candidates.size() == 1) {
    d.fixed = true;
    d.chosen_name = candidates[0].name;
    return d;
  }
  const std::string key = cache_key(point, candidates);
  const std::string path = cache_path();
  auto use = [&](const Entry& e) {
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (candidates[i].name == e.chosen && e.ms.size() == candidates.size()) {
        d.chosen = i;
        d.chosen_name = e.chosen;
        d.ms = e.ms;
        d.from_cache = true;
        return true;
      }
    }
    return false;
  };
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
  for (size_t i = 1; i < candidates.size(); ++i) {
    if (d.ms[i] < d.ms[d.chosen]) d.chosen = i;
  }
  d.chosen_name = candidates[d.chosen].name;
  const Entry entry{d.chosen_name, d.ms};
  std::lock_guard lock(memo_mutex());
  memo()[key] = entry;
  if (!path.empty()) write_cache(path, key, entry);
  return d;
}

}  // namespace kaas::planner
