#include "learner/service/coordinator_agent.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/artifact_hash.h"
#include "common/file_util.h"
#include "common/log.h"
#include "common/secret_file.h"
#include "common/status_macros.h"
#include "env/dataset.h"
#include "learner/run_config_codec.h"
#include "learner/torch/checkpoint.h"
#include "wire/dataset_cache.h"

namespace ristretto::learner {
namespace {

void ToProto(const EvaluationResult& e, v1::Evaluation* out) {
  out->set_sharpe(e.sharpe);
  out->set_benchmark_sharpe(e.benchmark_sharpe);
  out->set_sortino(e.sortino);
  out->set_max_drawdown(e.max_drawdown);
  out->set_calmar(e.calmar);
  out->set_total_return(e.total_return);
  out->set_benchmark_return(e.benchmark_return);
  out->set_trades(e.trades);
  out->set_env_steps(e.at_env_steps);
  out->set_fees(e.fees);
  out->set_turnover(e.turnover);
  out->set_exposure(e.exposure);
  out->mutable_log_returns()->Assign(e.log_returns.begin(),
                                     e.log_returns.end());
  out->set_score(e.score);
}

int64_t Mib(int64_t bytes) { return (bytes + (1 << 20) - 1) >> 20; }

const absl::Status& StatusOf(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& StatusOf(const absl::StatusOr<T>& s) {
  return s.status();
}

// 64 random hex digits; "" when the kernel gives no randomness (the
// coordinator then cannot tell a restart from a re-registration, as before).
std::string NewIncarnation() {
  absl::StatusOr<std::string> id = GenerateToken();
  if (!id.ok()) {
    RLOG(WARNING) << "no process incarnation id: " << id.status().message();
    return "";
  }
  return *std::move(id);
}

}  // namespace

CoordinatorAgent::CoordinatorAgent(const AgentOptions& options,
                                   LearnerService* service)
    : CoordinatorAgent(options, service,
                       NewGrpcCoordinatorClient(options.coordinator_address,
                                                options.rpc_deadline)) {}

CoordinatorAgent::CoordinatorAgent(AgentOptions options,
                                   LearnerService* service,
                                   std::unique_ptr<CoordinatorClient> client)
    : options_(std::move(options)),
      incarnation_(NewIncarnation()),
      service_(service),
      client_(std::move(client)) {}

CoordinatorAgent::~CoordinatorAgent() { Stop(); }

void CoordinatorAgent::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void CoordinatorAgent::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

std::vector<AgentRunSummary> CoordinatorAgent::summaries() const {
  absl::MutexLock lock(&mu_);
  return summaries_;
}

void CoordinatorAgent::Loop() {
  absl::Duration backoff = absl::Milliseconds(100);
  while (!stop_.HasBeenNotified()) {
    if (!registered_ && !Register()) {
      stop_.WaitForNotificationWithTimeout(backoff);
      backoff = std::min(backoff * 2, absl::Seconds(5));
      continue;
    }
    backoff = absl::Milliseconds(100);
    SendReports();
    Reap(/*shutting_down=*/false);
    HeartbeatOnce();
    Admit();
    stop_.WaitForNotificationWithTimeout(options_.poll_interval);
  }
  // Shutdown: runs that reached their budget are completed; the others are
  // checkpointed by RunHost::Stop and handed back.
  // Every run is told first (RequestStop), then joined: their checkpoints
  // are written in parallel, not one after the other.
  for (auto& [id, h] : runs_) {
    if (h.host != nullptr) h.host->RequestStop();
  }
  for (auto& [id, h] : runs_) {
    if (h.host != nullptr) h.host->Stop();
  }
  SendReports();
  Reap(/*shutting_down=*/true);
  v1::ReleaseRequest request;
  request.set_member_id(options_.member_id);
  (void)WithSession([&] { return client_->Release(request); });
}

bool CoordinatorAgent::Register() {
  v1::RegisterLearnerRequest request;
  request.set_member_id(options_.member_id);
  request.set_address(options_.advertise_address);
  request.set_slots(options_.slots);
  request.set_memory_budget_mb(options_.memory_budget_bytes >> 20);
  request.set_device(options_.device);
  request.set_token(options_.token);
  request.set_incarnation(incarnation_);
  const absl::StatusOr<v1::RegisterLearnerResponse> response =
      client_->RegisterLearner(request);
  if (!response.ok()) {
    RLOG(WARNING) << "cannot register with " << options_.coordinator_address
                  << ": " << response.status().message();
    return false;
  }
  if (response->lease_ttl_ms() > 0) {
    lease_ttl_ = absl::Milliseconds(response->lease_ttl_ms());
  }
  client_->SetSessionToken(response->session_token());
  // The key of the actor tickets the coordinator now hands out for this
  // learner (the previous one stays valid at the service).
  if (service_ != nullptr && !response->ticket_key().empty()) {
    service_->SetTicketKey(options_.member_id, response->ticket_key());
  }
  registered_ = true;
  RLOG(INFO) << "registered with " << options_.coordinator_address << " as "
             << options_.member_id << " (" << options_.slots << " slots)";
  return true;
}

template <typename Call>
auto CoordinatorAgent::WithSession(const Call& call) -> decltype(call()) {
  auto result = call();
  if (!absl::IsUnauthenticated(StatusOf(result))) return result;
  RLOG(WARNING) << options_.coordinator_address
                << " no longer knows this learner's session ("
                << StatusOf(result).message() << "); registering again";
  registered_ = false;
  if (!Register()) return result;
  return call();
}

void CoordinatorAgent::SendReports() {
  std::vector<std::pair<int64_t, EvaluationResult>> reports;
  {
    absl::MutexLock lock(&mu_);
    reports.swap(reports_);
  }
  for (const auto& [run_id, eval] : reports) {
    v1::ReportEvaluationRequest request;
    request.set_member_id(options_.member_id);
    request.set_run_id(run_id);
    ToProto(eval, request.mutable_evaluation());
    const absl::StatusOr<v1::ReportEvaluationResponse> response =
        WithSession([&] { return client_->ReportEvaluation(request); });
    auto it = runs_.find(run_id);
    if (response.ok() && response->prune() && it != runs_.end())
      it->second.prune = true;
  }
}

void CoordinatorAgent::Record(const Hosted& h, const std::string& outcome) {
  AgentRunSummary summary;
  summary.run_name = h.lease.run_name();
  summary.outcome = outcome;
  if (h.host != nullptr) summary.counters = h.host->counters();
  RLOG(INFO) << "run " << summary.run_name << " " << outcome;
  absl::MutexLock lock(&mu_);
  summaries_.push_back(std::move(summary));
}

void CoordinatorAgent::Fail(const Hosted& h, const std::string& reason) {
  v1::FailRunRequest request;
  request.set_member_id(options_.member_id);
  request.set_run_id(h.lease.run_id());
  request.set_reason(reason);
  (void)WithSession([&] { return client_->FailRun(request); });
  Record(h, absl::StrCat("failed: ", reason));
}

void CoordinatorAgent::Reap(bool shutting_down) {
  for (auto it = runs_.begin(); it != runs_.end();) {
    Hosted& h = it->second;
    bool erase = false;
    if (h.prune) {
      if (h.host != nullptr) h.host->Stop();
      Record(h, "pruned");
      erase = true;
    } else if (h.host != nullptr && !h.host->failure().ok()) {
      h.host->Stop();
      Fail(h, std::string(h.host->failure().message()));
      erase = true;
    } else if (h.host != nullptr && h.host->counters().finished) {
      h.host->Stop();  // joined: the run's evaluations are over
      // The run's result is its best evaluation (by the study objective) and
      // the policy saved with it in <run_dir>/best.
      std::optional<EvaluationResult> eval = h.host->best_evaluation();
      if (!eval.has_value() && !h.options.validation_domains.empty()) {
        // Resumed from a checkpoint already at its budget with no best
        // policy saved: evaluate now (it becomes the best).
        absl::StatusOr<EvaluationResult> now = h.host->EvaluateNow();
        if (now.ok()) eval = h.host->best_evaluation();
      }
      std::string policy_dir = h.host->best_policy_dir();
      absl::Status exported = absl::OkStatus();
      if (!eval.has_value() || policy_dir.empty()) {
        // No evaluation chose a policy: export the final weights.
        policy_dir = h.options.run_dir + "/policy";
        exported = h.host->Export(policy_dir);
        if (!eval.has_value()) eval = h.host->last_evaluation();
      }
      absl::StatusOr<std::string> sha =
          exported.ok() ? PolicyArtifactSha256(policy_dir)
                        : absl::StatusOr<std::string>(exported);
      if (!sha.ok()) {
        Fail(h, absl::StrCat("exporting the policy failed: ",
                             sha.status().message()));
        erase = true;
      } else if (!eval.has_value()) {
        Fail(h, "the run has no validation result (no validation slice)");
        erase = true;
      } else {
        v1::CompleteRunRequest request;
        request.set_member_id(options_.member_id);
        request.set_run_id(h.lease.run_id());
        ToProto(*eval, request.mutable_final_evaluation());
        // What the actors' work came to (study show's dropped share).
        const RunCounters counters = h.host->counters();
        request.set_env_steps_received(counters.env_steps_received);
        request.set_env_steps_dropped(counters.env_steps_dropped);
        v1::Artifact* policy = request.add_artifacts();
        policy->set_kind("policy");
        policy->set_path(std::filesystem::absolute(policy_dir).string());
        policy->set_sha256(*sha);
        absl::StatusOr<std::string> checkpoint =
            LatestCheckpoint(h.options.run_dir);
        absl::StatusOr<std::string> checkpoint_sha =
            checkpoint.ok() ? CheckpointSha256(*checkpoint)
                            : absl::StatusOr<std::string>(checkpoint.status());
        if (checkpoint_sha.ok()) {
          v1::Artifact* c = request.add_artifacts();
          c->set_kind("checkpoint");
          c->set_path(std::filesystem::absolute(*checkpoint).string());
          c->set_sha256(*checkpoint_sha);
        }
        const absl::Status s =
            WithSession([&] { return client_->CompleteRun(request); });
        if (s.ok()) {
          Record(h, "completed");
          erase = true;
        } else if (s.code() == absl::StatusCode::kFailedPrecondition ||
                   s.code() == absl::StatusCode::kPermissionDenied ||
                   s.code() == absl::StatusCode::kNotFound) {
          // No longer ours (expired and re-leased, cancelled, finished).
          Record(h, absl::StrCat("dropped: ", s.message()));
          erase = true;
        } else if (s.code() == absl::StatusCode::kUnavailable ||
                   s.code() == absl::StatusCode::kDeadlineExceeded) {
          RLOG(WARNING) << "completing " << h.lease.run_name() << ": "
                        << s.message() << "; will retry";
        } else {
          Fail(h, absl::StrCat("the coordinator refused the result: ",
                               s.message()));
          erase = true;
        }
      }
    } else if (shutting_down) {
      Record(h, "released");
      erase = true;
    }
    if (erase) {
      if (h.host != nullptr) service_->RemoveRun(h.host->run_id());
      it = runs_.erase(it);
    } else {
      ++it;
    }
  }
}

void CoordinatorAgent::HeartbeatOnce() {
  v1::HeartbeatRequest request;
  request.set_member_id(options_.member_id);
  for (const auto& [id, h] : runs_) {
    v1::RunProgress* p = request.add_runs();
    p->set_run_id(id);
    p->set_env_steps(h.host != nullptr ? h.host->counters().env_steps_trained
                                       : 0);
  }
  const absl::StatusOr<v1::HeartbeatResponse> response =
      WithSession([&] { return client_->Heartbeat(request); });
  if (!response.ok()) {
    if (absl::IsNotFound(response.status())) registered_ = false;
    return;
  }
  for (int64_t id : response->stop_run_ids()) {
    auto it = runs_.find(id);
    if (it == runs_.end()) continue;
    if (it->second.host != nullptr) {
      it->second.host->Stop();
      service_->RemoveRun(it->second.host->run_id());
    }
    Record(it->second, "stopped by the coordinator");
    runs_.erase(it);
  }
}

int64_t CoordinatorAgent::BytesInUse() const {
  int64_t bytes = 0;
  for (const auto& [id, h] : runs_) {
    if (h.host != nullptr) bytes += h.bytes;
  }
  return bytes;
}

absl::StatusOr<std::shared_ptr<const env::MarketData>> CoordinatorAgent::Market(
    const std::string& dataset_id) {
  auto it = markets_.find(dataset_id);
  if (it != markets_.end()) return it->second;
  std::string cached_path;
  ASSIGN_OR_RETURN(env::Dataset dataset,
                   wire::LoadOrFetchDataset(
                       options_.cache_dir, dataset_id,
                       [this, &dataset_id](const std::string& path) {
                         return WithSession([&] {
                           return client_->FetchDataset(dataset_id, path);
                         });
                       }));
  ASSIGN_OR_RETURN(std::shared_ptr<const env::MarketData> market,
                   env::MarketData::FromDataset(dataset));
  service_->AddDataset(
      dataset_id, absl::StrCat(options_.cache_dir, "/", dataset_id, ".rds"));
  markets_[dataset_id] = market;
  return market;
}

absl::Status CoordinatorAgent::Build(Hosted& h) {
  // A lease without its run would train on defaults nobody chose.
  if (!h.lease.has_run_config()) {
    return absl::InvalidArgumentError(
        "the lease carries no run_config (a coordinator older than this "
        "learner?)");
  }
  ASSIGN_OR_RETURN(h.options,
                   TrainerOptionsFromRunConfig(h.lease.run_config()));
  // Refused before the dataset is fetched or anything trains.
  RETURN_IF_ERROR(CheckLockbox(h.options));
  h.options.ppo.device = options_.device;
  h.options.ppo.cpu_threads = options_.cpu_threads;
  h.options.run_dir = h.lease.checkpoint_dir();
  h.options.resume = true;
  ASSIGN_OR_RETURN(h.market, Market(h.lease.dataset_id()));
  const int obs_size = 1 + h.market->num_assets +
                       h.market->num_features * h.options.env.lookback;
  h.bytes = EstimateRunBytes(SpecFor(h), obs_size, h.market->num_assets,
                             options_.max_chunk_samples);
  return absl::OkStatus();
}

RunSpec CoordinatorAgent::SpecFor(const Hosted& h) const {
  RunSpec spec;
  spec.run_id = h.lease.run_name();
  spec.trainer = h.options;
  spec.samples_per_update =
      int64_t{h.options.num_envs} * h.options.rollout_steps;
  spec.queue_capacity = options_.queue_capacity;
  return spec;
}

void CoordinatorAgent::Admit() {
  // Runs waiting for memory first, then new leases while slots are free.
  for (auto& [id, h] : runs_) {
    if (h.host != nullptr) continue;
    if (BytesInUse() + h.bytes > options_.memory_budget_bytes) continue;
    RunSpec spec = SpecFor(h);
    spec.metrics = options_.metrics;
    // run_name is "<study>/trial-<n>/fold-<k>".
    const std::string& name = h.lease.run_name();
    spec.study = name.substr(0, std::min(name.rfind("/trial-"), name.size()));
    spec.trial = h.lease.trial_number();
    spec.fold = h.lease.fold();
    const int64_t run_id = id;
    spec.on_evaluation = [this, run_id](const EvaluationResult& e) {
      absl::MutexLock lock(&mu_);
      reports_.emplace_back(run_id, e);
    };
    absl::StatusOr<std::unique_ptr<RunHost>> host =
        RunHost::Create(spec, h.market);
    if (!host.ok()) {
      h.prune = false;
      Fail(h, std::string(host.status().message()));
      h.lease.set_run_id(-1);  // marks it for removal below
      continue;
    }
    h.host = std::shared_ptr<RunHost>(std::move(*host));
    service_->AddRun(h.host);
    RLOG(INFO) << "hosting " << h.lease.run_name() << " (attempt "
               << h.lease.attempt() << ", from step "
               << h.host->counters().env_steps_trained << ", ~" << Mib(h.bytes)
               << " MiB of " << Mib(options_.memory_budget_bytes) << " MiB)";
  }
  for (auto it = runs_.begin(); it != runs_.end();) {
    if (it->second.lease.run_id() < 0) {
      it = runs_.erase(it);
    } else {
      ++it;
    }
  }
  while (static_cast<int>(runs_.size()) < options_.slots &&
         !stop_.HasBeenNotified()) {
    v1::LeaseRunRequest request;
    request.set_member_id(options_.member_id);
    const absl::StatusOr<v1::LeaseRunResponse> response =
        WithSession([&] { return client_->LeaseRun(request); });
    if (!response.ok()) {
      if (absl::IsNotFound(response.status())) registered_ = false;
      return;
    }
    if (!response->has_run()) return;
    Hosted h;
    h.lease = response->lease();
    absl::Status built = Build(h);
    if (!built.ok()) {
      Fail(h, std::string(built.message()));
      continue;
    }
    if (h.bytes > options_.memory_budget_bytes) {
      Fail(h, absl::StrCat("the run needs about ", Mib(h.bytes),
                           " MiB but the learner's memory budget is ",
                           Mib(options_.memory_budget_bytes),
                           " MiB (--memory-mb)"));
      continue;
    }
    const int64_t id = h.lease.run_id();
    runs_.emplace(id, std::move(h));
    Admit();  // builds it now if it fits
    return;
  }
}

}  // namespace ristretto::learner
