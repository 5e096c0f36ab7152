#pragma once
// How kaas-reco talks to a model through kaas::client: what it sends (plane images with their
// hits, or one 48 x 48 patch per hit) and how it reads the per-hit scores back. The same code
// serves the direct and the remote client, which is what makes their outputs comparable.

#include <cstdint>
#include <vector>

#include "examples/lartpc/reco.h"
#include "kaas/client/inference_client.h"

namespace kaas::examples {

enum class Send { kImage, kPatches };
const char* send_name(Send send);

// An event's inputs in both forms; only the one being sent needs to be filled.
struct EventInputs {
  std::vector<PlaneInputs> planes;
  PatchInputs patches;
};

// Sets the client's inputs: one entry per plane (image), or the patches in chunks of the model's
// max batch, one entry each.
void set_inputs(client::InferenceClient& c, Send send, const EventInputs& inputs);

// The per-hit outputs of one call, in event hit order.
struct HitScores {
  std::vector<float> scores;  // [hits, 4]: track, em, none, michel
  std::vector<uint8_t> fiducial;
};

// Reads a call's answer back into HitScores. Patch models answer with a [n, 3] softmax and a
// [n, 1] Michel head (found by shape); their fiducial flags come from the patch extraction.
HitScores hit_scores(const client::InferResult& result, Send send,
                     const models::ModelSignature& signature, const EventInputs& inputs);

// FNV-1a over the per-hit outputs: event lines carry it so runs can be compared exactly.
uint64_t fingerprint(const HitScores& scores);

}  // namespace kaas::examples
