// The gRPC ModelInferRequest -> tensors conversion, on any bytes that parse as the message.

#include "fuzz/fuzz_target.h"
#include "grpc_service.pb.h"
#include "kaas/server_adapter/server/infer_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  inference::ModelInferRequest request;
  if (!request.ParseFromArray(data, int(size))) return 0;
  return kaas::fuzz::rejecting_errors([&] { (void)kaas::server::decode_grpc_infer(request); });
}
