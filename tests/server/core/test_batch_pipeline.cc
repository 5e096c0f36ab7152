// The batch pipeline every door onto a model shares: join and split by rows, and the failure
// rule (a failed joined execution is re-run part by part, so only the part that caused it fails).

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kaas/common/error.h"
#include "kaas/server_adapter/core/batch_pipeline.h"
#include "tests/server/core/doubling_model.h"

namespace kaas::serving {
namespace {

using testing_models::DoublingModel;
using testing_models::floats;
using testing_models::rows_of;

TEST(BatchPipeline, JoinsRunsOnceAndSplitsBackByRows) {
  DoublingModel model;
  const std::vector<HostTensor> inputs = {rows_of({1, 2}), rows_of({3, 4, 5, 6, 7, 8}),
                                          rows_of({9, 10})};
  std::vector<BatchPart> parts;
  for (const auto& t : inputs) parts.push_back({{t.view()}, t.shape[0]});
  BatchRun run = run_parts(model, parts);
  EXPECT_EQ(model.executions, 1);
  EXPECT_EQ(run.executions, 1);
  ASSERT_EQ(run.parts.size(), 3u);
  EXPECT_EQ(run.parts[1].first_row, 1);
  EXPECT_EQ(floats(run.parts[0].take().front()), (std::vector<float>{2, 4}));
  const auto middle = run.parts[1].take();
  EXPECT_EQ(middle.front().shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(floats(middle.front()), (std::vector<float>{6, 8, 10, 12, 14, 16}));
  EXPECT_EQ(floats(run.parts[2].take().front()), (std::vector<float>{18, 20}));

  const auto split = split_outputs(join_parts(parts), std::vector<int64_t>{1, 3, 1});
  ASSERT_EQ(split.size(), 3u);
  for (size_t p = 0; p < 3; ++p) EXPECT_EQ(floats(split[p].front()), floats(inputs[p]));
}

TEST(BatchPipeline, AFailedJoinedExecutionFailsOnlyThePartThatCausedIt) {
  DoublingModel model;
  const std::vector<HostTensor> inputs = {rows_of({1, 2}), rows_of({3, NAN}), rows_of({5, 6})};
  std::vector<BatchPart> parts;
  for (const auto& t : inputs) parts.push_back({{t.view()}, 1});
  BatchRun run = run_parts(model, parts);
  EXPECT_EQ(run.executions, 4);  // the joined one, then each part alone
  EXPECT_EQ(model.executions, 4);
  EXPECT_FALSE(run.parts[0].error);
  EXPECT_TRUE(run.parts[1].error);
  EXPECT_FALSE(run.parts[2].error);
  EXPECT_EQ(floats(run.parts[0].take().front()), (std::vector<float>{2, 4}));
  EXPECT_EQ(floats(run.parts[2].take().front()), (std::vector<float>{10, 12}));
  EXPECT_THROW(run.parts[1].take(), Error);
}

TEST(BatchPipeline, ASinglePartIsNotRunTwiceAndKeepsItsOutputs) {
  DoublingModel model;
  const HostTensor bad = rows_of({NAN, 1});
  BatchRun run = run_parts(model, std::vector<BatchPart>{{{bad.view()}, 1}});
  EXPECT_EQ(run.executions, 1);
  EXPECT_TRUE(run.parts[0].error);
  const HostTensor good = rows_of({1, 1, 2, 2});
  BatchRun ok = run_parts(model, std::vector<BatchPart>{{{good.view()}, 2}});
  EXPECT_EQ(floats(ok.parts[0].take().front()), (std::vector<float>{2, 2, 4, 4}));
}

TEST(BatchPipeline, RowsOutsideATensorAreAnInternalError) {
  const HostTensor t = rows_of({1, 2, 3, 4});
  EXPECT_EQ(floats(tensor_rows(t, 1, 1)), (std::vector<float>{3, 4}));
  EXPECT_THROW(tensor_rows(t, 1, 2), Error);
  EXPECT_THROW(tensor_rows(t, -1, 1), Error);
}

}  // namespace
}  // namespace kaas::serving
