// The throw-away certificates `ristretto up` makes (common/dev_certs.h):
// the files and their modes, and mutual TLS with them on a real gRPC server
// on 127.0.0.1 (who gets in, who does not). Also the learner's
// coordinator-side TLS files (CoordinatorClientTlsFiles, tls_flags.h),
// and the named client certificates (one per actor and learner).
#include "common/dev_certs.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "common/cert_identity.h"
#include "common/grpc_security.h"
#include "common/tls_flags.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/common/temp_dir.h"
#include "tests/common/tls_test_server.h"

namespace ristretto {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

int Mode(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return static_cast<int>(st.st_mode & 07777);
}

class DevCertsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<DevCertificates> certs =
        MakeDevCertificates(dir_.Path("tls"));
    ASSERT_TRUE(certs.ok()) << certs.status();
    certs_ = *certs;
  }

  // A mutual-TLS server with the certificates; returns its port.
  int ServeMutualTls() {
    return server_.Start(
        {certs_.server_cert, certs_.server_key, certs_.ca_cert});
  }

  // One GetStatus call to HOST:port with client `files`.
  static grpc::Status Call(const std::string& host, int port,
                           const TlsFiles& files) {
    return tests::CallGetStatus(host, port, files);
  }

  tests::TempDir dir_{"dev-certs"};
  DevCertificates certs_;
  tests::StatusOnlyServer server_;
};

