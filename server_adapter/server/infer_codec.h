#pragma once
// Inference requests from the wire into InferRequest, and REST replies back onto it, for both
// front ends. These are the parsers that take outside bytes (the fuzz targets in fuzz/ drive
// them directly); every malformed input is a kaas::Error kInvalidArgument naming the problem.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kaas/server_adapter/core/infer_request.h"
#include "kaas/server_adapter/core/tensor_codec.h"
#include "kaas/server_adapter/server/shared_memory.h"

namespace inference {
class ModelInferRequest;
class ModelInferResponse;
}  // namespace inference

namespace kaas::server {

// Deeper JSON than any KServe request needs is refused before it is copied or walked (copies,
// walks and dumps of a JSON value recurse).
inline constexpr int kMaxJsonDepth = 32;

// Parses request JSON with the nesting limit; malformed text throws kInvalidArgument
// "malformed JSON request: ...".
nlohmann::json parse_request_json(std::string_view text);

// JSON text for a reply; invalid UTF-8 from a request (a name, an id) is replaced, never thrown on.
std::string dump_json(const nlohmann::json& value);

struct DecodedInfer {
  InferRequest request;
  std::vector<std::string> requested;  // requested output names (empty: all)
  std::vector<bool> binary_output;     // REST: per requested output
  bool all_binary = false;             // REST: binary_data_output
  nlohmann::json id;                   // REST: the request's id, echoed (null: none)
  // Shared memory: the regions inputs were read from (held, so not unregistered, until the
  // reply) and, per requested output, the slice it goes to (none: in the reply).
  std::vector<RegionSlice> input_slices;
  std::vector<std::optional<RegionSlice>> output_slices;
};

// A REST infer body: JSON, or a JSON header of `header_length` bytes followed by binary tensor
// data (the binary tensor data extension; `header_length` is the raw header value). Tensors
// naming a shared memory region are resolved in `shared_memory` (nullptr: refused).
DecodedInfer decode_rest_infer(std::string_view body, std::optional<std::string_view> header_length,
                               const SharedMemoryRegistry* shared_memory = nullptr);

// A gRPC ModelInferRequest (raw_input_contents, typed contents or shared memory).
DecodedInfer decode_grpc_infer(const inference::ModelInferRequest& request,
                               const SharedMemoryRegistry* shared_memory = nullptr);

// The gRPC reply for `outputs` of `decoded` (outputs placed in shared memory are written there
// and have an empty raw_output_contents entry, as in Triton).
void encode_grpc_infer(const DecodedInfer& decoded, const std::vector<HostTensor>& outputs,
                       const std::string& model, int64_t version, const std::string& id,
                       inference::ModelInferResponse& response);

// Rejects (kInvalidArgument, before the model runs) a request whose reply would carry more than
// `limit` bytes: the requested outputs (not those going to shared memory) for `rows` rows of
// the leading variable dimension, as binary data or, for REST outputs sent as JSON, as text (24
// characters per element at most). Unknown rows or dimensions: not checked here.
void check_reply_bytes(const DecodedInfer& decoded, const models::ModelSignature& signature,
                       std::optional<int64_t> rows, size_t limit, const std::string& model,
                       bool rest);

// REST: rejects (kInvalidArgument, before the model runs) a request that would get an FP16 or
// BF16 output of `signature` as JSON data; as in Triton, those are sent as binary data only.
void check_json_outputs(const DecodedInfer& decoded, const models::ModelSignature& signature);

struct RestReply {
  std::string body;
  size_t header_length = 0;  // < body.size() when binary outputs follow the JSON header
};

// The REST reply for `outputs` of `decoded`: JSON data or binary outputs as requested.
RestReply encode_rest_infer(const DecodedInfer& decoded, const std::vector<HostTensor>& outputs,
                            const std::string& model, int64_t version);

}  // namespace kaas::server
