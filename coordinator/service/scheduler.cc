#include "coordinator/service/scheduler.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "common/text_util.h"
#include "coordinator/core/rule_baselines.h"
#include "coordinator/core/verdict.h"
#include "coordinator/store/refits.h"
#include "coordinator/store/store_checks.h"
#include "coordinator/store/study_result.h"
#include "env/dataset.h"
#include "env/geometry.h"
#include "env/market_data.h"
#include "learner/objective.h"
#include "learner/run_config_codec.h"

namespace ristretto::coordinator {

static_assert(kMaxRefits == kMaxFinalRefits,
              "lockbox.refits and the store's final-run folds must agree");
namespace {

// The longest incarnation a learner may send (RegisterLearnerRequest).
constexpr size_t kMaxIncarnationLength = 64;

// Run ids remembered per member for DatasetPathForLearner (a learner holds
// --slots leases at once; older ones are found by the scan).
constexpr size_t kMaxRememberedLeases = 256;

// True when `run` is leased to `member_id` and trains on dataset `id`.
bool LeasedRunUses(const RunRow& run, const std::string& member_id,
                   const std::string& id) {
  if (run.state != RunState::kLeased || run.member_id != member_id) {
    return false;
  }
  // The dataset the lease named (LeaseRun: the run's own options).
  absl::StatusOr<learner::TrainerOptions> options =
      learner::TrainerOptionsFromConfigJson(run.config_json);
  return options.ok() && options->dataset_id == id;
}

// The incarnation recorded in a learner's capacity_json by
// RegisterLearner ("" when none: an older learner, or another kind).
// Incarnations are hex digits only, so the text between the quotes is it.
std::string IncarnationOf(const std::string& capacity_json) {
  constexpr char kKey[] = "\"incarnation\":\"";
  const size_t begin = capacity_json.find(kKey);
  if (begin == std::string::npos) return "";
  const size_t value = begin + sizeof(kKey) - 1;
  const size_t end = capacity_json.find('"', value);
  if (end == std::string::npos) return "";
  return capacity_json.substr(value, end - value);
}

// `text` (no control characters: CheckIdText) as the inside of a JSON
// string: quotes and backslashes escaped.
std::string JsonStringBody(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

learner::EvaluationResult FromProto(const v1::Evaluation& e) {
  learner::EvaluationResult r;
  r.sharpe = e.sharpe();
  r.benchmark_sharpe = e.benchmark_sharpe();
  r.sortino = e.sortino();
  r.max_drawdown = e.max_drawdown();
  r.calmar = e.calmar();
  r.total_return = e.total_return();
  r.benchmark_return = e.benchmark_return();
  r.trades = e.trades();
  r.at_env_steps = e.env_steps();
  r.fees = e.fees();
  r.turnover = e.turnover();
  r.exposure = e.exposure();
  return r;
}

FoldMetrics ToMetrics(const v1::Evaluation& e) {
  FoldMetrics m;
  m.sharpe = e.sharpe();
  m.benchmark_sharpe = e.benchmark_sharpe();
  m.sortino = e.sortino();
  m.max_drawdown = e.max_drawdown();
  m.calmar = e.calmar();
  m.total_return = e.total_return();
  m.benchmark_return = e.benchmark_return();
  m.trades = e.trades();
  m.env_steps = e.env_steps();
  m.fees = e.fees();
  m.turnover = e.turnover();
  m.exposure = e.exposure();
  m.log_returns.assign(e.log_returns().begin(), e.log_returns().end());
  return m;
}

// The run's data flow from `request` into `m`. Telemetry, not a result: a
// learner reporting impossible counts (negative, more dropped than
// received) completes its run with the counts left out, not refused.
void SetDataFlow(const v1::CompleteRunRequest& request, FoldMetrics* m) {
  const int64_t received = request.env_steps_received();
  const int64_t dropped = request.env_steps_dropped();
  if (received < 0 || dropped < 0 || dropped > received) {
    RLOG(WARNING) << "run " << request.run_id() << ": ignoring env steps "
                  << "received " << received << ", dropped " << dropped;
    return;
  }
  m->env_steps_received = received;
  m->env_steps_dropped = dropped;
}

// Every metric must be finite to be scored, compared or stored: the error
// names the first one that is not, and nothing is stored.
absl::Status CheckFinite(const v1::Evaluation& e) {
  const std::pair<const char*, double> fields[] = {
      {"sharpe", e.sharpe()},
      {"benchmark_sharpe", e.benchmark_sharpe()},
      {"sortino", e.sortino()},
      {"max_drawdown", e.max_drawdown()},
      {"calmar", e.calmar()},
      {"total_return", e.total_return()},
      {"benchmark_return", e.benchmark_return()},
      {"fees", e.fees()},
      {"turnover", e.turnover()},
      {"exposure", e.exposure()}};
  for (const auto& [name, value] : fields) {
    if (!std::isfinite(value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "evaluation.", name, " is not finite (", value, "): not stored"));
    }
  }
  for (int i = 0; i < e.log_returns_size(); ++i) {
    if (!std::isfinite(e.log_returns(i))) {
      return absl::InvalidArgumentError(
          absl::StrCat("evaluation.log_returns[", i, "] is not finite (",
                       e.log_returns(i), "): not stored"));
    }
  }
  return absl::OkStatus();
}

// The artifacts a completed run reports, scoped to its study and trial.
absl::StatusOr<std::vector<ArtifactRow>> ToArtifacts(
    const RunRow& run, const v1::CompleteRunRequest& request) {
  std::vector<ArtifactRow> artifacts;
  for (const v1::Artifact& a : request.artifacts()) {
    if (a.kind() != "policy" && a.kind() != "checkpoint") {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown artifact kind '", a.kind(), "'"));
    }
    ArtifactRow row;
    row.study_id = run.study_id;
    row.trial_id = run.trial_id;
    row.run_id = run.id;
    row.kind = a.kind();
    row.path = a.path();
    row.sha256 = a.sha256();
    artifacts.push_back(std::move(row));
  }
  return artifacts;
}

}  // namespace

Scheduler::Scheduler(std::unique_ptr<Store> store, SchedulerOptions options)
    : options_(std::move(options)), store_(std::move(store)) {}

SchedulerCounters Scheduler::counters() const {
  absl::MutexLock lock(&mu_);
  return counters_;
}

absl::StatusOr<Scheduler::StudyCache*> Scheduler::Study(const StudyRow& row) {
  auto it = studies_.find(row.id);
  if (it != studies_.end()) return it->second.get();
  auto cache = std::make_unique<StudyCache>();
  ASSIGN_OR_RETURN(cache->config, ParseStudyConfig(row.config_text));
  ASSIGN_OR_RETURN(cache->sampler,
                   MakeSampler(cache->config.sampler, cache->config.space));
  ASSIGN_OR_RETURN(cache->pruner, MakePruner(cache->config.pruner));
  // Resolve the dataset.
  const DatasetSpec& spec = cache->config.dataset;
  std::optional<env::Dataset> dataset;
  if (spec.synthetic) {
    ASSIGN_OR_RETURN(env::Dataset generated,
                     env::GenerateSyntheticDataset(SyntheticOptions(spec)));
    const std::string id = generated.ComputeId();
    absl::StatusOr<DatasetRow> known = Db(DbOp::kGetDataset)->GetDataset(id);
    if (!known.ok() || !std::filesystem::exists(known->path)) {
      std::error_code ec;
      std::filesystem::create_directories(options_.data_dir + "/datasets", ec);
      const std::string path =
          absl::StrCat(options_.data_dir, "/datasets/", id, ".rds");
      RETURN_IF_ERROR(env::WriteDataset(generated, path));
      DatasetRow put;
      put.id = id;
      put.path = std::filesystem::absolute(path).string();
      for (const env::AssetMeta& a : generated.assets) {
        put.symbols += (put.symbols.empty() ? "" : ",") + a.symbol;
      }
      put.rows = generated.num_rows();
      put.interval_seconds = generated.interval_seconds;
      RETURN_IF_ERROR(Db(DbOp::kPutDataset)->PutDataset(put));
    }
    dataset = std::move(generated);
  } else {
    absl::StatusOr<DatasetRow> known =
        Db(DbOp::kGetDataset)->GetDataset(spec.id);
    if (!known.ok()) {
      return absl::NotFoundError(
          absl::StrCat("dataset ", spec.id,
                       " is not registered (ristretto dataset import --db …)"));
    }
    ASSIGN_OR_RETURN(dataset, env::ReadDataset(known->path));
  }
  cache->dataset.id = dataset->ComputeId();
  cache->dataset.num_rows = dataset->num_rows();
  cache->dataset.domains = dataset->domains;
  cache->dataset.feature_names = dataset->feature_names;
  ASSIGN_OR_RETURN(cache->market, env::MarketData::FromDataset(*dataset));
  StudyCache* out = cache.get();
  studies_[row.id] = std::move(cache);
  return out;
}

absl::Status Scheduler::Tick() {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(std::vector<StudyRow> studies,
                   Db(DbOp::kListStudies)->ListStudies());
  // Every study's own limit (also of studies not running any more: their
  // leases may still expire).
  const int kDefaultMaxAttempts = StudyConfig().max_attempts;
  for (const StudyRow& row : studies) {
    if (max_attempts_.count(row.id) != 0) continue;
    absl::StatusOr<StudyConfig> config = ParseStudyConfig(row.config_text);
    max_attempts_[row.id] =
        config.ok() ? config->max_attempts : kDefaultMaxAttempts;
  }
  ASSIGN_OR_RETURN(
      std::vector<int64_t> expired,
      Db(DbOp::kExpireLeases)
          ->ExpireLeases(Now(), max_attempts_, kDefaultMaxAttempts));
  counters_.leases_expired += static_cast<int64_t>(expired.size());
  if (options_.metrics != nullptr) {
    options_.metrics->CountLeasesExpired(static_cast<int64_t>(expired.size()));
  }
  for (int64_t run_id : expired) {
    RLOG(WARNING) << "lease of run " << run_id << " expired";
  }
  if (options_.member_retention > absl::ZeroDuration() &&
      Now() - last_forget_ >= absl::Minutes(1)) {
    last_forget_ = Now();
    // The store stamps last_seen with its own clock (PostgreSQL's now()),
    // not the scheduler's (a test's fake one): its cut-off is real time.
    ASSIGN_OR_RETURN(
        const int64_t forgotten,
        Db(DbOp::kForgetMembers)
            ->ForgetMembers(absl::Now() - options_.member_retention));
    const absl::Time cut_off = Now() - options_.member_retention;
    for (auto it = learners_.begin(); it != learners_.end();) {
      if (it->second.last_call < cut_off) {
        leased_runs_.erase(it->first);
        it = learners_.erase(it);
      } else {
        ++it;
      }
    }
    if (forgotten > 0) {
      RLOG(INFO) << "forgot " << forgotten << " member(s) not heard from for "
                 << absl::FormatDuration(options_.member_retention)
                 << " that never held a lease";
    }
  }
  for (const StudyRow& row : studies) {
    if (row.state != StudyState::kRunning) continue;
    absl::Status s = AdvanceStudy(row);
    if (!s.ok()) {
      if (s.code() == absl::StatusCode::kUnavailable) return s;
      if (broken_.count(row.id) == 0) {
        RLOG(ERROR) << "study " << row.name << " cannot run: " << s.message();
        broken_[row.id] = std::string(s.message());
      }
      // The reason is stored with the state: `study start --wait`, `up` and
      // `study show` print it (the log line is not where users look).
      RETURN_IF_ERROR(
          Db(DbOp::kSetStudyState)
              ->SetStudyState(row.id, StudyState::kStopped,
                              absl::StrCat("cannot run: ", s.message())));
    }
  }
  if (options_.metrics != nullptr) return ExportTrialCounts(studies);
  return absl::OkStatus();
}

absl::Status Scheduler::ExportTrialCounts(
    const std::vector<StudyRow>& studies) {
  for (const StudyRow& row : studies) {
    // `row` was read at the start of the pass: a study that finished during
    // it is still counted (and once more next pass, then no longer).
    if (row.state == StudyState::kDone &&
        !counted_done_.insert(row.id).second) {
      continue;
    }
    ASSIGN_OR_RETURN(TrialCounts counts,
                     Db(DbOp::kCountTrials)->CountTrials(row.id));
    options_.metrics->SetTrials(row.name, counts);
  }
  return absl::OkStatus();
}

absl::Status Scheduler::AdvanceStudy(const StudyRow& row) {
  ASSIGN_OR_RETURN(StudyCache * study, Study(row));
  ASSIGN_OR_RETURN(std::vector<TrialRow> trials,
                   Db(DbOp::kListTrials)->ListTrials(row.id));
  // Recovery: a trial whose runs all finished while the coordinator was
  // away (or between two transactions) is completed now.
  int running = 0;
  for (const TrialRow& t : trials) {
    if (t.state == TrialState::kComplete) {
      RETURN_IF_ERROR(QueueFinalRun(study, t));
      continue;
    }
    if (t.state != TrialState::kRunning) continue;
    RETURN_IF_ERROR(MaybeCompleteTrial(t.id));
    ASSIGN_OR_RETURN(TrialRow now, Db(DbOp::kGetTrial)->GetTrial(t.id));
    if (now.state == TrialState::kRunning) ++running;
    if (now.state == TrialState::kComplete) {
      RETURN_IF_ERROR(QueueFinalRun(study, now));
    }
  }
  int64_t created = static_cast<int64_t>(trials.size());
  while (running < study->config.concurrency &&
         created < study->config.max_trials) {
    std::vector<TrialHistory> history;
    ASSIGN_OR_RETURN(trials, Db(DbOp::kListTrials)->ListTrials(row.id));
    for (const TrialRow& t : trials) {
      TrialHistory h;
      h.number = t.number;
      for (const ParamRow& p : t.params) h.params[p.name] = p.value;
      h.state = t.state;
      h.score = t.score;
      history.push_back(std::move(h));
    }
    ASSIGN_OR_RETURN(Params params, study->sampler->Sample(created, history));
    ASSIGN_OR_RETURN(std::vector<learner::TrainerOptions> runs,
                     BuildRunOptions(study->config, params, study->dataset));
    std::vector<std::string> configs;
    configs.reserve(runs.size());
    for (const learner::TrainerOptions& o : runs) {
      ASSIGN_OR_RETURN(std::string config,
                       learner::TrainerOptionsToConfigJson(o));
      configs.push_back(std::move(config));
    }
    std::vector<ParamRow> param_rows;
    for (const auto& [name, value] : params)
      param_rows.push_back({name, value});
    ASSIGN_OR_RETURN(TrialRow trial,
                     Db(DbOp::kCreateTrial)
                         ->CreateTrial(row.id, param_rows, configs,
                                       options_.data_dir + "/runs"));
    ++counters_.trials_created;
    RLOG(INFO) << row.name << " trial " << trial.number << " started ("
               << configs.size() << " runs)";
    ++running;
    ++created;
  }
  if (running == 0 && created >= study->config.max_trials) {
    // The final runs of the complete trials finish before the study does.
    ASSIGN_OR_RETURN(const int64_t open,
                     Db(DbOp::kCountOpenRuns)->CountOpenRuns(row.id));
    if (open > 0) return absl::OkStatus();
    ASSIGN_OR_RETURN(const StudyStatistics result,
                     ComputeStudyResult(*store_, row));
    RETURN_IF_ERROR(
        Db(DbOp::kPutStudyResult)
            ->PutStudyResult(row.id, StudyStatisticsToJson(result)));
    RETURN_IF_ERROR(
        Db(DbOp::kSetStudyState)->SetStudyState(row.id, StudyState::kDone));
    RLOG(INFO) << "study " << row.name << " done: " << result.verdict;
  }
  return absl::OkStatus();
}

absl::Status Scheduler::QueueFinalRun(StudyCache* study,
                                      const TrialRow& trial) {
  if (study->final_queued.count(trial.id) != 0) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::vector<FoldMetrics> folds,
                   Db(DbOp::kListFoldMetrics)->ListFoldMetrics(trial.id));
  // As many env steps as the folds' best checkpoints had, on average (the
  // checkpoint choice is the CV's; the lockbox never chooses).
  int64_t steps = 0;
  for (const FoldMetrics& m : folds) steps += m.env_steps;
  if (!folds.empty()) steps /= static_cast<int64_t>(folds.size());
  if (steps < 1) steps = study->config.budget_env_steps;
  Params params;
  for (const ParamRow& p : trial.params) params[p.name] = p.value;
  // The refit trains on more rows than any fold: it gets as many passes
  // over its rows as the folds' best checkpoints had over theirs (steps ×
  // refit rows / mean fold training rows, at most 4×).
  absl::StatusOr<std::vector<learner::TrainerOptions>> fold_options =
      BuildRunOptions(study->config, params, study->dataset);
  absl::StatusOr<learner::TrainerOptions> options =
      BuildFinalRunOptions(study->config, params, study->dataset, steps);
  if (options.ok() && fold_options.ok() && !fold_options->empty()) {
    auto rows = [](const std::vector<env::Domain>& domains) {
      int64_t n = 0;
      for (const env::Domain& d : domains) n += d.size();
      return static_cast<double>(n);
    };
    double fold_rows = 0;
    for (const learner::TrainerOptions& f : *fold_options) {
      fold_rows +=
          rows(f.train_domains) / static_cast<double>(fold_options->size());
    }
    const double scale =
        fold_rows > 0
            ? std::clamp(rows(options->train_domains) / fold_rows, 1.0, 4.0)
            : 1.0;
    steps =
        static_cast<int64_t>(std::llround(static_cast<double>(steps) * scale));
    options->budget_env_steps = steps;
  }
  if (!options.ok()) {
    // The trial keeps its CV score; it simply has no lockbox result (the
    // verdict says so if it is the best).
    RLOG(WARNING) << "trial " << trial.number
                  << " gets no final run: " << options.status().message();
    study->final_queued.insert(trial.id);
    return absl::OkStatus();
  }
  // Every refit trains the same options but for its seed.
  const int refits = study->config.lockbox.refits;
  for (int r = 0; r < refits; ++r) {
    learner::TrainerOptions refit = *options;
    if (r > 0) {
      ASSIGN_OR_RETURN(learner::TrainerOptions seeded,
                       BuildFinalRunOptions(study->config, params,
                                            study->dataset, steps, r));
      refit.seed = seeded.seed;
    }
    ASSIGN_OR_RETURN(const std::string config,
                     learner::TrainerOptionsToConfigJson(refit));
    ASSIGN_OR_RETURN(
        const RunRow run,
        Db(DbOp::kAddFinalRun)
            ->AddRefitRun(trial.id, r, config, options_.data_dir + "/runs"));
    if (run.state == RunState::kQueued && run.attempts == 0 && r == 0) {
      RLOG(INFO) << "trial " << trial.number << " final run"
                 << (refits > 1 ? absl::StrCat("s (", refits, " refits)")
                                : std::string())
                 << " queued (" << options->budget_env_steps
                 << " env steps on rows before " << options->lockbox_guard
                 << ", then the lockbox)";
    }
  }
  study->final_queued.insert(trial.id);
  return absl::OkStatus();
}

