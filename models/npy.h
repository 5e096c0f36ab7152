#pragma once
// NumPy .npy files (format versions 1.0 to 3.0) to and from HostTensor: little-endian float32,
// int32, int64, uint8 and float16 ('<f2', FP16), C order. BF16 has no numpy dtype and is refused
// (format_npy/write_npy throw kInvalidArgument) rather than written as bits of another type. No
// Debian package reads .npy from C++, and the format is a fixed magic, a length and a
// Python-literal header of three keys, parsed strictly here.

#include <filesystem>
#include <string>

#include "kaas/models/tensor.h"

namespace kaas::models {

// Throws kaas::Error (kNotFound for a missing file, kInvalidArgument naming the file and the
// problem for anything malformed: bad magic, header, dtype, Fortran order, truncated data).
HostTensor read_npy(const std::filesystem::path& path, const std::string& tensor_name);
HostTensor parse_npy(const std::string& bytes, const std::string& tensor_name,
                     const std::string& source = "npy data");

void write_npy(const std::filesystem::path& path, const HostTensor& tensor);
std::string format_npy(const HostTensor& tensor);

}  // namespace kaas::models
