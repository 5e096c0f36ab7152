#pragma once
// DirectClient: the model in this process on a chosen backend, behind the InferenceClient API.
// Built from a model repository entry it is the model kaas-server would serve from the same
// directory (same config, same ONNX file), so switching between direct and remote changes
// nothing but where the kernels run.

#include <condition_variable>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>

#include "kaas/backends/backend.h"
#include "kaas/client/inference_client.h"
#include "kaas/models/model.h"

namespace kaas::client {

struct DirectOptions {
  BatchMode batch_mode = BatchMode::kRectangular;
  int async_threads = 8;  // asynchronous calls queue for the one model instance
  // from_repository: replaces or adds config.pbtxt `parameters`, e.g. {"precision", "bf16"}.
  std::map<std::string, std::string> parameters;
};

class DirectClient final : public InferenceClient {
 public:
  // Repository entry `name` (Triton layout) on `backend`, one model instance. kNotFound for an
  // unknown model, kInvalidArgument for a bad config or model file.
  static std::unique_ptr<DirectClient> from_repository(const std::filesystem::path& repository,
                                                       const std::string& name,
                                                       const Backend& backend,
                                                       const DirectOptions& options = {});
  DirectClient(std::unique_ptr<models::Model> model, std::string backend_name,
               const DirectOptions& options = {});
  ~DirectClient() override;

  std::string describe() const override { return "direct " + backend_name_; }

 protected:
  // Calls queue for the model; a deadline that passes while queued or running fails the call
  // with kDeadlineExceeded, as a server would answer.
  InferResult execute(const CallRequest& request) override;

 private:
  std::unique_ptr<models::Model> model_;
  std::string backend_name_;
  // One call runs the model at a time. A flag under a mutex and a condition variable rather than
  // std::timed_mutex: its try_lock_until waits in pthread_mutex_clocklock, which GCC 12's
  // ThreadSanitizer does not intercept (the TSan test build then reports every unlock).
  std::mutex run_mutex_;
  std::condition_variable run_free_;
  bool running_ = false;
};

}  // namespace kaas::client
