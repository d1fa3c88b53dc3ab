// Statistics for honest trading results: how much a backtested Sharpe ratio
// can be trusted once its sample length, its non-normal returns and the
// number of configurations tried before it are taken into account.
//   * ReturnStats: mean, sample std, per-bar Sharpe, skewness, kurtosis.
//   * SharpeStandardError: the Sharpe ratio's standard error for non-normal
//     iid returns (Mertens 2002; Lo 2002 for normal returns).
//   * ProbabilisticSharpeRatio (PSR, Bailey & López de Prado 2012).
//   * DeflatedSharpeRatio (DSR, Bailey & López de Prado 2014).
//   * ProbabilityOfBacktestOverfitting (PBO by combinatorially symmetric
//     cross-validation, CSCV; Bailey, Borwein, López de Prado & Zhu 2015).
// Pure functions; thread-safe. No torch, gRPC or database.
//
// References:
//   [BL12] D. H. Bailey, M. López de Prado, "The Sharpe Ratio Efficient
//          Frontier", Journal of Risk 15(2), 2012.
//   [BL14] D. H. Bailey, M. López de Prado, "The Deflated Sharpe Ratio:
//          Correcting for Selection Bias, Backtest Overfitting and
//          Non-Normality", Journal of Portfolio Management 40(5), 2014.
//   [BBLZ] D. H. Bailey, J. M. Borwein, M. López de Prado, Q. J. Zhu, "The
//          Probability of Backtest Overfitting", Journal of Computational
//          Finance 20(4), 2017 (SSRN 2326253, 2015).
//   [Mer02] E. Mertens, "Comments on variance of the IID estimator in Lo
//          (2002)", 2002.   [Lo02] A. W. Lo, "The Statistics of Sharpe
//          Ratios", Financial Analysts Journal 58(4), 2002.
//
// Conventions. Every Sharpe ratio here is PER BAR (per observation) with a
// risk-free rate of 0, unless a name says "annualised"; AnnualiseSharpe
// converts. Skewness γ3 and kurtosis γ4 are POPULATION moment ratios (divide
// by n) and the kurtosis is NON-EXCESS (a normal distribution has γ4 = 3),
// as in [BL12] and [BL14]. The Sharpe ratio itself uses the SAMPLE std
// (ddof 1), as env/metrics.h does. Errors are absl::InvalidArgumentError
// with a message naming the offending input; the functions returning a
// StatusOr reject non-finite inputs and never return a NaN.
#ifndef RISTRETTO_COORDINATOR_CORE_STATISTICS_H_
#define RISTRETTO_COORDINATOR_CORE_STATISTICS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace ristretto::coordinator {

// The Euler–Mascheroni constant γ.
inline constexpr double kEulerMascheroni = 0.57721566490153286061;

// Standard normal CDF Φ(x) = erfc(−x/√2)/2 (accurate in both tails to the
// relative precision of std::erfc). Φ(±inf) = 1 or 0; Φ(NaN) = NaN.
double NormalCdf(double x);

// Inverse standard normal CDF Φ⁻¹(p) for p in (0, 1): P. J. Acklam's
// rational approximation (relative error < 1.2e-9) followed by one Halley
// step on Φ(x) − p computed with std::erfc, which brings it to about
// machine precision. p > 1/2 is computed as −Φ⁻¹(1 − p) (1 − p is exact
// there), so both tails are equally accurate.
// Returns −inf for p == 0, +inf for p == 1 and NaN for p outside [0, 1] or
// NaN (callers in this file never pass such p).
double InverseNormalCdf(double p);

// Summary of a return series x_1 … x_n (log returns in normal use; any
// per-bar return works, the formulas do not care).
struct SharpeStats {
  int64_t n = 0;      // number of observations T
  double mean = 0;    // Σ x_i / n
  double std = 0;     // sqrt(Σ (x_i − mean)² / (n − 1)), sample (ddof 1)
  double sharpe = 0;  // per-bar Sharpe ŝ = mean / std
  double skewness = 0;  // γ3 = m3 / m2^(3/2), population moments
  double kurtosis = 3;  // γ4 = m4 / m2², population, NON-excess (normal: 3)
};

