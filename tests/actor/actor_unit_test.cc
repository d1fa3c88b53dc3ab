// actor::Actor driven in-process through FakeLearner (no sockets): what it
// writes on the Act stream for its assignment (Hello, chunk sizes, sequence
// numbers, the contract's layout, checked through the learner's own wire
// decoder), how it follows ack credits and new weights, how it reconnects
// after transient errors and resynchronises, which errors end Run(), how
// promptly Stop() ends it, and how it moves between runs. A tiny synthetic
// dataset (2 assets) and a one-layer policy keep every test well under 1 s.
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "actor/actor.h"
#include "env/dataset.h"
#include "env/synthetic.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "learner/contract.h"
#include "learner/torch/actor_critic.h"
#include "tests/actor/fake_learner_client.h"
#include "tests/common/temp_dir.h"
#include "wire/chunk_codec.h"
#include "wire/chunk_wire.h"

namespace ristretto::actor {
namespace {

using ::testing::HasSubstr;

constexpr absl::Duration kWait = absl::Seconds(5);  // failure only
constexpr int kEnvs = 3;
constexpr char kRun[] = "run-1";

// The dataset, its contract and one set of policy weights, made once.
struct World {
  env::Dataset dataset;
  std::string dataset_id;
  learner::PolicyContract contract;
  std::string weights;  // torch::save of an ActorCritic for `contract`
};

const World& TheWorld() {
  static const World* const world = [] {
    auto* w = new World;
    env::SyntheticMarketOptions market;
    market.num_assets = 2;
    market.num_rows = 400;
    market.seed = 11;
    absl::StatusOr<env::Dataset> dataset =
        env::GenerateSyntheticDataset(market);
    EXPECT_TRUE(dataset.ok()) << dataset.status();
    w->dataset = *std::move(dataset);
    w->dataset_id = w->dataset.ComputeId();
    env::EnvOptions env_options;
    env_options.lookback = 1;
    learner::NetworkOptions network;
    network.policy_hidden = {8};
    network.value_hidden = {8};
    std::vector<std::string> symbols;
    for (const env::AssetMeta& a : w->dataset.assets) {
      symbols.push_back(a.symbol);
    }
    w->contract = learner::PolicyContract::Make(
        env_options, network, symbols, w->dataset.feature_names, w->dataset_id);
    learner::ActorCritic model(w->contract.obs_size, w->contract.action_size,
                               network);
    std::ostringstream bytes;
    torch::save(model, bytes);
    w->weights = bytes.str();
    return w;
  }();
  return *world;
}

v1::LearnerMessage Assignment(const std::string& run_id, int rollout_steps,
                              const std::string& contract_json) {
  const World& w = TheWorld();
  v1::LearnerMessage m;
  v1::RunAssignment* a = m.mutable_assignment();
  a->set_run_id(run_id);
  a->set_dataset_id(w.dataset_id);
  a->set_contract_json(contract_json);
  for (const env::Domain& d : w.dataset.domains) {
    v1::Domain* out = a->add_train_domains();
    out->set_begin(d.begin);
    out->set_end(d.end);
  }
  a->set_episode_steps(20);
  a->set_rollout_steps(rollout_steps);
  a->set_seed(7);
  return m;
}
v1::LearnerMessage Assignment(const std::string& run_id, int rollout_steps) {
  return Assignment(run_id, rollout_steps, TheWorld().contract.ToJson());
}

v1::LearnerMessage Weights(const std::string& run_id, int64_t version,
                           const std::string& state) {
  v1::LearnerMessage m;
  m.mutable_weights()->set_run_id(run_id);
  m.mutable_weights()->set_version(version);
  m.mutable_weights()->set_state(state);
  return m;
}
v1::LearnerMessage Weights(const std::string& run_id, int64_t version) {
  return Weights(run_id, version, TheWorld().weights);
}

v1::LearnerMessage Ack(int64_t sequence, int code, int credits) {
  v1::LearnerMessage m;
  m.mutable_ack()->set_sequence(sequence);
  m.mutable_ack()->set_code(code);
  m.mutable_ack()->set_credits(credits);
  return m;
}

v1::LearnerMessage StopMessage(const std::string& reason, bool run_finished) {
  v1::LearnerMessage m;
  m.mutable_stop()->set_reason(reason);
  m.mutable_stop()->set_run_finished(run_finished);
  return m;
}

// on_hello: the run and its weights, as a learner with one run answers.
FakeActCall::HelloHandler AssignOnHello(const std::string& run_id, int steps,
                                        int64_t version) {
  return [run_id, steps, version](FakeActCall& call, const v1::Hello&) {
    call.Send(Assignment(run_id, steps));
    call.Send(Weights(run_id, version));
  };
}

class ActorUnitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TheWorld();  // built outside the timed part of the first test
    learner_.AddDataset(TheWorld().dataset);
    options_.learner_address = "learner-a:1";
    options_.num_envs = kEnvs;
    options_.actor_id = "actor-1";
    options_.cache_dir = cache_.Path("cache");
    options_.initial_backoff = absl::Milliseconds(1);
    options_.max_backoff = absl::Milliseconds(20);
    options_.max_idle_poll = absl::Milliseconds(5);
    options_.idle_timeout = absl::Milliseconds(100);
    options_.drain_timeout = absl::Milliseconds(500);
  }
  void TearDown() override {
    if (actor_ != nullptr) actor_->Stop();
    if (runner_.joinable()) runner_.join();
  }