absl::Status Scheduler::CompleteFinalRun(
    const RunRow& run, const v1::CompleteRunRequest& request) {
  ASSIGN_OR_RETURN(StudyRow study_row,
                   Db(DbOp::kGetStudyById)->GetStudyById(run.study_id));
  ASSIGN_OR_RETURN(StudyCache * study, Study(study_row));
  ASSIGN_OR_RETURN(learner::TrainerOptions options,
                   learner::TrainerOptionsFromConfigJson(run.config_json));
  const double bpy = env::BarsPerYear(study->market->interval_seconds);
  RefitRow refit;
  refit.trial_id = run.trial_id;
  refit.run_id = run.id;
  refit.refit = RefitOfFold(run.fold);
  refit.policy = ToMetrics(request.final_evaluation());
  SetDataFlow(request, &refit.policy);
  refit.policy.fold = run.fold;
  refit.sharpe_se = AnnualisedSharpeError(refit.policy.log_returns, bpy);
  if (!std::isfinite(refit.sharpe_se)) refit.sharpe_se = 0;
  // The trial's result is written with its last refit (each refit's own
  // result is kept beside it).
  ASSIGN_OR_RETURN(const std::vector<RunRow> runs,
                   Db(DbOp::kListRuns)->ListRuns(run.trial_id));
  int finals = 0;
  bool others_complete = true;
  for (const RunRow& r : runs) {
    if (!IsFinalFold(r.fold)) continue;
    ++finals;
    if (r.id != run.id && r.state != RunState::kDone) {
      others_complete = false;
    }
  }
  // A refit not queued yet (the coordinator stopped between queueing two)
  // is still to come.
  if (finals < study->config.lockbox.refits) others_complete = false;
  std::vector<int64_t> domain_steps;
  int64_t lockbox_bars = 0;
  for (const env::Domain& d : options.validation_domains) {
    domain_steps.push_back(env::StepsInRows(d.size(), options.env.lookback));
    lockbox_bars += domain_steps.back();
  }
  // With several refits each one's returns must cover the lockbox's bars
  // (they are combined bar by bar): a refit that does not is refused at its
  // own completion, not the one that happens to finish last.
  if (std::max(finals, study->config.lockbox.refits) > 1 &&
      static_cast<int64_t>(refit.policy.log_returns.size()) != lockbox_bars) {
    return absl::InvalidArgumentError(absl::StrCat(
        "run ", run.id, " (final, refit ", refit.refit, ") reported ",
        refit.policy.log_returns.size(), " lockbox returns, expected ",
        lockbox_bars, " (one per lockbox bar): its completion is refused"));
  }
  std::optional<LockboxRow> combined;
  if (others_complete) {
    // The random baseline is split like the policy: among as many random
    // policies as there are refits.
    ASSIGN_OR_RETURN(
        const SegmentBaselines base,
        ComputeBaselines(study->market, options.env, options.validation_domains,
                         kRandomPolicySeeds, std::max(finals, 1)));
    LockboxRow row;
    row.refits = std::max(finals, 1);
    if (row.refits == 1) {
      row.policy = refit.policy;
      row.sharpe_se = refit.sharpe_se;
    } else {
      ASSIGN_OR_RETURN(std::vector<RefitRow> all,
                       Db(DbOp::kListRefits)->ListTrialRefits(run.trial_id));
      all.erase(
          std::remove_if(all.begin(), all.end(),
                         [&](const RefitRow& r) { return r.run_id == run.id; }),
          all.end());
      all.push_back(refit);
      if (static_cast<int>(all.size()) != finals) {
        return absl::InternalError(absl::StrCat("trial ", run.trial_id, " has ",
                                                finals, " final runs but ",
                                                all.size(), " refit results"));
      }
      ASSIGN_OR_RETURN(row.policy, CombineRefits(all, domain_steps, bpy));
      row.sharpe_se = AnnualisedSharpeError(row.policy.log_returns, bpy);
      if (!std::isfinite(row.sharpe_se)) row.sharpe_se = 0;
    }
    row.policy.fold = kLockboxFold;
    row.bars = static_cast<int64_t>(row.policy.log_returns.size());
    row.bh_sharpe = base.buy_and_hold.sharpe;
    row.bh_sharpe_se = std::isfinite(base.buy_and_hold_sharpe_se)
                           ? base.buy_and_hold_sharpe_se
                           : 0;
    row.bh_sortino = base.buy_and_hold.sortino;
    row.bh_return = base.buy_and_hold.total_return;
    row.bh_max_drawdown = base.buy_and_hold.max_drawdown;
    row.random_seeds = base.random_seeds;
    row.random_sharpe_mean = base.random_sharpe_mean;
    row.random_sharpe_std = base.random_sharpe_std;
    row.random_return_mean = base.random_return_mean;
    row.random_return_std = base.random_return_std;
    row.bh_log_returns = base.buy_and_hold.log_returns;
    // The rules a quant tries first, on the same bars with the same costs
    // (their parameters chosen on the rows before the lockbox). A market
    // too short for a rule's horizons leaves the trial without them, said.
    absl::StatusOr<std::vector<LockboxRuleResult>> rules = ComputeLockboxRules(
        study->market, options.env, options.validation_domains);
    if (rules.ok()) {
      row.rules_json = LockboxRulesToJson(*rules, /*with_returns=*/true);
    } else {
      RLOG(WARNING) << "trial " << run.trial_id
                    << ": no rule baselines on the lockbox: "
                    << rules.status().message();
    }
    combined = std::move(row);
  }
  ASSIGN_OR_RETURN(std::vector<ArtifactRow> artifacts,
                   ToArtifacts(run, request));
  const double refit_sharpe = refit.policy.sharpe;
  RETURN_IF_ERROR(Db(DbOp::kCompleteFinalRun)
                      ->CompleteRefit(run.id, request.member_id(),
                                      std::move(refit), combined, artifacts));
  ++counters_.runs_completed;
  if (!combined.has_value()) {
    RLOG(INFO) << absl::StrFormat(
        "run %d (final, refit %d) done: lockbox Sharpe %.2f; the trial's "
        "result waits for its other refits",
        run.id, RefitOfFold(run.fold), refit_sharpe);
  } else {
    RLOG(INFO) << absl::StrFormat(
        "run %d (final) done: lockbox Sharpe %.2f%s, buy & hold %.2f, random "
        "%.2f",
        run.id, combined->policy.sharpe,
        combined->refits > 1
            ? absl::StrFormat(" (%d refits, capital split)", combined->refits)
            : std::string(),
        combined->bh_sharpe, combined->random_sharpe_mean);
  }
  return absl::OkStatus();
}

