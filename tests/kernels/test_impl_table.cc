// The implementation tables (kernels/impl_table.h) against the case lists: every row this machine
// can run on a backend is reached by a case the kernel tests check there, whatever tier the run
// is capped at (ctest kernel_tiers.<tier>), and the tables keep their own rules.

#include "kaas/kernels/impl_table.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "cases/registry.h"
#include "kaas/backends/cpu/cpu_features.h"
#include "tests/support/backends_under_test.h"
#include "tests/support/kernel_cases.h"

namespace kaas::testing {
namespace {

class ImplTableTest : public ::testing::TestWithParam<const Backend*> {};

// For each table, the row names its cases list on `backend` among those the tests check there.
std::map<std::string, std::set<std::string>> rows_reached(const Backend& backend) {
  std::map<std::string, std::set<std::string>> reached;
  for (const cases::KernelCases& entry : cases::kernel_registry()) {
    const std::vector<cases::Case> list = entry.cases();
    for (const cases::Case& c : list) {
      if (!cases::within_check_budget(c, backend, &c == &list.front())) continue;
      for (const std::string& table : c.impl_tables) {
        for (const std::string& impl : c.impls(backend)) reached[table].insert(impl);
      }
    }
  }
  return reached;
}

TEST_P(ImplTableTest, EveryRowThisMachineCanRunIsReachedByACheckedCase) {
  const Backend& backend = *GetParam();
  const Queue queue(backend);
  const auto reached = rows_reached(backend);
  int runnable = 0;
  for (const ImplTableInfo& table : impl_tables()) {
    for (const ImplRowInfo& row : table.rows) {
      const std::string why = row_unavailable(row, queue);
      if (!why.empty()) continue;
      ++runnable;
      const auto found = reached.find(std::string(table.choice));
      EXPECT_TRUE(found != reached.end() && found->second.count(std::string(row.name)))
          << table.choice << " row " << row.name << " (tier " << to_string(row.tier)
          << ") can run on " << backend.name() << " here, but no case of cases/" << table.kernel
          << "_cases.cc that the tests check reaches it";
    }
  }
  EXPECT_GT(runnable, 0);
}

TEST_P(ImplTableTest, CasesNameOnlyRowsOfTheirTable) {
  const Backend& backend = *GetParam();
  std::map<std::string, std::set<std::string>> rows;
  for (const ImplTableInfo& table : impl_tables()) {
    for (const ImplRowInfo& row : table.rows) rows[std::string(table.choice)].emplace(row.name);
  }
  for (const cases::KernelCases& entry : cases::kernel_registry()) {
    for (const cases::Case& c : entry.cases()) {
      for (const std::string& table : c.impl_tables) {
        ASSERT_TRUE(rows.count(table)) << c.name << " names table '" << table << "'";
        for (const std::string& impl : c.impls(backend)) {
          if (impl == "auto") continue;
          EXPECT_TRUE(rows[table].count(impl))
              << c.name << " lists " << impl << ", not a row of " << table;
        }
      }
    }
  }
}

// Rows in preference order end with a portable row that runs on every backend (the portable
// kernel; kNN's brute force), so kAuto always finds one.
TEST(ImplTables, EndWithARowThatRunsAnywhere) {
  const auto tables = impl_tables();
  ASSERT_GE(tables.size(), 9u);
  for (const ImplTableInfo& table : tables) {
    ASSERT_FALSE(table.rows.empty()) << table.choice;
    const ImplRowInfo& last = table.rows.back();
    EXPECT_EQ(last.tier, IsaTier::kPortable) << table.choice;
    for (const Backend* backend : compiled_backends()) {
      if (!backend->available()) continue;
      EXPECT_EQ(last.backend_unfit(Queue(*backend)), "")
          << table.choice << " on " << backend->name();
    }
    std::set<std::string_view> names;
    for (const ImplRowInfo& row : table.rows) {
      EXPECT_TRUE(names.insert(row.name).second) << table.choice << " repeats " << row.name;
      EXPECT_FALSE(row.bits.empty()) << table.choice << " row " << row.name << " has no bit class";
    }
  }
}

// The cap is a column: a row above KAAS_MAX_CPU_ISA that this CPU could run says "capped", one
// the CPU lacks says what it lacks, one within both is available.
TEST(ImplTables, RowsAboveTheCapSayCapped) {
  for (IsaTier tier : kIsaTiers) {
    const std::string why = isa_tier_unavailable(tier);
    if (tier > detected_isa_tier()) {
      EXPECT_EQ(why.rfind("this CPU lacks", 0), 0u) << to_string(tier) << ": " << why;
    } else if (tier > usable_isa_tier()) {
      EXPECT_EQ(why, "capped: KAAS_MAX_CPU_ISA=" + std::string(cpu_isa_cap())) << to_string(tier);
    } else {
      EXPECT_EQ(why, "") << to_string(tier);
    }
  }
  EXPECT_LE(usable_isa_tier(), detected_isa_tier());
}

// ctest kernel_tiers.<tier> runs these tests and the case lists capped at each tier below the
// CPU's own; on a CPU without the tier, or with it as its own, the run would repeat
// test_kernels.<backend>, so it is reported skipped (and the case lists skip themselves).
TEST(ImplTables, TheCappedTierIsOneThisCpuHas) {
  const std::string cap = cpu_isa_cap();
  for (IsaTier tier : kIsaTiers) {
    if (to_string(tier) == cap && tier > detected_isa_tier()) {
      GTEST_SKIP() << "this CPU lacks the capped tier " << cap << " (it has "
                   << to_string(detected_isa_tier()) << ")";
    }
  }
  if (const std::string why = tier_run_repeats_the_full_tier(); !why.empty()) GTEST_SKIP() << why;
}

KAAS_INSTANTIATE_FOR_BACKENDS(ImplTableTest);

}  // namespace
}  // namespace kaas::testing
