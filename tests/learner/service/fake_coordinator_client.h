// FakeCoordinatorClient: an in-memory CoordinatorClient for unit tests of
// the learner's CoordinatorAgent. It records every call (name, request,
// time) and answers from per-method scripts: a scripted reply is consumed
// front to back; with none left a call succeeds with an empty response
// (LeaseRun then has no run). FetchDataset writes a dataset the test added
// with AddDataset, and answers kNotFound for any other id. Each call records
// the session secret the agent had set (SetSessionToken) when it was made.
//
// Thread-safe: the agent calls from its thread while the test reads.
#ifndef RISTRETTO_TESTS_LEARNER_SERVICE_FAKE_COORDINATOR_CLIENT_H_
#define RISTRETTO_TESTS_LEARNER_SERVICE_FAKE_COORDINATOR_CLIENT_H_

#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "env/dataset.h"
#include "learner/service/coordinator_client.h"

namespace ristretto::learner {

class FakeCoordinatorClient final : public CoordinatorClient {
 public:
  struct Call {
    std::string method;  // "RegisterLearner", "LeaseRun", …
    absl::Time at;
    std::string session;  // the session secret presented ("" for none)
  };

  // Scripts: the next replies of each method, in order.
  void ScriptRegister(absl::StatusOr<v1::RegisterLearnerResponse> reply) {
    absl::MutexLock lock(&mu_);
    register_replies_.push_back(std::move(reply));
  }
  void ScriptLease(absl::StatusOr<v1::LeaseRunResponse> reply) {
    absl::MutexLock lock(&mu_);
    lease_replies_.push_back(std::move(reply));
  }
  void ScriptHeartbeat(absl::StatusOr<v1::HeartbeatResponse> reply) {
    absl::MutexLock lock(&mu_);
    heartbeat_replies_.push_back(std::move(reply));
  }
  void AddDataset(const env::Dataset& dataset) {
    absl::MutexLock lock(&mu_);
    datasets_[dataset.ComputeId()] = dataset;
  }

  // Snapshots of what the agent sent.
  std::vector<Call> calls() const {
    absl::MutexLock lock(&mu_);
    return calls_;
  }
  int Count(const std::string& method) const {
    absl::MutexLock lock(&mu_);
    int n = 0;
    for (const Call& c : calls_) n += c.method == method ? 1 : 0;
    return n;
  }
  std::vector<v1::RegisterLearnerRequest> registers() const {
    absl::MutexLock lock(&mu_);
    return registers_;
  }
  std::vector<v1::LeaseRunRequest> leases() const {
    absl::MutexLock lock(&mu_);
    return leases_;
  }
  std::vector<v1::HeartbeatRequest> heartbeats() const {
    absl::MutexLock lock(&mu_);
    return heartbeats_;
  }
  std::vector<v1::FailRunRequest> fails() const {
    absl::MutexLock lock(&mu_);
    return fails_;
  }
  std::vector<v1::ReleaseRequest> releases() const {
    absl::MutexLock lock(&mu_);
    return releases_;
  }

  void SetSessionToken(const std::string& secret) override {
    absl::MutexLock lock(&mu_);
    session_ = secret;
  }

  absl::StatusOr<v1::RegisterLearnerResponse> RegisterLearner(
      const v1::RegisterLearnerRequest& request) override {
    absl::MutexLock lock(&mu_);
    Log("RegisterLearner");
    registers_.push_back(request);
    return Next(register_replies_);
  }
  absl::StatusOr<v1::LeaseRunResponse> LeaseRun(
      const v1::LeaseRunRequest& request) override {
    absl::MutexLock lock(&mu_);
    Log("LeaseRun");
    leases_.push_back(request);
    return Next(lease_replies_);
  }
  absl::StatusOr<v1::HeartbeatResponse> Heartbeat(
      const v1::HeartbeatRequest& request) override {
    absl::MutexLock lock(&mu_);
    Log("Heartbeat");
    heartbeats_.push_back(request);
    return Next(heartbeat_replies_);
  }
  absl::StatusOr<v1::ReportEvaluationResponse> ReportEvaluation(
      const v1::ReportEvaluationRequest& /*request*/) override {
    absl::MutexLock lock(&mu_);
    Log("ReportEvaluation");
    return v1::ReportEvaluationResponse();
  }
  absl::Status CompleteRun(const v1::CompleteRunRequest& /*request*/) override {
    absl::MutexLock lock(&mu_);
    Log("CompleteRun");
    return absl::OkStatus();
  }
  absl::Status FailRun(const v1::FailRunRequest& request) override {
    absl::MutexLock lock(&mu_);
    Log("FailRun");
    fails_.push_back(request);
    return absl::OkStatus();
  }
  absl::Status Release(const v1::ReleaseRequest& request) override {
    absl::MutexLock lock(&mu_);
    Log("Release");
    releases_.push_back(request);
    return absl::OkStatus();
  }
  absl::Status FetchDataset(const std::string& dataset_id,
                            const std::string& path) override {
    env::Dataset dataset;
    {
      absl::MutexLock lock(&mu_);
      Log("FetchDataset");
      auto it = datasets_.find(dataset_id);
      if (it == datasets_.end()) {
        return absl::NotFoundError(
            absl::StrCat("dataset '", dataset_id, "' is not served here"));
      }
      dataset = it->second;
    }
    return env::WriteDataset(dataset, path);
  }

 private:
  void Log(const std::string& method) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    calls_.push_back({method, absl::Now(), session_});
  }
  template <typename Response>
  static absl::StatusOr<Response> Next(
      std::deque<absl::StatusOr<Response>>& replies) {
    if (replies.empty()) return Response();
    absl::StatusOr<Response> reply = std::move(replies.front());
    replies.pop_front();
    return reply;
  }

  mutable absl::Mutex mu_;
  std::vector<Call> calls_ ABSL_GUARDED_BY(mu_);
  std::deque<absl::StatusOr<v1::RegisterLearnerResponse>> register_replies_
      ABSL_GUARDED_BY(mu_);
  std::deque<absl::StatusOr<v1::LeaseRunResponse>> lease_replies_
      ABSL_GUARDED_BY(mu_);
  std::deque<absl::StatusOr<v1::HeartbeatResponse>> heartbeat_replies_
      ABSL_GUARDED_BY(mu_);
  std::string session_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::RegisterLearnerRequest> registers_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::LeaseRunRequest> leases_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::HeartbeatRequest> heartbeats_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::FailRunRequest> fails_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::ReleaseRequest> releases_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, env::Dataset> datasets_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ristretto::learner

#endif  // RISTRETTO_TESTS_LEARNER_SERVICE_FAKE_COORDINATOR_CLIENT_H_