TEST_F(DevCertsTest, WritesPrivateFilesAndNeverTheCaKey) {
  EXPECT_EQ(Mode(dir_.Path("tls")), 0700);
  for (const std::string& f :
       {certs_.ca_cert, certs_.server_cert, certs_.server_key,
        certs_.client_cert, certs_.client_key}) {
    EXPECT_EQ(Mode(f), 0600) << f;
  }
  const std::vector<std::string> names = [&] {
    std::vector<std::string> out;
    for (const auto& e :
         std::filesystem::directory_iterator(dir_.Path("tls"))) {
      out.push_back(e.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }();
  EXPECT_THAT(names, ElementsAre("ca.pem", "client.key", "client.pem",
                                 "server.key", "server.pem"));
}

TEST_F(DevCertsTest, MutualTlsLetsInOnlyHoldersOfACertificateFromTheCa) {
  const int port = ServeMutualTls();
  // Actors (client.pem) and a learner towards the coordinator (either).
  EXPECT_TRUE(Call("127.0.0.1", port,
                   {certs_.client_cert, certs_.client_key, certs_.ca_cert})
                  .ok());
  EXPECT_TRUE(Call("localhost", port,
                   {certs_.server_cert, certs_.server_key, certs_.ca_cert})
                  .ok());
  // No client certificate, or none at all: the handshake fails.
  EXPECT_EQ(Call("127.0.0.1", port, {"", "", certs_.ca_cert}).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(Call("127.0.0.1", port, {}).error_code(),
            grpc::StatusCode::UNAVAILABLE);
}

TEST_F(DevCertsTest, EveryCallMakesANewCaThatTheOldCertificatesDoNotPass) {
  const int port = ServeMutualTls();
  tests::TempDir other("other-certs");
  absl::StatusOr<DevCertificates> stale = MakeDevCertificates(other.path());
  ASSERT_TRUE(stale.ok()) << stale.status();
  // A client from another run: its certificate is not signed by this CA,
  // and its CA does not verify this server.
  EXPECT_EQ(Call("127.0.0.1", port,
                 {stale->client_cert, stale->client_key, certs_.ca_cert})
                .error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(Call("127.0.0.1", port,
                 {certs_.client_cert, certs_.client_key, stale->ca_cert})
                .error_code(),
            grpc::StatusCode::UNAVAILABLE);
}

TEST(DevCertsNamesTest, ExtraNamesAreDnsOrIpAndNothingElse) {
  tests::TempDir dir("dev-certs-names");
  EXPECT_TRUE(
      MakeDevCertificates(dir.Path("ok"), {"coordinator", "10.0.0.7", "::1"})
          .ok());
  absl::StatusOr<DevCertificates> bad =
      MakeDevCertificates(dir.Path("bad"), {"a b,IP:1.2.3.4"});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("not a DNS name"));
  EXPECT_FALSE(std::filesystem::exists(dir.Path("bad")));
}

// The URI subject alternative names of the certificate in `pem_file`.
std::vector<std::string> UriNames(const std::string& pem_file) {
  absl::StatusOr<std::vector<std::string>> uris = ReadCertificateUris(pem_file);
  EXPECT_TRUE(uris.ok()) << uris.status();
  return uris.value_or(std::vector<std::string>{});
}

TEST(DevCertsNamedClientsTest, EachNamesItsHolderAndPassesMutualTls) {
  tests::TempDir dir("dev-certs-named");
  absl::StatusOr<DevCertificates> certs =
      MakeDevCertificates(dir.Path("tls"), {}, 30,
                          {{"learner-0", "urn:ristretto:learner:learner-0"},
                           {"actor-0", "urn:ristretto:actor:actor-0"},
                           {"actor-1", "urn:ristretto:actor:a%20b"}});
  ASSERT_TRUE(certs.ok()) << certs.status();
  ASSERT_EQ(certs->named.size(), 3u);
  EXPECT_EQ(certs->named[1].cert, dir.Path("tls") + "/actor-0.pem");
  EXPECT_EQ(certs->named[1].key, dir.Path("tls") + "/actor-0.key");
  EXPECT_THAT(UriNames(certs->named[0].cert),
              ElementsAre("urn:ristretto:learner:learner-0"));
  EXPECT_THAT(UriNames(certs->named[1].cert),
              ElementsAre("urn:ristretto:actor:actor-0"));
  EXPECT_THAT(UriNames(certs->named[2].cert),
              ElementsAre("urn:ristretto:actor:a%20b"));
  EXPECT_TRUE(UriNames(certs->client_cert).empty());
  tests::StatusOnlyServer server;
  const int port =
      server.Start({certs->server_cert, certs->server_key, certs->ca_cert});
  for (const DevCertificates::Named& named : certs->named) {
    EXPECT_EQ(Mode(named.key), 0600);
    EXPECT_TRUE(tests::CallGetStatus("127.0.0.1", port,
                                     {named.cert, named.key, certs->ca_cert})
                    .ok())
        << named.cert;
  }
}

TEST(DevCertsNamedClientsTest, BadFileNamesAndUrisAreRefusedBeforeWriting) {
  tests::TempDir dir("dev-certs-named-bad");
  const std::vector<std::vector<NamedClient>> bad = {
      {{"client", "urn:ristretto:actor:x"}},  // the shared client.pem
      {{"../x", "urn:ristretto:actor:x"}},
      {{"", "urn:ristretto:actor:x"}},
      {{"a", "urn:ristretto:actor:x,DNS:evil.example"}},  // config injection
      {{"a", "no-colon"}},
      {{"a", "urn:ristretto:actor:x"}, {"a", "urn:ristretto:actor:y"}},
  };
  for (const std::vector<NamedClient>& clients : bad) {
    const absl::StatusOr<DevCertificates> certs =
        MakeDevCertificates(dir.Path("tls"), {}, 30, clients);
    EXPECT_EQ(certs.status().code(), absl::StatusCode::kInvalidArgument)
        << clients.front().file << " " << clients.front().uri;
    EXPECT_FALSE(std::filesystem::exists(dir.Path("tls")));
  }
}

TEST(CertIdentityTest, ANamedCertificateDecidesTheIdAndRefusesAnother) {
  tests::TempDir dir("cert-identity");
  absl::StatusOr<DevCertificates> certs =
      MakeDevCertificates(dir.Path("tls"), {}, 30,
                          {{"actor-0", "urn:ristretto:actor:actor-0"},
                           {"learner-0", "urn:ristretto:learner:learner-0"},
                           {"odd", "urn:ristretto:actor:%zz"}});
  ASSERT_TRUE(certs.ok()) << certs.status();
  const std::string actor_cert = certs->named[0].cert;
  const std::string learner_cert = certs->named[1].cert;
  using auth::Role;
  // No certificate, or one that names nothing: the id as given.
  EXPECT_EQ(*ResolveIdFromCertificate(Role::kActor, "", "", "--actor-id"), "");
  EXPECT_EQ(*ResolveIdFromCertificate(Role::kActor, "a", certs->client_cert,
                                      "--actor-id"),
            "a");
  EXPECT_EQ(*ResolveIdFromCertificate(Role::kActor, "", certs->client_cert,
                                      "--actor-id"),
            "");
  // Named: its id when none is given, the same id given, no other.
  EXPECT_EQ(
      *ResolveIdFromCertificate(Role::kActor, "", actor_cert, "--actor-id"),
      "actor-0");
  EXPECT_EQ(*ResolveIdFromCertificate(Role::kActor, "actor-0", actor_cert,
                                      "--actor-id"),
            "actor-0");
  absl::StatusOr<std::string> other = ResolveIdFromCertificate(
      Role::kActor, "actor-1", actor_cert, "--actor-id");
  EXPECT_EQ(other.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(other.status().message(),
              HasSubstr("--actor-id 'actor-1' is not named by the client "
                        "certificate " +
                        actor_cert + " (it names actor ids 'actor-0')"));
  EXPECT_EQ(*ResolveIdFromCertificate(Role::kLearner, "", learner_cert,
                                      "--member-id"),
            "learner-0");
  // A certificate for the other role, or naming nothing usable.
  absl::StatusOr<std::string> wrong_role =
      ResolveIdFromCertificate(Role::kLearner, "", actor_cert, "--member-id");
  EXPECT_EQ(wrong_role.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(wrong_role.status().message(),
              HasSubstr("names 0 learner member ids (none): it is not a "
                        "certificate for this role"));
  EXPECT_EQ(ResolveIdFromCertificate(Role::kActor, "", certs->named[2].cert,
                                     "--actor-id")
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  // Files that are not certificates.
  EXPECT_EQ(ResolveIdFromCertificate(Role::kActor, "", dir.Path("missing"),
                                     "--actor-id")
                .status()
                .code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(ResolveIdFromCertificate(Role::kActor, "", certs->named[0].key,
                                     "--actor-id")
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CoordinatorClientTlsFilesTest, EachPartDefaultsToTheServersFile) {
  const TlsFiles server{"s.pem", "s.key", "actors-ca.pem"};
  absl::StatusOr<TlsFiles> same = CoordinatorClientTlsFiles(server, {});
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(same->cert_file, "s.pem");
  EXPECT_EQ(same->key_file, "s.key");
  EXPECT_EQ(same->ca_file, "actors-ca.pem");
  // Another CA for the coordinator: actors stay under theirs.
  absl::StatusOr<TlsFiles> split =
      CoordinatorClientTlsFiles(server, {"", "", "coord-ca.pem"});
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->ca_file, "coord-ca.pem");
  EXPECT_EQ(split->cert_file, "s.pem");
  absl::StatusOr<TlsFiles> own =
      CoordinatorClientTlsFiles(server, {"c.pem", "c.key", ""});
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(own->cert_file, "c.pem");
  EXPECT_EQ(own->key_file, "c.key");
  EXPECT_EQ(own->ca_file, "actors-ca.pem");
  // TLS to actors without mutual TLS, the coordinator verified by its CA.
  absl::StatusOr<TlsFiles> server_only = CoordinatorClientTlsFiles(
      {"s.pem", "s.key", ""}, {"", "", "coord-ca.pem"});
  ASSERT_TRUE(server_only.ok()) << server_only.status();
  EXPECT_EQ(server_only->ca_file, "coord-ca.pem");
  // Nothing anywhere: plaintext (development).
  absl::StatusOr<TlsFiles> none = CoordinatorClientTlsFiles({}, {});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(CoordinatorClientTlsFilesTest, HalfAPairOrNoCaIsRefusedNamingTheFlags) {
  const TlsFiles server{"s.pem", "s.key", "ca.pem"};
  EXPECT_THAT(
      CoordinatorClientTlsFiles(server, {"c.pem", "", ""}).status().message(),
      HasSubstr("--coordinator-tls-cert needs --coordinator-tls-key"));
  EXPECT_THAT(
      CoordinatorClientTlsFiles(server, {"", "c.key", ""}).status().message(),
      HasSubstr("--coordinator-tls-key needs --coordinator-tls-cert"));
  const absl::Status no_ca =
      CoordinatorClientTlsFiles({"s.pem", "s.key", ""}, {}).status();
  EXPECT_EQ(no_ca.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(no_ca.message(), HasSubstr("--coordinator-tls-ca"));
}

}  // namespace
}  // namespace ristretto
