#include "kaas/kernels/planner.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kaas/common/error.h"
#include "kaas_build/kernel_sources_digest.h"
#include "tests/support/scoped_env.h"

namespace kaas::testing {
namespace {

namespace fs = std::filesystem;

// A cache file in a fresh directory for each test; KAAS_PLANNER_CACHE restored afterwards.
class PlannerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kaas_planner_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    path_ = (dir_ / "sub" / "plans.tsv").string();  // its directory does not exist yet
    cache_env_.emplace("KAAS_PLANNER_CACHE", path_);
    planner::forget_process_decisions();
  }
  void TearDown() override {
    cache_env_.reset();
    planner::forget_process_decisions();
    fs::remove_all(dir_);
  }
  std::string file_text() const {
    std::ifstream in(path_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // Candidates that sleep for the given milliseconds and count their runs.
  std::vector<planner::Candidate> sleepers(const std::vector<int>& ms) {
    runs_.assign(ms.size(), 0);
    std::vector<planner::Candidate> list;
    for (size_t i = 0; i < ms.size(); ++i) {
      std::string name = "c";
      name += std::to_string(i);
      name += '_';
      name += std::to_string(ms[i]);
      name += "ms";
      list.push_back({name, [this, i, ms] {
                        ++runs_[i];
                        std::this_thread::sleep_for(std::chrono::milliseconds(ms[i]));
                      }});
    }
    return list;
  }

  std::string path_;
  fs::path dir_;
  std::vector<int> runs_;

 private:
  std::optional<ScopedEnv> cache_env_;
};

TEST_F(PlannerTest, FixedModeTakesTheFirstCandidateAndRunsNothing) {
  const auto list = sleepers({20, 1});
  const auto d = planner::choose("point", list, planner::Mode::kFixed);
  EXPECT_EQ(d.chosen, 0u);
  EXPECT_EQ(d.chosen_name, "c0_20ms");
  EXPECT_TRUE(d.fixed);
  EXPECT_EQ(runs_, (std::vector<int>{0, 0}));
  EXPECT_FALSE(fs::exists(path_));
  EXPECT_EQ(d.describe("point"), "point: c0_20ms (fixed rule)");
}

TEST_F(PlannerTest, MeasuresKeepsTheFastestAndARestartReadsItFromTheCache) {
  const auto list = sleepers({30, 2, 15});
  const auto d = planner::choose("point A", list, planner::Mode::kMeasure);
  EXPECT_EQ(d.chosen_name, "c1_2ms");
  EXPECT_FALSE(d.from_cache);
  ASSERT_EQ(d.ms.size(), 3u);
  EXPECT_GE(d.ms[0], 30.0);
  EXPECT_LT(d.ms[1], d.ms[2]);
  EXPECT_GT(d.trial_seconds, 0.0);
  for (int runs : runs_) EXPECT_GE(runs, 2) << "a warm-up and at least one timed run";
  EXPECT_NE(file_text().find("point A|c0_30ms,c1_2ms,c2_15ms\tc1_2ms\t"), std::string::npos)
      << file_text();

  // A restarted process (no decisions in memory) reads the file: no candidate runs.
  planner::forget_process_decisions();
  const auto again = sleepers({30, 2, 15});
  const auto cached = planner::choose("point A", again, planner::Mode::kMeasure);
  EXPECT_TRUE(cached.from_cache);
  EXPECT_EQ(cached.chosen, 1u);
  ASSERT_EQ(cached.ms.size(), d.ms.size());
  for (size_t i = 0; i < d.ms.size(); ++i) EXPECT_NEAR(cached.ms[i], d.ms[i], 1e-3 * d.ms[i]);
  EXPECT_EQ(runs_, (std::vector<int>{0, 0, 0}));
  EXPECT_NE(cached.describe("point A").find("point A: c1_2ms (cached; measured "),
            std::string::npos);
  EXPECT_NE(cached.describe("point A").find("measured c0_30ms 3"), std::string::npos)
      << "each time is named by its candidate: " << cached.describe("point A");

  // Another point or another candidate list is a new trial, kept beside the first.
  const auto other = sleepers({2, 30});
  EXPECT_FALSE(planner::choose("point B", other, planner::Mode::kMeasure).from_cache);
  EXPECT_NE(file_text().find("point A|"), std::string::npos);
  EXPECT_NE(file_text().find("point B|"), std::string::npos);
}

// Timings measured with other kernel code (another build's digest in the key) are not reused: the
// candidates run again and the new decision is kept beside the old line.
TEST_F(PlannerTest, ACacheFromOtherKernelSourcesIsMeasuredAgain) {
  const std::string digest = KAAS_KERNEL_SOURCES_DIGEST;
  ASSERT_EQ(digest.size(), 16u);
  const auto list = sleepers({30, 2});
  EXPECT_FALSE(planner::choose("point", list, planner::Mode::kMeasure).from_cache);
  const std::string marker = " kernels ";
  std::string text = file_text();
  const size_t at = text.find(marker + digest + "|point|");
  ASSERT_NE(at, std::string::npos) << text;
  const std::string other_digest(digest.size(), digest[0] == '0' ? '1' : '0');
  text.replace(at + marker.size(), digest.size(), other_digest);
  std::ofstream(path_, std::ios::trunc) << text;
  planner::forget_process_decisions();
  const auto again = sleepers({30, 2});
  const auto d = planner::choose("point", again, planner::Mode::kMeasure);
  EXPECT_FALSE(d.from_cache);
  for (int runs : runs_) EXPECT_GE(runs, 2) << "measured again";
  EXPECT_NE(file_text().find(marker + digest + "|point|"), std::string::npos) << file_text();
}

TEST_F(PlannerTest, CorruptCacheContentIsIgnoredAndReplaced) {
  fs::create_directories(fs::path(path_).parent_path());
  {
    std::ofstream out(path_);
    out << "garbage without tabs\n\t\t\nkey\tname\tnot-a-number\n";
    // A line for this very choice naming a candidate that no longer exists.
    out << "x|point C|c0_10ms,c1_1ms\tvanished\t1,2\n";
    out.write("\0\xff\xfe", 3);
  }
  const auto list = sleepers({10, 1});
  const auto d = planner::choose("point C", list, planner::Mode::kMeasure);
  EXPECT_FALSE(d.from_cache);
  EXPECT_EQ(d.chosen_name, "c1_1ms");
  const std::string text = file_text();
  EXPECT_EQ(text.find("garbage"), std::string::npos) << text;
  EXPECT_NE(text.find("point C|c0_10ms,c1_1ms\tc1_1ms\t"), std::string::npos) << text;
}

TEST_F(PlannerTest, ConcurrentWritersLoseNoDecision) {
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w) {
    writers.emplace_back([w] {
      std::vector<planner::Candidate> list{{"a", [] {}}, {"b", [] {}}};
      planner::choose("writer " + std::to_string(w), list, planner::Mode::kMeasure);
    });
  }
  for (auto& t : writers) t.join();
  const std::string text = file_text();
  for (int w = 0; w < 4; ++w)
    EXPECT_NE(text.find("writer " + std::to_string(w) + "|a,b\t"), std::string::npos) << text;
}

TEST_F(PlannerTest, AnUnwritableCacheCostsOnlyTheTrial) {
  ::setenv("KAAS_PLANNER_CACHE", "/proc/kaas-cannot-write/plans.tsv", 1);
  const auto list = sleepers({5, 1});
  EXPECT_EQ(planner::choose("point D", list, planner::Mode::kMeasure).chosen, 1u);
  ::setenv("KAAS_PLANNER_CACHE", "off", 1);
  EXPECT_EQ(planner::cache_path(), "");
}

// A model's plan file: the first process measures under the file's lock; one that loads the
// model meanwhile waits and takes that decision without running its own trial, whatever its
// timings would say; the entry applies on any CPU and names the CPU it was measured on.
TEST_F(PlannerTest, APlanFileDecisionIsMadeOnceAndWaitedFor) {
  const std::string plan = (dir_ / "model" / "1" / "kaas_plan.tsv").string();
  std::vector<int> first_runs(2, 0), second_runs(2, 0);
  auto timed = [](std::vector<int>& runs, int slow) {
    std::vector<planner::Candidate> list;
    for (int i = 0; i < 2; ++i)
      list.push_back({i == 0 ? "a" : "b", [&runs, i, slow] {
                        ++runs[size_t(i)];
                        std::this_thread::sleep_for(std::chrono::milliseconds(i == slow ? 40 : 1));
                      }});
    return list;
  };
  planner::Decision first, second;
  std::thread measuring([&] {
    first = planner::choose("sparse m", timed(first_runs, 0), planner::Mode::kMeasure, {}, plan);
  });
  // Starts once the first holds the lock (it has begun its trial).
  while (first_runs[0] + first_runs[1] == 0) std::this_thread::yield();
  second = planner::choose("sparse m", timed(second_runs, 1), planner::Mode::kMeasure, {}, plan);
  measuring.join();
  EXPECT_EQ(first.chosen_name, "b");
  EXPECT_FALSE(first.from_plan_file);
  EXPECT_TRUE(first.plan_file_written);
  EXPECT_EQ(second.chosen_name, "b") << "its own trial would have chosen a";
  EXPECT_TRUE(second.from_plan_file);
  ASSERT_EQ(second.ms.size(), first.ms.size());
  for (size_t i = 0; i < first.ms.size(); ++i)  // as written: six significant digits
    EXPECT_NEAR(second.ms[i], first.ms[i], 1e-5 * first.ms[i]) << i;
  EXPECT_EQ(second_runs, (std::vector<int>{0, 0}));
  EXPECT_EQ(second.measured_on, first.measured_on);
  EXPECT_NE(second.describe("sparse m").find("the model's plan file; measured on"),
            std::string::npos)
      << second.describe("sparse m");
  std::ifstream in(plan);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_EQ(line.rfind("any CPU|kaas ", 0), 0u) << line;
  EXPECT_NE(line.find("\t" + first.measured_on), std::string::npos) << line;
  EXPECT_EQ(file_text(), "") << "the machine's cache is not written";
}

TEST_F(PlannerTest, AnUnwritablePlanFileIsReported) {
  const auto list = sleepers({5, 1});
  const auto d = planner::choose("point E", list, planner::Mode::kMeasure, {},
                                 "/proc/kaas-cannot-write/kaas_plan.tsv");
  EXPECT_EQ(d.chosen, 1u);
  EXPECT_FALSE(d.plan_file_written);
  EXPECT_NE(d.describe("point E").find("could not be written"), std::string::npos);
}

TEST_F(PlannerTest, AnOversizedPlanFileIsNotReadAndIsReplaced) {
  const std::string plan = (dir_ / "big" / "kaas_plan.tsv").string();
  fs::create_directories(dir_ / "big");
  {
    std::ofstream out(plan);
    const std::string line(1000, 'x');
    for (int i = 0; i < 1100; ++i) out << line << "\tb\t1,2\n";  // over 1 MiB
  }
  const auto list = sleepers({5, 1});
  const auto d = planner::choose("point F", list, planner::Mode::kMeasure, {}, plan);
  EXPECT_FALSE(d.from_plan_file);
  EXPECT_EQ(d.chosen, 1u);
  EXPECT_LT(fs::file_size(plan), 4096u) << "replaced by this decision alone";
}

TEST(PlannerMode, ReadsKaasPlannerAndRejectsOtherValues) {
  const char* old = std::getenv("KAAS_PLANNER");
  const std::string saved = old == nullptr ? "" : old;
  ::setenv("KAAS_PLANNER", "fixed", 1);
  EXPECT_EQ(planner::mode_from_environment(), planner::Mode::kFixed);
  ::setenv("KAAS_PLANNER", "measure", 1);
  EXPECT_EQ(planner::mode_from_environment(), planner::Mode::kMeasure);
  ::setenv("KAAS_PLANNER", "fastest", 1);
  try {
    planner::mode_from_environment();
    ADD_FAILURE() << "accepted KAAS_PLANNER=fastest";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_STREQ(e.what(), "KAAS_PLANNER: expected measure or fixed, received 'fastest'");
  }
  if (old != nullptr) {
    ::setenv("KAAS_PLANNER", saved.c_str(), 1);
  } else {
    ::unsetenv("KAAS_PLANNER");
  }
}

}  // namespace
}  // namespace kaas::testing
