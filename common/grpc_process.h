// Process-wide gRPC setting for the binaries (learner, actor, coordinator,
// CLI). Header-only; the including target links gRPC.
#ifndef RISTRETTO_COMMON_GRPC_PROCESS_H_
#define RISTRETTO_COMMON_GRPC_PROCESS_H_

#include <grpc/grpc.h>

namespace ristretto {

// Takes a reference on the gRPC library that is never given back, so that
// no grpc::Server or channel destructor runs gRPC's global shutdown. That
// shutdown joins gRPC's executor threads, and on gRPC 1.51 one of them can
// sit in a poll until its next timer (measured: 6–10 s after a learner had
// streamed chunks; grpc/grpc#41050 reports the same on 1.51.1). Exiting
// with the reference held lets the process end at once; the OS reclaims
// what gRPC held. Call once, first thing in main.
inline void HoldGrpcUntilExit() { grpc_init(); }

}  // namespace ristretto

#endif  // RISTRETTO_COMMON_GRPC_PROCESS_H_
