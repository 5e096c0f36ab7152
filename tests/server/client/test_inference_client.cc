// kaas::client against an in-process kaas-server on loopback: direct and remote give the same
// bytes, errors are the ones documented, asynchronous calls match synchronous ones, and a
// server that goes away mid-run is retried and then replaced by the fallback.

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <span>
#include <thread>

#include "kaas/backends/backend.h"
#include "kaas/client/direct_client.h"
#include "kaas/client/remote_client.h"
#include "kaas/server_adapter/core/default_repository.h"
#include "kaas/server_adapter/server/server.h"
#include "tests/support/reference.h"

namespace kaas::testing {
namespace {

namespace fs = std::filesystem;
using client::BatchMode;
using client::CallOptions;
using client::DirectClient;
using client::InferResult;
using client::RemoteClient;
using client::RemoteOptions;

struct Plane {
  int64_t wires = 0, bins = 0;
  std::vector<float> image;
  std::vector<int32_t> wire;
  std::vector<float> tick;
};

Plane make_plane(int64_t wires, int64_t bins, int64_t hits, uint64_t seed) {
  Plane p{wires, bins, random_floats(wires * bins, seed, -5.0f, 15.0f), {}, {}};
  const auto u = random_floats(hits * 2, seed + 1, 0.0f, 1.0f);
  for (int64_t h = 0; h < hits; ++h) {
    p.wire.push_back(int32_t(u[h * 2] * float(wires - 1)));
    p.tick.push_back(u[h * 2 + 1] * float(bins * 6 - 1));
  }
  return p;
}

void set_plane(client::InferenceClient& c, const Plane& p, size_t entry) {
  c.set_input<float>("image", p.image, {p.wires, p.bins}, entry);
  c.set_input<int32_t>("hit_wire", p.wire, {int64_t(p.wire.size())}, entry);
  c.set_input<float>("hit_tick", p.tick, {int64_t(p.tick.size())}, entry);
}

// Every output of every entry, as bytes: "identical" means bit-identical.
std::vector<std::vector<std::byte>> all_bytes(const InferResult& r,
                                              const std::vector<std::string>& names) {
  std::vector<std::vector<std::byte>> bytes;
  for (size_t e = 0; e < r.entries(); ++e) {
    for (const auto& name : names) bytes.push_back(r.tensor(name, e).bytes);
  }
  return bytes;
}

class ClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    repository_ = new fs::path(fs::temp_directory_path() /
                               ("kaas_client_test_" + std::to_string(::getpid())));
    server::write_default_repository(*repository_, 128);
    // knn with BF16 points and FP16 distances: converted at the model's boundary.
    fs::create_directories(*repository_ / "knn_half" / "1");
    std::ofstream(*repository_ / "knn_half" / "config.pbtxt")
        << "name: \"knn_half\"\nbackend: \"kaas\"\nmax_batch_size: 0\n"
           "parameters { key: \"kaas_model\" value { string_value: \"knn\" } }\n"
           "parameters { key: \"k\" value { string_value: \"16\" } }\n"
           "input [ { name: \"points\" data_type: TYPE_BF16 dims: [ -1, -1 ] } ]\n"
           "output [ { name: \"distances\" data_type: TYPE_FP16 dims: [ -1, 16 ] } ]\n";
    // EmTrkMichelId in bf16: the same model file and max batch (the plan's slab passes), config
    // parameter precision.
    fs::create_directories(*repository_ / "emtrk_bf16" / "1");
    fs::copy_file(*repository_ / "emtrkmichelid" / "1" / "model.onnx",
                  *repository_ / "emtrk_bf16" / "1" / "model.onnx");
    std::ofstream(*repository_ / "emtrk_bf16" / "config.pbtxt")
        << "name: \"emtrk_bf16\"\nplatform: \"onnxruntime_onnx\"\nmax_batch_size: 128\n"
           "parameters { key: \"precision\" value { string_value: \"bf16\" } }\n";
  }
  static void TearDownTestSuite() {
    server_.reset();
    fs::remove_all(*repository_);
    delete repository_;
  }
  // One server for the suite (loading the repository is most of a test's time, minutes under
  // ThreadSanitizer); a test that stops it leaves the next test a new one.
  void SetUp() override {
    if (!server_) start_server();
  }