absl::Status Scheduler::MaybeCompleteTrial(int64_t trial_id) {
  ASSIGN_OR_RETURN(std::vector<RunRow> runs,
                   Db(DbOp::kListRuns)->ListRuns(trial_id));
  for (const RunRow& r : runs) {
    if (r.state != RunState::kDone) return absl::OkStatus();
  }
  if (runs.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::vector<FoldMetrics> folds,
                   Db(DbOp::kListFoldMetrics)->ListFoldMetrics(trial_id));
  ASSIGN_OR_RETURN(
      const StudyRow study_row,
      Db(DbOp::kGetStudyById)->GetStudyById(runs.front().study_id));
  ASSIGN_OR_RETURN(StudyCache * study, Study(study_row));
  std::vector<learner::EvaluationResult> scores;
  scores.reserve(folds.size());
  for (const FoldMetrics& m : folds) {
    learner::EvaluationResult e;
    e.sharpe = m.sharpe;
    e.benchmark_sharpe = m.benchmark_sharpe;
    e.sortino = m.sortino;
    e.calmar = m.calmar;
    e.total_return = m.total_return;
    scores.push_back(e);
  }
  const double score = learner::TrialObjective(study->config.objective, scores);
  if (!std::isfinite(score)) {
    return absl::InternalError(absl::StrCat("trial ", trial_id, ": objective ",
                                            study->config.objective,
                                            " is not finite (", score, ")"));
  }
  absl::Status s = Db(DbOp::kCompleteTrial)->CompleteTrial(trial_id, score);
  if (s.code() == absl::StatusCode::kFailedPrecondition) {
    return absl::OkStatus();  // already finished (pruned, failed, done)
  }
  RETURN_IF_ERROR(s);
  ++counters_.trials_completed;
  RLOG(INFO) << absl::StrFormat("trial %d complete, score %.4f", trial_id,
                                score);
  return absl::OkStatus();
}

