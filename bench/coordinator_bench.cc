// Coordinator scheduling benchmark: coordinator operations per
// second against a real PostgreSQL, with a trivial round trip on the same
// server as the baseline, all measured interleaved in one run (plain main;
// prints every repetition, then medians).
//
// Servers: PgCluster in a fresh temporary directory, once with the default
// (durable: fsync, synchronous_commit = on, as `ristretto up` runs it) and
// once with PgClusterOptions::unsafe_fast (fsync off, the tests' setting),
// both running during the whole benchmark, reached over their Unix socket.
//
// Baselines (per server, per repetition):
//   select1      SELECT 1 through a pqxx::nontransaction on a connection of
//                its own (same DSN as the Store's; the Store keeps its
//                connection private): one client/server round trip. The
//                ratio baseline: "x select1" = select1 rate / op rate, i.e.
//                what an operation costs in trivial round trips.
//   store_read   Store::SchemaVersion(): the Store's cheapest read-only
//                transaction (BEGIN, 2 SELECTs, COMMIT) with its retry
//                wrapper.
//   write_floor  BEGIN; SELECT txid_current(); UPDATE of one row; COMMIT
//                on the pqxx connection: the smallest write transaction of
//                the Store's shape (Store::Impl::Transact asks txid_current
//                before a write's statements); on the durable server its
//                COMMIT waits for the WAL flush (fdatasync).
//
// The trial lifecycle, --trials trials per repetition, each with the shipped
// small study's shape (deploy/studies/small.yaml: 2 folds = 2 runs, reports
// at 6144, 10240, 16384 and 20480 env steps per run as the learner sends
// them at its 20,000-step budget). Reported values rise with the trial
// number, so the median pruner never prunes and every trial completes.
//   Store path (one Store, no sampler or pruner; params and run configs of
//   a real trial of the study):
//     ask       CreateTrial (6 params, 2 queued runs) + 2 × LeaseRun
//     report    ReportIntermediate (one call; 8 per trial)
//     complete  2 × CompleteRun (fold metrics, policy and checkpoint
//               artifacts) + CompleteTrial
//   Scheduler path (coordinator/service/scheduler.h, what the gRPC handlers
//   call; no gRPC here), a fresh Scheduler per repetition on the shipped
//   study with max_trials raised (TPE sampler, median pruner, concurrency 2;
//   warm-up Tick, which generates the synthetic dataset, untimed):
//     ask       Tick() (expire leases, list trials, TPE sample, build the
//               fold configs, CreateTrial) + 2 × LeaseRun RPC
//     report    ReportEvaluation RPC (ReportIntermediate, GetRun,
//               GetStudyById, ListIntermediates of the whole study, pruner)
//     complete  2 × CompleteRun RPC (GetRun, CompleteRun, then ListRuns,
//               ListFoldMetrics, CompleteTrial when all folds are done)
//   ask and complete count per trial, report per call. The Scheduler's
//   report cost grows with the study (it reads every intermediate value of
//   the study each time): report.first / report.last are the reports of
//   the first / last fifth of the trials of a repetition.
// CPU only (no database), on each scheduler repetition's final history:
//   tpe_sample   Sampler::Sample of the study's TPE over all trials so far
//   prune_check  Pruner::ShouldPrune (median) over every intermediate value
//
// Rates: per repetition, calls / summed call time; tables show the median
// over repetitions, ratios are medians of the per-repetition ratios.
// Latency percentiles pool every call of every repetition (the baselines
// are timed per batch: their percentiles are over batch averages). The
// scheduler's log lines (stderr) go to a file in the temporary directory, as
// the coordinator's go to its log file.
//
// Usage: coordinator_bench [--reps 5] [--trials 40] [--select-calls 2000]
//          [--floor-calls 200] [--fast 1] [--study deploy/studies/small.yaml]
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <pqxx/pqxx>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/runtime_policy.h"
#include "coordinator/core/pruner.h"
#include "coordinator/core/sampler.h"
#include "coordinator/core/study_config.h"
#include "coordinator/service/scheduler.h"
#include "coordinator/store/pg_cluster.h"
#include "coordinator/store/store.h"
#include "proto/coordinator.pb.h"