// Returns the SharpeStats of `log_returns`, with the population central
// moments m_k = Σ (x_i − mean)^k / n (k = 2, 3, 4):
//   mean  = Σ x_i / n          (0 for n = 0),
//   std   = sqrt(Σ (x_i − mean)² / (n − 1))  (0 for n < 2),
//   sharpe = mean / std,  skewness = m3 / m2^1.5,  kurtosis = m4 / m2².
// Degenerate series: when n < 2, or std == 0, or std <= 1e-12·|mean| (the
// rounding noise of a constant series, the same rule as env::SharpeRatio),
// sharpe = 0, skewness = 0 and kurtosis = 3 (the moments are undefined;
// these values make every formula below treat the series as normal with
// Sharpe 0). The mean is accumulated about the first element so a constant
// series has std exactly 0. Non-finite inputs propagate into the fields as
// IEEE arithmetic dictates; the functions below reject them.
SharpeStats ReturnStats(absl::Span<const double> log_returns);

// Returns per_bar · sqrt(bars_per_year): the annualised value of a per-bar
// Sharpe ratio or of its standard error (the iid scaling of [Lo02]; use it
// for both so that ratios such as z-scores are unchanged).
double AnnualiseSharpe(double per_bar, double bars_per_year);

// Standard error of the per-bar Sharpe estimate ŝ over T = stats.n iid
// observations with skewness γ3 and (non-excess) kurtosis γ4 ([Mer02], in
// the form and with the T − 1 denominator of [BL12] and [BL14]):
//   Var(ŝ) = (1 − γ3·ŝ + (γ4 − 1)/4 · ŝ²) / (T − 1),   SE = sqrt(Var(ŝ)).
// Note (γ4 − 1)/4 = 1/2 + (γ4 − 3)/4, so normal returns (γ3 = 0, γ4 = 3)
// give Lo's (1 + ŝ²/2)/(T − 1) ([Lo02] uses T; T − 1 is [BL14]'s choice).
// Uses stats.n, sharpe, skewness and kurtosis only. For population moments
// γ4 >= 1 + γ3², so the bracket is never negative.
// Errors: n < 2; a non-finite sharpe, skewness or kurtosis; a negative
// bracket (impossible moments supplied by hand). The result can be 0 only
// for a two-point distribution with ŝ = 2/γ3.
absl::StatusOr<double> SharpeStandardError(const SharpeStats& stats);

// Probabilistic Sharpe Ratio ([BL12], restated in [BL14]): the probability
// that the true per-bar Sharpe exceeds `benchmark_sharpe` (per bar, SR*):
//   PSR(SR*) = Φ( (ŝ − SR*) · sqrt(T − 1) / sqrt(1 − γ3·ŝ + (γ4 − 1)/4·ŝ²) )
//            = Φ( (ŝ − SR*) / SharpeStandardError(stats) ).
// Errors: those of SharpeStandardError; a non-finite benchmark; a standard
// error of 0 (the ratio is undefined).
absl::StatusOr<double> ProbabilisticSharpeRatio(const SharpeStats& stats,
                                                double benchmark_sharpe);

// Expected maximum of the Sharpe estimates of N independent trials whose
// true Sharpe is 0 and whose estimates have variance V ([BL14], with
// E[{SR_n}] = 0):
//   SR0 = sqrt(V) · ((1 − γ)·Φ⁻¹(1 − 1/N) + γ·Φ⁻¹(1 − 1/(N·e))),
// γ = kEulerMascheroni, e = Euler's number. V and SR0 are on the scale of
// the Sharpe ratios whose variance V is: per bar here, so an annualised
// variance V_a becomes V_a / bars_per_year.
// N = 1 gives SR0 = 0 exactly (no selection; the formula's Φ⁻¹(0) = −inf is
// not evaluated), and V = 0 gives SR0 = 0. For N >= 2 SR0 > 0 whenever
// V > 0 (the bracket is 0.52 at N = 2, 2.53 at N = 100).
// Errors: num_trials < 1; V negative or non-finite.
absl::StatusOr<double> ExpectedMaxSharpe(int64_t num_trials,
                                         double trial_sharpe_variance);

// The sample variance (ddof 1) of the trials' Sharpe ratios,
// Σ (s_i − s̄)² / (n − 1): the V of ExpectedMaxSharpe ([BL14] writes
// V[{SR_n}] without a ddof; ddof 1 is the unbiased estimate).
// Errors: fewer than 2 values; a non-finite value.
absl::StatusOr<double> TrialSharpeVariance(
    absl::Span<const double> trial_sharpes);