absl::Status Scheduler::TouchMember(const std::string& member_id) {
  const auto it = learners_.find(member_id);
  if (it == learners_.end()) {
    return absl::NotFoundError(absl::StrCat(
        "learner ", EscapeForMessage(member_id), " is not registered"));
  }
  it->second.last_call = Now();
  it->second.last_work = it->second.last_call;
  return absl::OkStatus();
}

absl::Status Scheduler::CheckLeasedTo(const RunRow& run,
                                      const std::string& member_id,
                                      const char* what) {
  if (run.state == RunState::kLeased && run.member_id != member_id) {
    // Another member's run: never touched, whoever asks.
    return absl::PermissionDeniedError(
        absl::StrCat(what, ": run ", run.id, " is not leased to learner '",
                     EscapeForMessage(member_id), "'"));
  }
  // Leased to the caller, or to nobody (queued, done, cancelled, failed):
  // the store's answer (kFailedPrecondition when not leased).
  return CheckRunHolder(run.id, run.state, run.member_id, member_id);
}

absl::StatusOr<v1::RegisterLearnerResponse> Scheduler::RegisterLearner(
    const v1::RegisterLearnerRequest& request) {
  absl::MutexLock lock(&mu_);
  if (request.member_id().empty() || request.address().empty() ||
      request.slots() < 1) {
    return absl::InvalidArgumentError(
        "member_id, address and slots >= 1 are required");
  }
  // Logged, stored, handed to actors and named in their tickets.
  RETURN_IF_ERROR(CheckIdText("member_id", request.member_id()));
  RETURN_IF_ERROR(CheckIdText("address", request.address()));
  RETURN_IF_ERROR(CheckIdText("device", request.device()));
  const std::string& incarnation = request.incarnation();
  if (incarnation.size() > kMaxIncarnationLength ||
      !std::all_of(incarnation.begin(), incarnation.end(), [](char c) {
        return absl::ascii_isxdigit(static_cast<unsigned char>(c));
      })) {
    return absl::InvalidArgumentError(absl::StrCat(
        "incarnation must be at most ", kMaxIncarnationLength, " hex digits"));
  }
  // A new process under a known member id (a restarted container or pod
  // keeps its name): the leases the previous process held die with it.
  // Without this the new process's heartbeats, which extend every lease of
  // the member id, would keep them alive for ever and their trials would
  // never finish. Read from the database, so that a coordinator restart in
  // between does not hide the change.
  if (!incarnation.empty()) {
    absl::StatusOr<MemberRow> known =
        Db(DbOp::kGetMember)->GetMember(request.member_id());
    if (!known.ok() && known.status().code() != absl::StatusCode::kNotFound) {
      return known.status();
    }
    const std::string previous =
        known.ok() ? IncarnationOf(known->capacity_json) : "";
    if (!previous.empty() && previous != incarnation) {
      RLOG(WARNING) << "learner " << EscapeForMessage(request.member_id())
                    << " registered as a new process: the leases of its "
                       "previous process go back to the queue";
      RETURN_IF_ERROR(
          Db(DbOp::kReleaseLeases)->ReleaseLeases(request.member_id()));
    }
  }
  if (learners_.find(request.member_id()) == learners_.end()) {
    int64_t live = 0;
    for (const auto& [id, learner] : learners_) {
      if (Live(learner.last_call)) ++live;
    }
    if (live >= options_.max_learners) {
      return absl::ResourceExhaustedError(
          absl::StrCat(live,
                       " learner member ids are live, the coordinator's cap "
                       "(--max-learners ",
                       options_.max_learners,
                       "): a new id registers "
                       "once a learner has been silent for a lease lifetime"));
    }
  }
  MemberRow member;
  member.id = request.member_id();
  member.kind = "learner";
  member.address = request.address();
  member.capacity_json =
      absl::StrCat("{\"slots\":", request.slots(),
                   ",\"memory_mb\":", request.memory_budget_mb(),
                   ",\"device\":\"", JsonStringBody(request.device()), "\"",
                   incarnation.empty()
                       ? ""
                       : absl::StrCat(",\"incarnation\":\"", incarnation, "\""),
                   "}");
  RETURN_IF_ERROR(Db(DbOp::kUpsertMember)->UpsertMember(member));
  learners_[request.member_id()] = Learner{request.address(), Now()};
  RLOG(INFO) << "learner " << EscapeForMessage(request.member_id()) << " at "
             << EscapeForMessage(request.address()) << " (" << request.slots()
             << " slots)";
  v1::RegisterLearnerResponse response;
  response.set_lease_ttl_ms(absl::ToInt64Milliseconds(options_.lease_ttl));
  response.set_heartbeat_interval_ms(
      absl::ToInt64Milliseconds(options_.lease_ttl / 6));
  return response;
}

