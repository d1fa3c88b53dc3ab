// PgCluster: a private PostgreSQL server in a data directory, for
// `ristretto up` and the test harness (initdb + pg_ctl from Debian's
// postgresql package, /usr/lib/postgresql/<major>/bin). Listens on a Unix
// socket in the data directory and on 127.0.0.1:<port>. When run as root
// (CI), the server runs as the unprivileged "postgres" user (runuser), since
// initdb refuses root; the data directory is chowned to it.
// Not thread-safe.
#ifndef RISTRETTO_COORDINATOR_STORE_PG_CLUSTER_H_
#define RISTRETTO_COORDINATOR_STORE_PG_CLUSTER_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ristretto::coordinator {

struct PgClusterOptions {
  std::string data_dir;  // created and initdb'ed when empty or missing
  int port = 0;          // 0 = pick a free port
  std::string database = "ristretto";  // created if missing
  std::string bin_dir;  // empty = newest /usr/lib/postgresql/*/bin
  // Tests only: fsync=off, full_page_writes=off, synchronous_commit=off,
  // initdb --no-sync --wal-segsize=1. Fast, but an OS crash or power loss
  // can corrupt the cluster. `ristretto up` keeps the default (durable).
  bool unsafe_fast = false;
  // The caller holds the data directory exclusively (`ristretto up`'s lock
  // on it): a server found running there is an orphan of an earlier process
  // that died without stopping it (kill -9), and Start stops it first
  // (pg_ctl stop -m fast) instead of failing on its lock file. Only a live
  // `postgres` started on this data directory is stopped: the PID in a
  // stale postmaster.pid may since belong to another process.
  bool stop_stale_server = false;
};

class PgCluster {
 public:
  // initdb (if needed), pg_ctl start -w, createdb (if needed). Errors name
  // the failing tool and include its output.
  static absl::StatusOr<std::unique_ptr<PgCluster>> Start(
      const PgClusterOptions& options);
  ~PgCluster();  // Stop() if running

  // pg_ctl stop -m fast (idempotent).
  absl::Status Stop();
  // Stop + start on the same port and data directory.
  absl::Status Restart();
  // libpq connection string for the database (Unix socket).
  std::string dsn() const;
  // Same, for another database of this cluster.
  std::string DsnFor(const std::string& database) const;
  // Creates `database` if it does not exist (createdb). Errors name the tool
  // and include its output.
  absl::Status CreateDatabase(const std::string& database);
  int port() const;
  const std::string& data_dir() const;

 private:
  class Impl;
  explicit PgCluster(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ristretto::coordinator

#endif  // RISTRETTO_COORDINATOR_STORE_PG_CLUSTER_H_
