#include "kaas/models/npy.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "kaas/common/error.h"

namespace kaas::models {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

std::string_view descr(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
      return "<f4";
    case DataType::kInt32:
      return "<i4";
    case DataType::kInt64:
      return "<i8";
    case DataType::kUint8:
      return "|u1";
    case DataType::kFloat16:
      return "<f2";
    case DataType::kBFloat16:
      // numpy has no bfloat16 dtype: storing the bits as '<u2' would read back as another type
      // (and numpy users would see integers), so .npy files refuse BF16 outright.
      return "";
  }
  return "";
}

class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::string source)
      : text_(text), source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(ErrorCode::kInvalidArgument,
                source_ + ": malformed .npy header (" + what + "): '" + std::string(text_) + "'");
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool accept(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!accept(c)) fail(std::string("expected '") + c + "'");
  }
  std::string quoted() {
    skip_space();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"'))
      fail("expected a string");
    const char quote = text_[pos_++];
    const size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string s(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }
  bool boolean() {
    skip_space();
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      const std::string_view w(word);
      if (text_.substr(pos_, w.size()) == w) {
        pos_ += w.size();
        return value;
      }
    }
    fail("expected True or False");
  }
  std::vector<int64_t> shape() {
    expect('(');
    std::vector<int64_t> dims;
    while (!accept(')')) {
      skip_space();
      size_t digits = 0;
      int64_t value = 0;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        if (value > (int64_t(1) << 50)) fail("dimension too large");
        value = value * 10 + (text_[pos_++] - '0');
        ++digits;
      }
      if (digits == 0) fail("expected a dimension");
      dims.push_back(value);
      if (!accept(',')) {
        expect(')');
        break;
      }
    }
    return dims;
  }
  bool at_end() {
    skip_space();
    return pos_ == text_.size();
  }

 private:
  std::string_view text_;
  std::string source_;
  size_t pos_ = 0;
};

}  // namespace

HostTensor parse_npy(const std::string& bytes, const std::string& tensor_name,
                     const std::string& source) {
  auto fail = [&](const std::string& what) {
    throw Error(ErrorCode::kInvalidArgument, source + ": " + what);
  };
  if (bytes.size() < kMagicSize + 4 || bytes.compare(0, kMagicSize, kMagic, kMagicSize) != 0)
    fail("not a .npy file (no \\x93NUMPY magic)");
  const auto major = static_cast<unsigned char>(bytes[6]);
  if (major < 1 || major > 3) fail("unsupported .npy format version " + std::to_string(major));
  size_t header_len = 0, offset = 0;
  auto byte = [&](size_t i) { return size_t(static_cast<unsigned char>(bytes[i])); };
  if (major == 1) {
    header_len = byte(8) | byte(9) << 8;
    offset = 10;
  } else {
    if (bytes.size() < 12) fail("truncated header");
    header_len = byte(8) | byte(9) << 8 | byte(10) << 16 | byte(11) << 24;
    offset = 12;
  }
  if (bytes.size() < offset + header_len) fail("truncated header");
  HeaderParser p(std::string_view(bytes).substr(offset, header_len), source);
  std::string dtype_descr;
  bool fortran = false, have_descr = false, have_order = false, have_shape = false;
  std::vector<int64_t> shape;
  p.expect('{');
  while (!p.accept('}')) {
    const std::string key = p.quoted();
    p.expect(':');
    if (key == "descr") {
      dtype_descr = p.quoted(), have_descr = true;
    } else if (key == "fortran_order") {
      fortran = p.boolean(), have_order = true;
    } else if (key == "shape") {
      shape = p.shape(), have_shape = true;
    } else {
      p.fail("unknown key '" + key + "'");
    }
    if (!p.accept(',')) {
      p.expect('}');
      break;
    }
  }
  if (!p.at_end()) p.fail("text after the dictionary");
  if (!have_descr || !have_order || !have_shape)
    p.fail("descr, fortran_order and shape are required");
  if (fortran) fail("Fortran-order array; save it with numpy.ascontiguousarray");
  std::optional<DataType> dtype;
  for (DataType d : {DataType::kFloat32, DataType::kInt32, DataType::kInt64, DataType::kUint8,
                     DataType::kFloat16}) {
    if (dtype_descr == descr(d) || (d == DataType::kUint8 && dtype_descr == "<u1")) dtype = d;
  }
  if (!dtype)
    fail("dtype '" + dtype_descr +
         "' not supported (little-endian float32, int32, int64, uint8, float16)");
  HostTensor t{tensor_name, *dtype, shape, {}};
  const size_t expected = size_t(element_count(shape)) * element_size(*dtype);
  const size_t data_bytes = bytes.size() - offset - header_len;
  if (data_bytes != expected)
    fail("data has " + std::to_string(data_bytes) + " bytes, shape " + shape_string(shape) + " " +
         dtype_descr + " needs " + std::to_string(expected) +
         (data_bytes < expected ? " (truncated file)" : ""));
  t.bytes.resize(expected);
  if (expected > 0) std::memcpy(t.bytes.data(), bytes.data() + offset + header_len, expected);
  return t;
}