namespace ristretto::bench {
namespace {

namespace co = ::ristretto::coordinator;
using Clock = std::chrono::steady_clock;

constexpr char kMember[] = "bench-learner";
constexpr int64_t kReportSteps[] = {6144, 10240, 16384, 20480};
constexpr int kFolds = 2;

struct Config {
  int reps = 5;
  int trials = 40;  // per repetition and path
  int select_calls = 2000;
  int floor_calls = 200;
  int fast = 1;  // also measure the unsafe_fast server
  std::string study = "deploy/studies/small.yaml";
};

// stderr is redirected to a log file while measuring; errors go here.
FILE* g_err = stderr;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(g_err, "coordinator_bench: %s\n", what.c_str());
  std::fflush(g_err);
  std::exit(1);
}

void Check(const absl::Status& s, const std::string& what) {
  if (!s.ok()) Die(absl::StrCat(what, ": ", s.ToString()));
}

template <typename T>
T Value(absl::StatusOr<T> v, const std::string& what) {
  Check(v.status(), what);
  return *std::move(v);
}

bool ParseFlags(int argc, char** argv, Config* c) {
  const std::pair<const char*, int*> ints[] = {
      {"--reps", &c->reps},
      {"--trials", &c->trials},
      {"--select-calls", &c->select_calls},
      {"--floor-calls", &c->floor_calls},
      {"--fast", &c->fast}};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return false;
    bool known = false;
    for (const auto& [name, target] : ints) {
      if (arg == name) {
        *target = std::atoi(argv[++i]);
        known = true;
      }
    }
    if (arg == "--study") {
      c->study = argv[++i];
      known = true;
    }
    if (!known) return false;
  }
  return c->reps >= 1 && c->trials >= 5 && c->select_calls >= 1 &&
         c->floor_calls >= 1;
}

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Calls and time of one operation in one repetition.
struct Sample {
  int64_t calls = 0;
  double seconds = 0;
  double rate() const { return seconds > 0 ? calls / seconds : 0; }
};

// Every measurement: key "server/op" → per-repetition samples and every
// call's latency (ms).
class Results {
 public:
  void Add(const std::string& server, const std::string& op, int rep,
           int64_t calls, double seconds) {
    Entry& e = entries_[Key(server, op)];
    if (static_cast<int>(e.reps.size()) <= rep) e.reps.resize(rep + 1);
    e.reps[rep].calls += calls;
    e.reps[rep].seconds += seconds;
    if (calls > 0) {
      const double per_call_ms = seconds / static_cast<double>(calls) * 1e3;
      for (int64_t i = 0; i < calls; ++i) e.latencies_ms.push_back(per_call_ms);
    }
    if (std::find(order_.begin(), order_.end(), op) == order_.end()) {
      order_.push_back(op);
    }
  }
  // One call of `op` that took `seconds`.
  void Call(const std::string& server, const std::string& op, int rep,
            double seconds) {
    Add(server, op, rep, 1, seconds);
  }

