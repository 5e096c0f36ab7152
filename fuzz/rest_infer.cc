// The REST infer request decoder: JSON bodies and the binary tensor data extension. The first
// input byte picks the framing: odd = a JSON header of the length in the next byte (as the
// Inference-Header-Content-Length header), then binary data; even = the whole rest is JSON.

#include "fuzz/fuzz_target.h"
#include "kaas/server_adapter/server/infer_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  return kaas::fuzz::rejecting_errors([&] {
    const std::string_view body = kaas::fuzz::as_text(data + 2, size - 2);
    std::optional<std::string_view> header_length;
    std::string length_text;
    if (data[0] & 1) {
      length_text = std::to_string(data[1] % (body.size() + 1));
      header_length = length_text;
    }
    const auto decoded = kaas::server::decode_rest_infer(body, header_length);
    // Echo the inputs as outputs, as a server would reply with them.
    (void)kaas::server::encode_rest_infer(decoded, decoded.request.inputs, "fuzz", 1);
  });
}
