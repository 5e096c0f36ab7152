#pragma once
// The command lines of the kaas binaries: CLI11 behind a small interface that is compiled once.
// CLI11 2.1 is header only, and a source including it spent ~4 s compiling the same parser (its
// validators are objects of every translation unit): a dozen front ends paid that in every build.
// The calls read as CLI11's, add_option(name, variable, help)->check(...), and parsing, help and
// error messages are CLI11's own.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
class Validator;
}  // namespace CLI

namespace kaas::cli {

// A condition on an option's value: a range, a set of words, an existing path.
class Check {
 public:
  explicit Check(std::shared_ptr<const CLI::Validator> validator);
  const CLI::Validator& validator() const { return *validator_; }

 private:
  std::shared_ptr<const CLI::Validator> validator_;
};

// The value's type decides how it is read and how help names it ("INT in [0 - 65535]").
Check range(int min, int max);
Check range(std::int64_t min, std::int64_t max);
Check range(std::size_t min, std::size_t max);
Check range(float min, float max);
Check range(double min, double max);
Check one_of(std::vector<std::string> words);
Check existing_file();
Check existing_directory();

// One option of an App; the setters return the option so that they chain.
class Option {
 public:
  explicit Option(CLI::Option* option) : option_(option) {}
  Option* check(const Check& condition);
  Option* required();
  Option* capture_default_str();  // help shows the variable's value before parsing
  Option* delimiter(char separator);
  Option* expected(int min, int max);  // values per occurrence (max -1: any number)
  Option* take_all();                  // a repeated option keeps every occurrence's values

 private:
  CLI::Option* option_;
};

class App {
 public:
  explicit App(const std::string& description);
  ~App();
  App(const App&) = delete;
  App& operator=(const App&) = delete;

  // One overload per value type the binaries read: a type missing here fails to compile at the
  // call, naming the candidates.
  Option* add_option(const std::string& name, bool& value, const std::string& help = {});
  Option* add_option(const std::string& name, int& value, const std::string& help = {});
  Option* add_option(const std::string& name, std::uint32_t& value, const std::string& help = {});
  Option* add_option(const std::string& name, std::int64_t& value, const std::string& help = {});
  Option* add_option(const std::string& name, std::size_t& value, const std::string& help = {});
  Option* add_option(const std::string& name, float& value, const std::string& help = {});
  Option* add_option(const std::string& name, double& value, const std::string& help = {});
  Option* add_option(const std::string& name, std::string& value, const std::string& help = {});
  Option* add_option(const std::string& name, std::vector<int>& values,
                     const std::string& help = {});
  Option* add_option(const std::string& name, std::vector<std::int64_t>& values,
                     const std::string& help = {});
  Option* add_option(const std::string& name, std::vector<std::string>& values,
                     const std::string& help = {});
  // A flag sets `value` to true ("!--name": to false).
  Option* add_flag(const std::string& name, bool& value, const std::string& help = {});
  // An option naming a TOML file of option values (long names without "--"); the command line
  // overrides it.
  void set_config(const std::string& name, const std::string& default_file,
                  const std::string& help);

  // Parses the command line. nullopt: go on; else main returns the value: 0 after --help (help
  // printed), non-zero after an error (printed with the usage).
  std::optional<int> parse(int argc, const char* const* argv);

 private:
  Option* keep(CLI::Option* option);

  std::unique_ptr<CLI::App> app_;
  std::vector<std::unique_ptr<Option>> options_;
};

}  // namespace kaas::cli