  static void start_server() {
    server::ServerOptions options;
    options.model_repository = repository_->string();
    options.backend = std::string(backend().name());
    options.http_port = options.grpc_port = options.metrics_port = 0;
    options.client_shm.allowed = true;  // SharedMemoryGivesTheSameOutputsAsMessages
    server_ = std::make_unique<server::Server>(options);
    url_ = "127.0.0.1:" + std::to_string(server_->grpc_port());
  }
  static const Backend& backend() { return default_backend(); }

  std::unique_ptr<DirectClient> direct(const std::string& model,
                                       BatchMode mode = BatchMode::kRectangular) {
    client::DirectOptions options;
    options.batch_mode = mode;
    return DirectClient::from_repository(*repository_, model, backend(), options);
  }
  std::unique_ptr<RemoteClient> remote(const std::string& model,
                                       BatchMode mode = BatchMode::kRectangular) {
    RemoteOptions options;
    options.model = model;
    options.batch_mode = mode;
    return RemoteClient::create(url_, options);
  }

  static fs::path* repository_;
  static inline std::unique_ptr<server::Server> server_;
  static inline std::string url_;
};
fs::path* ClientTest::repository_ = nullptr;

const std::vector<std::string> kImageOutputs = {"scores", "fiducial"};
const std::vector<std::string> kCnnOutputs = {"em_trk_none_netout/Softmax",
                                              "michel_netout/Sigmoid"};

TEST_F(ClientTest, DirectAndRemoteGiveIdenticalScoresForImagesAndPatches) {
  // Sizes: what the property needs (ragged entries, an empty one, two chunks), no more: under
  // ThreadSanitizer, where this suite is the longest test, the model code around the kernels
  // is instrumented.
  const std::vector<Plane> planes = {make_plane(90, 120, 40, 1), make_plane(70, 100, 24, 3),
                                     make_plane(110, 90, 0, 5)};
  auto d = direct("michel_from_image", BatchMode::kRagged);
  auto r = remote("michel_from_image", BatchMode::kRagged);
  for (size_t p = 0; p < planes.size(); ++p) {
    set_plane(*d, planes[p], p);
    set_plane(*r, planes[p], p);
  }
  const InferResult dr = d->run(), rr = r->run();
  ASSERT_EQ(rr.entries(), 3u);
  EXPECT_EQ(rr.shape("scores", 0)[0], 40);
  EXPECT_EQ(rr.shape("scores", 2)[0], 0);
  EXPECT_EQ(all_bytes(dr, kImageOutputs), all_bytes(rr, kImageOutputs));
  EXPECT_GT(rr.info().bytes_sent, int64_t(planes[0].image.size() * sizeof(float)));
  EXPECT_EQ(dr.info().bytes_sent, 0);

  // Patches: 60 of them in chunks of 40 (ragged) and as two joined entries (rectangular).
  const int64_t n = 60, chunk = 40;
  const auto patches = random_floats(n * 48 * 48, 9, -5.0f, 15.0f);
  auto chunked = [&](client::InferenceClient& c) {
    for (int64_t first = 0, e = 0; first < n; first += chunk, ++e) {
      const int64_t rows = std::min(chunk, n - first);
      c.set_input<float>(
          "main_input", std::span(patches).subspan(size_t(first * 48 * 48), size_t(rows * 48 * 48)),
          {rows, 48, 48, 1}, size_t(e));
    }
    return c.run();
  };
  auto dc = direct("emtrkmichelid", BatchMode::kRagged);
  const auto reference = all_bytes(chunked(*dc), kCnnOutputs);
  auto rc = remote("emtrkmichelid", BatchMode::kRagged);
  EXPECT_EQ(all_bytes(chunked(*rc), kCnnOutputs), reference);
  auto rect = remote("emtrkmichelid", BatchMode::kRectangular);
  const InferResult joined = chunked(*rect);
  EXPECT_EQ(joined.info().attempts, 1);
  EXPECT_EQ(all_bytes(joined, kCnnOutputs), reference);
  EXPECT_EQ(joined.shape("michel_netout/Sigmoid", 1)[0], n - chunk);
}

