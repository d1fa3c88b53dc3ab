// Helpers of the process-level tests: a learner's progress read over its
// GetStatus RPC, so a test waits for an event (a policy version, a step
// count, an actor joining) instead of sleeping and hoping it happened.
// Every call takes the channel credentials the learner needs: TLS ones
// (MakeChannelCredentials) for a learner started with --tls-cert, else
// grpc::InsecureChannelCredentials().
#ifndef RISTRETTO_TESTS_INTEGRATION_LEARNER_STATUS_H_
#define RISTRETTO_TESTS_INTEGRATION_LEARNER_STATUS_H_

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"
#include "proto/ristretto.grpc.pb.h"
#include "tests/integration/process.h"

namespace ristretto::testing {

// Learner.GetStatus of the learner on 127.0.0.1:`port` (10 s deadline).
inline grpc::Status LearnerStatusOf(
    int port, const std::shared_ptr<grpc::ChannelCredentials>& credentials,
    v1::LearnerStatus* status) {
  auto stub = v1::Learner::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), credentials));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(10));
  return stub->GetStatus(&context, v1::StatusRequest(), status);
}

// The status of the only run of the learner on 127.0.0.1:`port`; nullopt if
// the call fails or the learner hosts other than one run.
inline std::optional<v1::RunStatus> OnlyRunStatus(
    int port, const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
  v1::LearnerStatus status;
  if (!LearnerStatusOf(port, credentials, &status).ok() ||
      status.runs_size() != 1) {
    return std::nullopt;
  }
  return status.runs(0);
}

// Polls OnlyRunStatus until `done` holds for it and returns that status.
// Returns the last status seen (nullopt if none) when `learner` exits or
// `timeout` passes first: the timeout is meant to catch hangs only, so
// callers give minutes and assert `done` on the result.
inline std::optional<v1::RunStatus> WaitForRunStatus(
    int port, const std::shared_ptr<grpc::ChannelCredentials>& credentials,
    Process& learner, const std::function<bool(const v1::RunStatus&)>& done,
    std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::optional<v1::RunStatus> last;
  while (std::chrono::steady_clock::now() < deadline) {
    std::optional<v1::RunStatus> now = OnlyRunStatus(port, credentials);
    if (now.has_value()) {
      last = now;
      if (done(*now)) break;
    }
    if (learner.Wait(std::chrono::milliseconds(0)).has_value()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return last;
}

}  // namespace ristretto::testing

#endif  // RISTRETTO_TESTS_INTEGRATION_LEARNER_STATUS_H_
