#include "coordinator/core/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "gtest/gtest.h"

namespace ristretto::coordinator {
namespace {

ParamSpec Float(const std::string& name, double low, double high,
                bool log = false) {
  ParamSpec p;
  p.name = name;
  p.kind = ParamKind::kFloat;
  p.low = low;
  p.high = high;
  p.log = log;
  return p;
}

ParamSpec Int(const std::string& name, double low, double high,
              bool log = false) {
  ParamSpec p = Float(name, low, high, log);
  p.kind = ParamKind::kInt;
  return p;
}

ParamSpec Stepped(ParamSpec p, double step) {
  p.step = step;
  return p;
}

ParamSpec Choice(const std::string& name, std::vector<std::string> choices) {
  ParamSpec p;
  p.name = name;
  p.kind = ParamKind::kCategorical;
  p.choices = std::move(choices);
  return p;
}

ParamSpec When(ParamSpec p, const std::string& parent,
               std::vector<std::string> values) {
  p.parent = parent;
  p.parent_values = std::move(values);
  return p;
}

// A space with every kind of parameter. The conditional children are
// declared before their parent on purpose.
std::vector<ParamSpec> MixedSpace() {
  return {
      When(Float("reward_scale", 1, 100, true), "reward_mode", {"log_return"}),
      Float("learning_rate", 1e-5, 1e-2, true),
      Stepped(Float("clip_ratio", 0.1, 0.3), 0.05),
      Stepped(Int("width", 64, 256), 64),
      Int("lookback", 1, 5),
      Int("batch_size", 16, 4096, true),
      Float("gamma", 0.9, 0.99),
      Choice("reward_mode", {"shaped", "log_return"}),
      When(Float("time_decay_floor", 0, 0.5), "reward_mode", {"shaped"}),
  };
}

std::unique_ptr<Sampler> Make(const std::string& type, uint64_t seed,
                              const std::vector<ParamSpec>& space,
                              bool multivariate = false, int startup = 5) {
  SamplerSpec spec;
  spec.type = type;
  spec.seed = seed;
  spec.multivariate = multivariate;
  spec.startup_trials = startup;
  absl::StatusOr<std::unique_ptr<Sampler>> s = MakeSampler(spec, space);
  EXPECT_TRUE(s.ok()) << s.status();
  return std::move(s).value();
}

double Num(const Params& p, const std::string& name) {
  double v = 0;
  EXPECT_TRUE(absl::SimpleAtod(p.at(name), &v)) << name << "=" << p.at(name);
  return v;
}

// A cheap objective over MixedSpace (higher is better).
double MixedObjective(const Params& p) {
  double s = -std::pow(std::log10(Num(p, "learning_rate")) + 3.5, 2) -
             std::pow((Num(p, "width") - 192) / 64, 2) -
             std::pow(Num(p, "gamma") - 0.95, 2) * 100;
  if (p.at("reward_mode") == "log_return") s += 0.5;
  return s;
}

// Runs `n` sequential trials, each scored by `objective` once sampled.
std::vector<TrialHistory> RunStudy(
    Sampler& sampler, int n, const std::function<double(const Params&)>& f) {
  std::vector<TrialHistory> history;
  for (int i = 0; i < n; ++i) {
    absl::StatusOr<Params> p = sampler.Sample(i, history);
    EXPECT_TRUE(p.ok());
    TrialHistory t;
    t.number = i;
    t.params = *p;
    t.state = TrialState::kComplete;
    t.score = f(*p);
    history.push_back(std::move(t));
  }
  return history;
}

// Every value of `p` is a value of the space, and exactly the active
// parameters are present.
void ExpectInSpace(const std::vector<ParamSpec>& space, const Params& p) {
  size_t active = 0;
  for (const ParamSpec& s : space) {
    if (!IsActive(s, p)) {
      EXPECT_EQ(p.count(s.name), 0u) << s.name << " is inactive";
      continue;
    }
    ++active;
    ASSERT_EQ(p.count(s.name), 1u) << s.name;
    const std::string& text = p.at(s.name);
    if (s.kind == ParamKind::kCategorical) {
      EXPECT_NE(std::find(s.choices.begin(), s.choices.end(), text),
                s.choices.end())
          << s.name << "=" << text;
      continue;
    }
    const double v = Num(p, s.name);
    EXPECT_GE(v, s.low) << s.name;
    EXPECT_LE(v, s.high) << s.name;
    EXPECT_EQ(text, FormatValue(s, v)) << "canonical text of " << s.name;
    if (s.kind == ParamKind::kInt) {
      EXPECT_EQ(v, std::floor(v)) << s.name;
      EXPECT_EQ(text.find('.'), std::string::npos) << s.name;
    }
    if (s.step.has_value()) {
      const double k = (v - s.low) / *s.step;
      EXPECT_NEAR(k, std::round(k), 1e-9) << s.name << "=" << text;
    }
  }
  EXPECT_EQ(p.size(), active);
}

class AllSamplersTest : public ::testing::TestWithParam<int> {
 protected:
  std::unique_ptr<Sampler> MakeOne(uint64_t seed,
                                   const std::vector<ParamSpec>& space) {
    switch (GetParam()) {
      case 0:
        return Make("random", seed, space);
      case 1:
        return Make("tpe", seed, space, false);
      default:
        return Make("tpe", seed, space, true);
    }
  }
};

TEST_P(AllSamplersTest, RespectsBoundsStepsIntsChoicesAndConditions) {
  const std::vector<ParamSpec> space = MixedSpace();
  auto sampler = MakeOne(3, space);
  const std::vector<TrialHistory> history =
      RunStudy(*sampler, 80, MixedObjective);
  std::set<std::string> modes, widths;
  for (const TrialHistory& t : history) {
    ExpectInSpace(space, t.params);
    modes.insert(t.params.at("reward_mode"));
    widths.insert(t.params.at("width"));
    EXPECT_EQ(t.params.count("reward_scale") == 1,
              t.params.at("reward_mode") == "log_return");
    EXPECT_EQ(t.params.count("time_decay_floor") == 1,
              t.params.at("reward_mode") == "shaped");
  }
  EXPECT_EQ(modes.size(), 2u);
  EXPECT_GE(widths.size(), 2u);
}

TEST_P(AllSamplersTest, IsDeterministicInSeedNumberAndHistory) {
  const std::vector<ParamSpec> space = MixedSpace();
  const std::vector<TrialHistory> history =
      RunStudy(*MakeOne(5, space), 30, MixedObjective);
  std::vector<TrialHistory> shuffled(history.rbegin(), history.rend());
  for (int64_t n : {30, 31, 1000}) {
    const Params a = *MakeOne(5, space)->Sample(n, history);
    // A new sampler (a restarted coordinator), history in another order.
    const Params b = *MakeOne(5, space)->Sample(n, shuffled);
    EXPECT_EQ(a, b) << n;
  }
  EXPECT_NE(*MakeOne(5, space)->Sample(30, history),
            *MakeOne(6, space)->Sample(30, history));
  EXPECT_NE(*MakeOne(5, space)->Sample(30, history),
            *MakeOne(5, space)->Sample(31, history));
}

INSTANTIATE_TEST_SUITE_P(RandomTpeMultivariate, AllSamplersTest,
                         ::testing::Values(0, 1, 2));

TEST(RandomSamplerTest, LogRangesAreUniformInLogSpace) {
  const std::vector<ParamSpec> space = {Float("lr", 1e-5, 1e-2, true),
                                        Float("linear", 1e-5, 1e-2),
                                        Int("batch", 1, 1000, true)};
  auto sampler = Make("random", 1, space);
  int lr_low = 0, linear_low = 0, batch_low = 0;
  constexpr int kN = 3000;
  for (int i = 0; i < kN; ++i) {
    const Params p = *sampler->Sample(i, {});
    lr_low += Num(p, "lr") < 1e-4;          // 1/3 of the log range
    linear_low += Num(p, "linear") < 1e-4;  // 0.9 % of the linear range
    batch_low += Num(p, "batch") <= 31;     // about half in log space
  }
  EXPECT_NEAR(lr_low / double(kN), 1.0 / 3, 0.04);
  EXPECT_LT(linear_low / double(kN), 0.03);
  EXPECT_NEAR(batch_low / double(kN), 0.5, 0.05);
}

TEST(TpeSamplerTest, SamplesAtRandomUntilStartupTrialsFinish) {
  const std::vector<ParamSpec> space = MixedSpace();
  std::vector<TrialHistory> history =
      RunStudy(*Make("random", 9, space), 4, MixedObjective);
  history.push_back({4, {}, TrialState::kRunning, std::nullopt});
  history.push_back({5, {}, TrialState::kFailed, std::nullopt});
  // 4 finished < 5 startup trials: identical to random search.
  EXPECT_EQ(*Make("tpe", 9, space, false, 5)->Sample(6, history),
            *Make("random", 9, space)->Sample(6, {}));
  // All-pruned history has no good trials: random too.
  for (TrialHistory& t : history) t.state = TrialState::kPruned;
  EXPECT_EQ(*Make("tpe", 9, space, false, 2)->Sample(6, history),
            *Make("random", 9, space)->Sample(6, {}));
}

TEST(TpeSamplerTest, ConcentratesNearTheGoodTrials) {
  const std::vector<ParamSpec> space = {Float("x", 0, 1)};
  std::vector<TrialHistory> history;
  for (int i = 0; i < 40; ++i) {
    const double x = (i + 0.5) / 40;
    history.push_back({i,
                       {{"x", FormatDouble(x)}},
                       TrialState::kComplete,
                       -std::fabs(x - 0.8)});
  }
  // A pruned trial at the optimum counts as bad and weakens it a little but
  // does not move the proposals away.
  history.push_back({40, {{"x", "0.8"}}, TrialState::kPruned, std::nullopt});
  auto tpe = Make("tpe", 1, space, false, 10);
  int near = 0;
  for (int n = 41; n < 141; ++n) {
    near += std::fabs(Num(*tpe->Sample(n, history), "x") - 0.8) < 0.15;
  }
  EXPECT_GE(near, 80);  // random would put about 30 % there
}

TEST(SamplerTest, BadSpecsAndSpacesAreRefused) {
  SamplerSpec spec;
  spec.type = "grid";
  EXPECT_EQ(MakeSampler(spec, {}).status().message(),
            "unknown sampler type 'grid' (expected random or tpe)");
  spec.type = "tpe";
  EXPECT_EQ(MakeSampler(spec, {When(Float("a", 0, 1), "nope", {"x"})})
                .status()
                .message(),
            "parameter a: conditional on unknown parent 'nope' (not a searched "
            "parameter)");
  EXPECT_EQ(MakeSampler(spec, {When(Choice("a", {"x"}), "b", {"x"}),
                               When(Choice("b", {"x"}), "a", {"x"})})
                .status()
                .message(),
            "parameter a: its conditions form a cycle");
  EXPECT_EQ(MakeSampler(spec, {Float("a", 1, 0)}).status().message(),
            "parameter a: range [1, 0] is empty or inverted (low must be < "
            "high; put a constant under `fixed`)");
  EXPECT_EQ(MakeSampler(spec, {Choice("a", {})}).status().message(),
            "parameter a: empty choices");
}

// ---- TPE against random search on a cheap synthetic objective.
//
// Objective: a 3-D quadratic over a float, a log-float and an int,
//   f = −((x − 0.7)² + (log10 y + 3)²/4 + ((z − 12)/10)²),
// x ∈ [−2, 2], y ∈ [1e-6, 1] (log), z ∈ [0, 30]; the best value is 0.
// Each of 30 seeds runs 40 trials with both samplers (TPE: 10 random
// startup trials) and compares the best values found.
//
// Measured on this code (x86-64, gcc 12): on these 30 seeds independent
// TPE beat random in 28 and multivariate TPE in 29; over 300 seeds the win
// rates were 87 % and 94 % (mean best −0.107 and −0.060 against random's
// −0.337). The threshold, 22 of 30 (73 %), leaves a margin of 6–7 seeds for
// floating-point differences between platforms; if TPE were no better than
// random (p = 0.5 per seed), P(X >= 22) ≈ 0.008.
double Quadratic(const Params& p) {
  const double x = Num(p, "x"), y = Num(p, "y"), z = Num(p, "z");
  return -(std::pow(x - 0.7, 2) + std::pow(std::log10(y) + 3, 2) / 4 +
           std::pow((z - 12) / 10, 2));
}

double BestOf(const std::vector<TrialHistory>& history) {
  double best = -1e300;
  for (const TrialHistory& t : history) best = std::max(best, *t.score);
  return best;
}

int TpeWins(bool multivariate) {
  const std::vector<ParamSpec> space = {
      Float("x", -2, 2), Float("y", 1e-6, 1, true), Int("z", 0, 30)};
  int wins = 0;
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    auto tpe = Make("tpe", seed, space, multivariate, 10);
    auto random = Make("random", seed + 1000, space);
    wins += BestOf(RunStudy(*tpe, 40, Quadratic)) >
            BestOf(RunStudy(*random, 40, Quadratic));
  }
  return wins;
}

TEST(TpeSamplerTest, IndependentTpeBeatsRandomSearchOnAQuadratic) {
  const int wins = TpeWins(false);
  std::printf("independent TPE beat random in %d of 30 seeds\n", wins);
  RecordProperty("tpe_wins_of_30", wins);
  EXPECT_GE(wins, 22);
}

TEST(TpeSamplerTest, MultivariateTpeBeatsRandomSearchOnAQuadratic) {
  const int wins = TpeWins(true);
  std::printf("multivariate TPE beat random in %d of 30 seeds\n", wins);
  RecordProperty("tpe_wins_of_30", wins);
  EXPECT_GE(wins, 22);
}

}  // namespace
}  // namespace ristretto::coordinator