  // Creates the actor on the fake learner (and `coordinator`, if given) and
  // runs it on a thread of its own.
  void Start(
      std::unique_ptr<wire::ActorCoordinatorClient> coordinator = nullptr) {
    ActorClients clients;
    clients.learners = learner_.Factory();
    clients.coordinator = std::move(coordinator);
    absl::StatusOr<std::unique_ptr<Actor>> actor =
        Actor::Create(options_, std::move(clients));
    ASSERT_TRUE(actor.ok()) << actor.status();
    actor_ = *std::move(actor);
    runner_ = std::thread([this] {
      run_status_ = actor_->Run();
      run_done_.Notify();
    });
  }
  // Run()'s status once it returned within `timeout`; kDeadlineExceeded
  // from the test when it did not.
  absl::Status WaitForRun(absl::Duration timeout) {
    if (!run_done_.WaitForNotificationWithTimeout(timeout)) {
      return absl::DeadlineExceededError("Run() did not return");
    }
    runner_.join();
    return run_status_;
  }
  std::shared_ptr<FakeActCall> Call(size_t i) {
    std::shared_ptr<FakeActCall> call = learner_.WaitForCall(i, kWait);
    EXPECT_NE(call, nullptr) << "no call " << i;
    return call;
  }
  // Every chunk written on every call, in order.
  std::vector<FakeActCall::SentChunk> AllChunks() const {
    std::vector<FakeActCall::SentChunk> all;
    for (const auto& call : learner_.calls()) {
      for (FakeActCall::SentChunk& c : call->chunks()) all.push_back(c);
    }
    return all;
  }

  tests::TempDir cache_{"actor_unit_"};
  FakeLearner learner_;
  ActorOptions options_;
  std::unique_ptr<Actor> actor_;
  std::thread runner_;
  absl::Notification run_done_;
  absl::Status run_status_;
};

