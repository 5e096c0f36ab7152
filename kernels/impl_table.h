#pragma once
// Implementation lists as data (after oneDNN's cpu_*_list.cpp and ggml's supports_op): each
// choice point of a kernel is one table of rows in preference order, the portable row last. A row
// says what it is (name, instruction-set tier, bit class), whether it can run a call and why not,
// and runs it. Dispatch, its error messages, the case lists (so kaas-self-check, kaas-bench and
// the kernel tests) and the planner's candidates read the tables: a new CPU path is one row plus
// its kernel file, and a row no case reaches fails tests/kernels/test_impl_tables.cc.
//
// The tier column carries the ISA cap: a row above KAAS_MAX_CPU_ISA is unavailable with the
// reason "capped: KAAS_MAX_CPU_ISA=...", so any x86 machine runs and tests its lesser tiers.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kaas/backends/cpu/cpu_features.h"
#include "kaas/backends/queue.h"
#include "kaas/common/error.h"

namespace kaas {

// One implementation of a choice point. Call is the kernel's checked call: it has a member
// `const Queue* queue` and whatever the row's predicates read (shapes and strides; the
// predicates never read data, so a call with null data asks the same questions as a real one).
template <class Impl, class Call>
struct ImplRow {
  Impl impl;
  std::string_view name;  // as RunOptions::impl, kaas-bench rows and error messages spell it
  IsaTier tier;           // kPortable: no hand-written SIMD (the portable kernel, vendor BLAS)
  // Bit class: rows of one class give a call the same bits (docs/reproducibility.md).
  std::string_view bits;
  // Empty when the row runs on this queue's backend at all; else why not.
  std::string (*backend_unfit)(const Queue&);
  // Empty when the row can run this call (tier and backend aside); else why not.
  std::string (*unfit)(const Call&);
  // Empty when kAuto may take the row for this call; else why it passes it over (measured slower
  // there, bits that follow the batch, chosen by the planner only).
  std::string (*auto_skips)(const Call&);
  void (*run)(const Call&);
};

// Row predicates shared by the tables.
inline std::string any_backend(const Queue&) {
  return {};
}
std::string needs_host_simd(const Queue& queue);  // serial, openmp, tbb (backend traits)
// A hand-written SIMD path: `compiled` (its file built with its instruction set) and a host
// SIMD backend.
std::string compiled_host_simd(const Queue& queue, bool compiled);
template <class Call>
std::string always_fits(const Call&) {
  return {};
}

// A table as the tests and tools see it, whatever its call type.
struct ImplRowInfo {
  std::string_view name;
  IsaTier tier;
  std::string_view bits;
  std::string (*backend_unfit)(const Queue&);
};
struct ImplTableInfo {
  std::string_view choice;  // "gemm fp32": what Case::impl_table names
  std::string_view kernel;  // the kernel whose cases reach it (cases/<kernel>_cases.cc)
  std::vector<ImplRowInfo> rows;
};
// Why a row cannot run on `queue` at all (tier first, then backend); empty when it can.
std::string row_unavailable(const ImplRowInfo& row, const Queue& queue);

template <class Impl, class Call>
class ImplTable {
 public:
  using Row = ImplRow<Impl, Call>;
  ImplTable(std::string_view choice, std::string_view kernel, std::span<const Row> rows)
      : choice_(choice), kernel_(kernel), rows_(rows) {}

  std::span<const Row> rows() const { return rows_; }
  const Row* find(Impl impl) const {
    for (const Row& row : rows_) {
      if (row.impl == impl) return &row;
    }
    return nullptr;
  }
  const Row* find(std::string_view name) const {
    for (const Row& row : rows_) {
      if (row.name == name) return &row;
    }
    return nullptr;
  }

  // Empty when `row` can run `call` here; else why not: the tier (CPU or cap), the backend, the
  // call.
  std::string why_not(const Row& row, const Call& call) const {
    std::string why = isa_tier_unavailable(row.tier);
    if (why.empty()) why = row.backend_unfit(*call.queue);
    if (why.empty()) why = row.unfit(call);
    return why;
  }

  // kAuto (`automatic`): the first row that can run the call and that auto does not pass over;
  // another value: that row, or kInvalidArgument naming it and why it cannot run.
  Impl choose(Impl requested, Impl automatic, const Call& call) const {
    if (requested == automatic) {
      for (const Row& row : rows_) {
        // Per kernel call: rows above the usable tier are passed over without building their
        // reason.
        if (row.tier > usable_isa_tier()) continue;
        if (why_not(row, call).empty() && row.auto_skips(call).empty()) return row.impl;
      }
      throw Error(ErrorCode::kInternal,
                  std::string(choice_) + ": no implementation can run this call");
    }
    const Row* row = find(requested);
    if (row == nullptr) {
      throw Error(ErrorCode::kInvalidArgument, std::string(choice_) + ": impl: expected " +
                                                   names() + ", received " +
                                                   std::to_string(static_cast<int>(requested)));
    }
    const std::string why = why_not(*row, call);
    if (!why.empty()) {
      throw Error(
          ErrorCode::kInvalidArgument,
          std::string(choice_) + ": impl " + std::string(row->name) + " cannot run here: " + why);
    }
    return requested;
  }

  // The rows that can run the call, by name (the case lists' implementations).
  std::vector<std::string> runnable(const Call& call) const {
    std::vector<std::string> out;
    for (const Row& row : rows_) {
      if (why_not(row, call).empty()) out.emplace_back(row.name);
    }
    return out;
  }

  void run(Impl impl, const Call& call) const { find(impl)->run(call); }

  std::string names() const {
    std::string out;
    for (const Row& row : rows_) {
      if (!out.empty()) out += ", ";
      out += row.name;
    }
    return out;
  }

  ImplTableInfo info() const {
    ImplTableInfo out{choice_, kernel_, {}};
    for (const Row& row : rows_)
      out.rows.push_back({row.name, row.tier, row.bits, row.backend_unfit});
    return out;
  }

 private:
  std::string_view choice_, kernel_;
  std::span<const Row> rows_;
};

// Every table of the kernels library (kernels/impl_table.cc), for the coverage test, kaas-info
// and the docs.
std::vector<ImplTableInfo> impl_tables();
// The tier of row `name` of table `choice` ("gemm fp32", ...); kInvalidArgument for an unknown
// table or row.
IsaTier impl_row_tier(std::string_view choice, std::string_view name);

}  // namespace kaas
