#include "wire/dataset_cache.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status_macros.h"

namespace ristretto::wire {

absl::Status ReceiveDatasetFile(
    grpc::ClientReaderInterface<v1::DatasetPiece>* reader,
    grpc::ClientContext* ctx, const std::string& id, const std::string& path) {
  namespace fs = std::filesystem;
  // A per-process temporary: processes sharing a cache never write one file.
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  absl::Status status;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      status =
          absl::FailedPreconditionError(absl::StrCat("cannot write ", tmp));
      ctx->TryCancel();
    }
    v1::DatasetPiece piece;
    int64_t written = 0, total = -1;
    bool last = false;
    while (status.ok() && reader->Read(&piece)) {
      if (last || piece.offset() != written ||
          (total >= 0 && piece.total_size() != total) ||
          written + static_cast<int64_t>(piece.data().size()) >
              piece.total_size()) {
        status = absl::DataLossError(
            absl::StrCat("dataset piece at offset ", piece.offset(), " of ",
                         piece.total_size(), " bytes does not follow ", written,
                         " bytes received"));
        ctx->TryCancel();
        break;
      }
      total = piece.total_size();
      out.write(piece.data().data(),
                static_cast<std::streamsize>(piece.data().size()));
      written += static_cast<int64_t>(piece.data().size());
      last = piece.last();
    }
    const grpc::Status finish = reader->Finish();
    out.close();
    if (status.ok() && !finish.ok()) {
      status = absl::UnavailableError(
          absl::StrCat("FetchDataset ", id, ": ", finish.error_message(),
                       " (code ", static_cast<int>(finish.error_code()), ")"));
    } else if (status.ok() && (!last || written != total)) {
      status = absl::DataLossError(absl::StrCat(
          "dataset ", id, " ended after ", written, " of ", total, " bytes"));
    } else if (status.ok() && !out) {
      status = absl::InternalError(absl::StrCat("writing ", tmp, " failed"));
    }
  }
  std::error_code ec;
  if (status.ok()) {
    fs::rename(tmp, path, ec);
    if (ec) {
      status = absl::InternalError(
          absl::StrCat("renaming ", tmp, " to ", path, ": ", ec.message()));
    }
  }
  if (!status.ok()) fs::remove(tmp, ec);
  return status;
}

absl::StatusOr<env::Dataset> LoadOrFetchDataset(
    const std::string& cache_dir, const std::string& id,
    const std::function<absl::Status(const std::string& path)>& fetch) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(cache_dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot create the dataset cache ", cache_dir, ": ", ec.message()));
  }
  const std::string path = (fs::path(cache_dir) / (id + ".rds")).string();
  if (fs::exists(path, ec)) {
    absl::StatusOr<env::Dataset> cached = env::ReadDataset(path);
    if (cached.ok() && cached->ComputeId() == id) return cached;
    RLOG(WARNING) << "cached " << path << " is unusable ("
                  << (cached.ok() ? "wrong id" : cached.status().ToString())
                  << "); fetching";
    fs::remove(path, ec);
  }
  RETURN_IF_ERROR(fetch(path));
  absl::StatusOr<env::Dataset> dataset = env::ReadDataset(path);
  if (dataset.ok() && dataset->ComputeId() == id) return dataset;
  fs::remove(path, ec);
  if (!dataset.ok() &&
      dataset.status().code() == absl::StatusCode::kUnimplemented) {
    return Annotate(dataset.status(), absl::StrCat("dataset ", id));
  }
  return absl::DataLossError(absl::StrCat(
      "fetched dataset ", id, " does not verify: ",
      dataset.ok()
          ? absl::StrCat("its content hashes to ", dataset->ComputeId())
          : dataset.status().ToString()));
}

}  // namespace ristretto::wire