TEST_F(ActorUnitTest, SendsWellFormedChunksForItsAssignment) {
  learner_.set_on_hello(AssignOnHello(kRun, 4, 1));
  Start();
  std::shared_ptr<FakeActCall> call = Call(0);
  ASSERT_TRUE(call->WaitForChunks(3, kWait));
  actor_->Stop();
  ASSERT_TRUE(WaitForRun(kWait).ok());

  const std::optional<v1::Hello> hello = call->hello();
  ASSERT_TRUE(hello.has_value());
  EXPECT_EQ(hello->actor_id(), "actor-1");
  EXPECT_EQ(hello->env_copies(), kEnvs);
  EXPECT_FALSE(hello->host().empty());
  EXPECT_EQ(hello->want_run_id(), "");
  EXPECT_EQ(hello->have_version(), -1);
  EXPECT_EQ(call->address(), "learner-a:1");

  const learner::PolicyContract& contract = TheWorld().contract;
  const std::vector<FakeActCall::SentChunk> chunks = call->chunks();
  ASSERT_GE(chunks.size(), 3u);
  for (size_t k = 0; k < chunks.size(); ++k) {
    const learner::TrajectoryChunk& c = *chunks[k].chunk;
    SCOPED_TRACE(k);
    EXPECT_EQ(chunks[k].sequence, static_cast<int64_t>(k));
    EXPECT_EQ(c.run_id, kRun);
    EXPECT_EQ(c.actor_id, "actor-1");
    EXPECT_EQ(c.policy_version, 1);
    EXPECT_EQ(c.steps, 4);
    EXPECT_EQ(c.copies, kEnvs);
    EXPECT_EQ(c.obs_size, contract.obs_size);
    EXPECT_EQ(c.action_size, contract.action_size);
    EXPECT_TRUE(c.Validate().ok()) << c.Validate();
    // What the learner's ingest makes of the bytes the gRPC call would send.
    wire::ActorFrame frame;
    ASSERT_TRUE(
        wire::ParseActorMessage(
            wire::EncodeChunkMessage(chunks[k].chunk, chunks[k].sequence),
            &frame)
            .ok());
    ASSERT_EQ(frame.kind, wire::ActorFrame::Kind::kChunk);
    EXPECT_EQ(frame.chunk.sequence, chunks[k].sequence);
    learner::TrajectoryChunk decoded;
    const absl::Status decode =
        wire::DecodeChunk(frame.chunk, contract.obs_size, contract.action_size,
                          wire::ChunkLimits(), &decoded);
    ASSERT_TRUE(decode.ok()) << decode;
    EXPECT_EQ(decoded.obs, c.obs);
    EXPECT_EQ(decoded.actions, c.actions);
    // The envs carry on across chunks: each starts where the last ended.
    if (k > 0) {
      const learner::TrajectoryChunk& prev = *chunks[k - 1].chunk;
      const size_t row = static_cast<size_t>(kEnvs) * contract.obs_size;
      EXPECT_TRUE(
          std::equal(c.obs.begin(), c.obs.begin() + row, prev.obs.end() - row));
    }
  }
  // The dataset was fetched once into the cache, verified by its id.
  EXPECT_EQ(learner_.fetches(), 1);
  EXPECT_TRUE(std::filesystem::exists(options_.cache_dir + "/" +
                                      TheWorld().dataset_id + ".rds"));
  EXPECT_EQ(actor_->chunks_sent(), static_cast<int64_t>(chunks.size()));
  EXPECT_EQ(actor_->env_steps_sent(),
            static_cast<int64_t>(chunks.size()) * 4 * kEnvs);
  EXPECT_EQ(actor_->reconnects(), 0);
}

TEST_F(ActorUnitTest, UsesACachedDatasetWithoutFetching) {
  std::filesystem::create_directories(options_.cache_dir);
  ASSERT_TRUE(env::WriteDataset(
                  TheWorld().dataset,
                  options_.cache_dir + "/" + TheWorld().dataset_id + ".rds")
                  .ok());
  learner_.set_on_hello(AssignOnHello(kRun, 4, 1));
  Start();
  ASSERT_TRUE(Call(0)->WaitForChunks(1, kWait));
  EXPECT_EQ(learner_.fetches(), 0);
}

TEST_F(ActorUnitTest, SendsOnlyAsManyChunksAsItHasCredit) {
  options_.max_inflight = 2;
  learner_.set_on_chunk(nullptr);  // acknowledged by hand below
  learner_.set_on_hello(AssignOnHello(kRun, 2, 1));
  Start();
  std::shared_ptr<FakeActCall> call = Call(0);
  ASSERT_TRUE(call->WaitForChunks(2, kWait));
  absl::SleepFor(absl::Milliseconds(30));
  EXPECT_EQ(call->num_chunks(), 2u);  // max_inflight until the first ack

  call->Send(Ack(0, 0, 0));  // one acknowledged, window unchanged
  ASSERT_TRUE(call->WaitForChunks(3, kWait));
  absl::SleepFor(absl::Milliseconds(30));
  EXPECT_EQ(call->num_chunks(), 3u);

  call->Send(Ack(1, 0, 4));  // credits: four may be unacknowledged
  ASSERT_TRUE(call->WaitForChunks(6, kWait));
  absl::SleepFor(absl::Milliseconds(30));
  EXPECT_EQ(call->num_chunks(), 6u);  // 2..5 in flight
  EXPECT_EQ(actor_->chunks_acked_ok(), 2);
}

