#pragma once
// Each EmTrkMichelId graph generated once per test process. A generation is ~0.1 s (12 M
// mersenne-twister draws and a 47.6 MB buffer), and the tests that build the model dozens of
// times (every precision, plan and backend) need the same bytes each time. Generated weights
// only: trained ones come from files a test may change. The generator's own checks (determinism,
// trained weights) call models::generate_emtrk_onnx directly.

#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "kaas/models/emtrk_onnx_generator.h"

namespace kaas::testing {

inline const onnx::ModelProto& generated_emtrk(
    models::EmTrkGraphStyle style = models::EmTrkGraphStyle::kKeras,
    uint32_t seed = models::EmTrkGeneratorOptions{}.seed) {
  using Key = std::pair<models::EmTrkGraphStyle, uint32_t>;
  static std::mutex mutex;
  static std::map<Key, std::unique_ptr<const onnx::ModelProto>> cache;
  std::lock_guard lock(mutex);
  auto& model = cache[Key{style, seed}];
  if (!model)
    model = std::make_unique<const onnx::ModelProto>(models::generate_emtrk_onnx({style, seed}));
  return *model;
}

}  // namespace kaas::testing
