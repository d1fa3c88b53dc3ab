#include "coordinator/core/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/rng.h"
#include "common/status_macros.h"

namespace ristretto::coordinator {
namespace {

constexpr double kLogSqrt2Pi = 0.91893853320467274178;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// ---- the internal (continuous) coordinates of a parameter
//
// Numeric parameters are modelled on a continuous interval [lo, hi]: the
// log of the value for log ranges, and for discrete values (int or step) the
// range widened by half a step on each side, so that every grid point owns
// an equal share of it. Categorical parameters are modelled by index.

struct Dim {
  const ParamSpec* spec = nullptr;
  bool categorical = false;
  double lo = 0, hi = 0;    // internal range (numeric)
  double step = 0;          // grid spacing in value space, 0 = continuous
  int64_t grid_points = 0;  // values on the grid (step > 0)
};

Dim MakeDim(const ParamSpec& p) {
  Dim d;
  d.spec = &p;
  if (p.kind == ParamKind::kCategorical) {
    d.categorical = true;
    return d;
  }
  if (p.kind == ParamKind::kInt || p.step.has_value()) {
    d.step = p.step.value_or(1.0);
    d.grid_points = std::llround((p.high - p.low) / d.step) + 1;
  }
  if (p.log) {
    // Integer log ranges (no step allowed with log) widen by ±0.5.
    const double pad = p.kind == ParamKind::kInt ? 0.5 : 0.0;
    d.lo = std::log(p.low - pad);
    d.hi = std::log(p.high + pad);
  } else {
    d.lo = p.low - d.step / 2;
    d.hi = p.high + d.step / 2;
  }
  return d;
}

// Value text -> internal coordinate (or category index); false when the text
// is not a value of the space.
bool ToInternal(const Dim& d, const std::string& text, double* x) {
  const ParamSpec& p = *d.spec;
  if (d.categorical) {
    auto it = std::find(p.choices.begin(), p.choices.end(), text);
    if (it == p.choices.end()) return false;
    *x = static_cast<double>(it - p.choices.begin());
    return true;
  }
  double v = 0;
  if (!absl::SimpleAtod(text, &v) || !std::isfinite(v)) return false;
  const double slack = 1e-9 * std::max(1.0, std::fabs(p.high - p.low));
  if (v < p.low - slack || v > p.high + slack) return false;
  *x = p.log ? std::log(std::max(v, p.low)) : v;
  return true;
}

// Internal coordinate -> canonical value text (snapped to the grid, clamped
// to [low, high]).
std::string FromInternal(const Dim& d, double x) {
  const ParamSpec& p = *d.spec;
  if (d.categorical) return p.choices[static_cast<size_t>(x)];
  double v = p.log ? std::exp(x) : x;
  if (d.step > 0) {
    int64_t k = std::llround((v - p.low) / d.step);
    k = std::clamp<int64_t>(k, 0, d.grid_points - 1);
    v = p.low + static_cast<double>(k) * d.step;
  }
  v = std::clamp(v, p.low, p.high);
  return FormatValue(p, v);
}

double SampleUniform(const Dim& d, Rng& rng) {
  if (d.categorical) {
    return static_cast<double>(rng.UniformInt(d.spec->choices.size()));
  }
  return d.lo + (d.hi - d.lo) * rng.Uniform();
}

// ---- truncated normal kernels

double NormalCdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

// log density at x of N(mu, sigma) truncated to [lo, hi].
double TruncNormalLogPdf(double x, double mu, double sigma, double lo,
                         double hi) {
  const double z = (x - mu) / sigma;
  const double mass =
      NormalCdf((hi - mu) / sigma) - NormalCdf((lo - mu) / sigma);
  return -0.5 * z * z - kLogSqrt2Pi - std::log(sigma) -
         std::log(std::max(mass, 1e-300));
}

// Rejection sampling; mu lies in [lo, hi] and sigma <= hi − lo, so each draw
// is accepted with probability above 0.3.
double SampleTruncNormal(double mu, double sigma, double lo, double hi,
                         Rng& rng) {
  for (int i = 0; i < 1000; ++i) {
    const double x = mu + sigma * rng.Normal();
    if (x >= lo && x <= hi) return x;
  }
  return std::clamp(mu, lo, hi);
}

double LogSumExp(const std::vector<double>& v) {
  double m = kNegInf;
  for (double x : v) m = std::max(m, x);
  if (m == kNegInf) return m;
  double s = 0;
  for (double x : v) s += std::exp(x - m);
  return m + std::log(s);
}

// Optuna's default weights: the 25 newest observations weigh 1, older ones
// ramp linearly from 1/n up to 1. `n` observations, oldest first.
std::vector<double> RampWeights(size_t n) {
  std::vector<double> w(n, 1.0);
  constexpr size_t kFlat = 25;
  if (n > kFlat) {
    const size_t ramp = n - kFlat;
    for (size_t i = 0; i < ramp; ++i) {
      w[i] = ramp == 1 ? 1.0 / n
                       : 1.0 / n + (1.0 - 1.0 / n) * static_cast<double>(i) /
                                       static_cast<double>(ramp - 1);
    }
  }
  return w;
}

int PickIndex(const std::vector<double>& weights, Rng& rng) {
  double total = 0;
  for (double w : weights) total += w;
  double u = rng.Uniform() * total;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (u < weights[i]) return static_cast<int>(i);
    u -= weights[i];
  }
  return static_cast<int>(weights.size()) - 1;
}

// ---- univariate Parzen estimator (Optuna 2.x `_ParzenEstimator` with
// consider_prior, prior_weight 1, magic clip, no endpoints).

struct Mixture {
  std::vector<double> weights, mus, sigmas;
  double lo = 0, hi = 0;