  const std::vector<std::string>& ops() const { return order_; }
  bool Has(const std::string& server, const std::string& op) const {
    return entries_.count(Key(server, op)) != 0;
  }
  std::vector<double> Rates(const std::string& server,
                            const std::string& op) const {
    std::vector<double> rates;
    auto it = entries_.find(Key(server, op));
    if (it == entries_.end()) return rates;
    for (const Sample& s : it->second.reps) {
      if (s.calls > 0) rates.push_back(s.rate());
    }
    return rates;
  }
  double Rate(const std::string& server, const std::string& op, int rep) const {
    auto it = entries_.find(Key(server, op));
    if (it == entries_.end() ||
        static_cast<int>(it->second.reps.size()) <= rep) {
      return 0;
    }
    return it->second.reps[rep].rate();
  }
  // Latency quantile q in [0, 1] over every call.
  double LatencyMs(const std::string& server, const std::string& op,
                   double q) const {
    auto it = entries_.find(Key(server, op));
    if (it == entries_.end() || it->second.latencies_ms.empty()) return 0;
    std::vector<double> v = it->second.latencies_ms;
    const size_t k = std::min(
        v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k),
                     v.end());
    return v[k];
  }

 private:
  struct Entry {
    std::vector<Sample> reps;
    std::vector<double> latencies_ms;
  };
  static std::string Key(const std::string& server, const std::string& op) {
    return absl::StrCat(server, "/", op);
  }
  std::map<std::string, Entry> entries_;
  std::vector<std::string> order_;
};

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Times `fn` (one call) and records it.
template <typename Fn>
auto Timed(Results* results, const std::string& server, const std::string& op,
           int rep, double* accumulate, Fn&& fn) {
  const Clock::time_point t0 = Clock::now();
  auto out = fn();
  const double s = Seconds(t0, Clock::now());
  results->Call(server, op, rep, s);
  if (accumulate != nullptr) *accumulate += s;
  return out;
}

// The study file with a new name and max_trials (line-based: the shipped
// file has both keys at the top level).
std::string RewriteStudy(const std::string& text, const std::string& name,
                         int max_trials) {
  std::istringstream in(text);
  std::string line;
  std::string out;
  bool named = false;
  bool limited = false;
  while (std::getline(in, line)) {
    if (line.rfind("name:", 0) == 0) {
      line = absl::StrCat("name: ", name);
      named = true;
    } else if (line.rfind("max_trials:", 0) == 0) {
      line = absl::StrCat("max_trials: ", max_trials);
      limited = true;
    }
    absl::StrAppend(&out, line, "\n");
  }
  if (!named || !limited) {
    Die("the study file needs top-level 'name:' and 'max_trials:' lines");
  }
  return out;
}

// One PostgreSQL server and the connections the benchmark uses on it.
struct Server {
  std::string label;
  std::unique_ptr<co::PgCluster> cluster;
  std::unique_ptr<pqxx::connection> raw;  // baselines
  std::unique_ptr<co::Store> store;       // baselines + Store path
  std::string sched_dsn;                  // Scheduler path database
};

std::unique_ptr<Server> StartServer(const std::string& root,
                                    const std::string& label, bool fast) {
  auto server = std::make_unique<Server>();
  server->label = label;
  co::PgClusterOptions options;
  options.data_dir = absl::StrCat(root, "/", label);
  options.database = "bench_store";
  options.unsafe_fast = fast;
  const Clock::time_point t0 = Clock::now();
  server->cluster = Value(co::PgCluster::Start(options),
                          absl::StrCat("starting the ", label, " server"));
  Check(server->cluster->CreateDatabase("bench_sched"), "createdb");
  std::printf("server %s: %s (initdb + start %.1f s)\n", label.c_str(),
              server->cluster->dsn().c_str(), Seconds(t0, Clock::now()));
  server->store = Value(co::Store::Connect(server->cluster->dsn()), "connect");
  Check(server->store->Migrate(), "migrate");
  Check(Value(co::Store::Connect(server->cluster->DsnFor("bench_sched")),
              "connect")
            ->Migrate(),
        "migrate");
  server->sched_dsn = server->cluster->DsnFor("bench_sched");
  try {
    server->raw = std::make_unique<pqxx::connection>(server->cluster->dsn());
    pqxx::nontransaction n(*server->raw);
    std::printf("server %s:", label.c_str());
    for (const char* setting :
         {"server_version", "fsync", "synchronous_commit", "wal_sync_method",
          "full_page_writes", "shared_buffers"}) {
      std::printf(" %s=%s", setting,
                  n.exec(absl::StrCat("SHOW ", setting))[0][0].c_str());
    }
    std::printf("\n");
    // The write floor's table: one row updated per transaction.
    n.exec(
        "CREATE TABLE IF NOT EXISTS bench_floor (id int PRIMARY KEY, "
        "n bigint NOT NULL)");
    n.exec("INSERT INTO bench_floor VALUES (1, 0) ON CONFLICT DO NOTHING");
  } catch (const std::exception& e) {
    Die(absl::StrCat("pqxx: ", e.what()));
  }
  return server;
}

