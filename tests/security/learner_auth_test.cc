// Attacks on a learner's gRPC server (Act, FetchDataset, GetStatus): a real
// LearnerService on 127.0.0.1 with two tiny runs, called through the
// actor's own gRPC client (wire/learner_client.h) holding whatever
// credential the attack presents. Coordinated mode is played by giving the
// service ticket keys (as CoordinatorAgent does after registering) and
// minting tickets with them (as the coordinator's FindLearner does); the
// stand-alone mode by a token. Each test checks the gRPC code of the refusal
// and that ristretto_learner_rpc_denied_total counted it.
#include <cstdint>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/auth.h"
#include "common/grpc_security.h"
#include "common/metrics.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "learner/service/learner_metrics.h"
#include "learner/service/learner_service.h"
#include "tests/common/make_dev_certs.h"
#include "tests/common/metrics_scrape.h"
#include "tests/common/temp_dir.h"
#include "tests/learner/service/run_test_util.h"
#include "wire/learner_client.h"

namespace ristretto::learner {
namespace {

using ::ristretto::testing::HttpGet;
using ::ristretto::testing::SampleValue;
using testing::SmallChunk;
using testing::SmallMarket;
using testing::SmallSpec;

constexpr char kMember[] = "learner-sec";
constexpr char kToken[] = "0123456789abcdef0123456789abcdef-operator";
constexpr char kKey0[] = "key-0-0123456789abcdef0123456789abcdef";
constexpr char kKey1[] = "key-1-0123456789abcdef0123456789abcdef";
constexpr char kKey2[] = "key-2-0123456789abcdef0123456789abcdef";

// `cert_sha256`: the client certificate the ticket is bound to (rt2, as a
// coordinator under mutual TLS mints); empty: none (rt1).
std::string Ticket(const std::string& actor, const std::string& key,
                   absl::Time issued = absl::Now(),
                   const std::string& learner = kMember,
                   const std::string& cert_sha256 = "") {
  auth::ActorTicket t;
  t.actor_id = actor;
  t.learner_id = learner;
  t.cert_sha256 = cert_sha256;
  t.issued_ms = absl::ToUnixMillis(issued);
  t.expires_ms = absl::ToUnixMillis(issued + auth::kActorTicketTtl);
  absl::StatusOr<std::string> text = auth::MintActorTicket(t, key);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.value_or("");
}

// What one Act call got: the first message (if any) and the final status.
struct ActResult {
  std::optional<v1::LearnerMessage> first;
  absl::Status status;
};

class LearnerAuthTest : public ::testing::Test {
 protected:
  // run-0 trains on dataset "small-market" (served from a file), run-1 on
  // "other-market". `token`: the operator's (and stand-alone actors')
  // credential; `key`: a ticket key, as after a registration; `tls`: the
  // server's certificate files (plaintext when empty; mutual TLS with a CA).
  void Serve(const std::string& token, const std::string& key,
             const TlsFiles& tls = {}) {
    MetricsOptions metrics_options;
    metrics_options.address = "127.0.0.1";
    metrics_options.service = "learner";
    absl::StatusOr<std::unique_ptr<MetricsServer>> metrics_server =
        MetricsServer::Create(metrics_options);
    ASSERT_TRUE(metrics_server.ok()) << metrics_server.status();
    metrics_server_ = *std::move(metrics_server);
    metrics_ = std::make_unique<LearnerMetrics>(metrics_server_.get());

    dir_ = std::make_unique<tests::TempDir>("ristretto_learner_sec_");
    dataset_path_ = dir_->Path("small-market.rds");
    std::ofstream(dataset_path_) << "the dataset bytes";

    std::vector<std::shared_ptr<RunHost>> hosts;
    for (const auto& [run, dataset] :
         {std::pair<std::string, std::string>{"run-0", "small-market"},
          {"run-1", "other-market"}}) {
      RunSpec spec = SmallSpec(run);
      spec.trainer.dataset_id = dataset;
      absl::StatusOr<std::unique_ptr<RunHost>> host =
          RunHost::Create(spec, SmallMarket());
      ASSERT_TRUE(host.ok()) << host.status();
      hosts.push_back(std::move(*host));
    }
    LearnerServiceOptions options;
    options.dataset_id = "small-market";
    options.dataset_path = dataset_path_;
    options.metrics = metrics_.get();
    options.token = token;
    // As ristretto-learner: coordinated (a ticket key), the token is the
    // one every learner registers with and admits no actor.
    options.token_admits_actors = key.empty();
    service_ = std::make_unique<LearnerService>(hosts, options);
    service_->AddDataset("other-market", dataset_path_);
    if (!key.empty()) service_->SetTicketKey(kMember, key);

    int port = 0;
    grpc::ServerBuilder builder;
    absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
        MakeServerCredentials(tls);
    ASSERT_TRUE(credentials.ok()) << credentials.status();
    builder.AddListeningPort("127.0.0.1:0", *credentials, &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(port, 0);
    address_ = absl::StrCat("127.0.0.1:", port);
  }

  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
    if (service_ != nullptr) {
      for (const std::shared_ptr<RunHost>& run : service_->runs()) run->Stop();
    }
  }