absl::StatusOr<v1::LeaseRunResponse> Scheduler::LeaseRun(
    const v1::LeaseRunRequest& request) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(TouchMember(request.member_id()));
  v1::LeaseRunResponse response;
  ASSIGN_OR_RETURN(
      std::optional<RunRow> run,
      Db(DbOp::kLeaseRun)
          ->LeaseRun(request.member_id(), options_.lease_ttl, Now()));
  if (!run.has_value()) return response;
  ASSIGN_OR_RETURN(TrialRow trial,
                   Db(DbOp::kGetTrial)->GetTrial(run->trial_id));
  ASSIGN_OR_RETURN(StudyRow study,
                   Db(DbOp::kGetStudyById)->GetStudyById(run->study_id));
  ASSIGN_OR_RETURN(learner::TrainerOptions options,
                   learner::TrainerOptionsFromConfigJson(run->config_json));
  v1::RunLease* lease = response.mutable_lease();
  lease->set_run_id(run->id);
  lease->set_run_name(absl::StrCat(
      study.name, "/trial-", trial.number,
      IsFinalFold(run->fold)
          ? absl::StrCat("/", FinalRunDirectory(RefitOfFold(run->fold)))
          : absl::StrCat("/fold-", run->fold)));
  lease->set_study_id(run->study_id);
  lease->set_trial_id(run->trial_id);
  lease->set_trial_number(trial.number);
  lease->set_fold(run->fold);
  *lease->mutable_run_config() = learner::TrainerOptionsToRunConfig(options);
  lease->set_dataset_id(options.dataset_id);
  lease->set_checkpoint_dir(run->checkpoint_dir);
  lease->set_attempt(run->attempts);
  response.set_has_run(true);
  std::set<int64_t>& remembered = leased_runs_[request.member_id()];
  remembered.insert(run->id);
  if (remembered.size() > kMaxRememberedLeases) {
    remembered.erase(remembered.begin());
  }
  ++counters_.runs_leased;
  if (options_.metrics != nullptr) options_.metrics->CountRunLeased();
  RLOG(INFO) << "leased " << lease->run_name() << " to "
             << EscapeForMessage(request.member_id()) << " (attempt "
             << run->attempts << ")";
  return response;
}

