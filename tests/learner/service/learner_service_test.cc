// LearnerService in-process: actor streams are ActorStreams on a recording
// transport (no server, no sockets), the runs tiny RunHosts on a small
// synthetic market. Covers the assignment of actors to runs, the weight
// versions pushed, the ack of every kind of chunk (accepted, malformed,
// wrong contract, bad sizes, another run, stale, out of order, before
// Hello), GetStatus and the shutdown messages.
#include "learner/service/learner_service.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "grpcpp/test/default_reactor_test_peer.h"
#include "gtest/gtest.h"
#include "tests/learner/service/run_test_util.h"

namespace ristretto::learner {
namespace {

using testing::EvaluationGate;
using testing::InProcessActor;
using testing::OpenOnExit;
using testing::SmallChunk;
using testing::SmallMarket;
using testing::SmallSpec;
using testing::WaitFor;

std::shared_ptr<RunHost> MustCreate(const RunSpec& spec) {
  absl::StatusOr<std::unique_ptr<RunHost>> host =
      RunHost::Create(spec, SmallMarket());
  EXPECT_TRUE(host.ok()) << host.status();
  return host.ok() ? std::shared_ptr<RunHost>(std::move(*host)) : nullptr;
}

bool IsWeights(const v1::LearnerMessage& m, int64_t version) {
  return m.has_weights() && m.weights().version() == version;
}

class LearnerServiceTest : public ::testing::Test {
 protected:
  // `runs` runs named run-0, run-1, ... from `spec`.
  void Serve(
      int runs, RunSpec spec = SmallSpec(""),
      int max_actors_per_run = LearnerServiceOptions{}.max_actors_per_run) {
    std::vector<std::shared_ptr<RunHost>> hosts;
    for (int k = 0; k < runs; ++k) {
      spec.run_id = "run-" + std::to_string(k);
      hosts.push_back(MustCreate(spec));
      ASSERT_NE(hosts.back(), nullptr);
    }
    LearnerServiceOptions options;
    options.dataset_id = "small-market";
    options.dataset_path = "/nonexistent/small-market.rds";
    options.max_actors_per_run = max_actors_per_run;
    service_ = std::make_unique<LearnerService>(hosts, options);
  }
  std::unique_ptr<InProcessActor> Actor(const std::string& id,
                                        const std::string& want = "") {
    auto actor = std::make_unique<InProcessActor>(service_.get());
    actor->Hello(id, want);
    return actor;
  }