  // A client presenting `bearer` ("" : no authorization metadata).
  std::unique_ptr<wire::LearnerClient> Client(const std::string& bearer) {
    wire::GrpcLearnerClientOptions options;
    options.rpc_deadline = absl::Seconds(30);
    options.bearer = std::make_shared<wire::LearnerCredential>(bearer);
    options.credentials = channel_credentials_;
    return wire::NewGrpcLearnerClient(address_, options);
  }

  // Hello as `actor_id`; the first answer, then the call ended from here.
  ActResult Hello(const std::string& bearer, const std::string& actor_id) {
    std::unique_ptr<wire::LearnerClient> client = Client(bearer);
    std::unique_ptr<wire::ActCall> call = client->Act();
    v1::Hello hello;
    hello.set_actor_id(actor_id);
    hello.set_env_copies(2);
    ActResult result;
    if (call->WriteHello(hello)) {
      v1::LearnerMessage m;
      if (call->Read(&m)) result.first = m;
    }
    if (result.first.has_value()) {
      call->Cancel();
    }
    result.status = call->Finish();
    return result;
  }

  // FetchDataset on a raw stub (the actor's client reports every failed
  // download as UNAVAILABLE): the call's own code, and the bytes received.
  grpc::StatusCode Fetch(const std::string& bearer, const std::string& dataset,
                         std::string* bytes = nullptr) {
    auto stub = v1::Learner::NewStub(
        grpc::CreateChannel(address_, channel_credentials_));
    grpc::ClientContext ctx;
    if (!bearer.empty()) {
      ctx.AddMetadata(auth::kMetadataKey, auth::BearerValue(bearer));
    }
    v1::FetchDatasetRequest request;
    request.set_dataset_id(dataset);
    std::unique_ptr<grpc::ClientReader<v1::DatasetPiece>> reader =
        stub->FetchDataset(&ctx, request);
    v1::DatasetPiece piece;
    std::string received;
    while (reader->Read(&piece)) received += piece.data();
    if (bytes != nullptr) *bytes = received;
    return reader->Finish().error_code();
  }

  double Denied(const std::string& method, const std::string& code) {
    const std::string body = HttpGet(metrics_server_->port()).value_or("");
    return SampleValue(body, "ristretto_learner_rpc_denied_total",
                       {{"method", method}, {"code", code}})
        .value_or(-1);
  }

  // The TLS files of the actor calling (Client, Fetch, Hello); plaintext
  // until set.
  void CallAs(const TlsFiles& files) {
    absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
        MakeChannelCredentials(files);
    ASSERT_TRUE(credentials.ok()) << credentials.status();
    channel_credentials_ = *std::move(credentials);
  }