  double LogPdf(double x) const {
    std::vector<double> terms(mus.size());
    for (size_t i = 0; i < mus.size(); ++i) {
      terms[i] = std::log(weights[i]) +
                 TruncNormalLogPdf(x, mus[i], sigmas[i], lo, hi);
    }
    return LogSumExp(terms);
  }
  double Sample(Rng& rng) const {
    const int k = PickIndex(weights, rng);
    return SampleTruncNormal(mus[k], sigmas[k], lo, hi, rng);
  }
};

// `obs`: internal coordinates, oldest first.
Mixture FitUnivariate(const std::vector<double>& obs, double lo, double hi) {
  Mixture m;
  m.lo = lo;
  m.hi = hi;
  const double prior_mu = 0.5 * (lo + hi);
  const double prior_sigma = hi - lo;
  std::vector<double> w = RampWeights(obs.size());
  // Components: every observation, then the prior.
  m.mus = obs;
  m.mus.push_back(prior_mu);
  w.push_back(1.0);
  const size_t n = m.mus.size();
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return m.mus[a] < m.mus[b]; });
  m.sigmas.assign(n, prior_sigma);
  for (size_t r = 0; r < n; ++r) {
    const double left = m.mus[order[r]] - (r == 0 ? lo : m.mus[order[r - 1]]);
    const double right =
        (r + 1 == n ? hi : m.mus[order[r + 1]]) - m.mus[order[r]];
    double s = std::max(left, right);
    if (n >= 2 && r == 0) s = right;  // no endpoints
    if (n >= 2 && r + 1 == n) s = left;
    m.sigmas[order[r]] = s;
  }
  m.sigmas[n - 1] = prior_sigma;
  const double max_sigma = hi - lo;
  const double min_sigma =
      (hi - lo) / std::min(100.0, 1.0 + static_cast<double>(n));
  for (double& s : m.sigmas) s = std::clamp(s, min_sigma, max_sigma);
  double total = 0;
  for (double x : w) total += x;
  for (double& x : w) x /= total;
  m.weights = std::move(w);
  return m;
}