  std::unique_ptr<LearnerService> service_;
};

TEST_F(LearnerServiceTest, HelloGetsTheAssignmentThenTheNewestWeights) {
  Serve(1);
  auto actor = Actor("a0");
  const std::vector<v1::LearnerMessage> m = actor->messages();
  ASSERT_EQ(m.size(), 2u);
  ASSERT_TRUE(m[0].has_assignment());
  const v1::RunAssignment& a = m[0].assignment();
  EXPECT_EQ(a.run_id(), "run-0");
  EXPECT_EQ(a.dataset_id(), "small-market");
  EXPECT_EQ(a.rollout_steps(), 8);
  EXPECT_EQ(a.episode_steps(), 50);
  ASSERT_EQ(a.train_domains_size(), 1);
  EXPECT_EQ(a.train_domains(0).end(), SmallMarket()->num_rows);
  EXPECT_FALSE(a.contract_json().empty());
  EXPECT_TRUE(IsWeights(m[1], 0));
  EXPECT_EQ(m[1].weights().run_id(), "run-0");
  EXPECT_FALSE(m[1].weights().state().empty());
  EXPECT_TRUE(actor->transport().read_pending());  // reads on
}

// SmallSpec with room (max_policy_lag 8) for 5 actors of 2 env copies per
// run, so that only the fewest-actors rule decides.
RunSpec RoomySpec() {
  RunSpec spec = SmallSpec("");
  spec.trainer.ppo.max_policy_lag = 8;
  return spec;
}

TEST_F(LearnerServiceTest, ActorsGoToTheRunWithTheFewestAndLeaveOnDone) {
  Serve(2, RoomySpec());
  auto a0 = Actor("a0");
  auto a1 = Actor("a1");
  auto a2 = Actor("a2");
  EXPECT_EQ(a0->messages()[0].assignment().run_id(), "run-0");
  EXPECT_EQ(a1->messages()[0].assignment().run_id(), "run-1");
  EXPECT_EQ(a2->messages()[0].assignment().run_id(), "run-0");
  EXPECT_EQ(service_->ActorsOn("run-0"), 2);
  EXPECT_EQ(service_->ActorsOn("run-1"), 1);
  a0->Close();
  a2->Close();
  EXPECT_EQ(service_->ActorsOn("run-0"), 0);
  // The next actor goes to the emptier run again.
  auto a3 = Actor("a3");
  EXPECT_EQ(a3->messages()[0].assignment().run_id(), "run-0");
}

TEST_F(LearnerServiceTest, ActorsBeyondTheCapPerRunAreToldToComeBackLater) {
  Serve(2, SmallSpec(""), /*max_actors_per_run=*/1);
  auto a0 = Actor("a0");
  auto a1 = Actor("a1", "run-0");  // asks for a full run: gets the other
  EXPECT_EQ(a0->messages()[0].assignment().run_id(), "run-0");
  EXPECT_EQ(a1->messages()[0].assignment().run_id(), "run-1");
  auto flood = Actor("a2");
  ASSERT_EQ(flood->messages().size(), 1u);
  EXPECT_EQ(flood->messages()[0].stop().reason(),
            "every run has its maximum of 1 actors");
  EXPECT_FALSE(flood->messages()[0].stop().run_finished());
  EXPECT_EQ(service_->ActorsOn("run-0"), 1);
  EXPECT_EQ(service_->ActorsOn("run-1"), 1);
  // A place frees when an actor leaves.
  a0->Close();
  auto next = Actor("a3");
  EXPECT_EQ(next->messages()[0].assignment().run_id(), "run-0");
}

// A run takes only the actors whose chunks it trains within
// max_policy_lag; one more waits (told to come back) rather than making
// stale chunks, and gets a run when one opens or loses an actor.
TEST_F(LearnerServiceTest, ActorsGoFirstToARunThatAbsorbsThemAndNeverIdle) {
  // SmallSpec, lag 4: 3 updates of 16 steps minus a queue of 2 chunks of
  // 16 leaves room for one actor of 2 env copies (chunks of 8 × 2).
  RunSpec spec = SmallSpec("");
  spec.trainer.ppo.max_policy_lag = 4;
  Serve(1, spec);
  auto a0 = Actor("a0");
  EXPECT_EQ(a0->messages()[0].assignment().run_id(), "run-0");
  spec.run_id = "run-1";
  service_->AddRun(MustCreate(spec));
  // It asks for run-0, which is at its lag limit: run-1 has room.
  auto a1 = Actor("a1", "run-0");
  EXPECT_EQ(a1->messages()[0].assignment().run_id(), "run-1");
  // Every run at its limit: the next actor still gets work (the run with
  // the fewest actors) rather than waiting.
  auto a2 = Actor("a2");
  ASSERT_TRUE(a2->messages()[0].has_assignment());
  EXPECT_EQ(a2->messages()[0].assignment().run_id(), "run-0");  // the tie
  EXPECT_EQ(service_->ActorsOn("run-0") + service_->ActorsOn("run-1"), 3);
  // An actor leaves run-1: the next one goes there, where there is room
  // again (run-0 has two).
  a1->Close();
  auto a3 = Actor("a3");
  ASSERT_TRUE(a3->messages()[0].has_assignment());
  EXPECT_EQ(a3->messages()[0].assignment().run_id(), "run-1");
  LearnerService::Refusal refusal = LearnerService::Refusal::kMaxActors;
  EXPECT_NE(service_->AssignRun("", 2, &refusal), nullptr);
  EXPECT_EQ(refusal, LearnerService::Refusal::kNone);
}

TEST_F(LearnerServiceTest, AnActorGetsTheRunItAsksForWhileItTrains) {
  Serve(2, RoomySpec());
  auto a0 = Actor("a0", "run-1");
  EXPECT_EQ(a0->messages()[0].assignment().run_id(), "run-1");
  auto a1 = Actor("a1", "run-1");
  EXPECT_EQ(a1->messages()[0].assignment().run_id(), "run-1");
  service_->FindRun("run-1")->Stop();
  auto a2 = Actor("a2", "run-1");  // no longer accepting: another run
  EXPECT_EQ(a2->messages()[0].assignment().run_id(), "run-0");
}

TEST_F(LearnerServiceTest, AnAcceptedChunkIsAckedOkAndItsUpdatePushed) {
  Serve(1);
  auto actor = Actor("a0");
  actor->Chunk(SmallChunk("run-0", 0), 0);
  ASSERT_TRUE(actor->AckOf(0).has_value());
  EXPECT_EQ(actor->AckOf(0)->code(), 0);
  EXPECT_GE(actor->AckOf(0)->credits(), 1);
  EXPECT_LE(actor->AckOf(0)->credits(), service_->options().credits);
  ASSERT_TRUE(actor->WaitForMessage(
      [](const v1::LearnerMessage& m) { return IsWeights(m, 1); }));
  EXPECT_EQ(service_->chunks_rejected(), 0);
  EXPECT_TRUE(actor->transport().read_pending());
}

// An actor the run cut off (an update with its chunks diverged, the same
// update without them trained: RunHost::CutOff) has its stream ended with
// PERMISSION_DENIED, and its next Hello is refused; other actors are still
// assigned. The poisoned chunk goes to the run directly: the service's
// value bounds would refuse it before the run saw it.
TEST_F(LearnerServiceTest, AnActorCutOffByItsRunIsEndedAndItsHelloRefused) {
  RunSpec spec = SmallSpec("");
  spec.samples_per_update = 32;
  Serve(1, spec);
  auto honest = Actor("a0");
  auto evil = Actor("evil");
  std::shared_ptr<RunHost> run = service_->runs()[0];
  honest->Chunk(SmallChunk("run-0", 0, 1), 0);
  ASSERT_EQ(honest->AckOf(0).value_or(v1::ChunkAck{}).code(), 0);
  TrajectoryChunk poisoned = SmallChunk("run-0", 0, 2);
  for (float& r : poisoned.rewards) r = 3e38f;
  poisoned.actor_id = "evil";
  ASSERT_TRUE(run->Ingest(std::move(poisoned), [] {}).ok());
  ASSERT_TRUE(WaitFor([&] {
    evil->Pump();
    return evil->transport().ended().has_value();
  }));
  const grpc::Status ended = *evil->transport().ended();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(ended.error_message().find("cut off from run run-0"),
            std::string::npos)
      << ended.error_message();
  EXPECT_FALSE(honest->transport().ended().has_value());
  ASSERT_TRUE(honest->WaitForMessage(
      [](const v1::LearnerMessage& m) { return IsWeights(m, 1); }));
  evil->Close();
  // Back with a new stream: refused, with the reason.
  auto again = Actor("evil");
  ASSERT_TRUE(again->transport().ended().has_value());
  EXPECT_EQ(again->transport().ended()->error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(again->transport().ended()->error_message().find("cut off"),
            std::string::npos);
  for (const v1::LearnerMessage& m : again->messages()) {
    EXPECT_FALSE(m.has_assignment());
  }
  // Another actor is assigned as before.
  auto other = Actor("a1");
  ASSERT_FALSE(other->messages().empty());
  EXPECT_TRUE(other->messages()[0].has_assignment());
}

TEST_F(LearnerServiceTest, ChunksThatDoNotFitTheRunAreRejectedWithTheirCode) {
  Serve(1);
  auto actor = Actor("a0");
  int64_t sequence = 0;
  // The wrong contract: one observation value too many per step.
  learner::TrajectoryChunk wide =
      testing::MakeChunk(0, 8, 2, 1, testing::SmallObsSize() + 1);
  wide.run_id = "run-0";
  actor->Chunk(wide, sequence);
  EXPECT_EQ(actor->AckOf(sequence)->code(),
            static_cast<int>(absl::StatusCode::kInvalidArgument));
  // Bad sizes: fewer rewards than steps x copies.
  learner::TrajectoryChunk short_rewards = SmallChunk("run-0", 0);
  short_rewards.rewards.pop_back();
  actor->Chunk(short_rewards, ++sequence);
  EXPECT_EQ(actor->AckOf(sequence)->code(),
            static_cast<int>(absl::StatusCode::kInvalidArgument));
  // Another run's chunk.
  actor->Chunk(SmallChunk("run-9", 0), ++sequence);
  EXPECT_EQ(actor->AckOf(sequence)->code(),
            static_cast<int>(absl::StatusCode::kNotFound));
  EXPECT_NE(actor->AckOf(sequence)->message().find("run-9"), std::string::npos);
  // A version the run has not reached.
  actor->Chunk(SmallChunk("run-0", 7), ++sequence);
  EXPECT_EQ(actor->AckOf(sequence)->code(),
            static_cast<int>(absl::StatusCode::kInvalidArgument));
  // A sequence number going backwards.
  actor->Chunk(SmallChunk("run-0", 0), 1);
  EXPECT_EQ(actor->messages().back().ack().code(),
            static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(service_->chunks_rejected(), 5);
  // None of them reached the run's counters as trained; the stream is
  // still open.
  EXPECT_EQ(service_->FindRun("run-0")->counters().env_steps_received, 0);
  EXPECT_TRUE(actor->transport().read_pending());
  EXPECT_FALSE(actor->transport().ended().has_value());
}

TEST_F(LearnerServiceTest, AStaleChunkIsRefusedAsAFailedPrecondition) {
  RunSpec spec = SmallSpec("");
  spec.trainer.ppo.max_policy_lag = 0;
  Serve(1, spec);
  auto actor = Actor("a0");
  actor->Chunk(SmallChunk("run-0", 0), 0);
  ASSERT_TRUE(actor->WaitForMessage(
      [](const v1::LearnerMessage& m) { return IsWeights(m, 1); }));
  actor->Chunk(SmallChunk("run-0", 0, 2), 1);
  ASSERT_TRUE(actor->AckOf(1).has_value());
  EXPECT_EQ(actor->AckOf(1)->code(),
            static_cast<int>(absl::StatusCode::kFailedPrecondition));
  EXPECT_NE(actor->AckOf(1)->message().find("stale"), std::string::npos);
  EXPECT_EQ(service_->chunks_rejected(), 1);
  EXPECT_EQ(service_->FindRun("run-0")->counters().env_steps_dropped, 16);
}

TEST_F(LearnerServiceTest, AChunkBeforeHelloAndASecondHelloAreRefused) {
  Serve(1);
  InProcessActor actor(service_.get());
  actor.Chunk(SmallChunk("run-0", 0), 0);
  ASSERT_TRUE(actor.AckOf(0).has_value());
  EXPECT_EQ(actor.AckOf(0)->code(),
            static_cast<int>(absl::StatusCode::kFailedPrecondition));
  actor.Hello("a0");
  actor.Hello("a0");
  const v1::LearnerMessage last = actor.messages().back();
  ASSERT_TRUE(last.has_ack());
  EXPECT_EQ(last.ack().message(), "duplicate Hello");
  EXPECT_EQ(service_->chunks_rejected(), 2);
}

// A chunk speaks for the actor of its stream's Hello (the one a ticket
// names): another actor_id in it is refused, so a holder of one actor's
// ticket cannot put its data, or a diverged update's blame, on another.
TEST_F(LearnerServiceTest, AChunkSpeaksOnlyForTheActorOfItsStream) {
  Serve(1);
  auto actor = Actor("a0");
  learner::TrajectoryChunk other = SmallChunk("run-0", 0);
  other.actor_id = "a1";
  actor->ChunkAsIs(other, 0);
  ASSERT_TRUE(actor->AckOf(0).has_value());
  EXPECT_EQ(actor->AckOf(0)->code(),
            static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(actor->AckOf(0)->message(),
            "chunk.actor_id 'a1' is not this stream's actor 'a0' (its Hello)");
  EXPECT_EQ(service_->chunks_rejected(), 1);
  // Its own id, or none (then the Hello's), is accepted.
  learner::TrajectoryChunk own = SmallChunk("run-0", 0);
  own.actor_id = "a0";
  actor->ChunkAsIs(own, 1);
  ASSERT_TRUE(actor->AckOf(1).has_value());
  EXPECT_EQ(actor->AckOf(1)->code(), 0) << actor->AckOf(1)->message();
  learner::TrajectoryChunk blank = SmallChunk("run-0", 0);
  blank.actor_id = "";
  actor->ChunkAsIs(blank, 2);
  ASSERT_TRUE(actor->AckOf(2).has_value());
  EXPECT_EQ(actor->AckOf(2)->code(), 0) << actor->AckOf(2)->message();
  EXPECT_EQ(service_->chunks_rejected(), 1);
}

TEST_F(LearnerServiceTest, BytesThatAreNoActorMessageEndTheCall) {
  Serve(1);
  InProcessActor actor(service_.get());
  const std::string garbage = "\xff\xff\xff";
  grpc::Slice slice(garbage.data(), garbage.size());
  actor.SendBytes(grpc::ByteBuffer(&slice, 1));
  ASSERT_TRUE(actor.transport().ended().has_value());
  EXPECT_EQ(actor.transport().ended()->error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_FALSE(actor.transport().read_pending());
  EXPECT_EQ(service_->chunks_rejected(), 1);
}

TEST_F(LearnerServiceTest, GetStatusReportsEveryRun) {
  Serve(2);
  auto actor = Actor("a0");
  actor->Chunk(SmallChunk("run-0", 0), 0);
  ASSERT_TRUE(WaitFor([&] {
    return service_->FindRun("run-0")->counters().env_steps_trained == 16;
  }));
  actor->Chunk(SmallChunk("run-0", 9), 1);  // rejected: a future version
  grpc::CallbackServerContext context;
  grpc::testing::DefaultReactorTestPeer peer(&context);
  v1::StatusRequest request;
  v1::LearnerStatus response;
  service_->GetStatus(&context, &request, &response);
  ASSERT_TRUE(peer.test_status_set());
  EXPECT_TRUE(peer.test_status().ok());
  ASSERT_EQ(response.runs_size(), 2);
  const v1::RunStatus& r0 = response.runs(0);
  EXPECT_EQ(r0.run_id(), "run-0");
  EXPECT_EQ(r0.policy_version(), 1);
  EXPECT_EQ(r0.env_steps_received(), 16);
  EXPECT_EQ(r0.env_steps_trained(), 16);
  EXPECT_EQ(r0.actors(), 1);
  EXPECT_EQ(r0.budget_env_steps(), 1 << 20);
  EXPECT_FALSE(r0.finished());
  EXPECT_EQ(response.runs(1).run_id(), "run-1");
  EXPECT_EQ(response.runs(1).actors(), 0);
  EXPECT_EQ(response.chunks_rejected(), 1);
}

TEST_F(LearnerServiceTest, AStoppedRunTellsItsActorsTheLearnerIsShuttingDown) {
  Serve(1);
  auto actor = Actor("a0");
  service_->FindRun("run-0")->Stop();
  actor->Pump();
  const v1::LearnerMessage last = actor->messages().back();
  ASSERT_TRUE(last.has_stop());
  EXPECT_EQ(last.stop().reason(), "learner shutting down");
  EXPECT_FALSE(last.stop().run_finished());
  // Chunks in flight are still read (received and dropped) until the actor
  // half-closes; then the call ends OK.
  actor->Chunk(SmallChunk("run-0", 0), 0);
  EXPECT_EQ(actor->AckOf(0)->code(),
            static_cast<int>(absl::StatusCode::kFailedPrecondition));
  actor->HalfClose();
  ASSERT_TRUE(actor->transport().ended().has_value());
  EXPECT_TRUE(actor->transport().ended()->ok());
  // A new actor finds no run: it is told the learner is shutting down.
  auto late = Actor("a1");
  ASSERT_EQ(late->messages().size(), 1u);
  EXPECT_EQ(late->messages()[0].stop().reason(), "learner shutting down");
  ASSERT_TRUE(late->transport().ended().has_value());
}

TEST_F(LearnerServiceTest, AFinishedRunStopsItsActorsAsFinished) {
  Serve(1, SmallSpec("", /*budget=*/16));
  auto actor = Actor("a0");
  actor->Chunk(SmallChunk("run-0", 0), 0);
  ASSERT_TRUE(actor->WaitForMessage(
      [](const v1::LearnerMessage& m) { return m.has_stop(); }));
  v1::LearnerMessage stop;
  for (const v1::LearnerMessage& m : actor->messages()) {
    if (m.has_stop()) stop = m;
  }
  EXPECT_EQ(stop.stop().reason(), "run finished");
  EXPECT_TRUE(stop.stop().run_finished());
  ASSERT_TRUE(service_->FindRun("run-0")->WaitFinished(5000));
  auto late = Actor("a1");
  ASSERT_EQ(late->messages().size(), 1u);
  EXPECT_EQ(late->messages()[0].stop().reason(), "no run is accepting actors");
  EXPECT_TRUE(late->messages()[0].stop().run_finished());
}

// A run that stopped its actors because the chunks it holds cover its
// budget has not finished yet: an actor asking meanwhile is told to ask
// again, not that the runs finished (which lets an --exit-when-idle actor
// leave). An update of those chunks is rolled back: the run re-opens, the
// next actor is assigned to it and feeds it to its budget.
TEST_F(LearnerServiceTest, ARunThatMayReopenTellsActorsToAskAgainAndIsFed) {
  auto gate = std::make_shared<EvaluationGate>();
  RunSpec spec = SmallSpec("", /*budget=*/32);
  const int64_t rows = SmallMarket()->num_rows;
  spec.trainer.train_domains = {env::Domain{0, rows / 2}};
  spec.trainer.validation_domains = {env::Domain{rows / 2, rows}};
  spec.trainer.eval_every_env_steps = 16;
  // Holds the training thread in its first evaluation, after update 1.
  spec.on_evaluation = [gate](const EvaluationResult&) { gate->Pass(); };
  Serve(1, spec);
  OpenOnExit open{gate.get()};
  const std::shared_ptr<RunHost> run = service_->FindRun("run-0");
  ASSERT_NE(run, nullptr);
  auto worker = Actor("a0");
  worker->Chunk(SmallChunk("run-0", 0), 0);
  ASSERT_TRUE(WaitFor([&] { return gate->entered(); }));
  ASSERT_EQ(run->counters().env_steps_trained, 16);
  // 16 trained + 16 held cover the budget: the worker is stopped. The
  // held chunk's update will diverge (its values are beyond the ones the
  // stream admits, so it is ingested directly).
  TrajectoryChunk poisoned = SmallChunk("run-0", 1, 2);
  for (float& r : poisoned.rewards) r = 3e38f;
  ASSERT_TRUE(run->Ingest(std::move(poisoned), [] {}).ok());
  ASSERT_TRUE(worker->WaitForMessage(
      [](const v1::LearnerMessage& m) { return m.has_stop(); }));
  EXPECT_TRUE(worker->messages().back().stop().run_finished());
  EXPECT_TRUE(run->may_reopen());
  auto asking = Actor("a1");
  ASSERT_EQ(asking->messages().size(), 1u);
  EXPECT_EQ(asking->messages()[0].stop().reason(),
            "a run is training its last chunks");
  EXPECT_FALSE(asking->messages()[0].stop().run_finished());

  gate->Open();
  // The rolled-back update is counted after the run re-opens.
  ASSERT_TRUE(
      WaitFor([&] { return run->counters().updates_rolled_back == 1; }));
  ASSERT_TRUE(WaitFor([&] { return run->accepting(); }));
  auto fed = Actor("a2", "run-0");
  ASSERT_FALSE(fed->messages().empty());
  ASSERT_TRUE(fed->messages()[0].has_assignment());
  EXPECT_EQ(fed->messages()[0].assignment().run_id(), "run-0");
  fed->Chunk(SmallChunk("run-0", 1, 3), 0);
  ASSERT_TRUE(fed->AckOf(0).has_value());
  EXPECT_EQ(fed->AckOf(0)->code(), static_cast<int>(absl::StatusCode::kOk));
  ASSERT_TRUE(run->WaitFinished(5000));
  const RunCounters c = run->counters();
  EXPECT_EQ(c.env_steps_trained, 32);
  EXPECT_EQ(c.updates_rolled_back, 1);
  EXPECT_FALSE(run->may_reopen());
  auto late = Actor("a3");
  ASSERT_EQ(late->messages().size(), 1u);
  EXPECT_EQ(late->messages()[0].stop().reason(), "no run is accepting actors");
  EXPECT_TRUE(late->messages()[0].stop().run_finished());
}

TEST_F(LearnerServiceTest, RunsComeAndGoWhileServing) {
  Serve(0);
  auto none = Actor("a0");
  EXPECT_TRUE(none->messages()[0].has_stop());
  service_->AddRun(MustCreate(SmallSpec("leased")));
  ASSERT_EQ(service_->runs().size(), 1u);
  auto actor = Actor("a1");
  EXPECT_EQ(actor->messages()[0].assignment().run_id(), "leased");
  service_->RemoveRun("leased");
  EXPECT_TRUE(service_->runs().empty());
  EXPECT_EQ(service_->FindRun("leased"), nullptr);
  // The removed run lives on for its stream.
  actor->Chunk(SmallChunk("leased", 0), 0);
  EXPECT_EQ(actor->AckOf(0)->code(), 0);
}

}  // namespace
}  // namespace ristretto::learner
