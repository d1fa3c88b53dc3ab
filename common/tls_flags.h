// The TLS flags every ristretto process binary accepts, declared once:
//   --tls-cert FILE   PEM certificate chain (servers; clients under mTLS)
//   --tls-key FILE    its private key, mode 600
//   --tls-ca FILE     servers: require client certificates signed by it
//                     (mutual TLS); clients: verify the server against it
// Meaning per role: common/grpc_security.h. Linking this library's object
// (calling TlsFilesFromFlags) registers the flags with the binary.
//
// Thread-safety: read the flags after parsing the command line.
#ifndef RISTRETTO_COMMON_TLS_FLAGS_H_
#define RISTRETTO_COMMON_TLS_FLAGS_H_

#include "common/grpc_security.h"

namespace ristretto {

// The files named by --tls-cert, --tls-key and --tls-ca.
TlsFiles TlsFilesFromFlags();

// True when the process binary was given --tls-ca: a server then requires
// client certificates, and that authenticates its callers.
bool MutualTlsFromFlags();

}  // namespace ristretto

#endif  // RISTRETTO_COMMON_TLS_FLAGS_H_