// The Deflated Sharpe Ratio and everything that went into it.
struct DeflatedSharpeResult {
  // Inputs.
  double sharpe = 0;                 // ŝ of the selected trial, per bar
  int64_t num_obs = 0;               // T
  double skewness = 0;               // γ3
  double kurtosis = 3;               // γ4, non-excess
  int64_t num_trials = 1;            // N, independent trials
  double trial_sharpe_variance = 0;  // V, per-bar scale
  // Outputs.
  double expected_max_sharpe = 0;  // SR0 = ExpectedMaxSharpe(N, V), per bar
  double standard_error = 0;       // SharpeStandardError(selected)
  double z = 0;                    // (ŝ − SR0) / standard_error
  double dsr = 0;                  // Φ(z) = PSR(SR0)
  double p_value = 1;  // 1 − dsr, computed as Φ(−z) (no cancellation)
};

// Deflated Sharpe Ratio [BL14]: DSR = PSR(SR0) with
// SR0 = ExpectedMaxSharpe(num_trials, trial_sharpe_variance): the
// probability that the selected trial's true Sharpe is above what the best
// of N worthless trials would show. p_value = 1 − DSR is the p-value of
// H0 "true Sharpe <= SR0". `selected` uses n, sharpe, skewness, kurtosis.
// Degenerate inputs: N = 1 or V = 0 give SR0 = 0, so DSR = PSR(0).
// Errors: those of ExpectedMaxSharpe and ProbabilisticSharpeRatio (in
// particular T < 2 and non-finite moments).
absl::StatusOr<DeflatedSharpeResult> DeflatedSharpeRatio(
    const SharpeStats& selected, int64_t num_trials,
    double trial_sharpe_variance);

// A paired test of two Sharpe ratios measured on the same bars (a policy
// against a baseline on one test segment): H0 "a's true Sharpe <= b's".
// The estimates are correlated (the same market moves both), so the error
// of the difference is not the two errors combined: it is the delta method
// of [LW08] on the sample moments u = (mean_a, mean_b, E[a²], E[b²]),
//   Δ = f(u) = mean_a / sqrt(E[a²] − mean_a²) − mean_b / sqrt(E[b²] − mean_b²),
//   Var(Δ̂) = ∇f(u)ᵀ Ψ ∇f(u) / T,
// with Ψ the long-run covariance of y_t = (a_t − mean_a, b_t − mean_b,
// a_t² − E[a²], b_t² − E[b²]) estimated with Bartlett weights over
// L = ⌊4·(T/100)^(2/9)⌋ lags (Newey & West 1994's rule), so that fat tails
// and serially correlated returns (a policy holding positions for many
// bars) widen the error instead of being assumed away. The difference
// reported and tested is that of the ddof-1 Sharpe ratios (ReturnStats);
// per bar, like everything here.
//   [LW08] O. Ledoit, M. Wolf, "Robust performance hypothesis testing with
//          the Sharpe ratio", Journal of Empirical Finance 15(5), 2008.
struct SharpeDifference {
  int64_t n = 0;              // T, bars (pairs)
  double sharpe_a = 0;        // per bar, ReturnStats(a).sharpe
  double sharpe_b = 0;        // per bar, ReturnStats(b).sharpe
  double difference = 0;      // sharpe_a − sharpe_b
  double standard_error = 0;  // of the difference, per bar
  double correlation = 0;     // of a and b (Pearson)
  int lags = 0;               // L
  double z = 0;               // difference / standard_error
  double p_value = 1;         // one-sided, Φ(−z)
};

// Errors: series of different lengths; fewer than 8 pairs; a non-finite
// value; a series with no variance (std <= 1e-12·|mean|: its Sharpe ratio
// has no sampling distribution); a standard error of 0 (a and b move
// together exactly, e.g. the same series twice).
absl::StatusOr<SharpeDifference> SharpeDifferenceTest(
    absl::Span<const double> a, absl::Span<const double> b);