TEST_F(ClientTest, UnknownModelIsNotFoundAtCreation) {
  try {
    remote("no_such_model");
    FAIL() << "created a client for an unknown model";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound) << e.what();
    EXPECT_NE(std::string(e.what()).find("no_such_model"), std::string::npos) << e.what();
  }
  try {
    direct("no_such_model");
    FAIL() << "created a direct client for an unknown model";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound) << e.what();
  }
}

// A loopback port bound by this process and never listened on: connections to it are refused
// (the suite's server stays up: starting one costs seconds under ThreadSanitizer).
TEST_F(ClientTest, UnreachableServerIsUnavailableAtCreation) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), length), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
  RemoteOptions options;
  options.model = "knn";
  options.ready_timeout = std::chrono::milliseconds(300);
  try {
    RemoteClient::create("127.0.0.1:" + std::to_string(ntohs(address.sin_port)), options);
    ADD_FAILURE() << "created a client without a server";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable) << e.what();
  }
  ::close(fd);
}

TEST_F(ClientTest, TooShortDeadlineIsDeadlineExceeded) {
  // 200 hits: several milliseconds of work on any CPU, so a 1 ms deadline cannot be met, and a
  // direct run (which finishes its work before it reports the deadline) stays short under
  // ThreadSanitizer (3000 hits made this the suite's longest test there, 18 s; 600, 11 s).
  const Plane plane = make_plane(100, 150, 200, 11);
  for (int retries : {0, 1}) {
    RemoteOptions options;
    options.model = "michel_from_image";
    options.retries = retries;
    options.backoff = std::chrono::milliseconds(1);
    auto r = RemoteClient::create(url_, options);
    set_plane(*r, plane, 0);
    try {
      r->run(CallOptions().with_deadline(std::chrono::milliseconds(1)));
      FAIL() << "200 hits answered within 1 ms";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kDeadlineExceeded) << e.what();
      EXPECT_NE(std::string(e.what()).find("DEADLINE_EXCEEDED"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(std::to_string(retries + 1) + " attempt"),
                std::string::npos)
          << e.what();
    }
  }
  auto d = direct("michel_from_image");
  set_plane(*d, plane, 0);
  EXPECT_THROW(
      {
        try {
          d->run(CallOptions().with_deadline(std::chrono::milliseconds(1)));
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), ErrorCode::kDeadlineExceeded) << e.what();
          throw;
        }
      },
      Error);
  // A sufficient deadline answers, on the same client (a small plane: the large one only had to
  // outlast 1 ms, and running it whole took most of this suite's time under ThreadSanitizer).
  const Plane small = make_plane(60, 80, 60, 12);
  set_plane(*d, small, 0);
  EXPECT_EQ(d->run(CallOptions().with_deadline(std::chrono::seconds(120))).shape("scores")[0], 60);
}

TEST_F(ClientTest, AsynchronousCallsMatchSynchronousOnes) {
  std::vector<Plane> planes;
  for (int i = 0; i < 8; ++i) planes.push_back(make_plane(60 + i, 80, 10 + 3 * i, 100 + i));
  auto r = remote("michel_from_image");
  std::vector<std::vector<std::vector<std::byte>>> sync;
  for (const auto& p : planes) {
    set_plane(*r, p, 0);
    sync.push_back(all_bytes(r->run(), kImageOutputs));
  }
  std::vector<std::future<InferResult>> futures;
  for (const auto& p : planes) {
    set_plane(*r, p, 0);  // the call in flight keeps the views it started with
    futures.push_back(r->run_async());
  }
  for (size_t i = 0; i < planes.size(); ++i)
    EXPECT_EQ(all_bytes(futures[i].get(), kImageOutputs), sync[i]) << "event " << i;

  std::atomic<int> answered{0};
  std::vector<std::vector<std::vector<std::byte>>> by_callback(planes.size());
  for (size_t i = 0; i < planes.size(); ++i) {
    set_plane(*r, planes[i], 0);
    r->run_async([&, i](InferResult result, std::exception_ptr error) {
      if (!error) by_callback[i] = all_bytes(result, kImageOutputs);
      ++answered;
    });
  }
  while (answered < int(planes.size())) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(by_callback, sync);
}

