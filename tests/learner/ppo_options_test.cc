#include "learner/ppo_options.h"

#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ristretto::learner {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// Expects `options` to be refused as kInvalidArgument with `message`.
template <typename Options>
void ExpectRefused(const Options& options, const std::string& message) {
  const absl::Status s = options.Validate();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << message;
  EXPECT_EQ(s.message(), message);
}

TEST(PpoOptionsTest, DefaultsAreValid) {
  EXPECT_TRUE(PpoOptions().Validate().ok());
  EXPECT_TRUE(NetworkOptions().Validate().ok());
}

TEST(PpoOptionsTest, BoundaryValuesInsideTheRangesAreAccepted) {
  PpoOptions o;
  o.learning_rate = 1.0;
  o.gamma = 0.0;
  o.gae_lambda = 1.0;
  o.clip_ratio = 0.999;
  o.value_clip = 0.0;
  o.value_coef = 0.0;
  o.entropy_coef = 0.0;
  o.epochs = 1;
  o.minibatch_size = 1;
  o.max_grad_norm = 0.0;
  o.adam_eps = 1e-12;
  o.max_policy_lag = 0;
  o.cpu_threads = 0;
  EXPECT_TRUE(o.Validate().ok());
  o.gamma = 1.0;
  o.gae_lambda = 0.0;
  EXPECT_TRUE(o.Validate().ok());
}

TEST(PpoOptionsTest, OutOfRangeFloatingOptionsAreRefusedNamingFieldAndValue) {
  struct Case {
    void (*set)(PpoOptions&);
    std::string message;
  };
  const Case cases[] = {
      {[](PpoOptions& o) { o.learning_rate = 0; },
       "ppo option learning_rate = 0 is outside (0, 1]"},
      {[](PpoOptions& o) { o.learning_rate = 1.5; },
       "ppo option learning_rate = 1.5 is outside (0, 1]"},
      {[](PpoOptions& o) { o.learning_rate = kNan; },
       "ppo option learning_rate = nan is outside (0, 1]"},
      {[](PpoOptions& o) { o.gamma = 1.01; },
       "ppo option gamma = 1.01 is outside [0, 1]"},
      {[](PpoOptions& o) { o.gae_lambda = -0.1; },
       "ppo option gae_lambda = -0.1 is outside [0, 1]"},
      {[](PpoOptions& o) { o.clip_ratio = 0; },
       "ppo option clip_ratio = 0 is outside (0, 1)"},
      {[](PpoOptions& o) { o.clip_ratio = 1; },
       "ppo option clip_ratio = 1 is outside (0, 1)"},
      {[](PpoOptions& o) { o.value_clip = -0.5; },
       "ppo option value_clip = -0.5 must be >= 0 and finite"},
      {[](PpoOptions& o) { o.value_coef = -1; },
       "ppo option value_coef = -1 must be >= 0 and finite"},
      {[](PpoOptions& o) {
         o.entropy_coef = std::numeric_limits<double>::infinity();
       },
       "ppo option entropy_coef = inf must be >= 0 and finite"},
      {[](PpoOptions& o) { o.max_grad_norm = -0.5; },
       "ppo option max_grad_norm = -0.5 must be >= 0 and finite"},
      {[](PpoOptions& o) { o.adam_eps = 0; },
       "ppo option adam_eps = 0 must be > 0 and finite"},
  };
  for (const Case& c : cases) {
    PpoOptions o;
    c.set(o);
    ExpectRefused(o, c.message);
  }
}

