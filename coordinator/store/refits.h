// The lockbox result of a trial with several refits (lockbox.refits): its
// final runs share the trial's parameters and differ in their seed, and
// the trial's result is the mean of their accounts (each refit trades its
// own account of the study's initial capital C0 from the start of every
// lockbox domain, never rebalanced: env::EqualCapitalValues). So one PPO
// run that did not learn moves the result by 1/K of its loss, not all of
// it, and the result is that of a fund one can trade: K sub-accounts of C0
// each (not of C0/K: the env's observations include the account's cash
// and its order minimums are absolute).
#ifndef RISTRETTO_COORDINATOR_STORE_REFITS_H_
#define RISTRETTO_COORDINATOR_STORE_REFITS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "coordinator/store/store.h"

namespace ristretto::coordinator {

// Combines the refits' lockbox results. `domain_steps`: the steps of each
// lockbox domain in order (a domain of S rows plays S − 2·lookback); every
// refit's log_returns must have their sum. The combination's Sharpe,
// Sortino, return, Calmar and drawdown are computed from its value series
// as EvaluateActions computes a single policy's (env::SummarizeDomains);
// turnover and fees are the refits' means (each share trades 1/K of the
// capital), trades their sum, exposure and env steps their means.
// Errors: kInvalidArgument with no refit, or a refit whose log returns do
// not have Σ domain_steps bars (naming the refit).
absl::StatusOr<FoldMetrics> CombineRefits(
    const std::vector<RefitRow>& refits, absl::Span<const int64_t> domain_steps,
    double bars_per_year);

}  // namespace ristretto::coordinator

#endif  // RISTRETTO_COORDINATOR_STORE_REFITS_H_