// SONIC's ExternalWork pattern: a framework with 64 events waiting on the server. The calls hold
// no thread while in flight: every callback runs on one of the connection's 2 completion threads
// (never on the thread that started the calls), and the answers are direct's bytes.
TEST_F(ClientTest, SixtyFourAsynchronousCallsEndOnTheConnectionsTwoThreads) {
  constexpr int kCalls = 64;
  const auto patches = random_floats(int64_t(kCalls) * 48 * 48, 71, 0.0f, 3.0f);
  auto view = [&](int i) {
    return std::span<const float>(patches.data() + int64_t(i) * 48 * 48, 48 * 48);
  };
  auto d = direct("emtrkmichelid");
  std::vector<std::vector<std::vector<std::byte>>> expected;
  for (int i = 0; i < kCalls; ++i) {
    d->set_input<float>("main_input", view(i), {1, 48, 48, 1});
    expected.push_back(all_bytes(d->run(), kCnnOutputs));
  }
  auto r = remote("emtrkmichelid");
  std::mutex mutex;
  std::condition_variable all_answered;
  int answered = 0;
  std::set<std::thread::id> callback_threads;
  std::vector<std::vector<std::vector<std::byte>>> got(kCalls);
  for (int i = 0; i < kCalls; ++i) {
    r->set_input<float>("main_input", view(i), {1, 48, 48, 1});
    r->run_async([&, i](InferResult result, std::exception_ptr error) {
      const std::lock_guard lock(mutex);
      if (!error) got[size_t(i)] = all_bytes(result, kCnnOutputs);
      callback_threads.insert(std::this_thread::get_id());
      if (++answered == kCalls) all_answered.notify_one();
    });
  }
  std::unique_lock lock(mutex);
  ASSERT_TRUE(
      all_answered.wait_for(lock, std::chrono::seconds(120), [&] { return answered == kCalls; }));
  EXPECT_EQ(got, expected);
  EXPECT_LE(callback_threads.size(), 2u);
  EXPECT_EQ(callback_threads.count(std::this_thread::get_id()), 0u);
}