// A real trial of the study, to feed the Store path: the params the TPE
// sampler chose for trial 0 and the TrainerOptions JSON of its folds.
struct TrialPayload {
  std::vector<co::ParamRow> params;
  std::vector<std::string> run_configs;
};

TrialPayload MakePayload(Server& server, const std::string& study_text,
                         const std::string& data_dir) {
  auto store = Value(co::Store::Connect(server.cluster->dsn()), "connect");
  co::StudyRow study = Value(
      store->CreateStudy("payload", RewriteStudy(study_text, "payload", 10)),
      "CreateStudy");
  Check(store->SetStudyState(study.id, co::StudyState::kRunning),
        "SetStudyState");
  co::SchedulerOptions options;
  options.data_dir = data_dir;
  co::Scheduler scheduler(std::move(store), options);
  Check(scheduler.Tick(), "payload Tick");
  auto reader = Value(co::Store::Connect(server.cluster->dsn()), "connect");
  Check(reader->SetStudyState(study.id, co::StudyState::kStopped),
        "SetStudyState");
  const std::vector<co::TrialRow> trials =
      Value(reader->ListTrials(study.id), "ListTrials");
  if (trials.empty()) Die("the payload study created no trial");
  TrialPayload payload;
  payload.params = trials[0].params;
  for (const co::RunRow& r :
       Value(reader->ListRuns(trials[0].id), "ListRuns")) {
    payload.run_configs.push_back(r.config_json);
  }
  if (payload.run_configs.size() != kFolds) {
    Die(absl::StrCat("the study has ", payload.run_configs.size(),
                     " folds; the benchmark expects ", kFolds));
  }
  return payload;
}

co::FoldMetrics Metrics(int trial) {
  co::FoldMetrics m;
  m.sharpe = 0.5 + 0.01 * trial;
  m.benchmark_sharpe = 0.2;
  m.sortino = 0.7;
  m.max_drawdown = 0.1;
  m.calmar = 1.5;
  m.total_return = 0.05;
  m.benchmark_return = 0.02;
  m.trades = 100;
  m.env_steps = kReportSteps[3];
  return m;
}

// Rising with the trial number: never below the median of earlier trials.
double ReportValue(int trial, int64_t step) {
  return 0.01 * trial + 1e-7 * static_cast<double>(step);
}

void RunBaselines(Server& s, const Config& config, int rep, Results* r) {
  try {
    pqxx::nontransaction n(*s.raw);
    n.exec("SELECT 1");  // warm
    const Clock::time_point t0 = Clock::now();
    for (int i = 0; i < config.select_calls; ++i) n.exec("SELECT 1");
    r->Add(s.label, "select1", rep, config.select_calls,
           Seconds(t0, Clock::now()));
  } catch (const std::exception& e) {
    Die(absl::StrCat("SELECT 1: ", e.what()));
  }
  {
    const Clock::time_point t0 = Clock::now();
    for (int i = 0; i < config.floor_calls; ++i) {
      Check(s.store->SchemaVersion().status(), "SchemaVersion");
    }
    r->Add(s.label, "store_read", rep, config.floor_calls,
           Seconds(t0, Clock::now()));
  }
  try {
    const Clock::time_point t0 = Clock::now();
    for (int i = 0; i < config.floor_calls; ++i) {
      pqxx::work w(*s.raw);
      w.exec("SELECT txid_current()");
      w.exec("UPDATE bench_floor SET n = n + 1 WHERE id = 1");
      w.commit();
    }
    r->Add(s.label, "write_floor", rep, config.floor_calls,
           Seconds(t0, Clock::now()));
  } catch (const std::exception& e) {
    Die(absl::StrCat("write floor: ", e.what()));
  }
}