HostTensor read_npy(const std::filesystem::path& path, const std::string& tensor_name) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kNotFound, "cannot open '" + path.string() + "'");
  std::ostringstream content;
  content << in.rdbuf();
  std::string source = "'";
  source.append(path.string()).append("'");
  return parse_npy(content.str(), tensor_name, source);
}

namespace {

void refuse_bf16(DataType dtype, const std::string& name) {
  if (dtype == DataType::kBFloat16)
    throw Error(ErrorCode::kInvalidArgument,
                "npy: tensor '" + name +
                    "' is BF16, which numpy (and so .npy) has no dtype for; convert it to FP32");
}

// Magic, version 1.0, header length and the header, padded so the data starts on a 64-byte
// boundary and the whole is at least `min_size` bytes (room for a later, longer shape).
std::string npy_preamble(DataType dtype, const std::vector<int64_t>& shape, size_t min_size = 0) {
  std::string header = "{'descr': '";
  header.append(descr(dtype)).append("', 'fortran_order': False, 'shape': (");
  for (int64_t d : shape) header.append(std::to_string(d)).append(",");
  if (shape.size() > 1) header.pop_back();
  header.append("), }");
  const size_t fixed = kMagicSize + 2 + 2 + 1;  // magic, version, length, the newline
  size_t total = fixed + header.size();
  total = std::max(total, min_size);
  total += (64 - total % 64) % 64;
  header.append(total - fixed - header.size(), ' ').push_back('\n');
  if (header.size() > 0xffff)
    throw Error(ErrorCode::kInvalidArgument, "npy: header too long for format 1.0");
  std::string out(kMagic, kMagicSize);
  out.push_back('\x01');
  out.push_back('\x00');
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>(header.size() >> 8));
  return out + header;
}

std::vector<int64_t> with_rows(int64_t rows, const std::vector<int64_t>& row_shape) {
  std::vector<int64_t> shape{rows};
  shape.insert(shape.end(), row_shape.begin(), row_shape.end());
  return shape;
}

}  // namespace

std::string format_npy(const HostTensor& tensor) {
  refuse_bf16(tensor.dtype, tensor.name);
  std::string out = npy_preamble(tensor.dtype, tensor.shape);
  out.append(reinterpret_cast<const char*>(tensor.bytes.data()), tensor.bytes.size());
  return out;
}

void write_npy(const std::filesystem::path& path, const HostTensor& tensor) {
  std::ofstream out(path, std::ios::binary);
  const std::string bytes = format_npy(tensor);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) throw Error(ErrorCode::kInvalidArgument, "cannot write '" + path.string() + "'");
}

NpyRowWriter::NpyRowWriter(std::filesystem::path path, DataType dtype,
                           std::vector<int64_t> row_shape)
    : path_(std::move(path)), dtype_(dtype), row_shape_(std::move(row_shape)) {
  refuse_bf16(dtype_, path_.string());
  row_bytes_ = size_t(element_count(row_shape_)) * element_size(dtype_);
  // Room for a row count of 19 digits: finish() rewrites the header in place.
  preamble_size_ = npy_preamble(dtype_, with_rows(int64_t(1) << 62, row_shape_)).size();
  out_.open(path_, std::ios::binary | std::ios::trunc);
  const std::string preamble = npy_preamble(dtype_, with_rows(0, row_shape_), preamble_size_);
  out_.write(preamble.data(), std::streamsize(preamble.size()));
  if (!out_) throw Error(ErrorCode::kInvalidArgument, "cannot write '" + path_.string() + "'");
}

void NpyRowWriter::append(const void* rows, int64_t count) {
  if (finished_)
    throw Error(ErrorCode::kInvalidArgument, "'" + path_.string() + "': append after finish()");
  out_.write(static_cast<const char*>(rows), std::streamsize(size_t(count) * row_bytes_));
  if (!out_) throw Error(ErrorCode::kInvalidArgument, "cannot write '" + path_.string() + "'");
  rows_ += count;
}

void NpyRowWriter::finish() {
  if (finished_) return;
  const std::string preamble = npy_preamble(dtype_, with_rows(rows_, row_shape_), preamble_size_);
  out_.seekp(0);
  out_.write(preamble.data(), std::streamsize(preamble.size()));
  out_.close();
  finished_ = true;
  if (!out_) throw Error(ErrorCode::kInvalidArgument, "cannot write '" + path_.string() + "'");
}

}  // namespace kaas::models
