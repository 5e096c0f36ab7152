#pragma once
// Wire tensors <-> models::HostTensor, shared by the gRPC and REST front ends (and the client
// API): datatype names, byte sizes, shapes. Every failure is a kaas::Error kInvalidArgument
// naming the tensor.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kaas/models/tensor.h"

namespace kaas::server {

using models::DataType;
using models::HostTensor;

// The Triton datatype name as kaas serves it, or an error naming the tensor for a datatype kaas
// models do not take (FP64, BYTES, ...).
DataType parse_datatype(std::string_view datatype, std::string_view tensor);

// Checks a wire shape (non-negative, bounded element count) and returns the element count.
int64_t checked_elements(std::span<const int64_t> shape, std::string_view tensor);

// A tensor from its raw little-endian bytes; the size must match the shape exactly.
HostTensor tensor_from_raw(std::string name, std::string_view datatype, std::vector<int64_t> shape,
                           std::string_view raw);

// Rejects requested output names the model does not have, before the request is queued.
void check_requested_outputs(const models::ModelSignature& signature,
                             std::span<const std::string> requested, std::string_view model);

// The outputs a request asked for, by name, in the order asked (all, in model order, when
// `requested` is empty). Unknown names are an error naming the output.
std::vector<const HostTensor*> select_outputs(const std::vector<HostTensor>& outputs,
                                              std::span<const std::string> requested,
                                              std::string_view model);

}  // namespace kaas::server
