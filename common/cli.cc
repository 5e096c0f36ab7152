#include "kaas/common/cli.h"

#include <CLI/CLI.hpp>

namespace kaas::cli {

Check::Check(std::shared_ptr<const CLI::Validator> validator) : validator_(std::move(validator)) {}

namespace {

template <typename T>
Check range_of(T min, T max) {
  return Check(std::make_shared<const CLI::Validator>(CLI::Range(min, max)));
}

}  // namespace

Check range(int min, int max) {
  return range_of(min, max);
}
Check range(std::int64_t min, std::int64_t max) {
  return range_of(min, max);
}
Check range(std::size_t min, std::size_t max) {
  return range_of(min, max);
}
Check range(float min, float max) {
  return range_of(min, max);
}
Check range(double min, double max) {
  return range_of(min, max);
}

Check one_of(std::vector<std::string> words) {
  return Check(std::make_shared<const CLI::Validator>(CLI::IsMember(std::move(words))));
}
Check existing_file() {
  return Check(std::make_shared<const CLI::Validator>(CLI::ExistingFile));
}
Check existing_directory() {
  return Check(std::make_shared<const CLI::Validator>(CLI::ExistingDirectory));
}

Option* Option::check(const Check& condition) {
  option_->check(condition.validator());
  return this;
}
Option* Option::required() {
  option_->required();
  return this;
}
Option* Option::capture_default_str() {
  option_->capture_default_str();
  return this;
}
Option* Option::delimiter(char separator) {
  option_->delimiter(separator);
  return this;
}
Option* Option::expected(int min, int max) {
  option_->expected(min, max);
  return this;
}
Option* Option::take_all() {
  option_->take_all();
  return this;
}

App::App(const std::string& description) : app_(std::make_unique<CLI::App>(description)) {}
App::~App() = default;

Option* App::keep(CLI::Option* option) {
  options_.push_back(std::make_unique<Option>(option));
  return options_.back().get();
}

Option* App::add_option(const std::string& name, bool& value, const std::string& help) {
  return keep(app_->add_option(name, value, help));
}
Option* App::add_option(const std::string& name, int& value, const std::string& help) {
  return keep(app_->add_option(name, value, help));
}
Option* App::add_option(const std::string& name, std::uint32_t& value, const std::string& help) {
  return keep(app_->add_option(name, value, help));
}
Option* App::add_option(const std::string& name, std::int64_t& value, const std::string& help) {
  return keep(app_->add_option(name, value, help));
}
Option* App::add_option(const std::string& name, std::size_t& value, const std::string& help) {
  return keep(app_->add_option(name, value, help));
}
Option* App::add_option(const std::string& name, float& value, const std::string& help) {
  return keep(app_->add_option(name, value, help));
}
Option* App::add_option(const std::string& name, double& value, const std::string& help) {
  return keep(app_->add_option(name, value, help));
}
Option* App::add_option(const std::string& name, std::string& value, const std::string& help) {
  return keep(app_->add_option(name, value, help));
}
Option* App::add_option(const std::string& name, std::vector<int>& values,
                        const std::string& help) {
  return keep(app_->add_option(name, values, help));
}
Option* App::add_option(const std::string& name, std::vector<std::int64_t>& values,
                        const std::string& help) {
  return keep(app_->add_option(name, values, help));
}
Option* App::add_option(const std::string& name, std::vector<std::string>& values,
                        const std::string& help) {
  return keep(app_->add_option(name, values, help));
}
Option* App::add_flag(const std::string& name, bool& value, const std::string& help) {
  return keep(app_->add_flag(name, value, help));
}

void App::set_config(const std::string& name, const std::string& default_file,
                     const std::string& help) {
  app_->set_config(name, default_file, help);
}

std::optional<int> App::parse(int argc, const char* const* argv) {
  try {
    app_->parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app_->exit(error);
  }
  return std::nullopt;
}

}  // namespace kaas::cli