// Category probabilities: weighted counts plus a prior weight of 1 each.
std::vector<double> FitCategorical(const std::vector<double>& obs,
                                   size_t choices) {
  std::vector<double> p(choices, 1.0);
  const std::vector<double> w = RampWeights(obs.size());
  for (size_t i = 0; i < obs.size(); ++i)
    p[static_cast<size_t>(obs[i])] += w[i];
  double total = 0;
  for (double x : p) total += x;
  for (double& x : p) x /= total;
  return p;
}

// ---- the samplers

// The trials a model learns from, split by TPE into good and bad.
struct Split {
  std::vector<const TrialHistory*> good, bad;  // each oldest first
  int finished = 0;                            // complete + pruned
};

Split SplitHistory(const std::vector<TrialHistory>& history) {
  std::vector<const TrialHistory*> complete, pruned;
  for (const TrialHistory& t : history) {
    if (t.state == TrialState::kComplete && t.score.has_value() &&
        std::isfinite(*t.score)) {
      complete.push_back(&t);
    } else if (t.state == TrialState::kPruned) {
      pruned.push_back(&t);
    }
  }
  Split split;
  split.finished = static_cast<int>(complete.size() + pruned.size());
  if (complete.empty()) return split;
  std::sort(complete.begin(), complete.end(),
            [](const TrialHistory* a, const TrialHistory* b) {
              if (*a->score != *b->score) return *a->score > *b->score;
              return a->number < b->number;
            });
  // Optuna's default gamma: the best ⌈10 %⌉ of the finished trials, at most
  // 25, at least one.
  const size_t n_good = std::min<size_t>(
      complete.size(),
      std::clamp<size_t>(static_cast<size_t>(std::ceil(0.1 * split.finished)),
                         1, 25));
  split.good.assign(complete.begin(), complete.begin() + n_good);
  split.bad.assign(complete.begin() + n_good, complete.end());
  split.bad.insert(split.bad.end(), pruned.begin(), pruned.end());
  auto by_number = [](const TrialHistory* a, const TrialHistory* b) {
    return a->number < b->number;
  };
  std::sort(split.good.begin(), split.good.end(), by_number);
  std::sort(split.bad.begin(), split.bad.end(), by_number);
  return split;
}

std::vector<double> Observations(const Dim& d,
                                 const std::vector<const TrialHistory*>& ts) {
  std::vector<double> obs;
  for (const TrialHistory* t : ts) {
    auto it = t->params.find(d.spec->name);
    double x = 0;
    if (it != t->params.end() && ToInternal(d, it->second, &x)) {
      obs.push_back(x);
    }
  }
  return obs;
}

uint64_t TrialSeed(uint64_t seed, int64_t trial_number) {
  uint64_t state = seed ^ (0x9e3779b97f4a7c15ULL *
                           (static_cast<uint64_t>(trial_number) + 1));
  SplitMix64(state);
  return SplitMix64(state);
}

class SamplerBase : public Sampler {
 public:
  SamplerBase(SamplerSpec spec, std::vector<ParamSpec> space,
              std::vector<int> order)
      : spec_(std::move(spec)),
        space_(std::move(space)),
        order_(std::move(order)) {
    for (const ParamSpec& p : space_) dims_.push_back(MakeDim(p));
  }

 protected:
  // Fills every active parameter not yet in `out` uniformly at random.
  void FillRandom(Rng& rng, Params* out) const {
    for (int i : order_) {
      const ParamSpec& p = space_[i];
      if (out->count(p.name) != 0 || !IsActive(p, *out)) continue;
      (*out)[p.name] = FromInternal(dims_[i], SampleUniform(dims_[i], rng));
    }
  }

  const SamplerSpec spec_;
  const std::vector<ParamSpec> space_;
  const std::vector<int> order_;  // parents before children
  std::vector<Dim> dims_;         // parallel to space_
};

class RandomSampler : public SamplerBase {
 public:
  using SamplerBase::SamplerBase;

