#pragma once
// NumPy .npy files (format versions 1.0 to 3.0) to and from HostTensor: little-endian float32,
// int32, int64, uint8 and float16 ('<f2', FP16), C order. BF16 has no numpy dtype and is refused
// (format_npy/write_npy throw kInvalidArgument) rather than written as bits of another type. No
// Debian package reads .npy from C++, and the format is a fixed magic, a length and a
// Python-literal header of three keys, parsed strictly here.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kaas/models/tensor.h"

namespace kaas::models {

// Throws kaas::Error (kNotFound for a missing file, kInvalidArgument naming the file and the
// problem for anything malformed: bad magic, header, dtype, Fortran order, truncated data).
HostTensor read_npy(const std::filesystem::path& path, const std::string& tensor_name);
HostTensor parse_npy(const std::string& bytes, const std::string& tensor_name,
                     const std::string& source = "npy data");

void write_npy(const std::filesystem::path& path, const HostTensor& tensor);
std::string format_npy(const HostTensor& tensor);

// A .npy file written row by row when the number of rows is known only at the end (training
// patches: 13 GB for 240 events, which write_npy would hold three times over). The header is
// written with room for any row count and rewritten by finish() (until then it says zero rows).
// Throws kaas::Error (kInvalidArgument) naming the file on BF16 or an I/O error.
class NpyRowWriter {
 public:
  NpyRowWriter(std::filesystem::path path, DataType dtype, std::vector<int64_t> row_shape);
  // `count` rows of the row shape, in C order, of the writer's dtype.
  void append(const void* rows, int64_t count);
  void finish();
  int64_t rows() const { return rows_; }

 private:
  std::filesystem::path path_;
  DataType dtype_;
  std::vector<int64_t> row_shape_;
  size_t row_bytes_ = 0;
  size_t preamble_size_ = 0;
  int64_t rows_ = 0;
  bool finished_ = false;
  std::ofstream out_;
};

}  // namespace kaas::models