TEST(PpoOptionsTest, OutOfRangeIntegerOptionsAreRefusedNamingFieldAndValue) {
  struct Case {
    void (*set)(PpoOptions&);
    std::string message;
  };
  const Case cases[] = {
      {[](PpoOptions& o) { o.epochs = 0; },
       "ppo option epochs = 0 is outside [1, 1000]"},
      // The upper bounds are the schema's (the study registry's before the
      // schema; the learner used to accept any value).
      {[](PpoOptions& o) { o.epochs = 1001; },
       "ppo option epochs = 1001 is outside [1, 1000]"},
      {[](PpoOptions& o) { o.minibatch_size = 0; },
       "ppo option minibatch_size = 0 is outside [1, 16777216]"},
      {[](PpoOptions& o) { o.minibatch_size = (1 << 24) + 1; },
       "ppo option minibatch_size = 16777217 is outside [1, 16777216]"},
      {[](PpoOptions& o) { o.max_policy_lag = -1; },
       "ppo option max_policy_lag = -1 is outside [0, 1000]"},
      {[](PpoOptions& o) { o.max_policy_lag = 1001; },
       "ppo option max_policy_lag = 1001 is outside [0, 1000]"},
      {[](PpoOptions& o) { o.cpu_threads = -2; },
       "ppo option cpu_threads = -2 must be >= 0"},
  };
  for (const Case& c : cases) {
    PpoOptions o;
    c.set(o);
    ExpectRefused(o, c.message);
  }
}

TEST(PpoOptionsTest, DeviceIsCpuCudaOrCudaWithIndex) {
  for (const char* device : {"cpu", "cuda", "cuda:0", "cuda:1", "cuda:15"}) {
    PpoOptions o;
    o.device = device;
    EXPECT_TRUE(o.Validate().ok()) << device;
  }
  for (const char* device : {"", "gpu", "CPU", "cuda:", "cuda:x", "cuda:-1",
                             "cuda:1 ", "cuda1", "mps", "cuda:123456"}) {
    PpoOptions o;
    o.device = device;
    ExpectRefused(o, std::string("ppo option device = '") + device +
                         "' is not cpu, cuda or cuda:N");
  }
}

TEST(NetworkOptionsTest, EmptyHiddenListsAreAcceptedAsLinearNets) {
  NetworkOptions o;
  o.policy_hidden = {};
  o.value_hidden = {};
  EXPECT_TRUE(o.Validate().ok());
}

TEST(NetworkOptionsTest, WidthsOutsideOneTo65536AreRefusedNamingTheLayer) {
  NetworkOptions o;
  o.policy_hidden = {1, 65536};
  EXPECT_TRUE(o.Validate().ok());
  o.policy_hidden = {512, 0};
  ExpectRefused(o, "network option policy_hidden[1] = 0 is outside [1, 65536]");
  o.policy_hidden = {64};
  o.value_hidden = {65537, 64};
  ExpectRefused(o,
                "network option value_hidden[0] = 65537 is outside [1, 65536]");
}

TEST(NetworkOptionsTest, MoreHiddenLayersThanTheSchemaAllowsAreRefused) {
  NetworkOptions o;
  o.policy_hidden = std::vector<int>(16, 8);
  EXPECT_TRUE(o.Validate().ok());
  o.policy_hidden = std::vector<int>(17, 8);
  ExpectRefused(o, "network option policy_hidden has 17 layers; at most 16");
}

TEST(NetworkOptionsTest, LogStdInitMustLieInMinusTwentyToTwo) {
  NetworkOptions o;
  o.log_std_init = -20;
  EXPECT_TRUE(o.Validate().ok());
  o.log_std_init = 2;
  EXPECT_TRUE(o.Validate().ok());
  o.log_std_init = -20.5;
  ExpectRefused(o, "network option log_std_init = -20.5 is outside [-20, 2]");
  o.log_std_init = 2.5;
  ExpectRefused(o, "network option log_std_init = 2.5 is outside [-20, 2]");
}

TEST(NetworkOptionsTest, ObsClipMustBePositive) {
  NetworkOptions o;
  o.obs_clip = 0;
  ExpectRefused(o, "network option obs_clip = 0 must be > 0 and finite");
  o.obs_clip = kNan;
  ExpectRefused(o, "network option obs_clip = nan must be > 0 and finite");
}

