#include "coordinator/store/refits.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "env/metrics.h"

namespace ristretto::coordinator {

absl::StatusOr<FoldMetrics> CombineRefits(
    const std::vector<RefitRow>& refits, absl::Span<const int64_t> domain_steps,
    double bars_per_year) {
  if (refits.empty()) {
    return absl::InvalidArgumentError("no refit to combine");
  }
  int64_t bars = 0;
  for (const int64_t n : domain_steps) bars += n;
  std::vector<absl::Span<const double>> returns;
  for (const RefitRow& r : refits) {
    if (static_cast<int64_t>(r.policy.log_returns.size()) != bars) {
      return absl::InvalidArgumentError(absl::StrCat(
          "refit ", r.refit, " (run ", r.run_id, ") has ",
          r.policy.log_returns.size(), " lockbox bars, expected ", bars));
    }
    returns.emplace_back(r.policy.log_returns);
  }
  env::DomainsSummary s = env::SummarizeDomains(
      env::EqualCapitalValues(returns, domain_steps), bars_per_year);
  FoldMetrics m;
  m.fold = kLockboxFold;
  m.sharpe = s.sharpe;
  m.sortino = s.sortino;
  m.total_return = s.total_return;
  m.calmar = s.calmar;
  m.max_drawdown = s.max_drawdown;
  m.log_returns = std::move(s.log_returns);
  const double k = static_cast<double>(refits.size());
  double env_steps = 0;
  for (const RefitRow& r : refits) {
    m.turnover += r.policy.turnover / k;
    m.fees += r.policy.fees / k;
    m.exposure += r.policy.exposure / k;
    m.trades += r.policy.trades;
    env_steps += static_cast<double>(r.policy.env_steps) / k;
  }
  m.env_steps = std::llround(env_steps);
  return m;
}

}  // namespace ristretto::coordinator
