#include "coordinator/store/migrations.h"

namespace ristretto::coordinator {
namespace {

// Version 1: every table, with the constraints that keep the state machine
// of store.h honest even against hand-written SQL: states are CHECKed, a
// leased run has a holder and an expiry and nothing else has, a finished
// trial has a finish time, trial numbers are unique per study, a run has at
// most one fold_metrics row and at most one open lease.
constexpr char kInitialSchema[] = R"sql(
CREATE TABLE datasets (
  id               text PRIMARY KEY CHECK (id <> ''),
  path             text NOT NULL,
  symbols          text NOT NULL DEFAULT '',
  rows             bigint NOT NULL CHECK (rows >= 0),
  interval_seconds bigint NOT NULL CHECK (interval_seconds >= 0),
  created_at       timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE studies (
  id          bigserial PRIMARY KEY,
  name        text NOT NULL UNIQUE CHECK (name <> ''),
  config_text text NOT NULL,
  state       text NOT NULL DEFAULT 'created'
              CHECK (state IN ('created', 'running', 'stopped', 'done')),
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE trials (
  id          bigserial PRIMARY KEY,
  study_id    bigint NOT NULL REFERENCES studies (id) ON DELETE CASCADE,
  number      bigint NOT NULL CHECK (number >= 0),
  state       text NOT NULL DEFAULT 'running'
              CHECK (state IN ('running', 'complete', 'pruned', 'failed')),
  score       double precision,
  fail_reason text NOT NULL DEFAULT '',
  created_at  timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  UNIQUE (study_id, number),
  CHECK ((state = 'complete') = (score IS NOT NULL)),
  CHECK ((state = 'running') = (finished_at IS NULL)),
  CHECK (state <> 'failed' OR fail_reason <> '')
);

CREATE TABLE params (
  trial_id bigint NOT NULL REFERENCES trials (id) ON DELETE CASCADE,
  position int NOT NULL CHECK (position >= 0),
  name     text NOT NULL CHECK (name <> ''),
  value    text NOT NULL,
  PRIMARY KEY (trial_id, name),
  UNIQUE (trial_id, position)
);

CREATE TABLE members (
  id            text PRIMARY KEY CHECK (id <> ''),
  kind          text NOT NULL CHECK (kind IN ('learner', 'actor')),
  address       text NOT NULL DEFAULT '',
  capacity_json text NOT NULL DEFAULT '{}',
  first_seen    timestamptz NOT NULL DEFAULT now(),
  last_seen     timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE runs (
  id               bigserial PRIMARY KEY,
  trial_id         bigint NOT NULL REFERENCES trials (id) ON DELETE CASCADE,
  study_id         bigint NOT NULL REFERENCES studies (id) ON DELETE CASCADE,
  fold             int NOT NULL CHECK (fold >= 0),
  state            text NOT NULL DEFAULT 'queued'
                   CHECK (state IN ('queued', 'leased', 'done', 'failed',
                                    'cancelled')),
  config_json      text NOT NULL,
  attempts         int NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  member_id        text REFERENCES members (id),
  lease_expires_at timestamptz,
  env_steps        bigint NOT NULL DEFAULT 0 CHECK (env_steps >= 0),
  checkpoint_dir   text NOT NULL,
  last_error       text NOT NULL DEFAULT '',
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (trial_id, fold),
  CHECK ((state = 'leased') = (member_id IS NOT NULL)),
  CHECK ((state = 'leased') = (lease_expires_at IS NOT NULL))
);

-- Lease history: one row per lease granted; released_at/outcome are set
-- when it ends (done, failed, expired, released, cancelled).
CREATE TABLE leases (
  id          bigserial PRIMARY KEY,
  run_id      bigint NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  member_id   text NOT NULL REFERENCES members (id),
  attempt     int NOT NULL CHECK (attempt >= 1),
  granted_at  timestamptz NOT NULL,
  expires_at  timestamptz NOT NULL,
  released_at timestamptz,
  outcome     text CHECK (outcome IN ('done', 'failed', 'expired', 'released',
                                      'cancelled')),
  UNIQUE (run_id, attempt),
  CHECK ((released_at IS NULL) = (outcome IS NULL))
);

CREATE TABLE intermediate_values (
  run_id      bigint NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  trial_id    bigint NOT NULL REFERENCES trials (id) ON DELETE CASCADE,
  study_id    bigint NOT NULL REFERENCES studies (id) ON DELETE CASCADE,
  step        bigint NOT NULL CHECK (step >= 0),
  value       double precision NOT NULL,
  reported_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, step)
);

CREATE TABLE fold_metrics (
  run_id           bigint PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
  trial_id         bigint NOT NULL REFERENCES trials (id) ON DELETE CASCADE,
  fold             int NOT NULL,
  sharpe           double precision NOT NULL,
  benchmark_sharpe double precision NOT NULL,
  sortino          double precision NOT NULL,
  max_drawdown     double precision NOT NULL,
  calmar           double precision NOT NULL,
  total_return     double precision NOT NULL,
  benchmark_return double precision NOT NULL,
  trades           bigint NOT NULL CHECK (trades >= 0),
  env_steps        bigint NOT NULL CHECK (env_steps >= 0),
  created_at       timestamptz NOT NULL DEFAULT now(),
  UNIQUE (trial_id, fold)
);

-- Checkpoints and exported policies, scoped by study and trial id and
-- identified by content hash.
CREATE TABLE artifacts (
  id         bigserial PRIMARY KEY,
  study_id   bigint NOT NULL REFERENCES studies (id) ON DELETE CASCADE,
  trial_id   bigint NOT NULL REFERENCES trials (id) ON DELETE CASCADE,
  run_id     bigint REFERENCES runs (id) ON DELETE CASCADE,
  kind       text NOT NULL CHECK (kind IN ('checkpoint', 'policy')),
  path       text NOT NULL CHECK (path <> ''),
  sha256     text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (trial_id, kind, path)
);
)sql";

// Version 2: indexes for the hot queries. The partial indexes stay small:
// only queued runs (LeaseRun's oldest-first scan), only leased runs
// (ExpireLeases by expiry, Heartbeat by holder), only open leases.
constexpr char kIndexes[] = R"sql(
CREATE INDEX runs_queued_idx ON runs (id) WHERE state = 'queued';
CREATE INDEX runs_leased_expiry_idx ON runs (lease_expires_at)
  WHERE state = 'leased';
CREATE INDEX runs_leased_member_idx ON runs (member_id)
  WHERE state = 'leased';
CREATE INDEX trials_study_state_idx ON trials (study_id, state);
CREATE UNIQUE INDEX leases_one_open_per_run_idx ON leases (run_id)
  WHERE released_at IS NULL;
CREATE INDEX leases_open_member_idx ON leases (member_id)
  WHERE released_at IS NULL;
CREATE INDEX intermediate_values_study_idx
  ON intermediate_values (study_id, trial_id);
CREATE INDEX artifacts_trial_idx ON artifacts (trial_id);
)sql";

// Version 3: the lockbox. A trial's final run (fold -1) trains
// on every pre-lockbox row and is evaluated once on the lockbox; its result
// and the baselines on the same rows live in lockbox_results, never in
// fold_metrics (which the objective, sampler and pruner read). Fold metrics
// gain fees, turnover, exposure, the objective's value and the per-bar log
// returns (the statistics need them); study_results keeps the statistics
// and the verdict computed at the end of a study.
constexpr char kLockbox[] = R"sql(
ALTER TABLE runs DROP CONSTRAINT runs_fold_check;
ALTER TABLE runs ADD CONSTRAINT runs_fold_check CHECK (fold >= -1);
ALTER TABLE fold_metrics
  ADD COLUMN fees double precision NOT NULL DEFAULT 0,
  ADD COLUMN turnover double precision NOT NULL DEFAULT 0,
  ADD COLUMN exposure double precision NOT NULL DEFAULT 0,
  ADD COLUMN score double precision NOT NULL DEFAULT 0,
  ADD COLUMN log_returns text NOT NULL DEFAULT '';
ALTER TABLE fold_metrics ADD CONSTRAINT fold_metrics_cv_fold CHECK (fold >= 0);

CREATE TABLE lockbox_results (
  trial_id            bigint PRIMARY KEY REFERENCES trials (id)
                      ON DELETE CASCADE,
  run_id              bigint NOT NULL UNIQUE REFERENCES runs (id)
                      ON DELETE CASCADE,
  study_id            bigint NOT NULL REFERENCES studies (id)
                      ON DELETE CASCADE,
  bars                bigint NOT NULL CHECK (bars >= 0),
  sharpe              double precision NOT NULL,
  sharpe_se           double precision NOT NULL,
  sortino             double precision NOT NULL,
  calmar              double precision NOT NULL,
  total_return        double precision NOT NULL,
  max_drawdown        double precision NOT NULL,
  turnover            double precision NOT NULL,
  fees                double precision NOT NULL,
  trades              bigint NOT NULL CHECK (trades >= 0),
  exposure            double precision NOT NULL,
  env_steps           bigint NOT NULL CHECK (env_steps >= 0),
  bh_sharpe           double precision NOT NULL,
  bh_sharpe_se        double precision NOT NULL,
  bh_sortino          double precision NOT NULL,
  bh_return           double precision NOT NULL,
  bh_max_drawdown     double precision NOT NULL,
  random_seeds        int NOT NULL CHECK (random_seeds >= 0),
  random_sharpe_mean  double precision NOT NULL,
  random_sharpe_std   double precision NOT NULL,
  random_return_mean  double precision NOT NULL,
  random_return_std   double precision NOT NULL,
  log_returns         text NOT NULL DEFAULT '',
  created_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX lockbox_results_study_idx ON lockbox_results (study_id);

CREATE TABLE study_results (
  study_id    bigint PRIMARY KEY REFERENCES studies (id) ON DELETE CASCADE,
  result_json text NOT NULL,
  computed_at timestamptz NOT NULL DEFAULT now()
);
)sql";

// Version 4: retries back off, and a study stopped by the coordinator says
// why (studies.stop_reason: `study start --wait` and `up` print it). A run
// whose learner reported a failure (disk full, permission denied, ...) is
// queued again with retry_after (not leased before it, exponential in its
// attempts) and avoid_member / avoid_until (the learner that failed it gets it
// only after another one had the chance), instead of going straight back into
// the same failure.
constexpr char kRetryBackoff[] = R"sql(
ALTER TABLE runs
  ADD COLUMN retry_after  timestamptz,
  ADD COLUMN avoid_member text NOT NULL DEFAULT '',
  ADD COLUMN avoid_until  timestamptz;
ALTER TABLE studies ADD COLUMN stop_reason text NOT NULL DEFAULT '';
)sql";

// 5: the env steps a run's learner received from its actors and, of those,
// dropped (stale or left over at the end), reported at CompleteRun, so
// `study show` can say what share of the actors' work was wasted.
constexpr char kRunDataFlow[] = R"sql(
ALTER TABLE runs
  ADD COLUMN env_steps_received bigint NOT NULL DEFAULT 0,
  ADD COLUMN env_steps_dropped  bigint NOT NULL DEFAULT 0;
)sql";