TEST_F(ActorUnitTest, AdoptsNewWeightsAtAChunkBoundary) {
  learner_.set_on_hello(AssignOnHello(kRun, 3, 1));
  Start();
  std::shared_ptr<FakeActCall> call = Call(0);
  ASSERT_TRUE(call->WaitForChunks(1, kWait));
  call->Send(Weights("another-run", 9));  // not our run: ignored
  call->Send(Weights(kRun, 2));
  ASSERT_TRUE(call->WaitFor(
      [](const FakeActCall& c) {
        const auto chunks = c.chunks();
        return !chunks.empty() && chunks.back().chunk->policy_version == 2;
      },
      kWait));
  call->Send(Weights(kRun, 2));  // a version already held: ignored
  const size_t seen = call->num_chunks();
  ASSERT_TRUE(call->WaitForChunks(seen + 1, kWait));
  EXPECT_EQ(actor_->current_version(), 2);
  EXPECT_EQ(actor_->weight_versions_received(), 2);
  int64_t last = 1;
  for (const FakeActCall::SentChunk& c : call->chunks()) {
    EXPECT_GE(c.chunk->policy_version, last) << "sequence " << c.sequence;
    last = c.chunk->policy_version;
  }
  EXPECT_EQ(last, 2);
}

TEST_F(ActorUnitTest, ReconnectsAfterTransientUnavailable) {
  learner_.FailConnections(2, absl::UnavailableError("connection refused"));
  learner_.set_on_hello(AssignOnHello(kRun, 4, 1));
  Start();
  std::shared_ptr<FakeActCall> call = Call(2);
  ASSERT_TRUE(call->WaitForChunks(1, kWait));
  EXPECT_EQ(actor_->reconnects(), 2);
  EXPECT_FALSE(Call(0)->hello().has_value());  // the learner was not there
  EXPECT_FALSE(Call(1)->hello().has_value());
  EXPECT_TRUE(Call(0)->finished());
  EXPECT_EQ(call->chunks().front().sequence, 0);
}

TEST_F(ActorUnitTest, RejoinsItsRunWhenTheStreamBreaks) {
  learner_.set_on_hello(AssignOnHello(kRun, 4, 1));
  Start();
  std::shared_ptr<FakeActCall> first = Call(0);
  ASSERT_TRUE(first->WaitForChunks(2, kWait));
  first->End(absl::UnavailableError("learner restarting"));
  std::shared_ptr<FakeActCall> second = Call(1);
  ASSERT_TRUE(second->WaitForChunks(1, kWait));

  // Re-registers with its run and version, and sequence numbers go on.
  const std::optional<v1::Hello> hello = second->hello();
  ASSERT_TRUE(hello.has_value());
  EXPECT_EQ(hello->want_run_id(), kRun);
  EXPECT_EQ(hello->have_version(), 1);
  EXPECT_GT(second->chunks().front().sequence, first->chunks().back().sequence);
  EXPECT_EQ(actor_->reconnects(), 1);
  EXPECT_EQ(learner_.fetches(), 1);  // the same run: env and dataset kept
}