  std::shared_ptr<grpc::ChannelCredentials> channel_credentials_ =
      grpc::InsecureChannelCredentials();
  std::unique_ptr<tests::TempDir> dir_;
  std::unique_ptr<MetricsServer> metrics_server_;
  std::unique_ptr<LearnerMetrics> metrics_;
  std::unique_ptr<LearnerService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  std::string dataset_path_;
};

TEST_F(LearnerAuthTest, CallsWithoutCredentialsAreUnauthenticated) {
  Serve(kToken, kKey0);
  const ActResult act = Hello("", "a1");
  EXPECT_FALSE(act.first.has_value());
  EXPECT_EQ(act.status.code(), absl::StatusCode::kUnauthenticated)
      << act.status;
  EXPECT_EQ(Client("")->GetStatus().status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(Fetch("", "small-market"), grpc::StatusCode::UNAUTHENTICATED);
  // A wrong token is no better; neither is a ticket of another learner.
  EXPECT_EQ(Hello("not-the-token-0123456789abcdef0123", "a1").status.code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(Hello(Ticket("a1", kKey0, absl::Now(), "learner-other"), "a1")
                .status.code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(Denied("Act", "unauthenticated"), 3);
  EXPECT_EQ(Denied("GetStatus", "unauthenticated"), 1);
  EXPECT_EQ(Denied("FetchDataset", "unauthenticated"), 1);
  // Nobody joined a run.
  EXPECT_EQ(service_->ActorsOn("run-0") + service_->ActorsOn("run-1"), 0);
}

TEST_F(LearnerAuthTest, ATicketActsOnlyAsItsOwnActor) {
  Serve(kToken, kKey0);
  const ActResult own = Hello(Ticket("a1", kKey0), "a1");
  ASSERT_TRUE(own.first.has_value()) << own.status;
  EXPECT_TRUE(own.first->has_assignment());
  const ActResult other = Hello(Ticket("a1", kKey0), "a2");
  EXPECT_FALSE(other.first.has_value() && other.first->has_assignment());
  EXPECT_EQ(other.status.code(), absl::StatusCode::kPermissionDenied)
      << other.status;
  EXPECT_EQ(Denied("Act", "permission_denied"), 1);
}

TEST_F(LearnerAuthTest, TamperedAndExpiredTicketsAreUnauthenticated) {
  Serve(kToken, kKey0);
  // The actor id swapped for another one: the MAC no longer matches.
  std::string tampered = Ticket("a1", kKey0);
  const std::string a1 = absl::BytesToHexString("a1");
  tampered.replace(tampered.find(a1), a1.size(), absl::BytesToHexString("a2"));
  EXPECT_EQ(Hello(tampered, "a2").status.code(),
            absl::StatusCode::kUnauthenticated);
  const absl::Time long_ago =
      absl::Now() - auth::kActorTicketTtl - absl::Hours(1);
  const ActResult expired = Hello(Ticket("a1", kKey0, long_ago), "a1");
  EXPECT_EQ(expired.status.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_NE(expired.status.message().find("expired"), absl::string_view::npos)
      << expired.status;
  // A ticket made with another key (a forger's).
  EXPECT_EQ(Hello(Ticket("a1", kKey1), "a1").status.code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(Denied("Act", "unauthenticated"), 3);
}

TEST_F(LearnerAuthTest, ARegisteredAgainLearnerTakesThePreviousKeyNotOlder) {
  Serve(kToken, kKey0);
  const std::string t0 = Ticket("a1", kKey0);
  EXPECT_TRUE(Hello(t0, "a1").first.has_value());
  service_->SetTicketKey(kMember, kKey1);  // re-registered
  EXPECT_TRUE(Hello(t0, "a1").first.has_value());
  EXPECT_TRUE(Hello(Ticket("a1", kKey1), "a1").first.has_value());
  service_->SetTicketKey(kMember, kKey2);  // and again
  const ActResult old = Hello(t0, "a1");
  EXPECT_FALSE(old.first.has_value());
  EXPECT_EQ(old.status.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(Hello(Ticket("a1", kKey1), "a1").first.has_value());
  EXPECT_EQ(Denied("Act", "unauthenticated"), 1);
}

TEST_F(LearnerAuthTest, ChunksForARunNotAssignedAreRefused) {
  Serve(kToken, kKey0);
  std::unique_ptr<wire::LearnerClient> client = Client(Ticket("a1", kKey0));
  std::unique_ptr<wire::ActCall> call = client->Act();
  v1::Hello hello;
  hello.set_actor_id("a1");
  hello.set_env_copies(2);
  ASSERT_TRUE(call->WriteHello(hello));
  v1::LearnerMessage m;
  ASSERT_TRUE(call->Read(&m));
  ASSERT_TRUE(m.has_assignment());
  const std::string mine = m.assignment().run_id();
  const std::string other = mine == "run-0" ? "run-1" : "run-0";
  ASSERT_TRUE(call->WriteChunk(
      std::make_shared<TrajectoryChunk>(SmallChunk(other, 0)), 0));
  std::optional<v1::ChunkAck> ack;
  while (!ack.has_value() && call->Read(&m)) {
    if (m.has_ack()) ack = m.ack();
  }
  call->Cancel();
  (void)call->Finish();
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(ack->code(), static_cast<int>(absl::StatusCode::kNotFound));
  EXPECT_EQ(service_->FindRun(other)->counters().env_steps_received, 0);
}

TEST_F(LearnerAuthTest, ATicketFetchesOnlyTheDatasetOfItsAssignedRun) {
  Serve(kToken, kKey0);
  const std::string ticket = Ticket("a1", kKey0);
  // Before any assignment: no dataset.
  EXPECT_EQ(Fetch(ticket, "small-market"), grpc::StatusCode::PERMISSION_DENIED);
  {
    // Keep the stream open while fetching, as an actor does.
    std::unique_ptr<wire::LearnerClient> client = Client(ticket);
    std::unique_ptr<wire::ActCall> call = client->Act();
    v1::Hello hello;
    hello.set_actor_id("a1");
    hello.set_env_copies(2);
    hello.set_want_run_id("run-0");
    ASSERT_TRUE(call->WriteHello(hello));
    v1::LearnerMessage m;
    ASSERT_TRUE(call->Read(&m));
    ASSERT_EQ(m.assignment().run_id(), "run-0");
    std::string bytes;
    EXPECT_EQ(Fetch(ticket, "small-market", &bytes), grpc::StatusCode::OK);
    EXPECT_EQ(bytes, "the dataset bytes");
    // run-1's dataset was never assigned to a1; another actor's ticket
    // gets nothing either.
    EXPECT_EQ(Fetch(ticket, "other-market"),
              grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_EQ(Fetch(Ticket("a2", kKey0), "small-market"),
              grpc::StatusCode::PERMISSION_DENIED);
    call->Cancel();
    (void)call->Finish();
  }
  // Coordinated, the learner's token fetches nothing (it is no actor).
  EXPECT_EQ(Fetch(kToken, "other-market"), grpc::StatusCode::PERMISSION_DENIED);
  // Once the run is no longer hosted, its actors lose its dataset.
  service_->RemoveRun("run-0");
  EXPECT_EQ(Fetch(ticket, "small-market"), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Denied("FetchDataset", "permission_denied"), 5);
}

// Coordinated, the token is the one every learner registers with (the
// learners' token): another learner's host holds it, so it must not stream
// into this learner's runs as any actor nor download its datasets. It
// still reads GetStatus.
TEST_F(LearnerAuthTest, ACoordinatedLearnersTokenIsNoActorCredential) {
  Serve(kToken, kKey0);
  const ActResult act = Hello(kToken, "any-actor");
  EXPECT_FALSE(act.first.has_value() && act.first->has_assignment());
  EXPECT_EQ(act.status.code(), absl::StatusCode::kPermissionDenied)
      << act.status;
  EXPECT_NE(act.status.message().find("ticket"), absl::string_view::npos)
      << act.status;
  EXPECT_EQ(Fetch(kToken, "small-market"), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(service_->ActorsOn("run-0") + service_->ActorsOn("run-1"), 0);
  EXPECT_TRUE(Client(kToken)->GetStatus().ok());
  EXPECT_EQ(Denied("Act", "permission_denied"), 1);
  EXPECT_EQ(Denied("FetchDataset", "permission_denied"), 1);
  // The ticket still works.
  EXPECT_TRUE(Hello(Ticket("a1", kKey0), "a1").first.has_value());
}

TEST_F(LearnerAuthTest, GetStatusIsTheOperators) {
  Serve(kToken, kKey0);
  EXPECT_EQ(Client(Ticket("a1", kKey0))->GetStatus().status().code(),
            absl::StatusCode::kPermissionDenied);
  absl::StatusOr<v1::LearnerStatus> status = Client(kToken)->GetStatus();
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->runs_size(), 2);
  EXPECT_EQ(Denied("GetStatus", "permission_denied"), 1);
}

// The credential is one "authorization: Bearer <secret>" metadata: two of
// them (even two copies of the operator's token, as a proxy adding its own
// would send) or another scheme are refused, not read as either.
TEST_F(LearnerAuthTest, RepeatedOrMalformedAuthorizationIsUnauthenticated) {
  Serve(kToken, kKey0);
  auto status_with = [&](const std::vector<std::string>& values) {
    auto stub = v1::Learner::NewStub(
        grpc::CreateChannel(address_, channel_credentials_));
    grpc::ClientContext ctx;
    for (const std::string& value : values) {
      ctx.AddMetadata(auth::kMetadataKey, value);
    }
    v1::LearnerStatus status;
    return stub->GetStatus(&ctx, v1::StatusRequest(), &status).error_code();
  };
  const std::string bearer = auth::BearerValue(kToken);
  EXPECT_EQ(status_with({bearer}), grpc::StatusCode::OK);
  EXPECT_EQ(status_with({bearer, bearer}), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(status_with({"Basic " + std::string(kToken)}),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(status_with({"Bearer "}), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Denied("GetStatus", "unauthenticated"), 3);
}

TEST_F(LearnerAuthTest, StandAloneActorsPresentTheToken) {
  Serve(kToken, /*key=*/"");
  const ActResult with = Hello(kToken, "any-actor");
  ASSERT_TRUE(with.first.has_value()) << with.status;
  EXPECT_TRUE(with.first->has_assignment());
  EXPECT_EQ(Hello("", "any-actor").status.code(),
            absl::StatusCode::kUnauthenticated);
  // No ticket key: a ticket is just an unknown credential.
  EXPECT_EQ(Hello(Ticket("a1", kKey0), "a1").status.code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(Denied("Act", "unauthenticated"), 2);
}

TEST_F(LearnerAuthTest, WithoutTokenOrKeyNothingIsAuthenticated) {
  Serve(/*token=*/"", /*key=*/"");
  EXPECT_FALSE(service_->authenticating());
  EXPECT_TRUE(Hello("", "a1").first.has_value());
  EXPECT_TRUE(Client("")->GetStatus().ok());
  EXPECT_EQ(Fetch("", "small-market"), grpc::StatusCode::OK);
  EXPECT_EQ(Denied("Act", "unauthenticated"), 0);
}

// Tickets bound to the actor's client certificate (a coordinator under
// mutual TLS mints them): a learner under mutual TLS accepts one only over a
// connection that presented that certificate, so a ticket copied or sniffed
// from one actor host is useless from another. Two client certificates of
// one CA, as scripts/make_dev_certs.sh --client makes them.
class LearnerBoundTicketTest : public LearnerAuthTest {
 protected:
  void SetUp() override {
    certs_ = std::make_unique<tests::TempDir>("ristretto_bound_ticket_");
    ASSERT_TRUE(tests::MakeDevCerts(certs_->path(), {"actor-a", "actor-b"}));
    std::ifstream in(certs_->Path("actor-a.pem"));
    const std::string pem((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
    absl::StatusOr<std::string> hash = auth::CertificateSha256(pem);
    ASSERT_TRUE(hash.ok()) << hash.status();
    cert_a_ = *hash;
  }
  TlsFiles Server() const {
    return {certs_->Path("server.pem"), certs_->Path("server.key"),
            certs_->Path("ca.pem")};
  }
  TlsFiles Actor(const std::string& name) const {
    return {certs_->Path(name + ".pem"), certs_->Path(name + ".key"),
            certs_->Path("ca.pem")};
  }

  std::unique_ptr<tests::TempDir> certs_;
  std::string cert_a_;  // hex SHA-256 of actor-a.pem
};

TEST_F(LearnerBoundTicketTest, ATicketWorksOnlyOverItsOwnCertificate) {
  Serve(kToken, kKey0, Server());
  const std::string ticket = Ticket("a1", kKey0, absl::Now(), kMember, cert_a_);
  // Another actor host's certificate with A's ticket: refused, counted.
  CallAs(Actor("actor-b"));
  const ActResult stolen = Hello(ticket, "a1");
  EXPECT_FALSE(stolen.first.has_value());
  EXPECT_EQ(stolen.status.code(), absl::StatusCode::kPermissionDenied)
      << stolen.status;
  EXPECT_NE(stolen.status.message().find(
                "ticket bound to another client certificate"),
            absl::string_view::npos)
      << stolen.status;
  EXPECT_EQ(Fetch(ticket, "small-market"), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Denied("Act", "permission_denied"), 1);
  EXPECT_EQ(Denied("FetchDataset", "permission_denied"), 1);
  EXPECT_EQ(service_->ActorsOn("run-0") + service_->ActorsOn("run-1"), 0);
  // An unbound (rt1) ticket still works from any certificate: what a
  // coordinator without mutual TLS mints, during an upgrade too.
  EXPECT_TRUE(Hello(Ticket("a2", kKey0), "a2").first.has_value());
  // Over A's own certificate: accepted, and it fetches its run's dataset.
  CallAs(Actor("actor-a"));
  std::unique_ptr<wire::LearnerClient> client = Client(ticket);
  std::unique_ptr<wire::ActCall> call = client->Act();
  v1::Hello hello;
  hello.set_actor_id("a1");
  hello.set_env_copies(2);
  hello.set_want_run_id("run-0");
  ASSERT_TRUE(call->WriteHello(hello));
  v1::LearnerMessage m;
  ASSERT_TRUE(call->Read(&m));
  ASSERT_EQ(m.assignment().run_id(), "run-0");
  std::string bytes;
  EXPECT_EQ(Fetch(ticket, "small-market", &bytes), grpc::StatusCode::OK);
  EXPECT_EQ(bytes, "the dataset bytes");
  // B still cannot, now that a1 holds a run on that dataset.
  CallAs(Actor("actor-b"));
  EXPECT_EQ(Fetch(ticket, "small-market"), grpc::StatusCode::PERMISSION_DENIED);
  call->Cancel();
  (void)call->Finish();
  EXPECT_EQ(Denied("FetchDataset", "permission_denied"), 2);
}

// A learner without mutual TLS cannot tell which certificate an actor
// holds: it refuses bound tickets (rather than accept them as bearer
// credentials), saying what to fix; unbound ones work as before.
TEST_F(LearnerBoundTicketTest, ALearnerWithoutMutualTlsRefusesBoundTickets) {
  Serve(kToken, kKey0,
        {certs_->Path("server.pem"), certs_->Path("server.key"),
         /*ca_file=*/""});
  CallAs({"", "", certs_->Path("ca.pem")});
  const ActResult bound =
      Hello(Ticket("a1", kKey0, absl::Now(), kMember, cert_a_), "a1");
  EXPECT_FALSE(bound.first.has_value());
  EXPECT_EQ(bound.status.code(), absl::StatusCode::kPermissionDenied)
      << bound.status;
  EXPECT_NE(bound.status.message().find("mutual TLS"), absl::string_view::npos)
      << bound.status;
  EXPECT_TRUE(Hello(Ticket("a1", kKey0), "a1").first.has_value());
  EXPECT_EQ(Denied("Act", "permission_denied"), 1);
}

}  // namespace
}  // namespace ristretto::learner
