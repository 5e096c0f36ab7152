#include "cases/elementwise_cases.h"

#include <algorithm>
#include <functional>
#include <numeric>

#include "cases/guarded.h"
#include "cases/reference.h"
#include "kaas/kernels/elementwise.h"

namespace kaas::cases {

namespace {

int64_t count(const std::vector<int64_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

std::vector<int64_t> dense_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

// Offset into a dense tensor of `shape` for output index `index` (right-aligned, numpy rules).
int64_t broadcast_offset(const std::vector<int64_t>& shape, const std::vector<int64_t>& index) {
  const size_t skip = index.size() - shape.size();
  const auto strides = dense_strides(shape);
  int64_t offset = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    offset += (shape[d] == 1 ? 0 : index[skip + d]) * strides[d];
  }
  return offset;
}

}  // namespace

std::vector<int64_t> elementwise_output_shape(const ElementwiseCase& c) {
  if (c.copy) {
    std::vector<int64_t> shape;
    for (int p : c.permutation) shape.push_back(c.a[size_t(p)]);
    return shape;
  }
  const size_t rank = std::max(c.a.size(), c.b.size());
  std::vector<int64_t> shape(rank, 1);
  for (const auto* operand : {&c.a, &c.b}) {
    const size_t skip = rank - operand->size();
    for (size_t d = 0; d < operand->size(); ++d) {
      shape[skip + d] = std::max(shape[skip + d], (*operand)[d]);
    }
  }
  return shape;
}

std::vector<float> elementwise_reference(const ElementwiseCase& c, const std::vector<float>& a,
                                         const std::vector<float>& b) {
  const auto shape = elementwise_output_shape(c);
  const auto a_strides = dense_strides(c.a);
  std::vector<float> y(size_t(count(shape)));
  std::vector<int64_t> index(shape.size(), 0);
  for (size_t i = 0; i < y.size(); ++i) {
    if (c.copy) {
      int64_t offset = 0;
      for (size_t d = 0; d < shape.size(); ++d)
        offset += index[d] * a_strides[size_t(c.permutation[d])];
      y[i] = a[size_t(offset)];
    } else {
      y[i] = a[size_t(broadcast_offset(c.a, index))] + b[size_t(broadcast_offset(c.b, index))];
    }
    for (size_t d = shape.size(); d-- > 0;) {  // next row-major index
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return y;
}

std::vector<ElementwiseCase> elementwise_shapes() {
  return {{false, {64, 1, 33}, {7, 33}, {}},
          {true, {1024, 1024}, {}, {1, 0}},
          {false, {1 << 20}, {1 << 20}, {}},
          {true, {2, 3, 4, 5, 6, 7}, {}, {5, 3, 1, 4, 0, 2}},
          {false, {256, 1, 1024}, {1, 16, 1}, {}}};
}

namespace {

class ElementwiseInstance : public Instance {
 public:
  ElementwiseInstance(const Queue& queue, const ElementwiseCase& c, const RunOptions& options)
      : queue_(queue),
        c_(c),
        options_(options),
        shape_(elementwise_output_shape(c)),
        a_host_(random_floats(size_t(count(c.a)), 3)),
        b_host_(c.copy ? std::vector<float>{} : random_floats(size_t(count(c.b)), 4)),
        a_(queue, a_host_),
        b_(queue, b_host_),
        y_(queue, size_t(count(shape_))) {}
  void run() override {
    const View<float, 6> y = to_rank6(y_.data(), std::span<const int64_t>(shape_));
    const float* a = a_.data();
    if (c_.copy) {
      std::vector<int64_t> strides;
      const auto dense = dense_strides(c_.a);
      for (int p : c_.permutation) strides.push_back(dense[size_t(p)]);
      copy_strided(queue_, to_rank6(a, std::span<const int64_t>(shape_), strides), y,
                   options_.config);
      return;
    }
    binary(queue_, BinaryOp::kAdd, broadcast_view(a, std::span<const int64_t>(c_.a), shape_),
           broadcast_view(static_cast<const float*>(b_.data()), std::span<const int64_t>(c_.b),
                          shape_),
           y, options_.config);
  }
  Check check() override {
    Checker checker;
    int64_t guard_writes = 0;
    const auto y = y_.read(&guard_writes);
    checker.add_guard_writes(guard_writes);
    const auto expected = elementwise_reference(c_, a_host_, b_host_);
    for (size_t i = 0; i < y.size(); ++i) {
      checker.bits(y[i], expected[i], "y", int64_t(i));
    }
    return checker.result();
  }

 private:
  const Queue& queue_;
  ElementwiseCase c_;
  RunOptions options_;
  std::vector<int64_t> shape_;
  std::vector<float> a_host_, b_host_;
  Guarded<float> a_, b_, y_;
};

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s;
  for (int64_t e : shape) {
    if (!s.empty()) s += 'x';
    s += std::to_string(e);
  }
  return s;
}

}  // namespace

std::vector<Case> elementwise_cases() {
  std::vector<Case> cases;
  for (const ElementwiseCase& c : elementwise_shapes()) {
    const double n = double(count(elementwise_output_shape(c)));
    Case k;
    k.kernel = "elementwise";
    k.name = c.copy ? "copy_strided_transpose_" + shape_string(c.a) + "/{backend}"
                    : "binary_add_" + shape_string(c.a) + "_" + shape_string(c.b) + "/{backend}";
    k.title = c.copy ? "transpose " + shape_string(c.a) : "add " + shape_string(c.a);
    // every output read from its operands once (broadcast operands stay in cache) and written
    k.bytes = 4.0 * (double(count(c.a)) + (c.copy ? 0.0 : double(count(c.b))) + n);
    k.flops = c.copy ? 0.0 : n;
    k.reference_ops = 8 * n;
    k.impls = default_impl;
    k.prepare = [c](const Queue& queue, const RunOptions& options) {
      return std::make_unique<ElementwiseInstance>(queue, c, options);
    };
    cases.push_back(std::move(k));
  }
  return cases;
}

}  // namespace kaas::cases