TEST_F(ClientTest, ThreadsShareOneConnection) {
  auto connection = client::RemoteConnection::connect(url_);
  const Plane plane = make_plane(80, 90, 40, 21);
  auto d = direct("michel_from_image");
  set_plane(*d, plane, 0);
  const auto expected = all_bytes(d->run(), kImageOutputs);
  std::vector<std::thread> threads;
  std::atomic<int> same{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      RemoteOptions options;
      options.model = "michel_from_image";
      auto r = RemoteClient::create(connection, options);
      for (int call = 0; call < 3; ++call) {
        set_plane(*r, plane, 0);
        if (all_bytes(r->run(), kImageOutputs) == expected) ++same;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(same, 12);
}

TEST_F(ClientTest, GzipCompressedRequestsGiveTheSameOutputs) {
  const Plane plane = make_plane(100, 150, 90, 41);
  auto plain = remote("michel_from_image");
  client::ConnectionOptions gzip;
  gzip.gzip = true;
  RemoteOptions options;
  options.model = "michel_from_image";
  auto compressed = RemoteClient::create(url_, options, gzip);
  set_plane(*plain, plane, 0);
  set_plane(*compressed, plane, 0);
  EXPECT_EQ(all_bytes(compressed->run(), kImageOutputs), all_bytes(plain->run(), kImageOutputs));
}

// RemoteOptions::shared_memory: inputs (and fixed-size outputs) through regions the client
// registers; the answers equal the message path's bit for bit, in both batch modes, for growing
// calls (a bigger region is registered when a call outgrows the pool's) and for an unbatched
// model whose outputs come back in the reply.
TEST_F(ClientTest, SharedMemoryGivesTheSameOutputsAsMessages) {
  const auto patches = random_floats(100 * 48 * 48, 12, -5.0f, 15.0f);
  auto run_patches = [&](client::InferenceClient& c, std::vector<int64_t> sizes) {
    int64_t first = 0;
    for (size_t e = 0; e < sizes.size(); ++e) {
      c.set_input<float>(
          "main_input",
          std::span(patches).subspan(size_t(first * 48 * 48), size_t(sizes[e] * 48 * 48)),
          {sizes[e], 48, 48, 1}, e);
      first += sizes[e];
    }
    return c.run();
  };
  for (const BatchMode mode : {BatchMode::kRectangular, BatchMode::kRagged}) {
    auto plain = remote("emtrkmichelid", mode);
    RemoteOptions options;
    options.model = "emtrkmichelid";
    options.batch_mode = mode;
    options.shared_memory = true;
    auto shm = RemoteClient::create(url_, options);
    for (const auto& sizes : std::vector<std::vector<int64_t>>{{1}, {3, 5}, {20, 30, 40}, {2}}) {
      const InferResult a = run_patches(*plain, sizes), b = run_patches(*shm, sizes);
      EXPECT_EQ(all_bytes(a, kCnnOutputs), all_bytes(b, kCnnOutputs)) << sizes.size();
      EXPECT_LT(b.info().bytes_sent, 4096) << "inputs went through the message";
    }
  }
  const Plane plane = make_plane(100, 150, 30, 43);
  auto plain = remote("michel_from_image");
  RemoteOptions options;
  options.model = "michel_from_image";
  options.shared_memory = true;
  auto shm = RemoteClient::create(url_, options);
  set_plane(*plain, plane, 0);
  set_plane(*shm, plane, 0);
  EXPECT_EQ(all_bytes(shm->run(), kImageOutputs), all_bytes(plain->run(), kImageOutputs));
}

TEST_F(ClientTest, BadInputsAreRejectedBeforeAnythingIsSent) {
  auto r = remote("michel_from_image");
  const Plane plane = make_plane(20, 30, 5, 31);
  const std::vector<int32_t> ints(20 * 30);
  auto code_of = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.code();
    }
    return ErrorCode::kInternal;  // no error: never expected below
  };
  EXPECT_EQ(code_of([&] {
              r->set_input<float>("nope", plane.image, {20, 30});
            }),
            ErrorCode::kNotFound);
  EXPECT_EQ(code_of([&] {
              r->set_input<int32_t>("image", ints, {20, 30});
            }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] {
              r->set_input<float>("image", plane.image, {20, 31});
            }),
            ErrorCode::kInvalidArgument);
  r->set_input<float>("image", plane.image, {20, 30});
  EXPECT_EQ(code_of([&] { r->run(); }), ErrorCode::kInvalidArgument) << "hits not set";
  set_plane(*r, plane, 0);
  set_plane(*r, plane, 1);
  EXPECT_EQ(code_of([&] { r->run(); }), ErrorCode::kInvalidArgument)
      << "two entries of an unbatched model in rectangular mode";
  r->clear_inputs();
  set_plane(*r, plane, 0);
  EXPECT_EQ(r->run().shape("scores")[0], 5) << "still usable";
  EXPECT_EQ(code_of([&] { r->run(CallOptions().with_outputs({"nope"})); }),
            ErrorCode::kInvalidArgument);
  const InferResult only = r->run(CallOptions().with_outputs({"fiducial"}));
  EXPECT_EQ(only.tensor("fiducial").shape[0], 5);
  EXPECT_EQ(code_of([&] { only.tensor("scores"); }), ErrorCode::kNotFound);
  EXPECT_EQ(code_of([&] { only.output<float>("fiducial"); }), ErrorCode::kInvalidArgument);
}

TEST_F(ClientTest, Bf16AndFp16TensorsAreConvertedAtTheModelBoundary) {
  // 40 points in two events; the model sees them widened to float and rounds its distances.
  const auto values = random_floats(40 * 3, 41, -2.0f, 2.0f);
  std::vector<bf16> points;
  std::vector<float> widened;
  for (float v : values) {
    points.push_back(math::to_bf16(v));
    widened.push_back(math::to_float(points.back()));
  }
  const std::vector<int64_t> splits = {0, 15, 40};
  auto fp32 = direct("knn");
  fp32->set_input<float>("points", widened, {40, 3});
  fp32->set_input<int64_t>("row_splits", splits, {3});
  const InferResult reference = fp32->run();
  std::vector<uint16_t> expected;
  for (float d : reference.output<float>("distances")) expected.push_back(math::to_fp16(d).bits);

  auto d = direct("knn_half");
  auto r = remote("knn_half");
  EXPECT_EQ(d->signature().inputs[0].dtype, models::DataType::kBFloat16);
  EXPECT_EQ(r->signature().outputs[1].dtype, models::DataType::kFloat16);
  for (client::InferenceClient* c : {static_cast<client::InferenceClient*>(d.get()),
                                     static_cast<client::InferenceClient*>(r.get())}) {
    c->set_input<bf16>("points", points, {40, 3});
    c->set_input<int64_t>("row_splits", splits, {3});
    const InferResult got = c->run();
    std::vector<uint16_t> bits;
    for (fp16 v : got.output<fp16>("distances")) bits.push_back(v.bits);
    EXPECT_EQ(bits, expected) << c->describe();
    const auto indices = got.output<int32_t>("indices");
    const auto want = reference.output<int32_t>("indices");
    EXPECT_TRUE(std::equal(indices.begin(), indices.end(), want.begin(), want.end()));
    EXPECT_THROW(c->set_input<float>("points", widened, {40, 3}), Error) << "FP32 for BF16";
  }
}

