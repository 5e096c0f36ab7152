#include "kaas/models/npy.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "kaas/common/error.h"

namespace kaas::models {
namespace {

// The bytes numpy.save writes for a header (format 1.0, padded to 64 bytes, newline last).
std::string npy_bytes(const std::string& dict, const std::string& data) {
  std::string header = dict;
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ').push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(char(header.size() & 0xff));
  out.push_back(char(header.size() >> 8));
  return out + header + data;
}

std::string floats(std::initializer_list<float> values) {
  return std::string(reinterpret_cast<const char*>(std::data(values)), values.size() * 4);
}

TEST(Npy, ReadsWhatNumpyWrites) {
  const auto t = parse_npy(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                                     floats({1, 2, 3, 4, 5, 6})),
                           "x");
  EXPECT_EQ(t.name, "x");
  EXPECT_EQ(t.dtype, DataType::kFloat32);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t.values<float>()[5], 6.0f);
  const auto v = parse_npy(
      npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", floats({7, 8})), "v");
  EXPECT_EQ(v.shape, (std::vector<int64_t>{2}));
  const auto s = parse_npy(
      npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", floats({9})), "s");
  EXPECT_TRUE(s.shape.empty());
  EXPECT_EQ(s.values<float>()[0], 9.0f);
}

TEST(Npy, RoundTripsEveryDtype) {
  for (DataType dtype : {DataType::kFloat32, DataType::kInt32, DataType::kInt64, DataType::kUint8,
                         DataType::kFloat16}) {
    HostTensor t{"t", dtype, {3, 1, 2}, {}};
    t.bytes.resize(6 * element_size(dtype));
    for (size_t i = 0; i < t.bytes.size(); ++i) t.bytes[i] = std::byte(i * 7 + 1);
    const std::string bytes = format_npy(t);
    EXPECT_EQ(bytes.find('\n') + 1, bytes.size() - t.bytes.size());
    EXPECT_EQ((bytes.size() - t.bytes.size()) % 64, 0u) << "data is 64-byte aligned";
    const auto back = parse_npy(bytes, "t");
    EXPECT_EQ(back.dtype, dtype);
    EXPECT_EQ(back.shape, t.shape);
    EXPECT_EQ(back.bytes, t.bytes);
  }
}

TEST(Npy, RowWriterStreamsRowsAndRewritesTheCount) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("kaas-test-npy-rows-" +
                     std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + ".npy");
  std::vector<float> rows(12 * 4);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = float(i) * 0.5f;
  {
    NpyRowWriter writer(path, DataType::kFloat32, {2, 2});
    writer.append(rows.data(), 1);
    writer.append(rows.data() + 4, 11);  // the count grows from 0 to two digits
    EXPECT_EQ(writer.rows(), 12);
    writer.finish();
    EXPECT_THROW(writer.append(rows.data(), 1), Error) << "append after finish()";
  }
  const HostTensor back = read_npy(path, "rows");
  EXPECT_EQ(back.shape, (std::vector<int64_t>{12, 2, 2}));
  const auto values = back.values<float>();
  EXPECT_EQ(std::vector<float>(values.begin(), values.end()), rows);
  // The header (padded for any count) ends with its newline where the data starts, 64-byte
  // aligned.
  std::ifstream in(path, std::ios::binary);
  std::stringstream content;
  content << in.rdbuf();
  const std::string bytes = content.str();
  EXPECT_EQ(bytes.find('\n') + 1, bytes.size() - rows.size() * 4);
  EXPECT_EQ((bytes.size() - rows.size() * 4) % 64, 0u);
  std::filesystem::remove(path);

  EXPECT_THROW(NpyRowWriter(path, DataType::kBFloat16, {2}), Error);
  EXPECT_THROW(NpyRowWriter(std::filesystem::path("/nonexistent-dir/x.npy"), DataType::kInt32, {}),
               Error);
}

void expect_error(const std::string& bytes, const std::string& fragment) {
  try {
    parse_npy(bytes, "x", "test.npy");
    ADD_FAILURE() << "accepted; expected an error containing '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("test.npy"), std::string::npos) << e.what();
  }
}

TEST(Npy, MalformedFilesAreClearErrors) {
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }";
  expect_error("", "not a .npy file");
  expect_error("PK\x03\x04 a zip file", "not a .npy file");
  expect_error(npy_bytes(dict, floats({1, 2, 3})), "truncated");
  expect_error(npy_bytes(dict, floats({1, 2, 3, 4, 5})), "data has 20 bytes");
  expect_error(npy_bytes(dict, floats({1, 2, 3, 4})).substr(0, 30), "truncated header");
  expect_error(npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", floats({1})),
               "dtype '>f4' not supported");
  expect_error(
      npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", std::string(8, '\0')),
      "dtype '<f8' not supported");
  expect_error(
      npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", floats({1, 2, 3, 4})),
      "Fortran-order");
  expect_error(npy_bytes("{'descr': '<f4', 'shape': (1,), }", floats({1})), "are required");
  expect_error(
      npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1, x), }", floats({1})),
      "expected a dimension");
  expect_error(
      npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'y': 1}", floats({1})),
      "unknown key 'y'");
  std::string version9 = npy_bytes(dict, floats({1, 2, 3, 4}));
  version9[6] = 9;
  expect_error(version9, "version 9");
}

TEST(Npy, Float16IsF2AndBFloat16IsRefused) {
  // numpy.save(np.array([1.0, -2.0], np.float16)): '<f2', bits 0x3c00 and 0xc000.
  const auto t = parse_npy(npy_bytes("{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }",
                                     std::string("\x00\x3c\x00\xc0", 4)),
                           "h");
  EXPECT_EQ(t.dtype, DataType::kFloat16);
  ASSERT_EQ(t.bytes.size(), 4u);
  EXPECT_EQ(t.values<uint16_t>()[0], 0x3c00);
  EXPECT_EQ(t.values<uint16_t>()[1], 0xc000);
  EXPECT_NE(format_npy(t).find("'descr': '<f2'"), std::string::npos);
  const HostTensor b{"b", DataType::kBFloat16, {1}, std::vector<std::byte>(2)};
  try {
    format_npy(b);
    FAIL() << "BF16 written to .npy";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("BF16"), std::string::npos) << e.what();
  }
}

TEST(Npy, MissingFileIsNotFound) {
  try {
    read_npy("/nonexistent/kaas/input.npy", "x");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/kaas/input.npy"), std::string::npos);
  }
}

}  // namespace
}  // namespace kaas::models
