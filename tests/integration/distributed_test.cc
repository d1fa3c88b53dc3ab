// The distributed actor–learner service with real processes on 127.0.0.1:
// a ristretto-learner and ristretto-actor processes, real gRPC, real files.
// Every case runs over TLS (certificates from scripts/make_dev_certs.sh)
// except one plaintext case; the TlsTest cases check who cannot connect.
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/ristretto.grpc.pb.h"
#include "tests/integration/dev_certs.h"
#include "tests/integration/learner_status.h"
#include "tests/integration/log_fields.h"
#include "tests/integration/process.h"
#include "tests/integration/process_harness.h"
#include "wire/chunk_codec.h"
#include "wire/chunk_wire.h"

namespace ristretto {
namespace {

namespace fs = std::filesystem;
using ::ristretto::testing::ChannelCredentials;
using ::ristretto::testing::Field;
using ::ristretto::testing::HoldUntilAllAssigned;
using ::ristretto::testing::LearnerStatusOf;
using ::ristretto::testing::ListeningPort;
using ::ristretto::testing::MakeDevCerts;
using ::ristretto::testing::OnlyRunStatus;
using ::ristretto::testing::Process;
using ::ristretto::testing::SmallLearnerRunFlags;
using ::ristretto::testing::Terminate;
using ::ristretto::testing::WaitForRunStatus;
using namespace std::chrono_literals;

// How long a whole run may take before the test calls it a hang: about 10 s
// on a quiet machine, 145 s measured at load average 8 on 2 cores.
constexpr auto kRunTimeout = 300s;

class DistributedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ristretto_dist_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ASSERT_TRUE(MakeDevCerts(Cert("")));
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // A file of the development certificates ("ca.pem", "server.key", ...).
  std::string Cert(const std::string& name) const {
    return dir_ + "/certs/" + name;
  }
  // The learner's TLS flags (none with tls_ false).
  std::vector<std::string> LearnerTlsFlags() const {
    if (!tls_) return {};
    return {"--tls-cert", Cert("server.pem"), "--tls-key", Cert("server.key")};
  }
  // The credentials of the test's own calls to the learner.
  std::shared_ptr<grpc::ChannelCredentials> Credentials() const {
    if (!tls_) return grpc::InsecureChannelCredentials();
    return ChannelCredentials({"", "", Cert("ca.pem")});
  }

  std::unique_ptr<Process> StartLearner(int port,
                                        std::vector<std::string> extra) {
    std::vector<std::string> argv = {RISTRETTO_LEARNER_BINARY, "--port",
                                     absl::StrCat(port), "--run-dir",
                                     dir_ + "/runs"};
    const std::vector<std::string> run = SmallLearnerRunFlags();
    argv.insert(argv.end(), run.begin(), run.end());
    argv.insert(argv.end(), extra.begin(), extra.end());
    const std::vector<std::string> tls = LearnerTlsFlags();
    argv.insert(argv.end(), tls.begin(), tls.end());
    auto p = std::make_unique<Process>(
        argv, absl::StrCat(dir_, "/learner-", learners_++, ".log"));
    EXPECT_TRUE(p->WaitForLog("listening on", 60s)) << p->Log();
    return p;
  }

  // An actor of the learner on `port`; with tls_ it verifies the learner
  // against the development CA.
  std::unique_ptr<Process> StartActor(int port, const std::string& id) {
    return StartActor(port, id,
                      tls_
                          ? std::vector<std::string>{"--tls-ca", Cert("ca.pem")}
                          : std::vector<std::string>{});
  }
  // The same with `tls_flags` instead of the fixture's.
  std::unique_ptr<Process> StartActor(
      int port, const std::string& id,
      const std::vector<std::string>& tls_flags) {
    std::vector<std::string> argv = {RISTRETTO_ACTOR_BINARY,
                                     "--learner",
                                     absl::StrCat("127.0.0.1:", port),
                                     "--envs",
                                     "8",
                                     "--actor-id",
                                     id,
                                     "--cache-dir",
                                     dir_ + "/cache-" + id,
                                     "--exit-when-idle"};
    argv.insert(argv.end(), tls_flags.begin(), tls_flags.end());
    return std::make_unique<Process>(argv, dir_ + "/" + id + ".log");
  }