absl::StatusOr<v1::HeartbeatResponse> Scheduler::Heartbeat(
    const v1::HeartbeatRequest& request) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(TouchMember(request.member_id()));
  std::vector<std::pair<int64_t, int64_t>> steps;
  for (const v1::RunProgress& p : request.runs()) {
    steps.emplace_back(p.run_id(), p.env_steps());
  }
  ASSIGN_OR_RETURN(
      std::vector<int64_t> lost,
      Db(DbOp::kHeartbeat)
          ->Heartbeat(request.member_id(), options_.lease_ttl, steps));
  v1::HeartbeatResponse response;
  for (int64_t id : lost) response.add_stop_run_ids(id);
  return response;
}

absl::StatusOr<v1::ReportEvaluationResponse> Scheduler::ReportEvaluation(
    const v1::ReportEvaluationRequest& request) {
  absl::MutexLock lock(&mu_);
  const v1::Evaluation& e = request.evaluation();
  v1::ReportEvaluationResponse response;
  // Whose run it is first: a stranger learns nothing from the validation.
  ASSIGN_OR_RETURN(RunRow run, Db(DbOp::kGetRun)->GetRun(request.run_id()));
  RETURN_IF_ERROR(CheckLeasedTo(run, request.member_id(), "ReportEvaluation"));
  RETURN_IF_ERROR(CheckFinite(e));
  // A final run's only evaluation is on the lockbox: never an intermediate
  // value, never a pruning input.
  if (IsFinalFold(run.fold)) return response;
  ASSIGN_OR_RETURN(StudyRow study_row,
                   Db(DbOp::kGetStudyById)->GetStudyById(run.study_id));
  ASSIGN_OR_RETURN(StudyCache * study, Study(study_row));
  // The coordinator scores with the study's objective itself.
  const double value =
      learner::ObjectiveValue(study->config.objective, FromProto(e));
  RETURN_IF_ERROR(Db(DbOp::kReportIntermediate)
                      ->ReportIntermediate(request.run_id(),
                                           request.member_id(), e.env_steps(),
                                           value));
  auto record = [study](int64_t run_id, const IntermediateValue& v) {
    const auto [it, added] = study->intermediate_index.emplace(
        std::make_pair(run_id, v.step), study->intermediates.size());
    if (added) {
      study->intermediates.push_back(v);
    } else {
      study->intermediates[it->second] = v;  // a repeated report
    }
  };
  if (!study->intermediates_loaded) {  // includes the value just written
    ASSIGN_OR_RETURN(
        std::vector<IntermediateRow> rows,
        Db(DbOp::kListIntermediates)->ListIntermediates(run.study_id));
    for (const IntermediateRow& r : rows) {
      record(r.run_id, IntermediateValue{r.trial_id, r.fold, r.step, r.value});
    }
    study->intermediates_loaded = true;
  } else {
    record(run.id,
           IntermediateValue{run.trial_id, run.fold, e.env_steps(), value});
  }
  const std::vector<IntermediateValue>& all = study->intermediates;
  // The final evaluation of a run is not a pruning point: the run is done.
  const bool final_step = e.env_steps() >= study->config.budget_env_steps;
  if (!final_step && study->pruner->ShouldPrune(run.trial_id, all)) {
    absl::Status pruned = Db(DbOp::kPruneTrial)->PruneTrial(run.trial_id);
    if (pruned.ok()) {
      ++counters_.trials_pruned;
      RLOG(INFO) << "trial " << run.trial_id << " pruned at " << e.env_steps()
                 << " steps";
    } else if (pruned.code() != absl::StatusCode::kFailedPrecondition) {
      return pruned;
    }
    response.set_prune(true);
  }
  return response;
}

