// A throw-away certificate authority and the server and client certificates
// signed by it, made in-process with OpenSSL's libcrypto (the library gRPC's
// TLS already loads): `ristretto up` makes a fresh set per run so that its
// coordinator, learner and actors talk mutual TLS without the operator
// preparing anything. scripts/make_dev_certs.sh makes the same kind of set
// with the openssl command for deployments that outlive one run.
//
// Keys are P-256; the CA's private key is never written (nothing can be
// issued from it after this call returns). Every file is written mode 600
// through a temporary and a rename.
//
// Thread-safety: no shared state; safe from any thread.
#ifndef RISTRETTO_COMMON_DEV_CERTS_H_
#define RISTRETTO_COMMON_DEV_CERTS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ristretto {

// A client certificate that names its holder: `uri` becomes its only URI
// subject alternative name (e.g. auth::CertificateNameUri's
// "urn:ristretto:actor:actor-0"), written as `file`.pem and `file`.key.
struct NamedClient {
  std::string file;  // letters, digits, '-', '_'; not ca, server or client
  std::string uri;   // letters, digits and - . _ ~ : % only
};

struct DevCertificates {
  std::string ca_cert;      // ca.pem: verifies both servers and clients
  std::string server_cert;  // server.pem: serverAuth + clientAuth, SANs below
  std::string server_key;   // server.key
  std::string client_cert;  // client.pem: clientAuth
  std::string client_key;   // client.key
  struct Named {
    std::string cert;  // <file>.pem: clientAuth, the URI SAN
    std::string key;   // <file>.key
  };
  std::vector<Named> named;  // one per NamedClient, in order
};

// Writes ca.pem, server.pem, server.key, client.pem and client.key into
// `dir` (created mode 700 if missing; existing files of those names are
// replaced) and returns their paths. The server certificate is valid for
// localhost and 127.0.0.1 plus `extra_names` (DNS names or IP addresses;
// anything else is kInvalidArgument) for `days` days from an hour ago.
// Each of `named_clients` adds a client certificate naming its holder
// (`ristretto up` gives every actor and learner its own); a bad file name
// or URI is kInvalidArgument before anything is written.
// kInternal naming the step when libcrypto fails; I/O errors name the file.
absl::StatusOr<DevCertificates> MakeDevCertificates(
    const std::string& dir, const std::vector<std::string>& extra_names = {},
    int days = 30, const std::vector<NamedClient>& named_clients = {});

}  // namespace ristretto

#endif  // RISTRETTO_COMMON_DEV_CERTS_H_