// A rejoin the learner answers with another run (the old one is full or
// gone): until this session's assignment arrives the actor sends nothing,
// so no chunk of its previous run reaches a learner that no longer hosts it
// (each would be refused with NOT_FOUND and its env steps wasted).
TEST_F(ActorUnitTest, ARejoinSendsNothingBeforeTheSessionsAssignment) {
  auto sessions = std::make_shared<std::atomic<int>>(0);
  learner_.set_on_hello([sessions](FakeActCall& call, const v1::Hello&) {
    if ((*sessions)++ == 0) {
      call.Send(Assignment(kRun, 4));
      call.Send(Weights(kRun, 1));
    }  // the second session's answer comes from the test, later
  });
  Start();
  std::shared_ptr<FakeActCall> first = Call(0);
  ASSERT_TRUE(first->WaitForChunks(1, kWait));
  first->End(absl::UnavailableError("learner restarting"));
  std::shared_ptr<FakeActCall> second = Call(1);
  ASSERT_TRUE(second->WaitFor(
      [](const FakeActCall& c) { return c.hello().has_value(); }, kWait));
  EXPECT_EQ(second->hello()->want_run_id(), kRun);
  // Room for a chunk of the old run to be made and sent, were it allowed.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(second->num_chunks(), 0U);
  second->Send(Assignment("run-2", 4));
  second->Send(Weights("run-2", 3));
  ASSERT_TRUE(second->WaitForChunks(2, kWait));
  for (const FakeActCall::SentChunk& c : second->chunks()) {
    EXPECT_EQ(c.chunk->run_id, "run-2") << "sequence " << c.sequence;
  }
}

TEST_F(ActorUnitTest, ResynchronisesWeightsAfterAFutureVersionRejection) {
  // The learner restarted from an older checkpoint: version 1 is from its
  // future, so it refuses the chunk as INVALID_ARGUMENT.
  learner_.set_on_chunk([](FakeActCall& call, int64_t sequence,
                           const learner::TrajectoryChunk& chunk) {
    const bool future = chunk.policy_version == 1;
    call.Send(Ack(sequence, future ? 3 : 0, 0));
  });
  learner_.set_on_hello([](FakeActCall& call, const v1::Hello& hello) {
    call.Send(Assignment(kRun, 4));
    // The first session got version 1 (before the learner's restart); the
    // rejoin gets the restarted learner's newest, version 0.
    call.Send(Weights(kRun, hello.want_run_id().empty() ? 1 : 0));
  });
  Start();
  std::shared_ptr<FakeActCall> second = Call(1);
  ASSERT_TRUE(second->WaitFor(
      [](const FakeActCall& c) {
        const auto chunks = c.chunks();
        return !chunks.empty() && chunks.back().chunk->policy_version == 0;
      },
      kWait));
  const std::optional<v1::Hello> hello = second->hello();
  ASSERT_TRUE(hello.has_value());
  EXPECT_EQ(hello->want_run_id(), kRun);
  EXPECT_EQ(hello->have_version(), -1);  // asks for the learner's newest
  EXPECT_GE(actor_->chunks_rejected(), 1);
  EXPECT_GE(actor_->rejected_by_code()[3], 1);
}

TEST_F(ActorUnitTest, StopsOnAContractItCannotRun) {
  learner_.set_on_hello([](FakeActCall& call, const v1::Hello&) {
    call.Send(Assignment(kRun, 4, "{not json"));
  });
  Start();
  const absl::Status status = WaitForRun(absl::Seconds(1));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(status.message(), HasSubstr("contract_json"));
  EXPECT_EQ(learner_.num_calls(), 1u);  // not retried
  EXPECT_TRUE(Call(0)->cancelled());
}

TEST_F(ActorUnitTest, StopsOnAContractThatDoesNotFitTheDataset) {
  learner::PolicyContract wrong = TheWorld().contract;
  std::swap(wrong.asset_symbols[0], wrong.asset_symbols[1]);
  const std::string json = wrong.ToJson();
  learner_.set_on_hello([json](FakeActCall& call, const v1::Hello&) {
    call.Send(Assignment(kRun, 4, json));
  });
  Start();
  const absl::Status status = WaitForRun(absl::Seconds(1));
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_THAT(status.message(), HasSubstr("in the contract but"));
  EXPECT_EQ(learner_.num_calls(), 1u);
}

TEST_F(ActorUnitTest, StopsOnWeightsThatDoNotLoad) {
  learner_.set_on_hello([](FakeActCall& call, const v1::Hello&) {
    call.Send(Assignment(kRun, 4));
    call.Send(Weights(kRun, 1, "not a torch archive"));
  });
  Start();
  const absl::Status status = WaitForRun(absl::Seconds(1));
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_THAT(status.message(), HasSubstr("do not load"));
  EXPECT_EQ(actor_->chunks_sent(), 0);
}