// Which fifth of the trials `k` falls in, as a report key suffix.
std::optional<std::string> Fifth(int k, int trials) {
  if (k < trials / 5) return std::string("first");
  if (k >= trials - trials / 5) return std::string("last");
  return std::nullopt;
}

void RunStorePath(Server& s, const Config& config, const TrialPayload& payload,
                  const std::string& root, int rep, Results* r) {
  co::Store& store = *s.store;
  const std::string name = absl::StrCat("store-", rep);
  const co::StudyRow study =
      Value(store.CreateStudy(name, "store path"), "CreateStudy");
  Check(store.SetStudyState(study.id, co::StudyState::kRunning),
        "SetStudyState");
  const std::string& L = s.label;
  for (int k = 0; k < config.trials; ++k) {
    double ask = 0;
    const co::TrialRow trial = Timed(r, L, "s.CreateTrial", rep, &ask, [&] {
      return Value(store.CreateTrial(study.id, payload.params,
                                     payload.run_configs, root + "/runs"),
                   "CreateTrial");
    });
    std::vector<int64_t> runs;
    for (int f = 0; f < kFolds; ++f) {
      const std::optional<co::RunRow> run =
          Timed(r, L, "s.LeaseRun", rep, &ask, [&] {
            return Value(store.LeaseRun(kMember, absl::Seconds(30)),
                         "LeaseRun");
          });
      if (!run.has_value() || run->trial_id != trial.id) {
        Die("LeaseRun did not return the new trial's run");
      }
      runs.push_back(run->id);
    }
    r->Add(L, "store.ask", rep, 1, ask);
    const std::optional<std::string> fifth = Fifth(k, config.trials);
    for (const int64_t step : kReportSteps) {
      for (const int64_t run : runs) {
        double report = 0;
        Timed(r, L, "store.report", rep, &report, [&] {
          Check(store.ReportIntermediate(run, kMember, step,
                                         ReportValue(k, step)),
                "ReportIntermediate");
          return 0;
        });
        if (fifth.has_value()) {
          r->Add(L, "store.report." + *fifth, rep, 1, report);
        }
      }
    }
    double complete = 0;
    bool all_done = false;
    for (const int64_t run : runs) {
      co::ArtifactRow policy;
      policy.kind = "policy";
      policy.path = absl::StrCat(root, "/runs/", name, "/", run, "/policy");
      policy.sha256 = std::string(64, 'a');
      all_done = Timed(r, L, "s.CompleteRun", rep, &complete, [&] {
        return Value(store.CompleteRun(run, kMember, Metrics(k), {policy}),
                     "CompleteRun");
      });
    }
    if (!all_done) Die("CompleteRun: the trial is not done after both folds");
    Timed(r, L, "s.CompleteTrial", rep, &complete, [&] {
      Check(store.CompleteTrial(trial.id, 0.3 + 0.01 * k), "CompleteTrial");
      return 0;
    });
    r->Add(L, "store.complete", rep, 1, complete);
  }
  Check(store.SetStudyState(study.id, co::StudyState::kStopped),
        "SetStudyState");
}

v1::Evaluation Evaluation(int trial, int64_t step) {
  v1::Evaluation e;
  const co::FoldMetrics m = Metrics(trial);
  e.set_sharpe(m.benchmark_sharpe + ReportValue(trial, step));
  e.set_benchmark_sharpe(m.benchmark_sharpe);
  e.set_sortino(m.sortino);
  e.set_max_drawdown(m.max_drawdown);
  e.set_calmar(m.calmar);
  e.set_total_return(m.total_return);
  e.set_benchmark_return(m.benchmark_return);
  e.set_trades(m.trades);
  e.set_env_steps(step);
  return e;
}

