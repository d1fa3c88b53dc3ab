// Dataset files fetched over gRPC (Learner.FetchDataset, Coordinator.
// FetchDataset) and cached on disk by content id, shared by actors and
// learners: `<cache_dir>/<id>.rds`, written through a per-process temporary
// and a rename, verified by re-hashing before use.
// Thread-compatible; processes may share one cache directory.
#ifndef RISTRETTO_WIRE_DATASET_CACHE_H_
#define RISTRETTO_WIRE_DATASET_CACHE_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "env/dataset.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/sync_stream.h"
#include "proto/ristretto.pb.h"

namespace ristretto::wire {

// Reads a piece stream (in order, offsets contiguous, `last` on the final
// piece) into `path` atomically. Errors: kDataLoss for out-of-order or
// truncated streams, kUnavailable when the server failed the call,
// kFailedPrecondition/kInternal for local file errors. `ctx` is cancelled on
// a bad piece.
absl::Status ReceiveDatasetFile(
    grpc::ClientReaderInterface<v1::DatasetPiece>* reader,
    grpc::ClientContext* ctx, const std::string& id, const std::string& path);

// Returns the dataset `id` from `cache_dir`, calling `fetch(path)` to
// download it when it is absent or does not verify. Errors: as `fetch`;
// kDataLoss when the fetched file hashes to another id.
absl::StatusOr<env::Dataset> LoadOrFetchDataset(
    const std::string& cache_dir, const std::string& id,
    const std::function<absl::Status(const std::string& path)>& fetch);

}  // namespace ristretto::wire

#endif  // RISTRETTO_WIRE_DATASET_CACHE_H_