// 6: buy and hold's lockbox log returns beside the policy's, so that the
// verdict tests the policy against buy and hold on the same bars (a paired
// test) instead of comparing two point estimates.
constexpr char kLockboxBuyAndHoldReturns[] = R"sql(
ALTER TABLE lockbox_results
  ADD COLUMN bh_log_returns text NOT NULL DEFAULT '';
)sql";

// 7: refits. A complete trial may have several final runs (lockbox.refits:
// the same parameters, each with its own seed; refit r is fold −1 − r), each
// evaluated on the lockbox (lockbox_refits); the trial's lockbox_results row
// combines them (capital split equally among the refits) and says how many.
constexpr char kLockboxRefits[] = R"sql(
ALTER TABLE runs DROP CONSTRAINT runs_fold_check;
ALTER TABLE runs ADD CONSTRAINT runs_fold_check CHECK (fold >= -16);
ALTER TABLE lockbox_results
  ADD COLUMN refits int NOT NULL DEFAULT 1 CHECK (refits BETWEEN 1 AND 16);
CREATE TABLE lockbox_refits (
  run_id        bigint PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
  trial_id      bigint NOT NULL REFERENCES trials (id) ON DELETE CASCADE,
  study_id      bigint NOT NULL REFERENCES studies (id) ON DELETE CASCADE,
  refit         int NOT NULL CHECK (refit BETWEEN 0 AND 15),
  sharpe        double precision NOT NULL,
  sharpe_se     double precision NOT NULL,
  sortino       double precision NOT NULL,
  calmar        double precision NOT NULL,
  total_return  double precision NOT NULL,
  max_drawdown  double precision NOT NULL,
  turnover      double precision NOT NULL,
  fees          double precision NOT NULL,
  trades        bigint NOT NULL CHECK (trades >= 0),
  exposure      double precision NOT NULL,
  env_steps     bigint NOT NULL CHECK (env_steps >= 0),
  log_returns   text NOT NULL DEFAULT '',
  created_at    timestamptz NOT NULL DEFAULT now(),
  UNIQUE (trial_id, refit)
);
CREATE INDEX lockbox_refits_study_idx ON lockbox_refits (study_id);
)sql";

// 8: the rule baselines a quant tries first (equal weight rebalanced,
// momentum, MACD) on the lockbox bars, beside buy and hold: a JSON array
// with each rule's parameter, metrics and log returns (LockboxRuleResult).
constexpr char kLockboxRules[] = R"sql(
ALTER TABLE lockbox_results ADD COLUMN rules text NOT NULL DEFAULT '';
)sql";

}  // namespace

const std::vector<Migration>& Migrations() {
  static const auto* const kMigrations = new std::vector<Migration>{
      {1, "initial schema", kInitialSchema},
      {2, "indexes for leasing, expiry and listings", kIndexes},
      {3, "lockbox results, fold statistics, study results", kLockbox},
      {4, "retry back-off of failed runs, study stop reasons", kRetryBackoff},
      {5, "env steps received and dropped per run", kRunDataFlow},
      {6, "buy and hold's lockbox returns", kLockboxBuyAndHoldReturns},
      {7, "refits: several final runs per trial", kLockboxRefits},
      {8, "rule baselines on the lockbox", kLockboxRules},
  };
  return *kMigrations;
}

int LatestSchemaVersion() { return Migrations().back().version; }

}  // namespace ristretto::coordinator
