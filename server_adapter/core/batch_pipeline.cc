#include "kaas/server_adapter/core/batch_pipeline.h"

#include <algorithm>
#include <cstring>

#include "kaas/common/error.h"

namespace kaas::serving {

using Clock = std::chrono::steady_clock;

std::vector<int64_t> joined_shape(std::span<const BatchPart> parts, size_t input) {
  const auto first = parts.front().inputs.at(input).shape;
  std::vector<int64_t> shape(first.begin(), first.end());
  for (size_t p = 1; p < parts.size() && !shape.empty(); ++p)
    shape[0] += parts[p].inputs.at(input).shape[0];
  return shape;
}

size_t joined_bytes(std::span<const BatchPart> parts, size_t input) {
  size_t bytes = 0;
  for (const BatchPart& p : parts) bytes += p.inputs.at(input).bytes.size();
  return bytes;
}

void copy_joined(std::span<const BatchPart> parts, size_t input, std::byte* out) {
  for (const BatchPart& p : parts) {
    const auto part = p.inputs.at(input).bytes;
    if (!part.empty()) std::memcpy(out, part.data(), part.size());
    out += part.size();
  }
}

std::vector<HostTensor> join_parts(std::span<const BatchPart> parts) {
  std::vector<HostTensor> joined;
  if (parts.empty()) return joined;
  for (size_t i = 0; i < parts.front().inputs.size(); ++i) {
    const TensorView& first = parts.front().inputs[i];
    HostTensor t{std::string(first.name), first.dtype, joined_shape(parts, i), {}};
    t.bytes.resize(joined_bytes(parts, i));
    copy_joined(parts, i, t.bytes.data());
    joined.push_back(std::move(t));
  }
  return joined;
}

bool same_item_shapes(std::span<const int64_t> a, std::span<const int64_t> b) {
  return !a.empty() && !b.empty() && std::equal(a.begin() + 1, a.end(), b.begin() + 1, b.end());
}

bool same_item_shapes(std::span<const TensorView> a, std::span<const TensorView> b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same_item_shapes(a[i].shape, b[i].shape)) return false;
  return true;
}

std::span<const std::byte> row_bytes(const HostTensor& t, int64_t first, int64_t rows) {
  if (t.shape.empty() || first < 0 || rows < 0 || first + rows > t.shape[0])
    throw Error(ErrorCode::kInternal, "output '" + t.name + "': rows [" + std::to_string(first) +
                                          ", " + std::to_string(first + rows) + ") outside shape " +
                                          shape_string(t.shape));
  const size_t row = t.shape[0] > 0 ? t.bytes.size() / size_t(t.shape[0]) : 0;
  return std::span(t.bytes).subspan(size_t(first) * row, size_t(rows) * row);
}

HostTensor tensor_rows(const HostTensor& t, int64_t first, int64_t rows) {
  const auto bytes = row_bytes(t, first, rows);
  HostTensor part{t.name, t.dtype, t.shape, {bytes.begin(), bytes.end()}};
  part.shape[0] = rows;
  return part;
}

std::vector<std::vector<HostTensor>> split_outputs(std::vector<HostTensor> outputs,
                                                   std::span<const int64_t> rows) {
  std::vector<std::vector<HostTensor>> per_part(rows.size());
  if (rows.size() == 1) {
    per_part[0] = std::move(outputs);
    return per_part;
  }
  for (const HostTensor& joined : outputs) {
    int64_t first = 0;
    for (size_t p = 0; p < rows.size(); ++p) {
      per_part[p].push_back(tensor_rows(joined, first, rows[p]));
      first += rows[p];
    }
  }
  return per_part;
}

std::vector<HostTensor> PartOutcome::take() {
  if (error) std::rethrow_exception(error);
  if (alone) return outputs.use_count() == 1 ? std::move(*outputs) : *outputs;
  std::vector<HostTensor> own;
  for (const HostTensor& t : *outputs) own.push_back(tensor_rows(t, first_row, rows));
  return own;
}

namespace {

// One execution of all `parts` (joined when several); every part gets its rows or the error.
void run_once(models::Model& model, std::span<const BatchPart> parts, std::span<PartOutcome> out,
              BatchRun& run) {
  const auto start = Clock::now();
  auto gathered = start;
  ++run.executions;
  try {
    // Joining allocates (up to the whole queue's bytes): its failure is the parts' error too.
    std::vector<HostTensor> joined;
    if (parts.size() > 1) joined = join_parts(parts);
    gathered = Clock::now();
    run.join += gathered - start;
    auto outputs = parts.size() > 1 ? model.run(joined) : model.run(parts.front().inputs);
    auto shared = std::make_shared<std::vector<HostTensor>>(std::move(outputs));
    int64_t row = 0;
    for (size_t p = 0; p < parts.size(); ++p) {
      out[p] = PartOutcome{shared, row, parts[p].rows, parts.size() == 1, nullptr};
      row += parts[p].rows;
    }
  } catch (...) {
    const auto error = std::current_exception();
    for (size_t p = 0; p < parts.size(); ++p) out[p] = PartOutcome{nullptr, 0, 0, false, error};
  }
  run.run += Clock::now() - gathered;
}

}  // namespace

BatchRun run_parts(models::Model& model, std::span<const BatchPart> parts) {
  BatchRun run;
  run.parts.resize(parts.size());
  if (parts.empty()) return run;
  run_once(model, parts, run.parts, run);
  if (parts.size() > 1 && run.parts.front().error) {
    // Which part caused it? Each alone: the others still get their answers.
    for (size_t p = 0; p < parts.size(); ++p)
      run_once(model, parts.subspan(p, 1), std::span(run.parts).subspan(p, 1), run);
  }
  return run;
}

}  // namespace kaas::serving
