#include "examples/lartpc/reco_calls.h"

#include <algorithm>
#include <span>

#include "kaas/common/error.h"

namespace kaas::examples {

const char* send_name(Send send) {
  return send == Send::kImage ? "image" : "patches";
}

void set_inputs(client::InferenceClient& c, Send send, const EventInputs& inputs) {
  c.clear_inputs();
  if (send == Send::kImage) {
    for (size_t p = 0; p < inputs.planes.size(); ++p) {
      const PlaneInputs& in = inputs.planes[p];
      c.set_input<float>("image", in.image, {in.wires, in.bins}, p);
      c.set_input<int32_t>("hit_wire", in.hit_wire, {int64_t(in.hit_wire.size())}, p);
      c.set_input<float>("hit_tick", in.hit_tick, {int64_t(in.hit_tick.size())}, p);
    }
    return;
  }
  const auto& spec = c.signature().inputs.at(0);
  const int64_t per_patch = models::element_count(std::span(spec.shape).subspan(1));
  const std::vector<float>& patches = inputs.patches.patches;
  const int64_t hits = int64_t(inputs.patches.fiducial.size());
  const int64_t chunk = std::max<int64_t>(c.signature().max_batch, 1);
  for (int64_t first = 0, e = 0; first < hits; first += chunk, ++e) {
    const int64_t rows = std::min(chunk, hits - first);
    std::vector<int64_t> shape = spec.shape;
    shape[0] = rows;
    c.set_input<float>(
        spec.name, std::span(patches).subspan(size_t(first * per_patch), size_t(rows * per_patch)),
        shape, size_t(e));
  }
}

namespace {

void append_patch_scores(const client::InferResult& r, size_t entry,
                         const models::ModelSignature& signature, HitScores& out) {
  const client::HostTensor *softmax = nullptr, *michel = nullptr;
  for (const auto& spec : signature.outputs) {
    const auto& t = r.tensor(spec.name, entry);
    (t.shape.back() == 3 ? softmax : michel) = &t;
  }
  if (!softmax || !michel)
    throw Error(ErrorCode::kInvalidArgument, "the patch model needs a [n, 3] and a [n, 1] output");
  const auto s = softmax->values<float>();
  const auto m = michel->values<float>();
  for (size_t h = 0; h < m.size(); ++h)
    out.scores.insert(out.scores.end(), {s[h * 3], s[h * 3 + 1], s[h * 3 + 2], m[h]});
}

}  // namespace

HitScores hit_scores(const client::InferResult& r, Send send,
                     const models::ModelSignature& signature, const EventInputs& inputs) {
  HitScores out;
  for (size_t e = 0; e < r.entries(); ++e) {
    if (send == Send::kPatches) {
      append_patch_scores(r, e, signature, out);
      continue;
    }
    const auto s = r.output<float>("scores", e);
    const auto f = r.output<uint8_t>("fiducial", e);
    out.scores.insert(out.scores.end(), s.begin(), s.end());
    out.fiducial.insert(out.fiducial.end(), f.begin(), f.end());
  }
  if (send == Send::kPatches) out.fiducial = inputs.patches.fiducial;
  return out;
}

uint64_t fingerprint(const HitScores& h) {
  uint64_t hash = 1469598103934665603ull;
  auto add = [&](const void* data, size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < bytes; ++i) hash = (hash ^ p[i]) * 1099511628211ull;
  };
  add(h.scores.data(), h.scores.size() * sizeof(float));
  add(h.fiducial.data(), h.fiducial.size());
  return hash;
}

}  // namespace kaas::examples