  absl::StatusOr<Params> Sample(int64_t trial_number,
                                const std::vector<TrialHistory>&) override {
    Rng rng(TrialSeed(spec_.seed, trial_number));
    Params out;
    FillRandom(rng, &out);
    return out;
  }
};

class TpeSampler : public SamplerBase {
 public:
  using SamplerBase::SamplerBase;

  absl::StatusOr<Params> Sample(
      int64_t trial_number, const std::vector<TrialHistory>& history) override {
    Rng rng(TrialSeed(spec_.seed, trial_number));
    const Split split = SplitHistory(history);
    Params out;
    if (split.finished < spec_.startup_trials || split.good.empty()) {
      FillRandom(rng, &out);
      return out;
    }
    if (spec_.multivariate) SampleJoint(split, rng, &out);
    for (int i : order_) {
      const ParamSpec& p = space_[i];
      if (out.count(p.name) != 0 || !IsActive(p, out)) continue;
      out[p.name] = SampleOne(dims_[i], split, rng);
    }
    return out;
  }

 private:
  // Independent TPE for one parameter.
  std::string SampleOne(const Dim& d, const Split& split, Rng& rng) const {
    const std::vector<double> good = Observations(d, split.good);
    const std::vector<double> bad = Observations(d, split.bad);
    double best = 0, best_score = kNegInf;
    if (d.categorical) {
      const size_t c = d.spec->choices.size();
      const std::vector<double> l = FitCategorical(good, c);
      const std::vector<double> g = FitCategorical(bad, c);
      for (int k = 0; k < spec_.candidates; ++k) {
        const int x = PickIndex(l, rng);
        const double score = std::log(l[x]) - std::log(g[x]);
        if (score > best_score) {
          best_score = score;
          best = x;
        }
      }
      return FromInternal(d, best);
    }
    const Mixture l = FitUnivariate(good, d.lo, d.hi);
    const Mixture g = FitUnivariate(bad, d.lo, d.hi);
    for (int k = 0; k < spec_.candidates; ++k) {
      const double x = l.Sample(rng);
      const double score = l.LogPdf(x) - g.LogPdf(x);
      if (score > best_score) {
        best_score = score;
        best = x;
      }
    }
    return FromInternal(d, best);
  }

  // One multivariate kernel density over the unconditional parameters: a
  // component per observed trial (and a prior one), each a product of
  // per-parameter kernels with Scott's-rule bandwidths (Optuna 3.x).
  struct Joint {
    std::vector<int> dims;                 // indices into dims_
    std::vector<std::vector<double>> obs;  // per component, per dim
    std::vector<double> log_weights;
    std::vector<double> sigmas;  // per numeric dim
  };

  Joint FitJoint(const std::vector<int>& dims,
                 const std::vector<const TrialHistory*>& trials) const {
    Joint j;
    j.dims = dims;
    for (const TrialHistory* t : trials) {
      std::vector<double> row;
      for (int i : dims) {
        auto it = t->params.find(space_[i].name);
        double x = 0;
        if (it == t->params.end() || !ToInternal(dims_[i], it->second, &x)) {
          break;
        }
        row.push_back(x);
      }
      if (row.size() == dims.size()) j.obs.push_back(std::move(row));
    }
    std::vector<double> w = RampWeights(j.obs.size());
    w.push_back(1.0);  // prior
    double total = 0;
    for (double x : w) total += x;
    for (double x : w) j.log_weights.push_back(std::log(x / total));
    const double n = std::max<double>(1.0, static_cast<double>(j.obs.size()));
    const double bw =
        0.2 * std::pow(n, -1.0 / (static_cast<double>(dims.size()) + 4.0));
    for (int i : dims) {
      const Dim& d = dims_[i];
      const double range = d.hi - d.lo;
      const double min_sigma = range / std::min(100.0, 1.0 + n);
      j.sigmas.push_back(d.categorical ? 0.0 : std::max(bw * range, min_sigma));
    }
    return j;
  }

