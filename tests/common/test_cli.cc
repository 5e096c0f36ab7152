// kaas::cli, the binaries' command lines: each setter reaches CLI11, and parse() reports help and
// errors as main's exit status.

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include "kaas/common/cli.h"

namespace kaas::cli {
namespace {

// parse() on a command line given as words (the program name first).
std::optional<int> parse(App& app, std::initializer_list<const char*> words) {
  std::vector<const char*> argv(words);
  return app.parse(static_cast<int>(argv.size()), argv.data());
}

TEST(Cli, ReadsEveryValueType) {
  App app{"test"};
  bool on = false, flag = false, unflag = true;
  int count = 0;
  std::uint32_t seed = 0;
  std::int64_t rows = 0;
  std::size_t bytes = 0;
  float gap = 0;
  double seconds = 0;
  std::string name;
  std::vector<int> batches;
  std::vector<std::int64_t> points;
  std::vector<std::string> words;
  app.add_option("--on", on);
  app.add_flag("--flag", flag);
  app.add_flag("!--no-check", unflag);
  app.add_option("--count", count);
  app.add_option("--seed", seed);
  app.add_option("--rows", rows);
  app.add_option("--bytes", bytes);
  app.add_option("--gap", gap);
  app.add_option("--seconds", seconds);
  app.add_option("--name", name);
  app.add_option("--batches", batches)->delimiter(',');
  app.add_option("--points", points)->expected(1, -1);
  app.add_option("--word", words)->take_all();
  EXPECT_EQ(
      parse(app, {"t",           "--on",      "true",       "--flag",    "--no-check",  "--count",
                  "-3",          "--seed",    "4000000000", "--rows",    "-9000000000", "--bytes",
                  "17179869184", "--gap",     "2.5",        "--seconds", "0.25",        "--name",
                  "emtrk",       "--batches", "1,64,256",   "--points",  "10",          "20",
                  "--word",      "a",         "--word",     "b"}),
      std::nullopt);
  EXPECT_TRUE(on);
  EXPECT_TRUE(flag);
  EXPECT_FALSE(unflag);
  EXPECT_EQ(count, -3);
  EXPECT_EQ(seed, 4000000000u);
  EXPECT_EQ(rows, -9000000000);
  EXPECT_EQ(bytes, std::size_t(1) << 34);
  EXPECT_EQ(gap, 2.5f);
  EXPECT_EQ(seconds, 0.25);
  EXPECT_EQ(name, "emtrk");
  EXPECT_EQ(batches, (std::vector<int>{1, 64, 256}));
  EXPECT_EQ(points, (std::vector<std::int64_t>{10, 20}));
  EXPECT_EQ(words, (std::vector<std::string>{"a", "b"}));
}

TEST(Cli, ChecksFailTheParseNamingTheOption) {
  int port = 0;
  std::size_t bytes = 0;
  double seconds = 0;
  std::string mode;
  std::string path;
  App app{"test"};
  app.add_option("--port", port)->check(range(0, 65535));
  app.add_option("--bytes", bytes)->check(range(std::size_t(1024), std::size_t(1) << 20));
  app.add_option("--seconds", seconds)->check(range(0.01, 10.0));
  app.add_option("--mode", mode)->check(one_of({"direct", "remote"}));
  app.add_option("--file", path)->check(existing_file());
  app.add_option("--dir", path)->check(existing_directory());
  testing::internal::CaptureStderr();
  for (auto words : {std::initializer_list<const char*>{"t", "--port", "65536"},
                     {"t", "--bytes", "1023"},
                     {"t", "--seconds", "11"},
                     {"t", "--mode", "both"},
                     {"t", "--file", "/nonexistent/kaas"},
                     {"t", "--dir", "/nonexistent/kaas"},
                     {"t", "--unknown"}}) {
    const auto status = parse(app, words);
    ASSERT_TRUE(status.has_value()) << words.begin()[1];
    EXPECT_NE(*status, 0) << words.begin()[1];
  }
  const std::string errors = testing::internal::GetCapturedStderr();
  for (const char* named : {"--port", "--bytes", "--seconds", "--mode", "--file", "--dir",
                            "--unknown", "65535", "remote"}) {
    EXPECT_NE(errors.find(named), std::string::npos) << named << " in:\n" << errors;
  }
  EXPECT_EQ(parse(app, {"t", "--port", "65535", "--mode", "remote", "--dir", "/"}), std::nullopt);
  EXPECT_EQ(port, 65535);
}

TEST(Cli, RequiredOptionMustBeGiven) {
  std::string repository;
  App app{"test"};
  app.add_option("--repository", repository)->required();
  testing::internal::CaptureStderr();
  const auto status = parse(app, {"t"});
  const std::string errors = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(status.has_value());
  EXPECT_NE(*status, 0);
  EXPECT_NE(errors.find("--repository is required"), std::string::npos) << errors;
}

TEST(Cli, HelpShowsDescriptionsDefaultsAndChecksAndExitsZero) {
  int threads = 7;
  App app{"kaas-test: the description"};
  app.add_option("--threads", threads, "worker threads")
      ->capture_default_str()
      ->check(range(1, 64));
  testing::internal::CaptureStdout();
  const auto status = parse(app, {"t", "--help"});
  const std::string help = testing::internal::GetCapturedStdout();
  EXPECT_EQ(status, 0);
  for (const char* shown :
       {"kaas-test: the description", "--threads", "worker threads", "=7", "INT in [1 - 64]"}) {
    EXPECT_NE(help.find(shown), std::string::npos) << shown << " in:\n" << help;
  }
}

TEST(Cli, ConfigFileSetsOptionsTheCommandLineOverrides) {
  const auto file = std::filesystem::temp_directory_path() / "kaas_test_cli_config.toml";
  std::ofstream(file) << "server = \"h1:8001,h2:8001\"\nretries = 4\n";
  std::string server;
  int retries = 0;
  App app{"test"};
  app.add_option("--server", server);
  app.add_option("--retries", retries);
  app.set_config("--config", "", "TOML file");
  const std::string path = file.string();
  EXPECT_EQ(parse(app, {"t", "--config", path.c_str(), "--retries", "2"}), std::nullopt);
  std::filesystem::remove(file);
  EXPECT_EQ(server, "h1:8001,h2:8001");
  EXPECT_EQ(retries, 2);
}

}  // namespace
}  // namespace kaas::cli
