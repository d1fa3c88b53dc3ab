#include "coordinator/store/refits.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "learner/evaluation.h"

namespace ristretto::coordinator {

absl::StatusOr<FoldMetrics> CombineRefits(
    const std::vector<RefitRow>& refits, absl::Span<const int64_t> domain_steps,
    double bars_per_year) {
  if (refits.empty()) {
    return absl::InvalidArgumentError("no refit to combine");
  }
  int64_t bars = 0;
  for (const int64_t n : domain_steps) bars += n;
  std::vector<learner::ShareResult> shares;
  shares.reserve(refits.size());
  for (const RefitRow& r : refits) {
    if (static_cast<int64_t>(r.policy.log_returns.size()) != bars) {
      return absl::InvalidArgumentError(absl::StrCat(
          "refit ", r.refit, " (run ", r.run_id, ") has ",
          r.policy.log_returns.size(), " lockbox bars, expected ", bars));
    }
    learner::ShareResult share;
    share.log_returns = r.policy.log_returns;
    share.turnover = r.policy.turnover;
    share.fees = r.policy.fees;
    share.exposure = r.policy.exposure;
    share.trades = r.policy.trades;
    share.env_steps = r.policy.env_steps;
    shares.push_back(share);
  }
  ASSIGN_OR_RETURN(learner::SplitResult split,
                   learner::CombineShares(shares, domain_steps, bars_per_year));
  FoldMetrics m;
  m.fold = kLockboxFold;
  m.sharpe = split.summary.sharpe;
  m.sortino = split.summary.sortino;
  m.total_return = split.summary.total_return;
  m.calmar = split.summary.calmar;
  m.max_drawdown = split.summary.max_drawdown;
  m.log_returns = std::move(split.summary.log_returns);
  m.turnover = split.turnover;
  m.fees = split.fees;
  m.exposure = split.exposure;
  m.trades = split.trades;
  m.env_steps = split.env_steps;
  return m;
}

}  // namespace ristretto::coordinator