// Options of ProbabilityOfBacktestOverfitting.
struct PboOptions {
  // S, the number of row blocks. 0 (default) = automatic: the largest even
  // number <= min(16, T/2), so every block has at least 2 rows (16 is
  // [BBLZ]'s choice; C(16, 8) = 12870 combinations). An explicit S must be
  // even, in [2, 64], and satisfy 2·S <= T.
  int num_blocks = 0;
  // The most combinations evaluated, in [1, 1e7]. When C(S, S/2) is larger,
  // exactly max_combinations combinations are used, deterministically: those
  // whose 0-based lexicographic ranks are floor(i · C(S, S/2) /
  // max_combinations), i = 0 … max_combinations − 1 (evenly spread over
  // the whole set, no random numbers). 20000 >= C(16, 8), so the automatic S
  // always enumerates every combination.
  int64_t max_combinations = 20000;
};

// The result of CSCV.
struct PboResult {
  double pbo = 0;           // fraction of combinations with λ_c <= 0
  double median_logit = 0;  // median of λ_c (mean of the middle two if even)
  int num_blocks = 0;       // S used
  int64_t num_combinations = 0;    // combinations evaluated
  int64_t total_combinations = 0;  // C(S, S/2)
  // Per evaluated combination c, in evaluation (lexicographic) order:
  std::vector<double> logits;      // λ_c
  std::vector<int> selected;       // n*_c, the in-sample best trial
  std::vector<double> is_sharpe;   // in-sample per-bar Sharpe of n*_c
  std::vector<double> oos_sharpe;  // out-of-sample per-bar Sharpe of n*_c
  // Performance degradation [BBLZ]: least-squares line
  // oos_sharpe ≈ intercept + slope · is_sharpe over the combinations; a
  // slope well below 1 (often negative) means in-sample skill does not
  // carry over. slope = 0 and intercept = mean(oos_sharpe) when the
  // is_sharpe are all equal (Σ (x − x̄)² <= 1e-20 · Σ x², i.e. up to
  // rounding).
  double degradation_slope = 0;
  double degradation_intercept = 0;
  // Fraction of combinations with oos_sharpe < 0 ([BBLZ]'s "probability of
  // loss").
  double prob_oos_loss = 0;
};

// Probability of Backtest Overfitting by CSCV [BBLZ]. `returns` is a T × N
// matrix, one row per period (bar, day, …) and one column per trial /
// strategy, all on the same periods: returns[t][n] is trial n's return in
// period t. The performance statistic is the per-bar Sharpe ratio mean/std
// (ddof 1, 0 when std <= 1e-12·|mean|, as ReturnStats) of the column over
// the chosen rows, exactly as given (pass log returns for log-return
// Sharpes).
//   1. Split the rows into S contiguous blocks, block b = rows
//      [floor(b·T/S), floor((b+1)·T/S)) (sizes differ by at most one row;
//      [BBLZ] assumes S divides T and drops nothing either).
//   2. For each combination c of S/2 blocks (see PboOptions for the cap):
//      in-sample J = the rows of the chosen blocks, out-of-sample J̄ = the
//      rest. R_n, R̄_n = trial n's Sharpe over J and J̄.
//   3. n* = argmax_n R_n (the lowest index among equal maxima).
//   4. ω̄_c = rank(R̄_{n*} among R̄_1 … R̄_N) / (N + 1), rank 1 = worst …
//      N = best, ties taking the average rank (1 + #{R̄_n < R̄_{n*}} +
//      #{n ≠ n*: R̄_n = R̄_{n*}}/2), so ω̄_c is in (0, 1).
//   5. λ_c = ln(ω̄_c / (1 − ω̄_c)).
//   PBO = #{c: λ_c <= 0} / #combinations: the estimated probability that
//   the in-sample best trial is at or below the out-of-sample median.
// Pure iid noise gives PBO ≈ 1/2 (in expectation exactly 1/2 for even N and
// (N + 1)/(2N) for odd N, since the out-of-sample rank is then uniform); a
// genuinely better trial gives PBO ≈ 0.
// Errors: N < 2; T = 0 rows; rows of different lengths (ragged); a
// non-finite entry; T < 4 (automatic S); an explicit S that is odd, outside
// [2, 64] or with 2·S > T; max_combinations outside [1, 1e7].
absl::StatusOr<PboResult> ProbabilityOfBacktestOverfitting(
    absl::Span<const std::vector<double>> returns,
    const PboOptions& options = {});

}  // namespace ristretto::coordinator

#endif  // RISTRETTO_COORDINATOR_CORE_STATISTICS_H_