TEST(PpoOptionsTest, EnumNamesParse) {
  Activation activation = Activation::kTanh;
  ASSERT_TRUE(ParseActivation("relu", &activation).ok());
  EXPECT_EQ(activation, Activation::kRelu);
  ASSERT_TRUE(ParseActivation("tanh", &activation).ok());
  EXPECT_EQ(activation, Activation::kTanh);

  ValueLoss loss = ValueLoss::kMse;
  ASSERT_TRUE(ParseValueLoss("smooth_l1", &loss).ok());
  EXPECT_EQ(loss, ValueLoss::kSmoothL1);
  ASSERT_TRUE(ParseValueLoss("mse", &loss).ok());
  EXPECT_EQ(loss, ValueLoss::kMse);

  LrSchedule schedule = LrSchedule::kConstant;
  ASSERT_TRUE(ParseLrSchedule("linear", &schedule).ok());
  EXPECT_EQ(schedule, LrSchedule::kLinear);
  ASSERT_TRUE(ParseLrSchedule("constant", &schedule).ok());
  EXPECT_EQ(schedule, LrSchedule::kConstant);

  LogProbMode mode = LogProbMode::kTanhCorrected;
  ASSERT_TRUE(ParseLogProbMode("uncorrected", &mode).ok());
  EXPECT_EQ(mode, LogProbMode::kUncorrected);
  ASSERT_TRUE(ParseLogProbMode("tanh_corrected", &mode).ok());
  EXPECT_EQ(mode, LogProbMode::kTanhCorrected);

  AutocastMode autocast = AutocastMode::kOff;
  ASSERT_TRUE(ParseAutocastMode("bf16", &autocast).ok());
  EXPECT_EQ(autocast, AutocastMode::kBf16);
  ASSERT_TRUE(ParseAutocastMode("fp16", &autocast).ok());
  EXPECT_EQ(autocast, AutocastMode::kFp16);
  ASSERT_TRUE(ParseAutocastMode("off", &autocast).ok());
  EXPECT_EQ(autocast, AutocastMode::kOff);
}

TEST(PpoOptionsTest, UnknownEnumNamesAreRefusedListingTheChoices) {
  Activation activation = Activation::kRelu;
  absl::Status s = ParseActivation("gelu", &activation);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "unknown activation 'gelu' (expected tanh or relu)");
  EXPECT_EQ(activation, Activation::kRelu);  // untouched

  ValueLoss loss = ValueLoss::kMse;
  s = ParseValueLoss("huber", &loss);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "unknown value loss 'huber' (expected mse or smooth_l1)");

  LrSchedule schedule = LrSchedule::kConstant;
  s = ParseLrSchedule("cosine", &schedule);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "unknown lr schedule 'cosine' (expected constant or linear)");

  LogProbMode mode = LogProbMode::kTanhCorrected;
  s = ParseLogProbMode("corrected", &mode);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "unknown log-prob mode 'corrected' (expected tanh_corrected or "
            "uncorrected)");

  AutocastMode autocast = AutocastMode::kOff;
  s = ParseAutocastMode("fp8", &autocast);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "unknown autocast mode 'fp8' (expected off, bf16 or fp16)");
}

TEST(PpoOptionsTest, NamesRoundTripThroughTheParsers) {
  for (Activation a : {Activation::kTanh, Activation::kRelu}) {
    Activation parsed =
        a == Activation::kTanh ? Activation::kRelu : Activation::kTanh;
    ASSERT_TRUE(ParseActivation(ActivationName(a), &parsed).ok());
    EXPECT_EQ(parsed, a);
  }
  for (LogProbMode m :
       {LogProbMode::kTanhCorrected, LogProbMode::kUncorrected}) {
    LogProbMode parsed = m == LogProbMode::kTanhCorrected
                             ? LogProbMode::kUncorrected
                             : LogProbMode::kTanhCorrected;
    ASSERT_TRUE(ParseLogProbMode(LogProbModeName(m), &parsed).ok());
    EXPECT_EQ(parsed, m);
  }
  EXPECT_EQ(ActivationName(Activation::kTanh), "tanh");
  EXPECT_EQ(ActivationName(Activation::kRelu), "relu");
  EXPECT_EQ(LogProbModeName(LogProbMode::kTanhCorrected), "tanh_corrected");
  EXPECT_EQ(LogProbModeName(LogProbMode::kUncorrected), "uncorrected");
}

}  // namespace
}  // namespace ristretto::learner