TEST_F(ClientTest, PrecisionParameterRunsTheModelInBf16ServedAndDirect) {
  const int64_t n = 24;
  const auto patches = random_floats(n * 48 * 48, 17, -5.0f, 15.0f);
  auto run = [&](client::InferenceClient& c) {
    c.set_input<float>("main_input", patches, {n, 48, 48, 1});
    return c.run();
  };
  const InferResult fp32 = run(*direct("emtrkmichelid"));
  client::DirectOptions bf16_options;
  bf16_options.parameters = {{"precision", "bf16"}};
  auto overridden =
      DirectClient::from_repository(*repository_, "emtrkmichelid", backend(), bf16_options);
  const InferResult direct_bf16 = run(*overridden);
  const InferResult served_bf16 = run(*remote("emtrk_bf16"));
  EXPECT_EQ(all_bytes(served_bf16, kCnnOutputs), all_bytes(direct_bf16, kCnnOutputs))
      << "config parameter and DirectOptions::parameters run the same plan";
  EXPECT_NE(all_bytes(direct_bf16, kCnnOutputs), all_bytes(fp32, kCnnOutputs)) << "not bf16";
  const auto a = fp32.output<float>(kCnnOutputs[0]), b = direct_bf16.output<float>(kCnnOutputs[0]);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 0.02) << i;

  client::DirectOptions bad;
  bad.parameters = {{"precision", "fp8"}};
  try {
    DirectClient::from_repository(*repository_, "emtrkmichelid", backend(), bad);
    ADD_FAILURE() << "precision fp8 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("precision: expected fp32, bf16 or fp16, received 'fp8'"),
              std::string::npos)
        << e.what();
  }
}

// Last in the suite: it stops the server (restarting one costs seconds under ThreadSanitizer).
TEST_F(ClientTest, ServerGoneMidRunIsRetriedThenReplacedByTheFallback) {
  std::vector<Plane> planes;
  for (int i = 0; i < 6; ++i) planes.push_back(make_plane(70, 90, 20 + i, 200 + i));
  auto d = direct("michel_from_image");
  RemoteOptions options;
  options.model = "michel_from_image";
  options.retries = 2;
  options.backoff = std::chrono::milliseconds(20);
  options.fallback = [&] { return direct("michel_from_image"); };
  auto r = RemoteClient::create(url_, options);
  for (size_t i = 0; i < planes.size(); ++i) {
    if (i == 3) server_.reset();  // the server goes away between events
    set_plane(*d, planes[i], 0);
    set_plane(*r, planes[i], 0);
    const InferResult rr = r->run();
    EXPECT_EQ(all_bytes(rr, kImageOutputs), all_bytes(d->run(), kImageOutputs)) << "event " << i;
    EXPECT_EQ(rr.info().fallback, i >= 3) << "event " << i;
    if (i == 3) {
      EXPECT_EQ(rr.info().attempts, 3) << "1 try + 2 retries before the fallback";
    }
  }
  EXPECT_TRUE(r->on_fallback());
  EXPECT_NE(r->fallback_reason().find("UNAVAILABLE"), std::string::npos) << r->fallback_reason();

  // Without a fallback the call fails with the last status after its retries.
  RemoteOptions no_fallback = options;
  no_fallback.fallback = nullptr;
  start_server();
  auto lonely = RemoteClient::create(url_, no_fallback);
  server_.reset();
  set_plane(*lonely, planes[0], 0);
  try {
    lonely->run();
    FAIL() << "answered without a server";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable) << e.what();
    EXPECT_NE(std::string(e.what()).find("3 attempts"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kaas::testing