TEST_F(ActorUnitTest, RetriesADatasetTheLearnerCannotServe) {
  // A dataset fetch that fails is not fatal: the actor retries with backoff.
  FakeLearner empty;  // serves no dataset
  empty.set_on_hello(AssignOnHello(kRun, 4, 1));
  ActorClients clients;
  clients.learners = empty.Factory();
  absl::StatusOr<std::unique_ptr<Actor>> actor =
      Actor::Create(options_, std::move(clients));
  ASSERT_TRUE(actor.ok()) << actor.status();
  std::thread run([&actor] { EXPECT_TRUE((*actor)->Run().ok()); });
  ASSERT_NE(empty.WaitForCall(2, kWait), nullptr);
  (*actor)->Stop();
  run.join();
  EXPECT_GE(empty.fetches(), 2);
  EXPECT_EQ((*actor)->chunks_sent(), 0);
  EXPECT_FALSE(std::filesystem::exists(options_.cache_dir + "/" +
                                       TheWorld().dataset_id + ".rds"));
}

TEST_F(ActorUnitTest, StopEndsAStreamingRunPromptly) {
  learner_.set_on_hello(AssignOnHello(kRun, 4, 1));
  Start();
  std::shared_ptr<FakeActCall> call = Call(0);
  ASSERT_TRUE(call->WaitForChunks(2, kWait));
  const absl::Time stop = absl::Now();
  actor_->Stop();
  EXPECT_TRUE(WaitForRun(absl::Milliseconds(500)).ok());
  EXPECT_LT(absl::Now() - stop, absl::Milliseconds(500));
  EXPECT_TRUE(call->cancelled());
  EXPECT_TRUE(call->finished());
  EXPECT_EQ(learner_.num_calls(), 1u);
}

TEST_F(ActorUnitTest, StopEndsTheReconnectBackoffPromptly) {
  options_.initial_backoff = absl::Seconds(5);
  options_.max_backoff = absl::Seconds(5);
  learner_.FailConnections(10, absl::UnavailableError("connection refused"));
  Start();
  ASSERT_NE(Call(0), nullptr);
  absl::SleepFor(absl::Milliseconds(20));  // now in the 5 s backoff
  actor_->Stop();
  EXPECT_TRUE(WaitForRun(absl::Milliseconds(500)).ok());
  EXPECT_EQ(learner_.num_calls(), 1u);
}