absl::Status Scheduler::CompleteRun(const v1::CompleteRunRequest& request) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(RunRow run, Db(DbOp::kGetRun)->GetRun(request.run_id()));
  RETURN_IF_ERROR(CheckLeasedTo(run, request.member_id(), "CompleteRun"));
  RETURN_IF_ERROR(CheckFinite(request.final_evaluation()));
  if (IsFinalFold(run.fold)) return CompleteFinalRun(run, request);
  ASSIGN_OR_RETURN(std::vector<ArtifactRow> artifacts,
                   ToArtifacts(run, request));
  FoldMetrics metrics = ToMetrics(request.final_evaluation());
  SetDataFlow(request, &metrics);
  {
    ASSIGN_OR_RETURN(StudyRow study_row,
                     Db(DbOp::kGetStudyById)->GetStudyById(run.study_id));
    ASSIGN_OR_RETURN(StudyCache * study, Study(study_row));
    metrics.score = learner::ObjectiveValue(
        study->config.objective, FromProto(request.final_evaluation()));
  }
  ASSIGN_OR_RETURN(bool all_done,
                   Db(DbOp::kCompleteRun)
                       ->CompleteRun(request.run_id(), request.member_id(),
                                     metrics, artifacts));
  ++counters_.runs_completed;
  if (all_done) RETURN_IF_ERROR(MaybeCompleteTrial(run.trial_id));
  return absl::OkStatus();
}

absl::Status Scheduler::FailRun(const v1::FailRunRequest& request) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(const RunRow run,
                   Db(DbOp::kGetRun)->GetRun(request.run_id()));
  RETURN_IF_ERROR(CheckLeasedTo(run, request.member_id(), "FailRun"));
  ASSIGN_OR_RETURN(const int max_attempts, MaxAttempts(run.study_id));
  const std::string reason =
      request.reason().empty() ? "unknown error" : request.reason();
  if (run.attempts < max_attempts) {
    // Disk full, permission denied, a device error: maybe this learner's
    // alone, maybe passing. Queue it again, backing off exponentially, and
    // give another learner the first chance at it.
    const int doublings = std::min(run.attempts - 1, 20);
    const absl::Duration backoff = std::min(
        options_.retry_backoff * (int64_t{1} << std::max(doublings, 0)),
        options_.max_retry_backoff);
    const absl::Time now = Now();
    RETURN_IF_ERROR(Db(DbOp::kFailRun)
                        ->RetryRun(request.run_id(), request.member_id(),
                                   reason, now + backoff, now + 2 * backoff));
    ++counters_.runs_retried;
    RLOG(WARNING) << "run " << request.run_id() << " failed on "
                  << EscapeForMessage(request.member_id()) << " (attempt "
                  << run.attempts << " of " << max_attempts
                  << "): " << EscapeForMessage(reason, 500) << "; retried in "
                  << absl::FormatDuration(backoff)
                  << " (on that learner not before "
                  << absl::FormatDuration(2 * backoff) << ")";
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(Db(DbOp::kFailRun)
                      ->FailRun(request.run_id(), request.member_id(),
                                absl::StrCat(reason, " (attempt ", run.attempts,
                                             " of ", max_attempts, ")")));
  ++counters_.trials_failed;
  RLOG(WARNING) << "run " << request.run_id() << " failed (attempt "
                << run.attempts << " of " << max_attempts
                << "): " << EscapeForMessage(reason, 500);
  return absl::OkStatus();
}

absl::StatusOr<int> Scheduler::MaxAttempts(int64_t study_id) {
  auto it = max_attempts_.find(study_id);
  if (it != max_attempts_.end()) return it->second;
  ASSIGN_OR_RETURN(const StudyRow row,
                   Db(DbOp::kGetStudyById)->GetStudyById(study_id));
  absl::StatusOr<StudyConfig> config = ParseStudyConfig(row.config_text);
  const int limit =
      config.ok() ? config->max_attempts : StudyConfig().max_attempts;
  max_attempts_[study_id] = limit;
  return limit;
}

