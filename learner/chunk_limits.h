// Per-field bounds on the values of a run's trajectory chunks, derived from
// the run's contract (env knobs, network options) and the market it trains
// on: the learner's defence against a finite but poisoned chunk (a huge
// reward or observation that passes the finiteness check and would dominate
// the advantages, the observation statistics and the update). Each bound is
// one that no honest actor of the contract can exceed (derivation in
// chunk_limits.cc, summary in docs/security.md); where a quantity has no
// principled bound (the pre-squash action, the policy's log std) a generous
// finite one is used and says so. wire::DecodeChunk enforces them.
// No torch here. Thread-compatible (pure functions and plain data).
#ifndef RISTRETTO_LEARNER_CHUNK_LIMITS_H_
#define RISTRETTO_LEARNER_CHUNK_LIMITS_H_

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "env/market_data.h"
#include "learner/contract.h"

namespace ristretto::learner {

// A closed interval of accepted float values.
struct ValueRange {
  float lo = -std::numeric_limits<float>::max();
  float hi = std::numeric_limits<float>::max();
  bool Contains(float v) const { return v >= lo && v <= hi; }
};

// What a chunk of one run may contain, field by field.
struct ChunkValueBounds {
  // One range per observation element (contract.obs_size of them), for the
  // observations and the terminal observations alike. Layout: cash,
  // holdings × n, then lookback rows of the F features (env.md "State").
  std::vector<ValueRange> obs;
  // Every element of the actions: the pre-squash Gaussian sample u (the env
  // receives tanh(u)).
  ValueRange action;
  ValueRange log_prob;
  ValueRange reward;
};

// Growth and per-bar moves of a market, the data-dependent inputs of the
// bounds (exposed for tests and the log line).
struct MarketMoves {
  // Largest factor by which any portfolio of the market (cash and long
  // holdings, no fees) can grow over `window` consecutive bars of one
  // domain: max over windows of Π_t max(1, max_i p[t+1][i] / p[t][i]).
  double max_growth = 1.0;
  // Largest and smallest one-bar price ratio of any asset (max >= 1,
  // min <= 1; min is 0 if a price falls to 0).
  double max_step_ratio = 1.0;
  double min_step_ratio = 1.0;
  // True if some asset has a zero price inside a domain.
  bool has_zero_price = false;
};

// Scans `market` for windows of `window` bar-to-bar transitions.
MarketMoves ScanMarketMoves(const env::MarketData& market, int64_t window);

// Derives the bounds of the chunks an actor of `contract` sends while
// playing training episodes of `episode_steps` steps on `market` (the
// run's own market: the actors play the same dataset). Errors:
// kInvalidArgument if the contract's sizes do not match the market or its
// env options are invalid, or episode_steps < 1.
absl::StatusOr<ChunkValueBounds> DeriveChunkValueBounds(
    const PolicyContract& contract, const env::MarketData& market,
    int64_t episode_steps);

// One line for the learner's log: the reward, action and log-probability
// ranges and the observation ranges of cash, holdings and features.
std::string DescribeChunkValueBounds(const ChunkValueBounds& bounds,
                                     int num_assets);

}  // namespace ristretto::learner

#endif  // RISTRETTO_LEARNER_CHUNK_LIMITS_H_