  // log of component `k`'s kernel along dim position `a` at `x`.
  double KernelLogPdf(const Joint& j, size_t k, size_t a, double x) const {
    const Dim& d = dims_[j.dims[a]];
    const bool prior = k == j.obs.size();
    if (d.categorical) {
      const double c = static_cast<double>(d.spec->choices.size());
      if (prior) return -std::log(c);
      // Prior weight 1 spread over the choices, plus 1 on the observed one.
      const double mass = (x == j.obs[k][a] ? 1.0 : 0.0) + 1.0 / c;
      return std::log(mass / 2.0);
    }
    const double mu = prior ? 0.5 * (d.lo + d.hi) : j.obs[k][a];
    const double sigma = prior ? d.hi - d.lo : j.sigmas[a];
    return TruncNormalLogPdf(x, mu, sigma, d.lo, d.hi);
  }

  double JointLogPdf(const Joint& j, const std::vector<double>& x) const {
    std::vector<double> terms(j.obs.size() + 1);
    for (size_t k = 0; k < terms.size(); ++k) {
      double s = j.log_weights[k];
      for (size_t a = 0; a < x.size(); ++a) s += KernelLogPdf(j, k, a, x[a]);
      terms[k] = s;
    }
    return LogSumExp(terms);
  }

  std::vector<double> JointSample(const Joint& j, Rng& rng) const {
    std::vector<double> weights;
    for (double lw : j.log_weights) weights.push_back(std::exp(lw));
    const size_t k = static_cast<size_t>(PickIndex(weights, rng));
    const bool prior = k == j.obs.size();
    std::vector<double> x(j.dims.size());
    for (size_t a = 0; a < x.size(); ++a) {
      const Dim& d = dims_[j.dims[a]];
      if (d.categorical) {
        const size_t c = d.spec->choices.size();
        // Kernel: the observed choice with probability (1 + 1/c)/2, else
        // uniform (the prior component is uniform).
        if (!prior && rng.Uniform() < 0.5) {
          x[a] = j.obs[k][a];
        } else {
          x[a] = static_cast<double>(rng.UniformInt(c));
        }
      } else if (prior) {
        x[a] = SampleTruncNormal(0.5 * (d.lo + d.hi), d.hi - d.lo, d.lo, d.hi,
                                 rng);
      } else {
        x[a] = SampleTruncNormal(j.obs[k][a], j.sigmas[a], d.lo, d.hi, rng);
      }
    }
    return x;
  }

  void SampleJoint(const Split& split, Rng& rng, Params* out) const {
    std::vector<int> dims;
    for (int i : order_) {
      if (space_[i].parent.empty()) dims.push_back(i);
    }
    if (dims.empty()) return;
    const Joint l = FitJoint(dims, split.good);
    const Joint g = FitJoint(dims, split.bad);
    std::vector<double> best;
    double best_score = kNegInf;
    for (int k = 0; k < spec_.candidates; ++k) {
      std::vector<double> x = JointSample(l, rng);
      const double score = JointLogPdf(l, x) - JointLogPdf(g, x);
      if (score > best_score) {
        best_score = score;
        best = std::move(x);
      }
    }
    for (size_t a = 0; a < dims.size(); ++a) {
      (*out)[space_[dims[a]].name] = FromInternal(dims_[dims[a]], best[a]);
    }
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<Sampler>> MakeSampler(
    const SamplerSpec& spec, const std::vector<ParamSpec>& space) {
  if (spec.startup_trials < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sampler startup_trials = ", spec.startup_trials, " must be >= 0"));
  }
  if (spec.candidates < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sampler candidates = ", spec.candidates, " must be >= 1"));
  }
  ASSIGN_OR_RETURN(std::vector<int> order, SampleOrder(space));
  if (spec.type == "random") {
    return std::make_unique<RandomSampler>(spec, space, std::move(order));
  }
  if (spec.type == "tpe") {
    return std::make_unique<TpeSampler>(spec, space, std::move(order));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown sampler type '", spec.type, "' (expected random or tpe)"));
}

}  // namespace ristretto::coordinator