void RunSchedulerPath(Server& s, const Config& config,
                      const std::string& study_text, const std::string& root,
                      int rep, Results* r) {
  const std::string& L = s.label;
  const std::string name = absl::StrCat("sched-", rep);
  const std::string text = RewriteStudy(study_text, name, config.trials + 10);
  auto admin = Value(co::Store::Connect(s.sched_dsn), "connect");
  const co::StudyRow study =
      Value(admin->CreateStudy(name, text), "CreateStudy");
  Check(admin->SetStudyState(study.id, co::StudyState::kRunning),
        "SetStudyState");
  co::SchedulerOptions options;
  options.data_dir = root + "/scheduler";
  co::Scheduler scheduler(
      Value(co::Store::Connect(s.sched_dsn), "connect scheduler"), options);
  v1::RegisterLearnerRequest reg;
  reg.set_member_id(kMember);
  reg.set_address("127.0.0.1:1");
  reg.set_slots(kFolds);
  reg.set_memory_budget_mb(8192);
  reg.set_device("cpu");
  Check(scheduler.RegisterLearner(reg).status(), "RegisterLearner");
  Check(scheduler.Tick(), "warm-up Tick");  // dataset + first 2 trials
  double pending_ask = 0;  // the Tick that created the next trial
  for (int k = 0; k < config.trials; ++k) {
    double ask = pending_ask;
    std::vector<int64_t> runs;
    for (int f = 0; f < kFolds; ++f) {
      v1::LeaseRunRequest request;
      request.set_member_id(kMember);
      const v1::LeaseRunResponse lease =
          Timed(r, L, "S.LeaseRun", rep, &ask, [&] {
            return Value(scheduler.LeaseRun(request), "Scheduler::LeaseRun");
          });
      if (!lease.has_run()) Die("Scheduler::LeaseRun: no run");
      runs.push_back(lease.lease().run_id());
    }
    if (k > 0) r->Add(L, "sched.ask", rep, 1, ask);
    const std::optional<std::string> fifth = Fifth(k, config.trials);
    for (const int64_t step : kReportSteps) {
      for (const int64_t run : runs) {
        v1::ReportEvaluationRequest request;
        request.set_member_id(kMember);
        request.set_run_id(run);
        *request.mutable_evaluation() = Evaluation(k, step);
        double report = 0;
        const v1::ReportEvaluationResponse response =
            Timed(r, L, "sched.report", rep, &report, [&] {
              return Value(scheduler.ReportEvaluation(request),
                           "Scheduler::ReportEvaluation");
            });
        if (response.prune()) Die("a trial was pruned; values must rise");
        if (fifth.has_value()) {
          r->Add(L, "sched.report." + *fifth, rep, 1, report);
        }
      }
    }
    double complete = 0;
    for (const int64_t run : runs) {
      v1::CompleteRunRequest request;
      request.set_member_id(kMember);
      request.set_run_id(run);
      *request.mutable_final_evaluation() = Evaluation(k, kReportSteps[3]);
      for (const char* kind : {"policy", "checkpoint"}) {
        v1::Artifact* a = request.add_artifacts();
        a->set_kind(kind);
        a->set_path(absl::StrCat(root, "/runs/", name, "/", run, "/", kind));
        a->set_sha256(std::string(64, 'b'));
      }
      Timed(r, L, "S.CompleteRun", rep, &complete, [&] {
        Check(scheduler.CompleteRun(request), "Scheduler::CompleteRun");
        return 0;
      });
    }
    r->Add(L, "sched.complete", rep, 1, complete);
    pending_ask = 0;
    Timed(r, L, "S.Tick", rep, &pending_ask, [&] {
      Check(scheduler.Tick(), "Tick");
      return 0;
    });
  }
  const co::TrialCounts counts =
      Value(admin->CountTrials(study.id), "CountTrials");
  if (counts.complete != config.trials) {
    Die(absl::StrCat("scheduler path: ", counts.complete,
                     " trials complete, expected ", config.trials));
  }

  // CPU only: the sampler and pruner on this repetition's final history.
  const co::StudyConfig parsed =
      Value(co::ParseStudyConfig(text), "ParseStudyConfig");
  std::unique_ptr<co::Sampler> sampler =
      Value(co::MakeSampler(parsed.sampler, parsed.space), "MakeSampler");
  std::unique_ptr<co::Pruner> pruner =
      Value(co::MakePruner(parsed.pruner), "MakePruner");
  std::vector<co::TrialHistory> history;
  for (const co::TrialRow& t : Value(admin->ListTrials(study.id), "List")) {
    co::TrialHistory h;
    h.number = t.number;
    for (const co::ParamRow& p : t.params) h.params[p.name] = p.value;
    h.state = t.state;
    h.score = t.score;
    history.push_back(std::move(h));
  }
  std::vector<co::IntermediateValue> values;
  for (const co::IntermediateRow& v :
       Value(admin->ListIntermediates(study.id), "ListIntermediates")) {
    values.push_back({v.trial_id, v.fold, v.step, v.value});
  }
  const int64_t next = static_cast<int64_t>(history.size());
  for (int i = 0; i < 20; ++i) {
    Timed(r, L, "tpe_sample", rep, nullptr, [&] {
      return Value(sampler->Sample(next, history), "Sample").size();
    });
  }
  const int64_t last_trial = values.empty() ? 0 : values.back().trial_id;
  bool pruned = false;
  for (int i = 0; i < 200; ++i) {
    pruned = Timed(r, L, "prune_check", rep, nullptr,
                   [&] { return pruner->ShouldPrune(last_trial, values); });
  }
  if (pruned) Die("the pruner would prune the best trial");
  Check(admin->SetStudyState(study.id, co::StudyState::kStopped),
        "SetStudyState");
}