TEST_F(ActorUnitTest, StopCancelsADatasetFetchInFlight) {
  learner_.BlockFetches();
  learner_.set_on_hello(AssignOnHello(kRun, 4, 1));
  Start();
  ASSERT_NE(Call(0), nullptr);
  const absl::Time deadline = absl::Now() + kWait;
  while (learner_.fetches() < 1 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_EQ(learner_.fetches(), 1);
  actor_->Stop();
  EXPECT_TRUE(WaitForRun(absl::Milliseconds(500)).ok());
  EXPECT_EQ(learner_.fetches_cancelled(), 1);
}

TEST_F(ActorUnitTest, FollowsAReassignmentWithinASession) {
  learner_.set_on_hello(AssignOnHello(kRun, 4, 1));
  Start();
  std::shared_ptr<FakeActCall> call = Call(0);
  ASSERT_TRUE(call->WaitForChunks(1, kWait));
  call->Send(Assignment("run-2", 6));
  call->Send(Weights("run-2", 5));
  ASSERT_TRUE(call->WaitFor(
      [](const FakeActCall& c) {
        const auto chunks = c.chunks();
        return !chunks.empty() && chunks.back().chunk->run_id == "run-2";
      },
      kWait));
  const size_t seen = call->num_chunks();
  ASSERT_TRUE(call->WaitForChunks(seen + 1, kWait));
  bool moved = false;
  for (const FakeActCall::SentChunk& c : call->chunks()) {
    if (c.chunk->run_id == "run-2") {
      moved = true;
      EXPECT_EQ(c.chunk->steps, 6);
      EXPECT_EQ(c.chunk->policy_version, 5);
    } else {
      EXPECT_FALSE(moved) << "run-1 chunk after run-2's, sequence "
                          << c.sequence;
      EXPECT_EQ(c.chunk->steps, 4);
    }
  }
  EXPECT_EQ(actor_->current_version(), 5);
}

TEST_F(ActorUnitTest, DrainsAndTakesTheNextRunAfterTheLearnersStop) {
  // Shared with the actor's threads, which may outlive this scope when an
  // assertion fails.
  auto sessions = std::make_shared<std::atomic<int>>(0);
  learner_.set_on_hello([sessions](FakeActCall& call, const v1::Hello& hello) {
    EXPECT_EQ(hello.want_run_id(), "");  // a finished run is not rejoined
    const std::string run = (*sessions)++ == 0 ? kRun : "run-2";
    call.Send(Assignment(run, 4));
    call.Send(Weights(run, 1));
  });
  Start();
  std::shared_ptr<FakeActCall> first = Call(0);
  ASSERT_TRUE(first->WaitForChunks(2, kWait));
  first->Send(StopMessage("run finished", true));
  std::shared_ptr<FakeActCall> second = Call(1);
  ASSERT_TRUE(second->WaitForChunks(1, kWait));
  // The actor half-closed (no cancel) and the learner ended the call.
  EXPECT_TRUE(first->writes_done());
  EXPECT_FALSE(first->cancelled());
  EXPECT_EQ(second->chunks().front().chunk->run_id, "run-2");
  actor_->Stop();
  ASSERT_TRUE(WaitForRun(kWait).ok());
  // Every step counted as sent was written to the learner.
  int64_t written = 0;
  for (const FakeActCall::SentChunk& c : AllChunks()) {
    written += c.chunk->num_samples();
  }
  EXPECT_EQ(actor_->env_steps_sent(), written);
}

TEST_F(ActorUnitTest, ExitsWhenIdleAfterTheRunFinishes) {
  options_.exit_when_idle = true;
  options_.idle_timeout = absl::Milliseconds(50);
  auto sessions = std::make_shared<std::atomic<int>>(0);
  learner_.set_on_hello([sessions](FakeActCall& call, const v1::Hello&) {
    if ((*sessions)++ == 0) {
      call.Send(Assignment(kRun, 4));
      call.Send(Weights(kRun, 1));
    } else {
      call.Send(StopMessage("no run is accepting actors", true));
    }
  });
  Start();
  std::shared_ptr<FakeActCall> first = Call(0);
  ASSERT_TRUE(first->WaitForChunks(1, kWait));
  first->Send(StopMessage("run finished", true));
  EXPECT_TRUE(WaitForRun(absl::Milliseconds(800)).ok());
  EXPECT_GE(learner_.num_calls(), 2u);
}

// A run that stopped its actors early (the chunks it holds cover its
// budget) can still fall short — a rolled-back update — and accept actors
// again. Until it has finished the learner answers "ask again"
// (run_finished false): an actor with exit_when_idle keeps asking instead
// of leaving idle_timeout after the stop, works on the run again when it
// re-opens, and leaves only once the learner says its runs finished.
TEST_F(ActorUnitTest, ExitWhenIdleWaitsWhileTheLearnersRunMayReopen) {
  options_.exit_when_idle = true;
  options_.idle_timeout = absl::Milliseconds(50);
  struct Learner {
    absl::Mutex mu;
    int sessions = 0;  // all three under mu
    // When the learner first said "ask again"; the session that re-opened.
    std::optional<absl::Time> first_pending;
    int reopened = -1;
  };
  auto state = std::make_shared<Learner>();
  learner_.set_on_hello([state](FakeActCall& call, const v1::Hello&) {
    absl::MutexLock lock(&state->mu);
    const int n = state->sessions++;
    if (n == 0) {
      call.Send(Assignment(kRun, 4));
      call.Send(Weights(kRun, 1));
    } else if (state->reopened >= 0) {
      call.Send(StopMessage("no run is accepting actors", true));
    } else {
      // The run still trains what it holds: "ask again" until the actor
      // has kept asking for four idle timeouts, then it re-opens.
      const absl::Time now = absl::Now();
      if (!state->first_pending.has_value()) state->first_pending = now;
      if (now < *state->first_pending + absl::Milliseconds(200)) {
        call.Send(StopMessage("a run is training its last chunks", false));
      } else {
        state->reopened = n;
        call.Send(Assignment(kRun, 4));
        call.Send(Weights(kRun, 2));
      }
    }
  });
  auto reopened = [state] {
    absl::MutexLock lock(&state->mu);
    return state->reopened;
  };
  Start();
  std::shared_ptr<FakeActCall> first = Call(0);
  ASSERT_TRUE(first->WaitForChunks(1, kWait));
  first->Send(StopMessage("run finished", true));
  // Still asking 200 ms (4 idle timeouts) after the stop: fed again.
  const absl::Time deadline = absl::Now() + kWait;
  while (reopened() < 0 && absl::Now() < deadline &&
         !run_done_.HasBeenNotified()) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_FALSE(run_done_.HasBeenNotified())
      << "the actor left while the run could re-open";
  ASSERT_GE(reopened(), 2);
  std::shared_ptr<FakeActCall> again = Call(static_cast<size_t>(reopened()));
  ASSERT_TRUE(again->WaitForChunks(1, kWait));
  EXPECT_EQ(again->hello()->want_run_id(), kRun);
  EXPECT_EQ(again->chunks().back().chunk->policy_version, 2);
  // The run finishes for real: "no run" with run_finished, then it leaves.
  again->Send(StopMessage("run finished", true));
  EXPECT_TRUE(WaitForRun(kWait).ok());
}

// The learner said "ask again" (a run of its own unfinished), then exited
// once that run finished: the actor stops hearing from it and leaves
// idle_timeout later rather than waiting for it forever.
TEST_F(ActorUnitTest, ExitWhenIdleLeavesOnceTheAskAgainLearnerIsGone) {
  options_.exit_when_idle = true;
  options_.idle_timeout = absl::Milliseconds(50);
  auto sessions = std::make_shared<std::atomic<int>>(0);
  learner_.set_on_hello([sessions](FakeActCall& call, const v1::Hello&) {
    const int n = (*sessions)++;
    if (n == 0) {
      call.Send(Assignment(kRun, 4));
      call.Send(Weights(kRun, 1));
    } else if (n == 1) {
      call.Send(StopMessage("a run is training its last chunks", false));
    } else {
      call.End(absl::UnavailableError("connection refused"));
    }
  });
  Start();
  std::shared_ptr<FakeActCall> first = Call(0);
  ASSERT_TRUE(first->WaitForChunks(1, kWait));
  first->Send(StopMessage("run finished", true));
  EXPECT_TRUE(WaitForRun(kWait).ok());
  EXPECT_GE(sessions->load(), 3);
}

TEST_F(ActorUnitTest, FindsItsLearnerThroughTheCoordinator) {
  options_.learner_address = "";
  options_.coordinator_address = "coordinator:7070";
  auto coordinator = std::make_unique<FakeActorCoordinatorClient>();
  FakeActorCoordinatorClient* fake_coordinator = coordinator.get();
  coordinator->set_address("learner-b:2");
  learner_.set_on_hello(AssignOnHello(kRun, 4, 1));
  v1::LearnerStatus status;
  status.set_chunks_rejected(17);
  learner_.SetStatus(status);
  Start(std::move(coordinator));
  ASSERT_TRUE(Call(0)->WaitForChunks(1, kWait));
  EXPECT_EQ(Call(0)->address(), "learner-b:2");
  ASSERT_FALSE(fake_coordinator->requests().empty());
  EXPECT_EQ(fake_coordinator->requests()[0].actor_id(), "actor-1");

  absl::StatusOr<v1::LearnerStatus> got = actor_->GetLearnerStatus();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->chunks_rejected(), 17);
  EXPECT_EQ(learner_.addresses().back(), "learner-b:2");
  learner_.SetStatus(absl::UnavailableError("learner down"));
  got = actor_->GetLearnerStatus();
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(got.status().message(), HasSubstr("GetStatus"));
}

}  // namespace
}  // namespace ristretto::actor