  std::string dir_;
  int learners_ = 0;
  // Learner and actors over TLS (server certificate; actors verify it).
  bool tls_ = true;
};

TEST_F(DistributedTest,
       ThreeActorsTrainOneRunToItsBudgetWithExactStepAccounting) {
  auto learner = StartLearner(0, {"--budget", "40000", "--exit-when-done"});
  const int port = ListeningPort(*learner);
  ASSERT_GT(port, 0) << learner->Log();
  std::vector<std::unique_ptr<Process>> actors;
  actors.reserve(3);
  for (int i = 0; i < 3; ++i) {
    actors.push_back(StartActor(port, absl::StrCat("actor", i)));
  }
  ASSERT_TRUE(HoldUntilAllAssigned(
      {actors[0].get(), actors[1].get(), actors[2].get()}, 120s))
      << actors[0]->Log() << actors[1]->Log() << actors[2]->Log();
  ASSERT_EQ(learner->Wait(kRunTimeout), 0) << learner->Log();
  int64_t sent = 0;
  for (auto& a : actors) {
    ASSERT_EQ(a->Wait(30s), 0) << a->Log();
    const int64_t s = Field(a->Log(), "env_steps_sent=", "env_steps_sent");
    ASSERT_GE(s, 0) << a->Log();
    EXPECT_GT(s, 0) << "every actor contributed";
    sent += s;
  }
  const std::string log = learner->Log();
  const int64_t version = Field(log, "learner: run run-0", "version");
  const int64_t received = Field(log, "learner: run run-0", "received");
  const int64_t trained = Field(log, "learner: run run-0", "trained");
  const int64_t dropped = Field(log, "learner: run run-0", "dropped");
  EXPECT_GE(version, 5) << log;
  EXPECT_GE(trained, 40000) << log;
  EXPECT_EQ(received, trained + dropped) << log;
  EXPECT_EQ(sent, received) << log;
  EXPECT_EQ(Field(log, "learner: run run-0", "finished"), 1);
}

// The plaintext case: no --tls-* anywhere.
TEST_F(DistributedTest, TwoRunsInOneLearnerEachGetActorsAndReachTheirBudgets) {
  tls_ = false;
  auto learner =
      StartLearner(0, {"--budget", "6000", "--runs", "2", "--exit-when-done"});
  const int port = ListeningPort(*learner);
  ASSERT_GT(port, 0) << learner->Log();
  std::vector<std::unique_ptr<Process>> actors;
  actors.reserve(3);
  for (int i = 0; i < 2; ++i) {
    actors.push_back(StartActor(port, absl::StrCat("actor", i)));
  }
  ASSERT_TRUE(HoldUntilAllAssigned({actors[0].get(), actors[1].get()}, 120s))
      << actors[0]->Log() << actors[1]->Log();
  ASSERT_EQ(learner->Wait(kRunTimeout), 0) << learner->Log();
  const std::string log = learner->Log();
  for (const char* run : {"learner: run run-0", "learner: run run-1"}) {
    EXPECT_GE(Field(log, run, "trained"), 6000) << log;
    EXPECT_GE(Field(log, run, "version"), 2) << log;
    EXPECT_EQ(Field(log, run, "finished"), 1) << log;
  }
  for (auto& a : actors) EXPECT_EQ(a->Wait(30s), 0) << a->Log();
}

TEST_F(DistributedTest, KilledActorIsReplacedAndTheRunStillFinishes) {
  auto learner = StartLearner(0, {"--budget", "250000", "--exit-when-done"});
  const int port = ListeningPort(*learner);
  ASSERT_GT(port, 0) << learner->Log();
  auto first = StartActor(port, "victim");
  auto second = StartActor(port, "survivor");
  ASSERT_TRUE(first->WaitForLog("assigned", 60s)) << first->Log();
  // Killed mid-run: both actors streaming and the run past its first
  // update (the budget is far away).
  const auto streaming = [](const v1::RunStatus& r) {
    return r.actors() == 2 && r.policy_version() >= 1;
  };
  const std::optional<v1::RunStatus> before =
      WaitForRunStatus(port, Credentials(), *learner, streaming, 120s);
  ASSERT_TRUE(before.has_value() && streaming(*before))
      << (before.has_value() ? before->DebugString() : "no status")
      << learner->Log();
  ASSERT_FALSE(before->finished());
  first->Signal(SIGKILL);
  ASSERT_EQ(first->Wait(10s), 128 + SIGKILL);
  // The survivor is frozen until the replacement has its assignment, so the
  // run cannot finish before the replacement joins, however slow its start.
  second->Signal(SIGSTOP);
  auto rejoined = StartActor(port, "rejoined");
  const bool joined = rejoined->WaitForLog("assigned", 120s);
  second->Signal(SIGCONT);
  ASSERT_TRUE(joined) << rejoined->Log();
  ASSERT_EQ(learner->Wait(kRunTimeout), 0) << learner->Log();
  const std::string log = learner->Log();
  EXPECT_EQ(Field(log, "learner: run run-0", "finished"), 1) << log;
  EXPECT_GE(Field(log, "learner: run run-0", "trained"), 250000) << log;
  EXPECT_EQ(second->Wait(30s), 0) << second->Log();
  EXPECT_EQ(rejoined->Wait(30s), 0) << rejoined->Log();
  EXPECT_GT(Field(rejoined->Log(), "env_steps_sent=", "env_steps_sent"), 0)
      << rejoined->Log();
}

TEST_F(DistributedTest,
       LearnerRestartResumesFromItsCheckpointAndActorsReconnect) {
  constexpr int64_t kBudget = 150000;
  const std::string budget = absl::StrCat(kBudget);
  auto learner = StartLearner(0, {"--budget", budget});
  const int port = ListeningPort(*learner);
  ASSERT_GT(port, 0) << learner->Log();
  auto actor = StartActor(port, "steady");
  // Let it train a few versions, then stop the learner mid-run (it
  // checkpoints).
  const auto trained = [](const v1::RunStatus& r) {
    return r.policy_version() >= 3;
  };
  const std::optional<v1::RunStatus> before =
      WaitForRunStatus(port, Credentials(), *learner, trained, 120s);
  ASSERT_TRUE(before.has_value() && trained(*before))
      << (before.has_value() ? before->DebugString() : "no status")
      << learner->Log();
  ASSERT_EQ(Terminate(*learner, 60s).exit_code, 0) << learner->Log();
  const std::string first_log = learner->Log();
  const int64_t trained_before =
      Field(first_log, "learner: run run-0", "trained");
  const int64_t version_before =
      Field(first_log, "learner: run run-0", "version");
  ASSERT_GT(trained_before, 0) << first_log;
  ASSERT_LT(trained_before, kBudget) << "stopped mid-run\n" << first_log;
  ASSERT_EQ(Field(first_log, "learner: run run-0", "finished"), 0) << first_log;
  // Same port, same run directory: resumes from the checkpoint with the
  // step count and version it had.
  auto restarted = StartLearner(port, {"--budget", budget, "--exit-when-done"});
  {
    const std::optional<v1::RunStatus> run = OnlyRunStatus(port, Credentials());
    ASSERT_TRUE(run.has_value()) << restarted->Log();
    // Training may already have resumed: at least the checkpointed count,
    // and the version it stopped at.
    EXPECT_GE(run->env_steps_trained(), trained_before);
    EXPECT_GE(run->policy_version(), version_before);
  }
  ASSERT_EQ(restarted->Wait(kRunTimeout), 0) << restarted->Log();
  const std::string log = restarted->Log();
  const int64_t trained_after = Field(log, "learner: run run-0", "trained");
  EXPECT_EQ(Field(log, "learner: run run-0", "finished"), 1) << log;
  EXPECT_GE(trained_after, kBudget) << log;
  // Nothing lost, nothing counted twice: the total is the checkpointed
  // count plus what the second process itself trained (its received and
  // dropped counters start at zero), and it stops at the first update that
  // reaches the budget (< one update of --samples-per-update 1024 past it).
  const int64_t received_after = Field(log, "learner: run run-0", "received");
  const int64_t dropped_after = Field(log, "learner: run run-0", "dropped");
  EXPECT_GT(received_after, 0) << log;
  EXPECT_EQ(trained_after, trained_before + received_after - dropped_after)
      << first_log << log;
  EXPECT_LT(trained_after, kBudget + 1024) << log;
  EXPECT_GT(Field(log, "learner: run run-0", "version"), version_before) << log;
  EXPECT_EQ(actor->Wait(60s), 0) << actor->Log();
  EXPECT_GE(Field(actor->Log(), "reconnects=", "reconnects"), 1)
      << actor->Log();
}

// A raw client speaking the protocol badly: every bad chunk gets its exact
// status code, and the learner keeps serving.
TEST_F(DistributedTest, MalformedChunksAreRejectedWithPreciseCodes) {
  auto learner =
      StartLearner(0, {"--budget", "100000", "--max-message-mb", "1"});
  const int port = ListeningPort(*learner);
  ASSERT_GT(port, 0) << learner->Log();
  auto channel =
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), Credentials());
  auto stub = v1::Learner::NewStub(channel);
  grpc::ClientContext context;
  auto stream = stub->Act(&context);
  v1::ActorMessage hello;
  hello.mutable_hello()->set_actor_id("raw");
  hello.mutable_hello()->set_env_copies(2);
  hello.mutable_hello()->set_have_version(-1);
  ASSERT_TRUE(stream->Write(hello));
  v1::LearnerMessage in;
  ASSERT_TRUE(stream->Read(&in));
  ASSERT_TRUE(in.has_assignment());
  const std::string run_id = in.assignment().run_id();
  ASSERT_TRUE(stream->Read(&in));
  ASSERT_TRUE(in.has_weights());
  EXPECT_EQ(in.weights().version(), 0);

  // A well-formed chunk for this run: T = 2, B = 2, D = 1 + 3 + 3·14, A = 3.
  const int D = 1 + 3 + 3 * 14, A = 3;
  learner::TrajectoryChunk good;
  good.run_id = run_id;
  good.actor_id = "raw";
  good.steps = 2;
  good.copies = 2;
  good.obs_size = D;
  good.action_size = A;
  // Zero observations: inside every bound the learner derives for the run
  // (no cash, no holdings, features stretched to include 0).
  good.obs.assign(3 * 2 * D, 0.0f);
  good.actions.assign(2 * 2 * A, 0.1f);
  good.log_probs.assign(4, -1.0f);
  good.rewards.assign(4, 0.0f);
  good.dones.assign(4, 0);
  auto send = [&](const learner::TrajectoryChunk& c, int64_t seq) {
    v1::ActorMessage m;
    wire::ChunkToProto(c, seq, m.mutable_chunk());
    EXPECT_TRUE(stream->Write(m));
    v1::LearnerMessage ack;
    while (stream->Read(&ack)) {
      if (ack.has_ack()) return ack.ack();
    }
    ADD_FAILURE() << "stream ended";
    return v1::ChunkAck();
  };
  EXPECT_EQ(send(good, 0).code(), 0);

  learner::TrajectoryChunk wrong_shape = good;
  wrong_shape.obs_size = D + 1;
  wrong_shape.obs.assign(3 * 2 * (D + 1), 0.5f);
  v1::ChunkAck ack = send(wrong_shape, 1);
  EXPECT_EQ(ack.code(), static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  EXPECT_THAT(ack.message(), ::testing::HasSubstr("chunk.observations"));

  learner::TrajectoryChunk nan_reward = good;
  nan_reward.rewards[1] = std::numeric_limits<float>::quiet_NaN();
  ack = send(nan_reward, 2);
  EXPECT_EQ(ack.code(), static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  EXPECT_THAT(ack.message(), ::testing::HasSubstr("rewards[1]"));

  learner::TrajectoryChunk unknown = good;
  unknown.run_id = "no-such-run";
  ack = send(unknown, 3);
  EXPECT_EQ(ack.code(), static_cast<int>(grpc::StatusCode::NOT_FOUND));

  learner::TrajectoryChunk future = good;
  future.policy_version = 1000;
  ack = send(future, 4);
  EXPECT_EQ(ack.code(), static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  EXPECT_THAT(ack.message(), ::testing::HasSubstr("newer than the run"));

  // Still serving on the same stream.
  EXPECT_EQ(send(good, 5).code(), 0);
  stream->WritesDone();
  context.TryCancel();
  stream->Finish();

  // An oversized message (> 1 MiB) fails that call with RESOURCE_EXHAUSTED.
  {
    grpc::ClientContext big_context;
    auto big_stream = stub->Act(&big_context);
    big_stream->Write(hello);
    learner::TrajectoryChunk big = good;
    big.steps = 400;
    big.copies = 20;
    big.obs.assign(401 * 20 * D, 0.5f);
    big.actions.assign(400 * 20 * A, 0.1f);
    big.log_probs.assign(8000, -1.0f);
    big.rewards.assign(8000, 0.0f);
    big.dones.assign(8000, 0);
    v1::ActorMessage m;
    wire::ChunkToProto(big, 0, m.mutable_chunk());
    ASSERT_GT(m.ByteSizeLong(), 1u << 20);
    big_stream->Write(m);
    big_stream->WritesDone();
    v1::LearnerMessage drain;
    while (big_stream->Read(&drain)) {
    }
    EXPECT_EQ(big_stream->Finish().error_code(),
              grpc::StatusCode::RESOURCE_EXHAUSTED);
  }

  // Bytes that are not a valid encoding, on a stream that writes raw
  // buffers (as ristretto-actor does): a chunk whose sequence was read is
  // rejected with an ack and the stream goes on; a message with nothing to
  // acknowledge ends the call with INVALID_ARGUMENT and the reason.
  {
    wire::ActStub raw_stub(channel);
    grpc::ClientContext raw_context;
    auto raw = raw_stub.Act(&raw_context);
    ASSERT_TRUE(raw->Write(wire::SerializeToByteBuffer(hello)));
    auto raw_ack = [&]() {
      v1::LearnerMessage m;
      while (raw->Read(&m)) {
        if (m.has_ack()) return m.ack();
      }
      ADD_FAILURE() << "stream ended";
      return v1::ChunkAck();
    };
    auto shared = std::make_shared<learner::TrajectoryChunk>(good);
    ASSERT_TRUE(raw->Write(wire::EncodeChunkMessage(shared, 10)));
    EXPECT_EQ(raw_ack().code(), 0);
    // The same chunk with its rewards tensor given twice.
    v1::ActorMessage m;
    wire::ChunkToProto(good, 11, m.mutable_chunk());
    std::string chunk_bytes = m.chunk().SerializeAsString();
    const std::string rewards = m.chunk().rewards().SerializeAsString();
    chunk_bytes += '\x4a';  // field 9 (rewards), length-delimited
    chunk_bytes += static_cast<char>(rewards.size());
    chunk_bytes += rewards;
    std::string bytes = "\x12";  // field 2 (chunk)
    for (uint64_t n = chunk_bytes.size();; n >>= 7) {
      bytes += static_cast<char>(n < 0x80 ? n : (n & 0x7f) | 0x80);
      if (n < 0x80) break;
    }
    bytes += chunk_bytes;
    grpc::Slice slice(bytes.data(), bytes.size());
    ASSERT_TRUE(raw->Write(grpc::ByteBuffer(&slice, 1)));
    const v1::ChunkAck dup = raw_ack();
    EXPECT_EQ(dup.sequence(), 11);
    EXPECT_EQ(dup.code(), static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
    EXPECT_EQ(dup.message(),
              "malformed ActorMessage: chunk.rewards appears twice");
    const std::string garbage = "\x12\xff\xff\xff";  // truncated chunk
    grpc::Slice junk(garbage.data(), garbage.size());
    raw->Write(grpc::ByteBuffer(&junk, 1));
    v1::LearnerMessage drain;
    while (raw->Read(&drain)) {
    }
    const grpc::Status ended = raw->Finish();
    EXPECT_EQ(ended.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(ended.error_message(),
                ::testing::HasSubstr("malformed ActorMessage"));
  }

  // The learner keeps serving: a status call works and counts the rejects.
  grpc::ClientContext status_context;
  status_context.set_deadline(std::chrono::system_clock::now() + 10s);
  v1::LearnerStatus status;
  ASSERT_TRUE(
      stub->GetStatus(&status_context, v1::StatusRequest(), &status).ok());
  EXPECT_EQ(status.chunks_rejected(), 6);
  ASSERT_EQ(status.runs_size(), 1);
  EXPECT_EQ(status.runs(0).env_steps_received(), 12);  // three good chunks
  EXPECT_EQ(Terminate(*learner, 60s).exit_code, 0) << learner->Log();
}

// The line an actor logs each time its connection attempt to the learner on
// `port` fails in the handshake (it then retries with backoff).
std::string Refused(int port) {
  return absl::StrCat("stream to 127.0.0.1:", port, " ended: UNAVAILABLE");
}

// Who cannot use a TLS learner: an actor without --tls-ca (it speaks
// plaintext) and one whose CA did not sign the learner's certificate. Both
// keep retrying and never join the run; the test's own calls with the same
// credentials fail UNAVAILABLE.
TEST_F(DistributedTest, ActorsThatCannotVerifyATlsLearnerNeverJoinIt) {
  auto learner = StartLearner(0, {"--budget", "100000"});
  const int port = ListeningPort(*learner);
  ASSERT_GT(port, 0) << learner->Log();
  const std::string other = dir_ + "/other-certs";
  ASSERT_TRUE(MakeDevCerts(other));
  auto plaintext = StartActor(port, "plaintext", {});
  auto stranger = StartActor(port, "stranger", {"--tls-ca", other + "/ca.pem"});
  for (Process* actor : {plaintext.get(), stranger.get()}) {
    ASSERT_TRUE(actor->WaitForLog(Refused(port), 60s)) << actor->Log();
    ASSERT_TRUE(actor->WaitForLog("reconnecting in", 60s)) << actor->Log();
  }
  v1::LearnerStatus status;
  ASSERT_TRUE(LearnerStatusOf(port, Credentials(), &status).ok())
      << learner->Log();
  ASSERT_EQ(status.runs_size(), 1);
  EXPECT_EQ(status.runs(0).actors(), 0) << status.DebugString();
  EXPECT_EQ(status.runs(0).env_steps_received(), 0) << status.DebugString();
  EXPECT_EQ(LearnerStatusOf(port, grpc::InsecureChannelCredentials(), &status)
                .error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(LearnerStatusOf(
                port, ChannelCredentials({"", "", other + "/ca.pem"}), &status)
                .error_code(),
            grpc::StatusCode::UNAVAILABLE);
  for (Process* actor : {plaintext.get(), stranger.get()}) {
    EXPECT_FALSE(actor->Wait(0ms).has_value()) << "still retrying\n"
                                               << actor->Log();
    EXPECT_THAT(actor->Log(), ::testing::Not(::testing::HasSubstr("assigned")));
    EXPECT_EQ(Terminate(*actor, 30s).exit_code, 0) << actor->Log();
  }
  EXPECT_EQ(Terminate(*learner, 60s).exit_code, 0) << learner->Log();
}

// A learner under mutual TLS (--tls-ca too) serves only actors presenting
// a certificate its CA signed: the one with --tls-cert/--tls-key streams,
// the one that only verifies the learner is refused.
TEST_F(DistributedTest,
       MutualTlsLearnerServesOnlyActorsWithAClientCertificate) {
  auto learner =
      StartLearner(0, {"--budget", "100000", "--tls-ca", Cert("ca.pem")});
  const int port = ListeningPort(*learner);
  ASSERT_GT(port, 0) << learner->Log();
  EXPECT_THAT(
      learner->Log(),
      ::testing::HasSubstr("security: TLS on, every call authenticated"));
  auto anonymous = StartActor(port, "anonymous");
  auto member =
      StartActor(port, "member",
                 {"--tls-ca", Cert("ca.pem"), "--tls-cert", Cert("client.pem"),
                  "--tls-key", Cert("client.key")});
  ASSERT_TRUE(member->WaitForLog("assigned", 60s)) << member->Log();
  ASSERT_TRUE(anonymous->WaitForLog(Refused(port), 60s)) << anonymous->Log();
  const auto streaming = [](const v1::RunStatus& r) {
    return r.env_steps_received() > 0;
  };
  const std::optional<v1::RunStatus> run =
      WaitForRunStatus(port,
                       ChannelCredentials({Cert("client.pem"),
                                           Cert("client.key"), Cert("ca.pem")}),
                       *learner, streaming, 120s);
  ASSERT_TRUE(run.has_value() && streaming(*run))
      << (run.has_value() ? run->DebugString() : "no status") << learner->Log();
  EXPECT_EQ(run->actors(), 1) << run->DebugString();
  v1::LearnerStatus status;
  EXPECT_EQ(LearnerStatusOf(port, Credentials(), &status).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(anonymous->Log(),
              ::testing::Not(::testing::HasSubstr("assigned")));
  for (Process* actor : {anonymous.get(), member.get()}) {
    EXPECT_EQ(Terminate(*actor, 30s).exit_code, 0) << actor->Log();
  }
  EXPECT_EQ(Terminate(*learner, 60s).exit_code, 0) << learner->Log();
}

// Bad TLS files are command-line errors: one line naming the flag, exit
// 2, nothing served or dialled.
TEST_F(DistributedTest, BadTlsFilesExitTwoWithOneLineNamingTheFlag) {
  Process learner({RISTRETTO_LEARNER_BINARY, "--port", "0", "--run-dir",
                   dir_ + "/runs", "--tls-cert", Cert("server.pem")},
                  dir_ + "/no-key.log");
  ASSERT_EQ(learner.Wait(60s), 2) << learner.Log();
  EXPECT_THAT(learner.Log(),
              ::testing::HasSubstr("--tls-cert needs --tls-key"));
  EXPECT_THAT(learner.Log(),
              ::testing::Not(::testing::HasSubstr("listening on")));
  const std::string open_key = dir_ + "/open.key";
  fs::copy_file(Cert("client.key"), open_key);
  fs::permissions(open_key, fs::perms::group_read | fs::perms::others_read,
                  fs::perm_options::add);
  Process actor(
      {RISTRETTO_ACTOR_BINARY, "--learner", "127.0.0.1:1", "--tls-ca",
       Cert("ca.pem"), "--tls-cert", Cert("client.pem"), "--tls-key", open_key},
      dir_ + "/open-key.log");
  ASSERT_EQ(actor.Wait(60s), 2) << actor.Log();
  EXPECT_THAT(actor.Log(), ::testing::HasSubstr("readable by group or others"));
  EXPECT_THAT(actor.Log(), ::testing::Not(::testing::HasSubstr("stream to")));
}

// Every run's memory estimate is admitted against --memory-mb: the run that
// does not fit is refused with a message naming the sizes, before anything
// is served (no out-of-memory crash later). With a 64 MiB message cap and a
// queue of 2 chunks a run needs about 200 MiB, so 300 MiB admit one run.
TEST_F(DistributedTest, RunOverTheMemoryBudgetIsRefusedWithAClearError) {
  Process refused(
      {RISTRETTO_LEARNER_BINARY, "--port", "0", "--run-dir", dir_ + "/runs",
       "--synthetic-rows", "1200", "--policy-hidden", "32,32", "--runs", "2",
       "--memory-mb", "300"},
      dir_ + "/refused.log");
  ASSERT_EQ(refused.Wait(60s), 1) << refused.Log();
  EXPECT_THAT(refused.Log(), ::testing::HasSubstr("run run-1 needs about"));
  EXPECT_THAT(refused.Log(),
              ::testing::HasSubstr("the memory budget is 300 MiB"));
  EXPECT_THAT(refused.Log(),
              ::testing::Not(::testing::HasSubstr("listening on")));

  Process admitted(
      {RISTRETTO_LEARNER_BINARY, "--port", "0", "--run-dir", dir_ + "/runs1",
       "--synthetic-rows", "1200", "--policy-hidden", "32,32", "--runs", "1",
       "--memory-mb", "300"},
      dir_ + "/admitted.log");
  ASSERT_TRUE(admitted.WaitForLog("listening on", 60s)) << admitted.Log();
  EXPECT_EQ(Terminate(admitted, 60s).exit_code, 0) << admitted.Log();
}

}  // namespace
}  // namespace ristretto