absl::StatusOr<std::string> MakeTempDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      absl::StrCat(tmp != nullptr && tmp[0] != '\0' ? tmp : "/tmp",
                   "/ristretto-cobench-", "XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp ", pattern, " failed"));
  }
  // The server user must be able to traverse it when we are root.
  if (chmod(pattern.c_str(), 0755) != 0) {
    return absl::InternalError(absl::StrCat("chmod ", pattern, " failed"));
  }
  return pattern;
}

void PrintTable(const std::vector<std::unique_ptr<Server>>& servers,
                const Results& r, int reps) {
  std::printf(
      "\n== medians over %d repetitions (ops/s: calls / summed call time; "
      "x select1 = select1 rate / op rate, median of per-repetition ratios)\n",
      reps);
  std::printf("%-8s %-22s %11s %9s %9s %9s %10s\n", "server", "operation",
              "ops/s", "ms/op", "p50 ms", "p90 ms", "x select1");
  for (const auto& s : servers) {
    for (const std::string& op : r.ops()) {
      if (!r.Has(s->label, op)) continue;
      const double rate = Median(r.Rates(s->label, op));
      std::vector<double> ratios;
      for (int rep = 0; rep < reps; ++rep) {
        const double op_rate = r.Rate(s->label, op, rep);
        const double base = r.Rate(s->label, "select1", rep);
        if (op_rate > 0 && base > 0) ratios.push_back(base / op_rate);
      }
      std::printf("%-8s %-22s %11.1f %9.3f %9.3f %9.3f %10.1f\n",
                  s->label.c_str(), op.c_str(), rate, rate > 0 ? 1e3 / rate : 0,
                  r.LatencyMs(s->label, op, 0.5),
                  r.LatencyMs(s->label, op, 0.9), Median(ratios));
    }
  }
  if (servers.size() == 2) {
    std::printf(
        "\n== durable / fast time per op (median of per-repetition "
        "ratios)\n");
    for (const std::string& op : r.ops()) {
      std::vector<double> ratios;
      for (int rep = 0; rep < reps; ++rep) {
        const double d = r.Rate(servers[0]->label, op, rep);
        const double f = r.Rate(servers[1]->label, op, rep);
        if (d > 0 && f > 0) ratios.push_back(f / d);
      }
      if (!ratios.empty()) {
        std::printf("%-22s %6.2f\n", op.c_str(), Median(ratios));
      }
    }
  }
  std::printf(
      "\n== report cost growth within a repetition (time per call, last "
      "fifth / first fifth of the trials, median)\n");
  for (const auto& s : servers) {
    for (const char* path : {"store.report", "sched.report"}) {
      std::vector<double> ratios;
      for (int rep = 0; rep < reps; ++rep) {
        const double first =
            r.Rate(s->label, absl::StrCat(path, ".first"), rep);
        const double last = r.Rate(s->label, absl::StrCat(path, ".last"), rep);
        if (first > 0 && last > 0) ratios.push_back(first / last);
      }
      std::printf("%-8s %-14s %6.2f\n", s->label.c_str(), path, Median(ratios));
    }
  }
}

