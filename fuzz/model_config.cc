// Model configuration reading: config.pbtxt text (first byte even) or Triton's config JSON
// (first byte odd), then the repository entry kaas derives from it.

#include "fuzz/fuzz_target.h"
#include "kaas/server_adapter/core/repository_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  return kaas::fuzz::rejecting_errors([&] {
    const std::string text(kaas::fuzz::as_text(data + 1, size - 1));
    auto config = (data[0] & 1) ? kaas::repository::model_config_from_json(text)
                                : kaas::repository::parse_model_config(text, "config.pbtxt");
    const std::string name = config.name().empty() ? "fuzz" : config.name();
    (void)kaas::repository::entry_from_config(std::move(config), name, 1,
                                              "/nonexistent/kaas-fuzz/1");
  });
}
