// kaas-server's dynamic batcher with the shared failure rule: requests joined into one execution
// that fails are re-run one by one, so only the request that caused the failure fails; requests
// whose deadline passed or whose client went are answered without being executed.

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <future>
#include <memory>
#include <optional>
#include <vector>

#include "kaas/common/error.h"
#include "kaas/server_adapter/server/scheduler.h"
#include "tests/server/core/doubling_model.h"

namespace kaas::server {
namespace {

using namespace std::chrono_literals;
using testing_models::DoublingModel;
using testing_models::floats;
using testing_models::rows_of;

struct Scheduled {
  DoublingModel* model = nullptr;  // owned by the scheduler
  std::shared_ptr<ModelStats> stats = std::make_shared<ModelStats>();
  std::unique_ptr<ModelScheduler> scheduler;
};

// Three single-row requests form a preferred batch of 3: they run as one execution, and a long
// queue delay guarantees nothing runs before the third arrives.
Scheduled batcher_of_three() {
  Scheduled s;
  auto model = std::make_unique<DoublingModel>();
  s.model = model.get();
  std::vector<std::unique_ptr<models::Model>> instances;
  instances.push_back(std::move(model));
  BatchingPolicy policy;
  policy.dynamic = true;
  policy.preferred_sizes = {3};
  policy.max_queue_delay = 10s;
  s.scheduler = std::make_unique<ModelScheduler>("doubling", std::move(instances), policy, s.stats);
  return s;
}

InferRequest request_of(std::vector<float> values) {
  InferRequest request;
  request.inputs.push_back(rows_of(std::move(values)));
  return request;
}

TEST(ModelScheduler, AFailedJoinedExecutionFailsOnlyTheRequestThatCausedIt) {
  Scheduled s = batcher_of_three();
  auto good_first = s.scheduler->submit(request_of({1, 2}));
  auto bad = s.scheduler->submit(request_of({NAN, 3}));
  auto good_last = s.scheduler->submit(request_of({4, 5}));

  EXPECT_EQ(floats(good_first.get().front()), (std::vector<float>{2, 4}));
  EXPECT_EQ(floats(good_last.get().front()), (std::vector<float>{8, 10}));
  try {
    bad.get();
    ADD_FAILURE() << "the NaN request succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("NaN"), std::string::npos) << e.what();
  }
  EXPECT_EQ(s.model->executions.load(), 4);  // joined, then each request alone
  const StatsSnapshot stats = s.stats->snapshot();
  EXPECT_EQ(stats.success.count, 2u);
  EXPECT_EQ(stats.fail.count, 1u);
  EXPECT_EQ(stats.inference_count, 2u);
  EXPECT_EQ(stats.execution_count, 4u);
  EXPECT_EQ(stats.pending, 0u);

  // The scheduler keeps serving after the failure.
  auto a = s.scheduler->submit(request_of({1, 1}));
  auto b = s.scheduler->submit(request_of({2, 2}));
  auto c = s.scheduler->submit(request_of({3, 3}));
  EXPECT_EQ(floats(c.get().front()), (std::vector<float>{6, 6}));
  EXPECT_EQ(floats(a.get().front()), (std::vector<float>{2, 2}));
  EXPECT_EQ(floats(b.get().front()), (std::vector<float>{4, 4}));
  EXPECT_EQ(s.model->executions.load(), 5);
}

TEST(ModelScheduler, RequestsNobodyWaitsForAreNotExecuted) {
  Scheduled s = batcher_of_three();
  InferRequest late = request_of({1, 1});
  late.deadline = std::chrono::steady_clock::now() - 1ms;
  InferRequest gone = request_of({2, 2});
  gone.abandoned = std::make_shared<std::atomic<bool>>(true);
  auto late_answer = s.scheduler->submit(std::move(late));
  auto gone_answer = s.scheduler->submit(std::move(gone));
  auto kept = s.scheduler->submit(request_of({3, 3}));
  s.scheduler->drain();  // the kept request runs alone once nothing more can arrive

  const auto code_of = [](std::future<std::vector<models::HostTensor>>& f) {
    try {
      f.get();
    } catch (const Error& e) {
      return std::optional<ErrorCode>(e.code());
    }
    return std::optional<ErrorCode>();
  };
  EXPECT_EQ(code_of(late_answer), ErrorCode::kDeadlineExceeded);
  EXPECT_EQ(code_of(gone_answer), ErrorCode::kCancelled);
  EXPECT_EQ(floats(kept.get().front()), (std::vector<float>{6, 6}));
  EXPECT_EQ(s.model->executions.load(), 1);
  EXPECT_EQ(s.stats->snapshot().fail.count, 2u);
}

TEST(ModelScheduler, AFullQueueRefusesAndCountsItApart) {
  auto model = std::make_unique<DoublingModel>();
  std::vector<std::unique_ptr<models::Model>> instances;
  instances.push_back(std::move(model));
  BatchingPolicy policy;
  policy.dynamic = true;
  policy.max_queue_delay = 10s;  // the first request waits for company
  policy.max_queue_size = 1;
  auto stats = std::make_shared<ModelStats>();
  ModelScheduler scheduler("doubling", std::move(instances), policy, stats);
  auto waiting = scheduler.submit(request_of({1, 2}));
  try {
    scheduler.submit(request_of({3, 4}));
    ADD_FAILURE() << "a second request fit into a queue of one";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
    EXPECT_NE(std::string(e.what()).find("queue full"), std::string::npos) << e.what();
  }
  scheduler.drain();
  EXPECT_EQ(floats(waiting.get().front()), (std::vector<float>{2, 4}));
  const StatsSnapshot s = stats->snapshot();
  EXPECT_EQ(s.queue_full, 1u);
  EXPECT_EQ(s.fail.count, 1u);
  // The executed request is in the queue-time histogram, the refused one is not.
  uint64_t histogram_total = 0;
  for (uint64_t c : s.queue_histogram.counts) histogram_total += c;
  EXPECT_EQ(histogram_total, 1u);
  EXPECT_EQ(s.queue_histogram.counts[QueueHistogram::kBuckets], 0u);  // 10 s bucket not reached
}

}  // namespace
}  // namespace kaas::server