int Main(int argc, char** argv) {
  ApplyRuntimePolicy(RuntimePolicyFor(ProcessRole::kBench));
  Config config;
  if (!ParseFlags(argc, argv, &config)) {
    std::fprintf(stderr,
                 "usage: coordinator_bench [--reps 5] [--trials 40] "
                 "[--select-calls 2000] [--floor-calls 200] [--fast 1] "
                 "[--study deploy/studies/small.yaml]\n");
    return 2;
  }
  std::string study_text;
  {
    std::ifstream in(config.study);
    if (!in) Die(absl::StrCat("cannot read ", config.study));
    std::ostringstream all;
    all << in.rdbuf();
    study_text = all.str();
  }
  Value(co::ParseStudyConfig(study_text), config.study);
  const std::string root = Value(MakeTempDir(), "temporary directory");
  std::printf(
      "coordinator_bench: %d repetitions, %d trials per path and repetition, "
      "study %s, in %s\n",
      config.reps, config.trials, config.study.c_str(), root.c_str());
  std::fflush(stdout);

  std::vector<std::unique_ptr<Server>> servers;
  servers.push_back(StartServer(root, "durable", false));
  if (config.fast != 0) servers.push_back(StartServer(root, "fast", true));
  std::fflush(stdout);

  // The scheduler logs every trial and lease on stderr: to a file.
  const int saved = dup(STDERR_FILENO);
  g_err = fdopen(saved, "w");
  const std::string log_path = root + "/scheduler-stderr.log";
  const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (log_fd < 0 || g_err == nullptr) Die("cannot redirect stderr");
  dup2(log_fd, STDERR_FILENO);
  close(log_fd);

  const TrialPayload payload =
      MakePayload(*servers[0], study_text, root + "/payload");

  Results results;
  const std::vector<std::string> paths = {"baseline", "store", "scheduler"};
  for (int rep = 0; rep < config.reps; ++rep) {
    const Clock::time_point t0 = Clock::now();
    for (size_t si = 0; si < servers.size(); ++si) {
      Server& s = *servers[(si + rep) % servers.size()];
      for (size_t pi = 0; pi < paths.size(); ++pi) {
        const std::string& path = paths[(pi + rep) % paths.size()];
        if (path == "baseline") {
          RunBaselines(s, config, rep, &results);
        } else if (path == "store") {
          RunStorePath(s, config, payload, root, rep, &results);
        } else {
          RunSchedulerPath(s, config, study_text, root, rep, &results);
        }
      }
    }
    std::printf("rep %d (%.1f s):", rep + 1, Seconds(t0, Clock::now()));
    for (const auto& s : servers) {
      for (const char* op :
           {"select1", "write_floor", "store.ask", "store.report",
            "store.complete", "sched.ask", "sched.report", "sched.complete"}) {
        std::printf(" %s/%s %.0f/s", s->label.c_str(), op,
                    results.Rate(s->label, op, rep));
      }
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  PrintTable(servers, results, config.reps);

  servers.clear();  // stop the servers
  std::error_code ec;
  std::filesystem::remove_all(root, ec);
  return 0;
}

}  // namespace
}  // namespace ristretto::bench

int main(int argc, char** argv) { return ristretto::bench::Main(argc, argv); }