absl::Status Scheduler::Release(const v1::ReleaseRequest& request) {
  absl::MutexLock lock(&mu_);
  learners_.erase(request.member_id());
  leased_runs_.erase(request.member_id());
  return Db(DbOp::kReleaseLeases)->ReleaseLeases(request.member_id());
}

std::vector<std::string> Scheduler::ForgetSilentLearners() {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> forgotten;
  const absl::Time now = Now();
  for (auto it = learners_.begin(); it != learners_.end();) {
    if (Live(it->second.last_call)) {
      ++it;
      continue;
    }
    RLOG(WARNING) << "learner " << EscapeForMessage(it->first) << " at "
                  << EscapeForMessage(it->second.address)
                  << " has not called for "
                  << absl::FormatDuration(now - it->second.last_call)
                  << " (lease lifetime "
                  << absl::FormatDuration(options_.lease_ttl)
                  << "): forgotten; it registers again if it comes back";
    forgotten.push_back(it->first);
    leased_runs_.erase(it->first);
    it = learners_.erase(it);
  }
  if (options_.metrics != nullptr) {
    options_.metrics->SetLearners(static_cast<int64_t>(learners_.size()));
    options_.metrics->CountLearnersForgotten(
        static_cast<int64_t>(forgotten.size()));
  }
  return forgotten;
}

absl::StatusOr<v1::FindLearnerResponse> Scheduler::FindLearner(
    const v1::FindLearnerRequest& request) {
  absl::MutexLock lock(&mu_);
  v1::FindLearnerResponse response;
  // Learners in turn, skipping any not heard from for a lease lifetime
  // (dead, or cut off: its leases have expired). Among them, those that
  // leased or heartbeated within a lease lifetime: a host with the
  // learners' token registering many member ids (each live for a lease
  // lifetime) must not draw the actors away from the learners that work.
  // Only when none works yet (a stack starting) do fresh registrations
  // count.
  std::vector<std::map<std::string, Learner>::const_iterator> live, working;
  for (auto it = learners_.cbegin(); it != learners_.cend(); ++it) {
    if (!Live(it->second.last_call)) continue;
    live.push_back(it);
    if (Live(it->second.last_work)) working.push_back(it);
  }
  if (!working.empty()) live = std::move(working);
  if (live.empty()) return response;
  const auto it = live[static_cast<size_t>(next_learner_++ %
                                           static_cast<int64_t>(live.size()))];
  response.set_learner_address(it->second.address);
  response.set_learner_member_id(it->first);
  MemberRow member;
  member.id = request.actor_id();
  member.kind = "actor";
  member.address = "";
  member.capacity_json = "{}";
  if (!member.id.empty()) {
    const absl::Status upserted = Db(DbOp::kUpsertMember)->UpsertMember(member);
    // An actor naming itself after a learner (whose member ids FindLearner
    // hands out) would replace the learner's row, incarnation included.
    if (absl::IsAlreadyExists(upserted)) {
      return absl::PermissionDeniedError(upserted.message());
    }
    RETURN_IF_ERROR(upserted);
  }
  return response;
}

absl::StatusOr<std::string> Scheduler::DatasetPath(const std::string& id,
                                                   bool running_studies_only) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(DatasetRow row, Db(DbOp::kGetDataset)->GetDataset(id));
  if (!running_studies_only) return row.path;
  ASSIGN_OR_RETURN(std::vector<StudyRow> studies,
                   Db(DbOp::kListStudies)->ListStudies());
  for (const StudyRow& study : studies) {
    if (study.state != StudyState::kRunning) continue;
    absl::StatusOr<StudyCache*> cache = Study(study);
    if (!cache.ok()) continue;  // a broken study serves nothing
    if ((*cache)->dataset.id == id || (*cache)->config.dataset.id == id) {
      return row.path;
    }
  }
  return absl::PermissionDeniedError(
      absl::StrCat("dataset ", EscapeForMessage(id),
                   " is not the dataset of a running study"));
}

absl::StatusOr<std::string> Scheduler::DatasetPathForLearner(
    const std::string& id, const std::string& member_id) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(DatasetRow row, Db(DbOp::kGetDataset)->GetDataset(id));
  // First the runs this process leased to the member, each as the store
  // has it now (a lease expired, released or re-leased since is dropped).
  if (auto it = leased_runs_.find(member_id); it != leased_runs_.end()) {
    std::set<int64_t>& remembered = it->second;
    for (auto run_id = remembered.begin(); run_id != remembered.end();) {
      ASSIGN_OR_RETURN(RunRow run, Db(DbOp::kGetRun)->GetRun(*run_id));
      if (LeasedRunUses(run, member_id, id)) return row.path;
      if (run.state != RunState::kLeased || run.member_id != member_id) {
        run_id = remembered.erase(run_id);
      } else {
        ++run_id;
      }
    }
  }
  // Then every open run of the running studies: leases granted before this
  // coordinator started. Leases go only to runs of running studies whose
  // trial runs (or is complete, for its final run).
  ASSIGN_OR_RETURN(std::vector<StudyRow> studies,
                   Db(DbOp::kListStudies)->ListStudies());
  for (const StudyRow& study : studies) {
    if (study.state != StudyState::kRunning) continue;
    ASSIGN_OR_RETURN(std::vector<TrialRow> trials,
                     Db(DbOp::kListTrials)->ListTrials(study.id));
    for (const TrialRow& trial : trials) {
      if (trial.state != TrialState::kRunning &&
          trial.state != TrialState::kComplete) {
        continue;
      }
      ASSIGN_OR_RETURN(std::vector<RunRow> runs,
                       Db(DbOp::kListRuns)->ListRuns(trial.id));
      for (const RunRow& run : runs) {
        if (LeasedRunUses(run, member_id, id)) {
          leased_runs_[member_id].insert(run.id);
          return row.path;
        }
      }
    }
  }
  return absl::PermissionDeniedError(
      absl::StrCat("dataset ", EscapeForMessage(id),
                   " is not the dataset of a run leased to learner '",
                   EscapeForMessage(member_id), "'"));
}

}  // namespace ristretto::coordinator
