// The TLS flags every ristretto process binary accepts, declared once:
//   --tls-cert FILE   PEM certificate chain (servers; clients under mTLS)
//   --tls-key FILE    its private key, mode 600
//   --tls-ca FILE     servers: require client certificates signed by it
//                     (mutual TLS); clients: verify the server against it
// Meaning per role: common/grpc_security.h. Linking this library's object
// (calling TlsFilesFromFlags) registers the flags with the binary.
//
// A learner is both a server (to actors) and a client (of the
// coordinator). Its client side has flags of its own, declared in
// learner/learner_main.cc (only the learner has them):
//   --coordinator-tls-ca FILE    verifies the coordinator (default: --tls-ca)
//   --coordinator-tls-cert FILE  with --coordinator-tls-key: the client
//   --coordinator-tls-key FILE   certificate shown to a coordinator under
//                                mutual TLS (default: --tls-cert/--tls-key)
// so that --tls-ca can require client certificates from actors signed by
// one CA while the coordinator's certificate comes from another.
//
// Thread-safety: read the flags after parsing the command line.
#ifndef RISTRETTO_COMMON_TLS_FLAGS_H_
#define RISTRETTO_COMMON_TLS_FLAGS_H_

#include "absl/status/statusor.h"
#include "common/grpc_security.h"

namespace ristretto {

// The files named by --tls-cert, --tls-key and --tls-ca.
TlsFiles TlsFilesFromFlags();

// True when the process binary was given --tls-ca: a server then requires
// client certificates, and that authenticates its callers.
bool MutualTlsFromFlags();

// The learner's credentials towards the coordinator: `client` (its
// --coordinator-tls-* files) with every empty part taken from `server` (its
// --tls-* files): ca from server.ca_file; cert and key, which must be given
// together, from server.cert_file/key_file. kInvalidArgument, naming the
// flags, for a client cert without its key (or the reverse), or for a
// client certificate with no CA to verify the coordinator against (TLS
// without verification is not offered; give --coordinator-tls-ca).
absl::StatusOr<TlsFiles> CoordinatorClientTlsFiles(const TlsFiles& server,
                                                   const TlsFiles& client);

}  // namespace ristretto

#endif  // RISTRETTO_COMMON_TLS_FLAGS_H_
