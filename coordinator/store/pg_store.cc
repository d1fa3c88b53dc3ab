// PgStore: Store on libpqxx 6.4. Every public method is one transaction run
// through Impl::Transact, which owns the retry policy:
//  * connection lost (pqxx::broken_connection, SQLSTATE class 08, 57P01-03)
//    → reconnect with exponential backoff and rerun the whole transaction;
//  * deadlock / serialization failure → rerun;
//  * COMMIT lost with the connection ("in doubt") → reconnect and ask the
//    server with txid_status(txid) whether that transaction committed: if it
//    did, the result computed before COMMIT is returned, otherwise the
//    transaction is rerun. So no retry ever applies a change twice;
//  * anything else → kInternal with the server's message.
//
// Reads (writes = false) run REPEATABLE READ, READ ONLY: every statement of
// a read sees the snapshot its first statement took, so a read that issues
// several statements (trials, then their params) never sees a row in one
// and not in the other, whatever the coordinator writes meanwhile.
//
// Lock order (avoids deadlocks; a deadlock would still only cost a retry):
// study row, then trial row, then run rows in ascending id. Row locks are
// FOR NO KEY UPDATE, which unlike FOR UPDATE does not block the foreign-key
// checks of concurrent inserts into child tables.
#include "coordinator/store/pg_store.h"

#include <libpq-fe.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <pqxx/pqxx>
#include <set>
#include <stdexcept>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "coordinator/store/migrations.h"
#include "coordinator/store/store_checks.h"

namespace ristretto::coordinator {
namespace {

// pg_advisory_xact_lock key serialising migrators ("ristre" in ASCII).
constexpr int64_t kMigrationLockKey = 0x726973747265;

// Server-side timestamps are read as microseconds since the Unix epoch:
// (EXTRACT(EPOCH FROM col) * 1000000)::bigint.
constexpr char kStudyColumns[] =
    "s.id, s.name, s.config_text, s.state, "
    "(EXTRACT(EPOCH FROM s.created_at) * 1000000)::bigint, "
    "(EXTRACT(EPOCH FROM s.updated_at) * 1000000)::bigint, s.stop_reason";
constexpr char kTrialColumns[] =
    "t.id, t.study_id, t.number, t.state, t.score, t.fail_reason, "
    "(EXTRACT(EPOCH FROM t.created_at) * 1000000)::bigint, "
    "(EXTRACT(EPOCH FROM t.finished_at) * 1000000)::bigint";
constexpr char kRunColumns[] =
    "r.id, r.trial_id, r.study_id, r.fold, r.state, r.config_json, "
    "r.attempts, COALESCE(r.member_id, ''), "
    "(EXTRACT(EPOCH FROM r.lease_expires_at) * 1000000)::bigint, "
    "r.env_steps, r.checkpoint_dir, r.last_error, "
    "(EXTRACT(EPOCH FROM r.retry_after) * 1000000)::bigint, r.avoid_member, "
    "(EXTRACT(EPOCH FROM r.avoid_until) * 1000000)::bigint, "
    "r.env_steps_received, r.env_steps_dropped";
constexpr char kDatasetColumns[] =
    "d.id, d.path, d.symbols, d.rows, d.interval_seconds, "
    "(EXTRACT(EPOCH FROM d.created_at) * 1000000)::bigint";
constexpr char kMemberColumns[] =
    "m.id, m.kind, m.address, m.capacity_json, "
    "(EXTRACT(EPOCH FROM m.first_seen) * 1000000)::bigint, "
    "(EXTRACT(EPOCH FROM m.last_seen) * 1000000)::bigint";
constexpr char kFoldMetricsColumns[] =
    "f.sharpe, f.benchmark_sharpe, f.sortino, f.max_drawdown, f.calmar, "
    "f.total_return, f.benchmark_return, f.trades, f.env_steps, f.fold, "
    "f.fees, f.turnover, f.exposure, f.score, f.log_returns";

// Per-bar returns as text: space-separated, 9 significant digits (float
// precision is plenty for statistics of returns).
std::string ReturnsText(const std::vector<double>& values) {
  std::string out;
  out.reserve(values.size() * 14);
  char buf[32];
  for (size_t i = 0; i < values.size(); ++i) {
    const int n =
        std::snprintf(buf, sizeof(buf), "%s%.9g", i ? " " : "", values[i]);
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

std::vector<double> ParseReturnsText(const std::string& text) {
  std::vector<double> out;
  const char* p = text.c_str();
  char* end = nullptr;
  while (*p != '\0') {
    const double v = std::strtod(p, &end);
    if (end == p) break;
    out.push_back(v);
    p = end;
  }
  return out;
}

// SQL for "parameter $n (microseconds since the epoch) as timestamptz".
std::string TsParam(int n) {
  return absl::StrCat("(TIMESTAMPTZ 'epoch' + $", n,
                      "::bigint * INTERVAL '1 microsecond')");
}

int64_t Micros(absl::Time t) { return absl::ToUnixMicros(t); }

absl::Time TimeField(const pqxx::field& f) {
  return absl::FromUnixMicros(f.as<int64_t>());
}

std::optional<absl::Time> OptionalTimeField(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return TimeField(f);
}

// A state column as its enum (states.h). The schema CHECKs every state
// column, so text that does not parse means a schema this binary does not
// know: thrown, and reported by Guard as kInternal naming the text.
template <typename E>
E StateField(const pqxx::field& f,
             absl::StatusOr<E> (*parse)(absl::string_view)) {
  absl::StatusOr<E> state = parse(f.as<std::string>());
  if (!state.ok())
    throw std::runtime_error(std::string(state.status().message()));
  return *state;
}

StudyRow ParseStudy(const pqxx::row& r) {
  StudyRow s;
  s.id = r[0].as<int64_t>();
  s.name = r[1].as<std::string>();
  s.config_text = r[2].as<std::string>();
  s.state = StateField(r[3], ParseStudyState);
  s.created_at = TimeField(r[4]);
  s.updated_at = TimeField(r[5]);
  s.stop_reason = r[6].as<std::string>();
  return s;
}

TrialRow ParseTrial(const pqxx::row& r) {
  TrialRow t;
  t.id = r[0].as<int64_t>();
  t.study_id = r[1].as<int64_t>();
  t.number = r[2].as<int64_t>();
  t.state = StateField(r[3], ParseTrialState);
  if (!r[4].is_null()) t.score = r[4].as<double>();
  t.fail_reason = r[5].as<std::string>();
  t.created_at = TimeField(r[6]);
  t.finished_at = OptionalTimeField(r[7]);
  return t;
}

RunRow ParseRun(const pqxx::row& r) {
  RunRow run;
  run.id = r[0].as<int64_t>();
  run.trial_id = r[1].as<int64_t>();
  run.study_id = r[2].as<int64_t>();
  run.fold = r[3].as<int>();
  run.state = StateField(r[4], ParseRunState);
  run.config_json = r[5].as<std::string>();
  run.attempts = r[6].as<int>();
  run.member_id = r[7].as<std::string>();
  run.lease_expires_at = OptionalTimeField(r[8]);
  run.env_steps = r[9].as<int64_t>();
  run.checkpoint_dir = r[10].as<std::string>();
  run.last_error = r[11].as<std::string>();
  run.retry_after = OptionalTimeField(r[12]);
  run.avoid_member = r[13].as<std::string>();
  run.avoid_until = OptionalTimeField(r[14]);
  run.env_steps_received = r[15].as<int64_t>();
  run.env_steps_dropped = r[16].as<int64_t>();
  return run;
}

DatasetRow ParseDataset(const pqxx::row& r) {
  DatasetRow d;
  d.id = r[0].as<std::string>();
  d.path = r[1].as<std::string>();
  d.symbols = r[2].as<std::string>();
  d.rows = r[3].as<int64_t>();
  d.interval_seconds = r[4].as<int64_t>();
  d.created_at = TimeField(r[5]);
  return d;
}

MemberRow ParseMember(const pqxx::row& r) {
  MemberRow m;
  m.id = r[0].as<std::string>();
  m.kind = r[1].as<std::string>();
  m.address = r[2].as<std::string>();
  m.capacity_json = r[3].as<std::string>();
  m.first_seen = TimeField(r[4]);
  m.last_seen = TimeField(r[5]);
  return m;
}

FoldMetrics ParseFoldMetrics(const pqxx::row& r) {
  FoldMetrics f;
  f.sharpe = r[0].as<double>();
  f.benchmark_sharpe = r[1].as<double>();
  f.sortino = r[2].as<double>();
  f.max_drawdown = r[3].as<double>();
  f.calmar = r[4].as<double>();
  f.total_return = r[5].as<double>();
  f.benchmark_return = r[6].as<double>();
  f.trades = r[7].as<int64_t>();
  f.env_steps = r[8].as<int64_t>();
  f.fold = r[9].as<int>();
  f.fees = r[10].as<double>();
  f.turnover = r[11].as<double>();
  f.exposure = r[12].as<double>();
  f.score = r[13].as<double>();
  f.log_returns = ParseReturnsText(r[14].as<std::string>());
  return f;
}

bool IsConnectionState(const std::string& sqlstate) {
  // 08xxx connection exceptions; 57P01 admin shutdown, 57P02 crash
  // shutdown, 57P03 cannot connect now (server starting or stopping).
  return absl::StartsWith(sqlstate, "08") || sqlstate == "57P01" ||
         sqlstate == "57P02" || sqlstate == "57P03";
}

bool IsTransientState(const std::string& sqlstate) {
  return sqlstate == "40001" || sqlstate == "40P01";  // serialization, deadlock
}

// A connection refused for a reason that waiting will not fix.
class ConfigurationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// libpq's messages (server in an English locale) for a missing database or
// role and rejected credentials. Anything else is retried as an outage.
bool IsPermanentConnectError(absl::string_view message) {
  return absl::StrContains(message, "does not exist") ||
         absl::StrContains(message, "authentication failed") ||
         absl::StrContains(message, "no pg_hba.conf entry") ||
         absl::StrContains(message, "invalid connection option");
}

std::string Message(const std::exception& e) {
  return std::string(absl::StripTrailingAsciiWhitespace(e.what()));
}

struct ParsedDsn {
  std::string conninfo;  // what libpq connects with
  std::string server;    // host, port, database, user: no password
};

std::string QuoteConninfoValue(const std::string& value) {
  std::string quoted = "'";
  for (const char c : value) {
    if (c == '\\' || c == '\'') quoted.push_back('\\');
    quoted.push_back(c);
  }
  quoted.push_back('\'');
  return quoted;
}

// Parses a DSN (key=value or URI) and rebuilds it with defaults that keep a
// dead network from blocking a call for minutes: connect_timeout (the retry
// policy's budget, 2–10 s) and TCP keepalives. kInvalidArgument if libpq
// cannot parse it.
absl::StatusOr<ParsedDsn> ParseDsn(const std::string& dsn,
                                   absl::Duration give_up_after) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(dsn.c_str(), &error);
  if (options == nullptr) {
    std::string message = error != nullptr ? error : "out of memory";
    if (error != nullptr) PQfreemem(error);
    return absl::InvalidArgumentError(
        absl::StrCat("invalid PostgreSQL connection string: ",
                     absl::StripTrailingAsciiWhitespace(message)));
  }
  std::map<std::string, std::string> values;
  for (const PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (o->val != nullptr && o->val[0] != '\0') values[o->keyword] = o->val;
  }
  PQconninfoFree(options);
  ParsedDsn parsed;
  std::vector<std::string> parts;
  if (values.count("host") != 0) {
    parts.push_back(absl::StrCat("host=", values["host"]));
  } else if (values.count("hostaddr") != 0) {
    parts.push_back(absl::StrCat("hostaddr=", values["hostaddr"]));
  } else {
    parts.emplace_back("host=(libpq default)");
  }
  for (const char* key : {"port", "dbname", "user"}) {
    if (values.count(key) != 0) {
      parts.push_back(absl::StrCat(key, "=", values[key]));
    }
  }
  parsed.server = absl::StrJoin(parts, " ");
  const int64_t timeout_s = std::clamp<int64_t>(
      absl::ToInt64Seconds(absl::Ceil(give_up_after, absl::Seconds(1))), 2, 10);
  values.emplace("connect_timeout", absl::StrCat(timeout_s));
  values.emplace("keepalives_idle", "10");
  values.emplace("keepalives_interval", "5");
  values.emplace("keepalives_count", "3");
  std::vector<std::string> pairs;
  pairs.reserve(values.size());
  for (const auto& [key, value] : values) {
    pairs.push_back(absl::StrCat(key, "=", QuoteConninfoValue(value)));
  }
  parsed.conninfo = absl::StrJoin(pairs, " ");
  return parsed;
}

}  // namespace

class PgStore::Impl {
 public:
  template <typename T>
  using TxnFn = std::function<absl::StatusOr<T>(pqxx::dbtransaction&)>;
  // The transaction of a read: one snapshot for all its statements.
  using Snapshot = pqxx::transaction<pqxx::repeatable_read, pqxx::read_only>;

  Impl(std::string dsn, std::string server, RetryPolicy retry)
      : dsn_(std::move(dsn)), server_(std::move(server)), retry_(retry) {}

  // Runs `fn` in a transaction with the retries described at the top of the
  // file. `writes`: the transaction may change data, so a COMMIT lost with
  // the connection is resolved with txid_status before anything is rerun.
  // A non-OK status from `fn` rolls back and is returned as is.
  template <typename T>
  absl::StatusOr<T> Transact(const char* what, bool writes, const TxnFn<T>& fn);

  absl::Status TransactStatus(
      const char* what,
      const std::function<absl::Status(pqxx::dbtransaction&)>& fn) {
    return Transact<bool>(
               what, /*writes=*/true,
               [&](pqxx::dbtransaction& txn) -> absl::StatusOr<bool> {
                 RETURN_IF_ERROR(fn(txn));
                 return true;
               })
        .status();
  }

  // Called by a multi-statement read between its statements (tests only).
  void Between(const char* read) {
    if (between_) between_(read);
  }
  void SetBetweenHook(std::function<void(const char*)> hook) {
    between_ = std::move(hook);
  }

 private:
  enum class CommitState { kCommitted, kAborted, kUnknown };

  // Opens the connection if there is none.
  void EnsureConnected();
  // Runs `body`, mapping exceptions to a status: kUnavailable = connection
  // lost (reconnect and retry), kAborted = transient (retry), kInternal.
  absl::Status Guard(const char* what, const std::function<void()>& body);
  // Asks the server whether transaction `txid` committed.
  CommitState ResolveCommit(int64_t txid, std::string* error);

  const std::string dsn_;
  const std::string server_;  // DSN without password, for messages
  const RetryPolicy retry_;
  std::unique_ptr<pqxx::connection> conn_;
  std::function<void(const char*)> between_;
};

void PgStore::Impl::EnsureConnected() {
  if (conn_ != nullptr && conn_->is_open()) return;
  conn_.reset();
  std::unique_ptr<pqxx::connection> conn;
  try {
    conn = std::make_unique<pqxx::connection>(dsn_);
  } catch (const pqxx::broken_connection& e) {
    if (IsPermanentConnectError(e.what())) throw ConfigurationError(e.what());
    throw;
  }
  // NOTICEs (e.g. "already exists, skipping") would go to stderr.
  pqxx::nontransaction(*conn).exec("SET client_min_messages TO warning");
  conn_ = std::move(conn);
}

absl::Status PgStore::Impl::Guard(const char* what,
                                  const std::function<void()>& body) {
  try {
    body();
    return absl::OkStatus();
  } catch (const ConfigurationError& e) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, ": cannot connect to PostgreSQL at ", server_, ": ", Message(e)));
  } catch (const pqxx::broken_connection& e) {
    return absl::UnavailableError(Message(e));
  } catch (const pqxx::sql_error& e) {
    if (IsConnectionState(e.sqlstate())) {
      return absl::UnavailableError(Message(e));
    }
    if (IsTransientState(e.sqlstate())) return absl::AbortedError(Message(e));
    return absl::InternalError(
        absl::StrCat(what, ": ", Message(e), " (SQLSTATE ", e.sqlstate(), ")"));
  } catch (const pqxx::transaction_rollback& e) {
    return absl::AbortedError(Message(e));
  } catch (const pqxx::failure& e) {
    if (conn_ == nullptr || !conn_->is_open()) {
      return absl::UnavailableError(Message(e));
    }
    return absl::InternalError(absl::StrCat(what, ": ", Message(e)));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(what, ": ", Message(e)));
  }
}

PgStore::Impl::CommitState PgStore::Impl::ResolveCommit(int64_t txid,
                                                        std::string* error) {
  std::string status;
  bool known = false;
  const absl::Status guard = Guard("txid_status", [&] {
    EnsureConnected();
    pqxx::nontransaction txn(*conn_);
    const pqxx::row row = txn.exec_params1("SELECT txid_status($1)", txid);
    known = !row[0].is_null();
    if (known) status = row[0].as<std::string>();
  });
  if (!guard.ok()) {
    if (absl::IsUnavailable(guard)) conn_.reset();
    *error = std::string(guard.message());
    return CommitState::kUnknown;
  }
  if (known && status == "committed") return CommitState::kCommitted;
  if (known && status == "aborted") return CommitState::kAborted;
  *error = absl::StrCat("outcome of transaction ", txid, " unknown (",
                        known ? status : "too old", ")");
  return CommitState::kUnknown;
}

template <typename T>
absl::StatusOr<T> PgStore::Impl::Transact(const char* what, bool writes,
                                          const TxnFn<T>& fn) {
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + retry_.give_up_after;
  absl::Duration backoff = retry_.initial_backoff;
  std::string last_error;
  // Set while the outcome of a COMMIT is unknown: its txid and the result
  // computed before it.
  bool in_doubt = false;
  int64_t doubtful_txid = 0;
  absl::StatusOr<T> doubtful_result;
  for (int attempt = 1;; ++attempt) {
    bool retry_now = false;
    if (in_doubt) {
      switch (ResolveCommit(doubtful_txid, &last_error)) {
        case CommitState::kCommitted:
          return doubtful_result;
        case CommitState::kAborted:
          in_doubt = false;
          retry_now = true;
          break;
        case CommitState::kUnknown:
          break;
      }
    } else {
      std::optional<int64_t> txid;
      absl::StatusOr<T> result;
      bool commit_lost = false;
      const absl::Status guard = Guard(what, [&] {
        EnsureConnected();
        std::unique_ptr<pqxx::dbtransaction> txn;
        if (writes) {
          txn = std::make_unique<pqxx::work>(*conn_);
          txid = txn->exec1("SELECT txid_current()")[0].template as<int64_t>();
        } else {
          txn = std::make_unique<Snapshot>(*conn_);
        }
        result = fn(*txn);
        if (!result.ok()) return;  // the destructor rolls back
        try {
          txn->commit();
        } catch (const pqxx::in_doubt_error&) {
          commit_lost = true;
        } catch (const pqxx::broken_connection&) {
          commit_lost = true;
        } catch (const pqxx::statement_completion_unknown&) {
          commit_lost = true;
        } catch (const pqxx::sql_error& e) {
          if (!IsConnectionState(e.sqlstate())) throw;
          commit_lost = true;
        }
      });
      if (guard.ok() && !commit_lost) return result;
      if (commit_lost) {
        conn_.reset();
        last_error = "connection lost during COMMIT";
        if (!txid.has_value()) {
          // Read-only: nothing to resolve, just rerun.
          retry_now = attempt == 1;
        } else {
          in_doubt = true;
          doubtful_txid = *txid;
          doubtful_result = std::move(result);
          retry_now = true;  // ask at once; backoff if the server is away
        }
      } else if (absl::IsUnavailable(guard)) {
        conn_.reset();
        last_error = std::string(guard.message());
        retry_now = attempt == 1;  // a stale connection: reconnect at once
      } else if (absl::IsAborted(guard)) {
        last_error = std::string(guard.message());
        retry_now = true;
      } else {
        return guard;
      }
    }
    if (retry_now && absl::Now() < deadline) continue;
    if (absl::Now() + backoff > deadline) {
      return absl::UnavailableError(absl::StrCat(
          what, ": PostgreSQL at ", server_, " unavailable for ",
          absl::FormatDuration(absl::Now() - start), " (", attempt,
          " attempts, giving up after ",
          absl::FormatDuration(retry_.give_up_after), "): ", last_error));
    }
    absl::SleepFor(backoff);
    backoff = std::min(backoff * 2, retry_.max_backoff);
  }
}

namespace {

absl::Status RequireStudy(pqxx::dbtransaction& txn, int64_t study_id) {
  if (txn.exec_params("SELECT 1 FROM studies WHERE id = $1", study_id)
          .empty()) {
    return absl::NotFoundError(absl::StrCat("no study with id ", study_id));
  }
  return absl::OkStatus();
}

// Locks the trial row and returns its state; kNotFound if missing.
absl::StatusOr<TrialState> LockTrial(pqxx::dbtransaction& txn,
                                     int64_t trial_id) {
  const pqxx::result r = txn.exec_params(
      "SELECT state FROM trials WHERE id = $1 FOR NO KEY UPDATE", trial_id);
  if (r.empty()) {
    return absl::NotFoundError(absl::StrCat("no trial with id ", trial_id));
  }
  return StateField(r[0][0], ParseTrialState);
}

absl::Status RequireTrial(pqxx::dbtransaction& txn, int64_t trial_id) {
  if (txn.exec_params("SELECT 1 FROM trials WHERE id = $1", trial_id).empty()) {
    return absl::NotFoundError(absl::StrCat("no trial with id ", trial_id));
  }
  return absl::OkStatus();
}

// Trial id of a run; kNotFound if missing.
absl::StatusOr<int64_t> TrialOfRun(pqxx::dbtransaction& txn, int64_t run_id) {
  const pqxx::result r =
      txn.exec_params("SELECT trial_id FROM runs WHERE id = $1", run_id);
  if (r.empty()) {
    return absl::NotFoundError(absl::StrCat("no run with id ", run_id));
  }
  return r[0][0].as<int64_t>();
}

// Locks every run of a trial, in id order (the lock order).
void LockRunsOfTrial(pqxx::dbtransaction& txn, int64_t trial_id) {
  txn.exec_params(
      "SELECT id FROM runs WHERE trial_id = $1 ORDER BY id FOR NO KEY UPDATE",
      trial_id);
}

// Cancels the queued and leased runs of a trial and closes their leases.
// The caller holds the trial lock.
void CancelRuns(pqxx::dbtransaction& txn, int64_t trial_id,
                const std::string& why) {
  LockRunsOfTrial(txn, trial_id);
  txn.exec_params(
      "UPDATE leases SET released_at = now(), outcome = 'cancelled' "
      "WHERE released_at IS NULL "
      "AND run_id IN (SELECT id FROM runs WHERE trial_id = $1)",
      trial_id);
  txn.exec_params(
      "UPDATE runs SET state = 'cancelled', member_id = NULL, "
      "lease_expires_at = NULL, last_error = $2, updated_at = now() "
      "WHERE trial_id = $1 AND state IN ('queued', 'leased')",
      trial_id, why);
}

// running → failed with `reason`, siblings cancelled. The caller holds the
// trial lock and has checked that the trial is running.
void FailTrialLocked(pqxx::dbtransaction& txn, int64_t trial_id,
                     const std::string& reason) {
  txn.exec_params(
      "UPDATE trials SET state = 'failed', fail_reason = $2, "
      "finished_at = now() WHERE id = $1",
      trial_id, reason);
  CancelRuns(txn, trial_id, "trial failed");
}

// Locks run `run_id` and checks that `member_id` holds its lease; returns
// (state, holder, study_id, fold). The caller holds the trial lock.
absl::StatusOr<pqxx::row> LockHeldRun(pqxx::dbtransaction& txn, int64_t run_id,
                                      const std::string& member_id) {
  pqxx::row r = txn.exec_params1(
      "SELECT state, COALESCE(member_id, ''), study_id, fold "
      "FROM runs WHERE id = $1 FOR NO KEY UPDATE",
      run_id);
  const RunState state = StateField(r[0], ParseRunState);
  const std::string holder = r[1].as<std::string>();
  RETURN_IF_ERROR(CheckRunHolder(run_id, state, holder, member_id));
  return r;
}

// Records the artifacts, closes the lease and marks the run done. The caller
// holds the trial lock and has checked that `member_id` holds the run.
// `metrics`: its env_steps (progress) and data flow go to the run's row.
void FinishRunLocked(pqxx::dbtransaction& txn, int64_t study_id,
                     int64_t trial_id, int64_t run_id,
                     const FoldMetrics& metrics,
                     const std::vector<ArtifactRow>& artifacts) {
  for (const ArtifactRow& a : artifacts) {
    txn.exec_params(
        "INSERT INTO artifacts (study_id, trial_id, run_id, kind, path, "
        "sha256) VALUES ($1, $2, $3, $4, $5, $6) "
        "ON CONFLICT (trial_id, kind, path) DO UPDATE SET "
        "sha256 = EXCLUDED.sha256, run_id = EXCLUDED.run_id",
        study_id, trial_id, run_id, a.kind, a.path, a.sha256);
  }
  txn.exec_params(
      "UPDATE leases SET released_at = now(), outcome = 'done' "
      "WHERE run_id = $1 AND released_at IS NULL",
      run_id);
  txn.exec_params(
      "UPDATE runs SET state = 'done', member_id = NULL, "
      "lease_expires_at = NULL, env_steps = GREATEST(env_steps, $2), "
      "env_steps_received = $3, env_steps_dropped = $4, "
      "updated_at = now() WHERE id = $1",
      run_id, metrics.env_steps, metrics.env_steps_received,
      metrics.env_steps_dropped);
}

absl::StatusOr<std::vector<ParamRow>> LoadParams(pqxx::dbtransaction& txn,
                                                 int64_t trial_id) {
  std::vector<ParamRow> params;
  for (const pqxx::row& r :
       txn.exec_params("SELECT name, value FROM params WHERE trial_id = $1 "
                       "ORDER BY position",
                       trial_id)) {
    params.push_back({r[0].as<std::string>(), r[1].as<std::string>()});
  }
  return params;
}

}  // namespace

PgStore::PgStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PgStore::~PgStore() = default;

absl::StatusOr<std::unique_ptr<Store>> Store::Connect(const std::string& dsn,
                                                      RetryPolicy retry) {
  ASSIGN_OR_RETURN(std::unique_ptr<PgStore> store,
                   PgStore::Connect(dsn, retry));
  return std::unique_ptr<Store>(std::move(store));
}

absl::StatusOr<std::unique_ptr<PgStore>> PgStore::Connect(
    const std::string& dsn, RetryPolicy retry) {
  ASSIGN_OR_RETURN(ParsedDsn parsed, ParseDsn(dsn, retry.give_up_after));
  auto impl = std::make_unique<Impl>(std::move(parsed.conninfo),
                                     std::move(parsed.server), retry);
  RETURN_IF_ERROR(impl->Transact<bool>("Connect", /*writes=*/false,
                                       [](pqxx::dbtransaction& txn) {
                                         txn.exec("SELECT 1");
                                         return true;
                                       })
                      .status());
  return std::unique_ptr<PgStore>(new PgStore(std::move(impl)));
}

// ---------------------------------------------------------------- schema

absl::Status PgStore::Migrate() {
  RETURN_IF_ERROR(
      impl_->TransactStatus("Migrate", [](pqxx::dbtransaction& txn) {
        // Under the lock: two first-time migrators would otherwise race on
        // CREATE TABLE (a unique violation in pg_type).
        txn.exec_params("SELECT pg_advisory_xact_lock($1)", kMigrationLockKey);
        txn.exec(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            "  version    int PRIMARY KEY,"
            "  name       text NOT NULL,"
            "  applied_at timestamptz NOT NULL DEFAULT now())");
        // A database migrated by a newer binary has tables this one does not
        // know how to use safely: refuse rather than corrupt it.
        const int known =
            Migrations().empty() ? 0 : Migrations().back().version;
        const pqxx::row newest = txn.exec1(
            "SELECT COALESCE(MAX(version), 0), "
            "COALESCE((SELECT name FROM schema_migrations "
            "ORDER BY version DESC LIMIT 1), '') FROM schema_migrations");
        if (newest[0].as<int>() > known) {
          return absl::FailedPreconditionError(absl::StrCat(
              "the database schema is at version ", newest[0].as<int>(), " (",
              newest[1].as<std::string>(), "), newer than this binary's ",
              known,
              "; run a ristretto build at least as new as the one that "
              "migrated it"));
        }
        return absl::OkStatus();
      }));
  for (const Migration& m : Migrations()) {
    RETURN_IF_ERROR(Annotate(
        impl_->TransactStatus(
            "Migrate",
            [&m](pqxx::dbtransaction& txn) {
              txn.exec_params("SELECT pg_advisory_xact_lock($1)",
                              kMigrationLockKey);
              if (!txn.exec_params(
                          "SELECT 1 FROM schema_migrations WHERE version = $1",
                          m.version)
                       .empty()) {
                return absl::OkStatus();  // applied by an earlier run
              }
              txn.exec(m.sql);
              txn.exec_params(
                  "INSERT INTO schema_migrations (version, name) "
                  "VALUES ($1, $2)",
                  m.version, m.name);
              return absl::OkStatus();
            }),
        absl::StrCat("schema migration ", m.version, " (", m.name, ")")));
  }
  return absl::OkStatus();
}

absl::StatusOr<int> PgStore::SchemaVersion() {
  return impl_->Transact<int>(
      "SchemaVersion", false,
      [](pqxx::dbtransaction& txn) -> absl::StatusOr<int> {
        if (txn.exec("SELECT to_regclass('schema_migrations')")[0][0]
                .is_null()) {
          return 0;
        }
        return txn
            .exec(
                "SELECT COALESCE(MAX(version), 0) FROM schema_migrations")[0][0]
            .as<int>();
      });
}

// -------------------------------------------------------------- datasets

absl::Status PgStore::PutDataset(const DatasetRow& row) {
  RETURN_IF_ERROR(CheckPutDataset(row));
  return impl_->TransactStatus("PutDataset", [&](pqxx::dbtransaction& txn) {
    txn.exec_params(
        "INSERT INTO datasets (id, path, symbols, rows, interval_seconds) "
        "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO UPDATE SET "
        "path = EXCLUDED.path, symbols = EXCLUDED.symbols, "
        "rows = EXCLUDED.rows, interval_seconds = EXCLUDED.interval_seconds",
        row.id, row.path, row.symbols, row.rows, row.interval_seconds);
    return absl::OkStatus();
  });
}

absl::StatusOr<DatasetRow> PgStore::GetDataset(const std::string& id) {
  return impl_->Transact<DatasetRow>(
      "GetDataset", false,
      [&](pqxx::dbtransaction& txn) -> absl::StatusOr<DatasetRow> {
        const pqxx::result r =
            txn.exec_params(absl::StrCat("SELECT ", kDatasetColumns,
                                         " FROM datasets d WHERE d.id = $1"),
                            id);
        if (r.empty()) {
          return absl::NotFoundError(absl::StrCat("no dataset ", id));
        }
        return ParseDataset(r[0]);
      });
}

absl::StatusOr<std::vector<DatasetRow>> PgStore::ListDatasets() {
  return impl_->Transact<std::vector<DatasetRow>>(
      "ListDatasets", false,
      [](pqxx::dbtransaction& txn) -> absl::StatusOr<std::vector<DatasetRow>> {
        std::vector<DatasetRow> rows;
        for (const pqxx::row& r :
             txn.exec(absl::StrCat("SELECT ", kDatasetColumns,
                                   " FROM datasets d "
                                   "ORDER BY d.created_at, d.id"))) {
          rows.push_back(ParseDataset(r));
        }
        return rows;
      });
}

// --------------------------------------------------------------- studies

absl::StatusOr<StudyRow> PgStore::CreateStudy(const std::string& name,
                                              const std::string& config_text) {
  RETURN_IF_ERROR(CheckCreateStudy(name));
  return impl_->Transact<StudyRow>(
      "CreateStudy", true,
      [&](pqxx::dbtransaction& txn) -> absl::StatusOr<StudyRow> {
        const pqxx::result r = txn.exec_params(
            absl::StrCat("INSERT INTO studies AS s (name, config_text) "
                         "VALUES ($1, $2) ON CONFLICT (name) DO NOTHING "
                         "RETURNING ",
                         kStudyColumns),
            name, config_text);
        if (r.empty()) {
          return absl::AlreadyExistsError(
              absl::StrCat("study '", name, "' already exists"));
        }
        return ParseStudy(r[0]);
      });
}

absl::StatusOr<StudyRow> PgStore::GetStudy(const std::string& name) {
  return impl_->Transact<StudyRow>(
      "GetStudy", false,
      [&](pqxx::dbtransaction& txn) -> absl::StatusOr<StudyRow> {
        const pqxx::result r =
            txn.exec_params(absl::StrCat("SELECT ", kStudyColumns,
                                         " FROM studies s WHERE s.name = $1"),
                            name);
        if (r.empty()) {
          return absl::NotFoundError(
              absl::StrCat("no study named '", name, "'"));
        }
        return ParseStudy(r[0]);
      });
}

absl::StatusOr<StudyRow> PgStore::GetStudyById(int64_t id) {
  return impl_->Transact<StudyRow>(
      "GetStudyById", false,
      [&](pqxx::dbtransaction& txn) -> absl::StatusOr<StudyRow> {
        const pqxx::result r =
            txn.exec_params(absl::StrCat("SELECT ", kStudyColumns,
                                         " FROM studies s WHERE s.id = $1"),
                            id);
        if (r.empty()) {
          return absl::NotFoundError(absl::StrCat("no study with id ", id));
        }
        return ParseStudy(r[0]);
      });
}

absl::StatusOr<std::vector<StudyRow>> PgStore::ListStudies() {
  return impl_->Transact<std::vector<StudyRow>>(
      "ListStudies", false,
      [](pqxx::dbtransaction& txn) -> absl::StatusOr<std::vector<StudyRow>> {
        std::vector<StudyRow> rows;
        for (const pqxx::row& r : txn.exec(absl::StrCat(
                 "SELECT ", kStudyColumns, " FROM studies s ORDER BY s.id"))) {
          rows.push_back(ParseStudy(r));
        }
        return rows;
      });
}

absl::Status PgStore::SetStudyState(int64_t study_id, StudyState state,
                                    const std::string& reason) {
  RETURN_IF_ERROR(CheckSetStudyState(state));
  return impl_->TransactStatus("SetStudyState", [&](pqxx::dbtransaction& txn) {
    const pqxx::result r = txn.exec_params(
        "SELECT state FROM studies WHERE id = $1 FOR NO KEY UPDATE", study_id);
    if (r.empty()) {
      return absl::NotFoundError(absl::StrCat("no study with id ", study_id));
    }
    const StudyState current = StateField(r[0][0], ParseStudyState);
    if (current == state) return absl::OkStatus();
    RETURN_IF_ERROR(CheckStudyTransition(study_id, current, state));
    txn.exec_params(
        "UPDATE studies SET state = $2, stop_reason = $3, updated_at = now() "
        "WHERE id = $1",
        study_id, std::string(ToString(state)), reason);
    return absl::OkStatus();
  });
}

// ---------------------------------------------------------------- trials

absl::StatusOr<TrialRow> PgStore::CreateTrial(
    int64_t study_id, const std::vector<ParamRow>& params,
    const std::vector<std::string>& run_configs,
    const std::string& checkpoint_root) {
  RETURN_IF_ERROR(CheckCreateTrial(run_configs));
  return impl_->Transact<TrialRow>(
      "CreateTrial", true,
      [&](pqxx::dbtransaction& txn) -> absl::StatusOr<TrialRow> {
        // The study lock serialises numbering within the study.
        const pqxx::result study = txn.exec_params(
            "SELECT name, state FROM studies WHERE id = $1 "
            "FOR NO KEY UPDATE",
            study_id);
        if (study.empty()) {
          return absl::NotFoundError(
              absl::StrCat("no study with id ", study_id));
        }
        const std::string study_name = study[0][0].as<std::string>();
        RETURN_IF_ERROR(CheckStudyNotDone(
            study_name, StateField(study[0][1], ParseStudyState)));
        RETURN_IF_ERROR(CheckTrialParams(params));
        const pqxx::row inserted = txn.exec_params1(
            absl::StrCat("INSERT INTO trials AS t (study_id, number) "
                         "SELECT $1, COALESCE(MAX(number) + 1, 0) FROM trials "
                         "WHERE study_id = $1 RETURNING ",
                         kTrialColumns),
            study_id);
        TrialRow trial = ParseTrial(inserted);
        for (size_t i = 0; i < params.size(); ++i) {
          txn.exec_params(
              "INSERT INTO params (trial_id, position, name, value) "
              "VALUES ($1, $2, $3, $4)",
              trial.id, static_cast<int>(i), params[i].name, params[i].value);
        }
        trial.params = params;
        const std::filesystem::path trial_dir =
            std::filesystem::path(checkpoint_root) / study_name /
            absl::StrCat("trial-", trial.number);
        for (size_t k = 0; k < run_configs.size(); ++k) {
          txn.exec_params(
              "INSERT INTO runs (trial_id, study_id, fold, config_json, "
              "checkpoint_dir) VALUES ($1, $2, $3, $4, $5)",
              trial.id, study_id, static_cast<int>(k), run_configs[k],
              (trial_dir / absl::StrCat("fold-", k)).string());
        }
        return trial;
      });
}

absl::StatusOr<std::vector<TrialRow>> PgStore::ListTrials(int64_t study_id) {
  return impl_->Transact<std::vector<TrialRow>>(
      "ListTrials", false,
      [&](pqxx::dbtransaction& txn) -> absl::StatusOr<std::vector<TrialRow>> {
        RETURN_IF_ERROR(RequireStudy(txn, study_id));
        impl_->Between("ListTrials");
        std::vector<TrialRow> trials;
        std::map<int64_t, size_t> index;
        for (const pqxx::row& r : txn.exec_params(
                 absl::StrCat("SELECT ", kTrialColumns,
                              " FROM trials t WHERE t.study_id = $1 "
                              "ORDER BY t.number"),
                 study_id)) {
          trials.push_back(ParseTrial(r));
          index[trials.back().id] = trials.size() - 1;
        }
        impl_->Between("ListTrials");
        for (const pqxx::row& r : txn.exec_params(
                 "SELECT p.trial_id, p.name, p.value FROM params p "
                 "JOIN trials t ON t.id = p.trial_id WHERE t.study_id = $1 "
                 "ORDER BY p.trial_id, p.position",
                 study_id)) {
          const int64_t trial_id = r[0].as<int64_t>();
          const auto it = index.find(trial_id);
          if (it == index.end()) {  // cannot happen in one snapshot
            return absl::InternalError(
                absl::StrCat("ListTrials: params of trial ", trial_id,
                             " but no such trial in study ", study_id));
          }
          trials[it->second].params.push_back(
              {r[1].as<std::string>(), r[2].as<std::string>()});
        }
        return trials;
      });
}

absl::StatusOr<TrialRow> PgStore::GetTrial(int64_t trial_id) {
  return impl_->Transact<TrialRow>(
      "GetTrial", false,
      [&](pqxx::dbtransaction& txn) -> absl::StatusOr<TrialRow> {
        const pqxx::result r =
            txn.exec_params(absl::StrCat("SELECT ", kTrialColumns,
                                         " FROM trials t WHERE t.id = $1"),
                            trial_id);
        if (r.empty()) {
          return absl::NotFoundError(
              absl::StrCat("no trial with id ", trial_id));
        }
        TrialRow trial = ParseTrial(r[0]);
        impl_->Between("GetTrial");
        ASSIGN_OR_RETURN(trial.params, LoadParams(txn, trial_id));
        return trial;
      });
}

absl::StatusOr<TrialCounts> PgStore::CountTrials(int64_t study_id) {
  return impl_->Transact<TrialCounts>(
      "CountTrials", false,
      [&](pqxx::dbtransaction& txn) -> absl::StatusOr<TrialCounts> {
        RETURN_IF_ERROR(RequireStudy(txn, study_id));
        impl_->Between("CountTrials");
        TrialCounts counts;
        for (const pqxx::row& r : txn.exec_params(
                 "SELECT state, COUNT(*) FROM trials WHERE study_id = $1 "
                 "GROUP BY state",
                 study_id)) {
          const int64_t n = r[1].as<int64_t>();
          switch (StateField(r[0], ParseTrialState)) {
            case TrialState::kRunning:
              counts.running = n;
              break;
            case TrialState::kComplete:
              counts.complete = n;
              break;
            case TrialState::kPruned:
              counts.pruned = n;
              break;
            case TrialState::kFailed:
              counts.failed = n;
              break;
          }
        }
        return counts;
      });
}

absl::Status PgStore::CompleteTrial(int64_t trial_id, double score) {
  return impl_->TransactStatus("CompleteTrial", [&](pqxx::dbtransaction& txn) {
    ASSIGN_OR_RETURN(const TrialState state, LockTrial(txn, trial_id));
    RETURN_IF_ERROR(CheckTrialRunning(trial_id, state));
    txn.exec_params(
        "UPDATE trials SET state = 'complete', score = $2, "
        "finished_at = now() WHERE id = $1",
        trial_id, score);
    return absl::OkStatus();
  });
}

absl::Status PgStore::PruneTrial(int64_t trial_id) {
  return impl_->TransactStatus("PruneTrial", [&](pqxx::dbtransaction& txn) {
    ASSIGN_OR_RETURN(const TrialState state, LockTrial(txn, trial_id));
    if (state == TrialState::kPruned) return absl::OkStatus();
    RETURN_IF_ERROR(CheckTrialRunning(trial_id, state));
    txn.exec_params(
        "UPDATE trials SET state = 'pruned', finished_at = now() "
        "WHERE id = $1",
        trial_id);
    CancelRuns(txn, trial_id, "trial pruned");
    return absl::OkStatus();
  });
}

absl::Status PgStore::FailTrial(int64_t trial_id, const std::string& reason) {
  RETURN_IF_ERROR(CheckFailTrial(reason));
  return impl_->TransactStatus("FailTrial", [&](pqxx::dbtransaction& txn) {
    ASSIGN_OR_RETURN(const TrialState state, LockTrial(txn, trial_id));
    if (state == TrialState::kFailed)
      return absl::OkStatus();  // keeps 1st reason
    RETURN_IF_ERROR(CheckTrialRunning(trial_id, state));
    FailTrialLocked(txn, trial_id, reason);
    return absl::OkStatus();
  });
}

// ------------------------------------------------------- runs and leases

absl::StatusOr<std::optional<RunRow>> PgStore::LeaseRun(
    const std::string& member_id, absl::Duration ttl, absl::Time now) {
  RETURN_IF_ERROR(CheckLeaseRun(member_id, ttl));
  return impl_->Transact<std::optional<RunRow>>(
      "LeaseRun", true,
      [&](pqxx::dbtransaction& txn) -> absl::StatusOr<std::optional<RunRow>> {
        // A member leasing before it registered is recorded as a learner.
        txn.exec_params(
            "INSERT INTO members (id, kind) VALUES ($1, 'learner') "
            "ON CONFLICT (id) DO UPDATE SET last_seen = now()",
            member_id);
        // Runs backing off after a failure wait for retry_after, and for
        // avoid_until when the member asking is the one that failed them.
        const pqxx::result pick = txn.exec_params(
            absl::StrCat(
                "SELECT r.id FROM runs r "
                "JOIN trials t ON t.id = r.trial_id "
                "JOIN studies s ON s.id = r.study_id "
                "WHERE r.state = 'queued' AND s.state = 'running' "
                "AND (t.state = 'running' OR (t.state = 'complete' "
                "AND r.fold < 0)) "
                "AND (r.retry_after IS NULL OR r.retry_after <= ",
                TsParam(1),
                ") AND (r.avoid_member <> $2 OR r.avoid_until IS NULL "
                "OR r.avoid_until <= ",
                TsParam(1),
                ") ORDER BY r.id LIMIT 1 FOR NO KEY UPDATE OF r SKIP LOCKED"),
            Micros(now), member_id);
        if (pick.empty()) return std::optional<RunRow>();
        const int64_t run_id = pick[0][0].as<int64_t>();
        const int64_t expires = Micros(now + ttl);
        RunRow run = ParseRun(txn.exec_params1(
            absl::StrCat("UPDATE runs r SET state = 'leased', member_id = $2, "
                         "lease_expires_at = ",
                         TsParam(3),
                         ", attempts = attempts + 1, updated_at = now() "
                         "WHERE r.id = $1 RETURNING ",
                         kRunColumns),
            run_id, member_id, expires));
        txn.exec_params(
            absl::StrCat("INSERT INTO leases (run_id, member_id, attempt, "
                         "granted_at, expires_at) VALUES ($1, $2, $3, ",
                         TsParam(4), ", ", TsParam(5), ")"),
            run_id, member_id, run.attempts, Micros(now), expires);
        return std::optional<RunRow>(std::move(run));
      });
}

absl::StatusOr<std::vector<int64_t>> PgStore::Heartbeat(
    const std::string& member_id, absl::Duration ttl,
    const std::vector<std::pair<int64_t, int64_t>>& run_steps) {
  RETURN_IF_ERROR(CheckHeartbeat(ttl, run_steps));
  return impl_->Transact<std::vector<int64_t>>(
      "Heartbeat", true,
      [&](pqxx::dbtransaction& txn) -> absl::StatusOr<std::vector<int64_t>> {
        txn.exec_params("UPDATE members SET last_seen = now() WHERE id = $1",
                        member_id);
        std::set<int64_t> held;
        for (const pqxx::row& r :
             txn.exec_params("SELECT id FROM runs WHERE state = 'leased' "
                             "AND member_id = $1 ORDER BY id FOR NO KEY UPDATE",
                             member_id)) {
          held.insert(r[0].as<int64_t>());
        }
        std::vector<int64_t> lost;
        if (!held.empty()) {
          const int64_t expires = Micros(absl::Now() + ttl);
          txn.exec_params(
              absl::StrCat("UPDATE runs SET lease_expires_at = ", TsParam(2),
                           ", updated_at = now() "
                           "WHERE state = 'leased' AND member_id = $1"),
              member_id, expires);
          txn.exec_params(
              absl::StrCat("UPDATE leases SET expires_at = ", TsParam(2),
                           " WHERE member_id = $1 AND released_at IS NULL"),
              member_id, expires);
        }
        for (const auto& [run_id, steps] : run_steps) {
          if (held.count(run_id) == 0) {
            lost.push_back(run_id);
            continue;
          }
          txn.exec_params("UPDATE runs SET env_steps = $2 WHERE id = $1",
                          run_id, steps);
        }
        return lost;
      });
}

absl::StatusOr<std::vector<int64_t>> PgStore::ExpireLeases(
    absl::Time now, const std::map<int64_t, int>& max_attempts_by_study,
    int default_max_attempts) {
  RETURN_IF_ERROR(
      CheckExpireLeases(max_attempts_by_study, default_max_attempts));
  return impl_->Transact<std::vector<int64_t>>(
      "ExpireLeases", true,
      [&](pqxx::dbtransaction& txn) -> absl::StatusOr<std::vector<int64_t>> {
        const int64_t now_us = Micros(now);
        std::map<int64_t, std::vector<int64_t>> by_trial;
        std::map<int64_t, int> trial_limit;  // the trial's study's limit
        for (const pqxx::row& r : txn.exec_params(
                 absl::StrCat("SELECT r.trial_id, r.id, t.study_id FROM runs r "
                              "JOIN trials t ON t.id = r.trial_id "
                              "WHERE r.state = 'leased' AND "
                              "r.lease_expires_at < ",
                              TsParam(1)),
                 now_us)) {
          const int64_t trial_id = r[0].as<int64_t>();
          by_trial[trial_id].push_back(r[1].as<int64_t>());
          const auto limit = max_attempts_by_study.find(r[2].as<int64_t>());
          trial_limit[trial_id] = limit != max_attempts_by_study.end()
                                      ? limit->second
                                      : default_max_attempts;
        }
        std::vector<int64_t> affected;
        for (auto& [trial_id, run_ids] : by_trial) {
          const int max_attempts = trial_limit[trial_id];
          ASSIGN_OR_RETURN(TrialState trial_state, LockTrial(txn, trial_id));
          LockRunsOfTrial(txn, trial_id);
          std::sort(run_ids.begin(), run_ids.end());
          for (const int64_t run_id : run_ids) {
            // Re-read under the lock: a heartbeat or completion may have won.
            const pqxx::row r = txn.exec_params1(
                absl::StrCat("SELECT state, COALESCE(member_id, ''), attempts, "
                             "fold, lease_expires_at < ",
                             TsParam(2), " FROM runs WHERE id = $1"),
                run_id, now_us);
            if (StateField(r[0], ParseRunState) != RunState::kLeased ||
                !r[4].as<bool>()) {
              continue;
            }
            const std::string holder = r[1].as<std::string>();
            const int attempts = r[2].as<int>();
            const int fold = r[3].as<int>();
            txn.exec_params(
                "UPDATE leases SET released_at = now(), outcome = 'expired' "
                "WHERE run_id = $1 AND released_at IS NULL",
                run_id);
            affected.push_back(run_id);
            if (attempts < max_attempts) {
              txn.exec_params(
                  "UPDATE runs SET state = 'queued', member_id = NULL, "
                  "lease_expires_at = NULL, last_error = $2, "
                  "updated_at = now() WHERE id = $1",
                  run_id,
                  absl::StrCat("lease of '", holder, "' expired (attempt ",
                               attempts, ")"));
              continue;
            }
            const std::string reason = absl::StrCat(
                "fold ", fold, " (run ", run_id, "): lease expired after ",
                attempts, " attempts, last held by '", holder, "'");
            txn.exec_params(
                "UPDATE runs SET state = 'failed', member_id = NULL, "
                "lease_expires_at = NULL, last_error = $2, "
                "updated_at = now() WHERE id = $1",
                run_id, reason);
            if (trial_state == TrialState::kRunning) {
              FailTrialLocked(txn, trial_id, reason);
              trial_state = TrialState::kFailed;
            }
          }
        }
        return affected;
      });
}

absl::Status PgStore::ReleaseLeases(const std::string& member_id) {
  return impl_->TransactStatus("ReleaseLeases", [&](pqxx::dbtransaction& txn) {
    txn.exec_params(
        "SELECT id FROM runs WHERE state = 'leased' AND member_id = $1 "
        "ORDER BY id FOR NO KEY UPDATE",
        member_id);
    txn.exec_params(
        "UPDATE leases SET released_at = now(), outcome = 'released' "
        "WHERE member_id = $1 AND released_at IS NULL",
        member_id);
    txn.exec_params(
        "UPDATE runs SET state = 'queued', member_id = NULL, "
        "lease_expires_at = NULL, updated_at = now() "
        "WHERE state = 'leased' AND member_id = $1",
        member_id);
    return absl::OkStatus();
  });
}

absl::StatusOr<RunRow> PgStore::GetRun(int64_t run_id) {
  return impl_->Transact<RunRow>(
      "GetRun", false, [&](pqxx::dbtransaction& txn) -> absl::StatusOr<RunRow> {
        const pqxx::result r =
            txn.exec_params(absl::StrCat("SELECT ", kRunColumns,
                                         " FROM runs r WHERE r.id = $1"),
                            run_id);
        if (r.empty()) {
          return absl::NotFoundError(absl::StrCat("no run with id ", run_id));
        }
        return ParseRun(r[0]);
      });
}

absl::StatusOr<std::vector<RunRow>> PgStore::ListRuns(int64_t trial_id) {
  return impl_->Transact<std::vector<RunRow>>(
      "ListRuns", false,
      [&](pqxx::dbtransaction& txn) -> absl::StatusOr<std::vector<RunRow>> {
        RETURN_IF_ERROR(RequireTrial(txn, trial_id));
        impl_->Between("ListRuns");
        std::vector<RunRow> runs;
        for (const pqxx::row& r :
             txn.exec_params(absl::StrCat("SELECT ", kRunColumns,
                                          " FROM runs r WHERE r.trial_id = $1 "
                                          "ORDER BY r.fold"),
                             trial_id)) {
          runs.push_back(ParseRun(r));
        }
        return runs;
      });
}

absl::Status PgStore::ReportIntermediate(int64_t run_id,
                                         const std::string& member_id,
                                         int64_t step, double value) {
  RETURN_IF_ERROR(CheckReportIntermediate(run_id, step));
  return impl_->TransactStatus("ReportIntermediate", [&](pqxx::dbtransaction&
                                                             txn) {
    const pqxx::result r = txn.exec_params(
        "SELECT state, COALESCE(member_id, ''), trial_id, study_id "
        "FROM runs WHERE id = $1 FOR SHARE",
        run_id);
    if (r.empty()) {
      return absl::NotFoundError(absl::StrCat("no run with id ", run_id));
    }
    const RunState state = StateField(r[0][0], ParseRunState);
    const std::string holder = r[0][1].as<std::string>();
    RETURN_IF_ERROR(CheckRunHolder(run_id, state, holder, member_id));
    txn.exec_params(
        "INSERT INTO intermediate_values (run_id, trial_id, study_id, step, "
        "value) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (run_id, step) "
        "DO UPDATE SET value = EXCLUDED.value, reported_at = now()",
        run_id, r[0][2].as<int64_t>(), r[0][3].as<int64_t>(), step, value);
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<IntermediateRow>> PgStore::ListIntermediates(
    int64_t study_id) {
  return impl_->Transact<std::vector<IntermediateRow>>(
      "ListIntermediates", false,
      [&](pqxx::dbtransaction& txn)
          -> absl::StatusOr<std::vector<IntermediateRow>> {
        RETURN_IF_ERROR(RequireStudy(txn, study_id));
        impl_->Between("ListIntermediates");
        std::vector<IntermediateRow> rows;
        for (const pqxx::row& r : txn.exec_params(
                 "SELECT iv.trial_id, iv.run_id, r.fold, iv.step, iv.value "
                 "FROM intermediate_values iv JOIN runs r ON r.id = iv.run_id "
                 "WHERE iv.study_id = $1 "
                 "ORDER BY iv.trial_id, r.fold, iv.step",
                 study_id)) {
          IntermediateRow row;
          row.trial_id = r[0].as<int64_t>();
          row.run_id = r[1].as<int64_t>();
          row.fold = r[2].as<int>();
          row.step = r[3].as<int64_t>();
          row.value = r[4].as<double>();
          rows.push_back(row);
        }
        return rows;
      });
}

absl::StatusOr<bool> PgStore::CompleteRun(
    int64_t run_id, const std::string& member_id, const FoldMetrics& metrics,
    const std::vector<ArtifactRow>& artifacts) {
  RETURN_IF_ERROR(CheckCompleteRun(run_id, metrics, artifacts));
  return impl_->Transact<bool>(
      "CompleteRun", true,
      [&](pqxx::dbtransaction& txn) -> absl::StatusOr<bool> {
        ASSIGN_OR_RETURN(const int64_t trial_id, TrialOfRun(txn, run_id));
        // The trial lock makes "all runs done?" exact when two folds of one
        // trial complete at the same time.
        RETURN_IF_ERROR(LockTrial(txn, trial_id).status());
        ASSIGN_OR_RETURN(const pqxx::row r,
                         LockHeldRun(txn, run_id, member_id));
        const int64_t study_id = r[2].as<int64_t>();
        const int fold = r[3].as<int>();
        RETURN_IF_ERROR(CheckCvFoldRun(run_id, fold));
        txn.exec_params(
            "INSERT INTO fold_metrics (run_id, trial_id, fold, sharpe, "
            "benchmark_sharpe, sortino, max_drawdown, calmar, total_return, "
            "benchmark_return, trades, env_steps, fees, turnover, exposure, "
            "score, log_returns) "
            "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, "
            "$14, $15, $16, $17)",
            run_id, trial_id, fold, metrics.sharpe, metrics.benchmark_sharpe,
            metrics.sortino, metrics.max_drawdown, metrics.calmar,
            metrics.total_return, metrics.benchmark_return, metrics.trades,
            metrics.env_steps, metrics.fees, metrics.turnover, metrics.exposure,
            metrics.score, ReturnsText(metrics.log_returns));
        FinishRunLocked(txn, study_id, trial_id, run_id, metrics, artifacts);
        return txn.exec_params1(
                      "SELECT COUNT(*) FROM runs WHERE trial_id = $1 "
                      "AND state <> 'done'",
                      trial_id)[0]
                   .as<int64_t>() == 0;
      });
}

absl::Status PgStore::FailRun(int64_t run_id, const std::string& member_id,
                              const std::string& reason) {
  return impl_->TransactStatus("FailRun", [&](pqxx::dbtransaction& txn) {
    ASSIGN_OR_RETURN(const int64_t trial_id, TrialOfRun(txn, run_id));
    ASSIGN_OR_RETURN(const TrialState trial_state, LockTrial(txn, trial_id));
    LockRunsOfTrial(txn, trial_id);
    const pqxx::row r = txn.exec_params1(
        "SELECT state, COALESCE(member_id, ''), fold FROM runs WHERE id = $1",
        run_id);
    const RunState state = StateField(r[0], ParseRunState);
    const std::string holder = r[1].as<std::string>();
    RETURN_IF_ERROR(CheckRunHolder(run_id, state, holder, member_id));
    const std::string why = reason.empty() ? "unknown error" : reason;
    txn.exec_params(
        "UPDATE leases SET released_at = now(), outcome = 'failed' "
        "WHERE run_id = $1 AND released_at IS NULL",
        run_id);
    txn.exec_params(
        "UPDATE runs SET state = 'failed', member_id = NULL, "
        "lease_expires_at = NULL, last_error = $2, updated_at = now() "
        "WHERE id = $1",
        run_id, why);
    if (trial_state == TrialState::kRunning) {
      FailTrialLocked(txn, trial_id,
                      absl::StrCat("fold ", r[2].as<int>(), ": ", why));
    }
    return absl::OkStatus();
  });
}

absl::Status PgStore::RetryRun(int64_t run_id, const std::string& member_id,
                               const std::string& reason,
                               absl::Time retry_after, absl::Time avoid_until) {
  RETURN_IF_ERROR(CheckRetryRun(retry_after, avoid_until));
  return impl_->TransactStatus("RetryRun", [&](pqxx::dbtransaction& txn) {
    ASSIGN_OR_RETURN(const int64_t trial_id, TrialOfRun(txn, run_id));
    RETURN_IF_ERROR(LockTrial(txn, trial_id).status());
    RETURN_IF_ERROR(LockHeldRun(txn, run_id, member_id).status());
    txn.exec_params(
        "UPDATE leases SET released_at = now(), outcome = 'failed' "
        "WHERE run_id = $1 AND released_at IS NULL",
        run_id);
    txn.exec_params(
        absl::StrCat("UPDATE runs SET state = 'queued', member_id = NULL, "
                     "lease_expires_at = NULL, last_error = $2, "
                     "retry_after = ",
                     TsParam(3), ", avoid_member = $4, avoid_until = ",
                     TsParam(5), ", updated_at = now() WHERE id = $1"),
        run_id, reason.empty() ? std::string("unknown error") : reason,
        Micros(retry_after), member_id, Micros(avoid_until));
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<FoldMetrics>> PgStore::ListFoldMetrics(
    int64_t trial_id) {
  return impl_->Transact<std::vector<FoldMetrics>>(
      "ListFoldMetrics", false,
      [&](pqxx::dbtransaction& txn)
          -> absl::StatusOr<std::vector<FoldMetrics>> {
        RETURN_IF_ERROR(RequireTrial(txn, trial_id));
        impl_->Between("ListFoldMetrics");
        std::vector<FoldMetrics> rows;
        for (const pqxx::row& r : txn.exec_params(
                 absl::StrCat("SELECT ", kFoldMetricsColumns,
                              " FROM fold_metrics f WHERE f.trial_id = $1 "
                              "ORDER BY f.fold"),
                 trial_id)) {
          rows.push_back(ParseFoldMetrics(r));
        }
        return rows;
      });
}

absl::StatusOr<std::map<int64_t, std::vector<FoldMetrics>>>
PgStore::ListStudyFoldMetrics(int64_t study_id) {
  using Result = std::map<int64_t, std::vector<FoldMetrics>>;
  return impl_->Transact<Result>(
      "ListStudyFoldMetrics", false,
      [&](pqxx::dbtransaction& txn) -> absl::StatusOr<Result> {
        RETURN_IF_ERROR(RequireStudy(txn, study_id));
        impl_->Between("ListStudyFoldMetrics");
        Result out;
        for (const pqxx::row& r : txn.exec_params(
                 absl::StrCat("SELECT ", kFoldMetricsColumns,
                              ", f.trial_id FROM fold_metrics f "
                              "JOIN trials t ON t.id = f.trial_id "
                              "WHERE t.study_id = $1 AND t.state = 'complete' "
                              "ORDER BY f.trial_id, f.fold"),
                 study_id)) {
          out[r[15].as<int64_t>()].push_back(ParseFoldMetrics(r));
        }
        return out;
      });
}

// ---------------------------------------------------------------- lockbox

namespace {

// Columns 3-13 of a lockbox_results or lockbox_refits query: the policy's
// sharpe, sharpe_se, sortino, calmar, total_return, max_drawdown, turnover,
// fees, trades, exposure and env_steps (both tables keep them alike).
void ReadLockboxPolicy(const pqxx::row& r, FoldMetrics* p, double* sharpe_se) {
  p->sharpe = r[3].as<double>();
  *sharpe_se = r[4].as<double>();
  p->sortino = r[5].as<double>();
  p->calmar = r[6].as<double>();
  p->total_return = r[7].as<double>();
  p->max_drawdown = r[8].as<double>();
  p->turnover = r[9].as<double>();
  p->fees = r[10].as<double>();
  p->trades = r[11].as<int64_t>();
  p->exposure = r[12].as<double>();
  p->env_steps = r[13].as<int64_t>();
}

}  // namespace

absl::StatusOr<RunRow> PgStore::AddRefitRun(
    int64_t trial_id, int refit, const std::string& config_json,
    const std::string& checkpoint_root) {
  RETURN_IF_ERROR(CheckRefit(refit));
  const int fold = FinalRunFold(refit);
  return impl_->Transact<RunRow>(
      "AddFinalRun", true,
      [&](pqxx::dbtransaction& txn) -> absl::StatusOr<RunRow> {
        ASSIGN_OR_RETURN(const TrialState state, LockTrial(txn, trial_id));
        const pqxx::result existing = txn.exec_params(
            absl::StrCat("SELECT ", kRunColumns,
                         " FROM runs r WHERE r.trial_id = $1 AND r.fold = $2"),
            trial_id, fold);
        if (!existing.empty()) return ParseRun(existing[0]);
        if (state != TrialState::kComplete) {
          return absl::FailedPreconditionError(
              absl::StrCat("trial ", trial_id, " is ", ToString(state),
                           ": only a complete trial gets a final run"));
        }
        const pqxx::row t = txn.exec_params1(
            "SELECT s.name, t.number, t.study_id FROM trials t "
            "JOIN studies s ON s.id = t.study_id WHERE t.id = $1",
            trial_id);
        const std::filesystem::path dir =
            std::filesystem::path(checkpoint_root) / t[0].as<std::string>() /
            absl::StrCat("trial-", t[1].as<int64_t>()) /
            FinalRunDirectory(refit);
        return ParseRun(txn.exec_params1(
            absl::StrCat("INSERT INTO runs AS r (trial_id, study_id, fold, "
                         "config_json, checkpoint_dir) "
                         "VALUES ($1, $2, $3, $4, $5) RETURNING ",
                         kRunColumns),
            trial_id, t[2].as<int64_t>(), fold, config_json, dir.string()));
      });
}

absl::Status PgStore::CompleteRefit(int64_t run_id,
                                    const std::string& member_id,
                                    RefitRow refit,
                                    std::optional<LockboxRow> combined,
                                    const std::vector<ArtifactRow>& artifacts) {
  RETURN_IF_ERROR(CheckCompleteRefit(run_id, refit, combined, artifacts));
  return impl_->TransactStatus("CompleteFinalRun", [&](pqxx::dbtransaction&
                                                           txn) {
    ASSIGN_OR_RETURN(const int64_t trial_id, TrialOfRun(txn, run_id));
    RETURN_IF_ERROR(LockTrial(txn, trial_id).status());
    ASSIGN_OR_RETURN(const pqxx::row r, LockHeldRun(txn, run_id, member_id));
    const int fold = r[3].as<int>();
    RETURN_IF_ERROR(CheckFinalRun(run_id, fold));
    const int64_t study_id = r[2].as<int64_t>();
    if (combined.has_value()) {
      const pqxx::result open = txn.exec_params(
          "SELECT id, state FROM runs WHERE trial_id = $1 AND fold < 0 "
          "AND id <> $2 AND state <> 'done' ORDER BY id LIMIT 1",
          trial_id, run_id);
      if (!open.empty()) {
        return OtherRefitOpen(run_id, open[0][0].as<int64_t>(),
                              StateField(open[0][1], ParseRunState));
      }
    }
    const FoldMetrics& p = refit.policy;
    txn.exec_params(
        "INSERT INTO lockbox_refits (run_id, trial_id, study_id, refit, "
        "sharpe, sharpe_se, sortino, calmar, total_return, max_drawdown, "
        "turnover, fees, trades, exposure, env_steps, log_returns) VALUES "
        "($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, "
        "$16)",
        run_id, trial_id, study_id, RefitOfFold(fold), p.sharpe,
        refit.sharpe_se, p.sortino, p.calmar, p.total_return, p.max_drawdown,
        p.turnover, p.fees, p.trades, p.exposure, p.env_steps,
        ReturnsText(p.log_returns));
    if (combined.has_value()) {
      const LockboxRow& result = *combined;
      const FoldMetrics& c = result.policy;
      txn.exec_params(
          "INSERT INTO lockbox_results (trial_id, run_id, study_id, bars, "
          "sharpe, sharpe_se, sortino, calmar, total_return, max_drawdown, "
          "turnover, fees, trades, exposure, env_steps, bh_sharpe, "
          "bh_sharpe_se, bh_sortino, bh_return, bh_max_drawdown, "
          "random_seeds, random_sharpe_mean, random_sharpe_std, "
          "random_return_mean, random_return_std, log_returns, "
          "bh_log_returns, refits, rules) VALUES ($1, $2, $3, $4, $5, $6, "
          "$7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, "
          "$21, $22, $23, $24, $25, $26, $27, $28, $29)",
          trial_id, run_id, study_id, result.bars, c.sharpe, result.sharpe_se,
          c.sortino, c.calmar, c.total_return, c.max_drawdown, c.turnover,
          c.fees, c.trades, c.exposure, c.env_steps, result.bh_sharpe,
          result.bh_sharpe_se, result.bh_sortino, result.bh_return,
          result.bh_max_drawdown, result.random_seeds,
          result.random_sharpe_mean, result.random_sharpe_std,
          result.random_return_mean, result.random_return_std,
          ReturnsText(c.log_returns), ReturnsText(result.bh_log_returns),
          result.refits, result.rules_json);
    }
    FinishRunLocked(txn, study_id, trial_id, run_id, p, artifacts);
    return absl::OkStatus();
  });
}

namespace {

// The refits `column` (study_id or trial_id) = `id` selects, by trial then
// refit.
std::vector<RefitRow> QueryRefits(pqxx::dbtransaction& txn, const char* column,
                                  int64_t id) {
  std::vector<RefitRow> rows;
  for (const pqxx::row& r : txn.exec_params(
           absl::StrCat(
               "SELECT trial_id, run_id, refit, sharpe, sharpe_se, sortino, "
               "calmar, total_return, max_drawdown, turnover, fees, trades, "
               "exposure, env_steps, log_returns FROM lockbox_refits WHERE ",
               column, " = $1 ORDER BY trial_id, refit"),
           id)) {
    RefitRow x;
    x.trial_id = r[0].as<int64_t>();
    x.run_id = r[1].as<int64_t>();
    x.refit = r[2].as<int>();
    x.policy.fold = FinalRunFold(x.refit);
    ReadLockboxPolicy(r, &x.policy, &x.sharpe_se);
    x.policy.log_returns = ParseReturnsText(r[14].as<std::string>());
    rows.push_back(std::move(x));
  }
  return rows;
}

}  // namespace

absl::StatusOr<std::vector<RefitRow>> PgStore::ListRefits(int64_t study_id) {
  return impl_->Transact<std::vector<RefitRow>>(
      "ListRefits", false,
      [&](pqxx::dbtransaction& txn) -> absl::StatusOr<std::vector<RefitRow>> {
        RETURN_IF_ERROR(RequireStudy(txn, study_id));
        impl_->Between("ListRefits");
        return QueryRefits(txn, "study_id", study_id);
      });
}

absl::StatusOr<std::vector<RefitRow>> PgStore::ListTrialRefits(
    int64_t trial_id) {
  return impl_->Transact<std::vector<RefitRow>>(
      "ListTrialRefits", false,
      [&](pqxx::dbtransaction& txn) -> absl::StatusOr<std::vector<RefitRow>> {
        return QueryRefits(txn, "trial_id", trial_id);
      });
}

absl::StatusOr<std::vector<LockboxRow>> PgStore::ListLockbox(int64_t study_id) {
  return impl_->Transact<std::vector<LockboxRow>>(
      "ListLockbox", false,
      [&](pqxx::dbtransaction& txn) -> absl::StatusOr<std::vector<LockboxRow>> {
        RETURN_IF_ERROR(RequireStudy(txn, study_id));
        impl_->Between("ListLockbox");
        std::vector<LockboxRow> rows;
        for (const pqxx::row& r : txn.exec_params(
                 "SELECT trial_id, run_id, bars, sharpe, sharpe_se, sortino, "
                 "calmar, total_return, max_drawdown, turnover, fees, trades, "
                 "exposure, env_steps, bh_sharpe, bh_sharpe_se, bh_sortino, "
                 "bh_return, bh_max_drawdown, random_seeds, "
                 "random_sharpe_mean, random_sharpe_std, random_return_mean, "
                 "random_return_std, log_returns, bh_log_returns, refits, "
                 "rules FROM lockbox_results "
                 "WHERE study_id = $1 ORDER BY trial_id",
                 study_id)) {
          LockboxRow x;
          x.trial_id = r[0].as<int64_t>();
          x.run_id = r[1].as<int64_t>();
          x.bars = r[2].as<int64_t>();
          x.policy.fold = kLockboxFold;
          ReadLockboxPolicy(r, &x.policy, &x.sharpe_se);
          x.bh_sharpe = r[14].as<double>();
          x.bh_sharpe_se = r[15].as<double>();
          x.bh_sortino = r[16].as<double>();
          x.bh_return = r[17].as<double>();
          x.bh_max_drawdown = r[18].as<double>();
          x.random_seeds = r[19].as<int>();
          x.random_sharpe_mean = r[20].as<double>();
          x.random_sharpe_std = r[21].as<double>();
          x.random_return_mean = r[22].as<double>();
          x.random_return_std = r[23].as<double>();
          x.policy.log_returns = ParseReturnsText(r[24].as<std::string>());
          x.bh_log_returns = ParseReturnsText(r[25].as<std::string>());
          x.refits = r[26].as<int>();
          x.rules_json = r[27].as<std::string>();
          x.policy.benchmark_sharpe = x.bh_sharpe;
          x.policy.benchmark_return = x.bh_return;
          rows.push_back(std::move(x));
        }
        return rows;
      });
}

absl::StatusOr<int64_t> PgStore::CountOpenRuns(int64_t study_id) {
  return impl_->Transact<int64_t>(
      "CountOpenRuns", false,
      [&](pqxx::dbtransaction& txn) -> absl::StatusOr<int64_t> {
        return txn
            .exec_params1(
                "SELECT COUNT(*) FROM runs WHERE study_id = $1 "
                "AND state IN ('queued', 'leased')",
                study_id)[0]
            .as<int64_t>();
      });
}

absl::Status PgStore::PutStudyResult(int64_t study_id,
                                     const std::string& json) {
  return impl_->TransactStatus("PutStudyResult", [&](pqxx::dbtransaction& txn) {
    RETURN_IF_ERROR(RequireStudy(txn, study_id));
    txn.exec_params(
        "INSERT INTO study_results (study_id, result_json) VALUES ($1, $2) "
        "ON CONFLICT (study_id) DO UPDATE SET result_json = "
        "EXCLUDED.result_json, computed_at = now()",
        study_id, json);
    return absl::OkStatus();
  });
}

absl::StatusOr<std::optional<std::string>> PgStore::GetStudyResult(
    int64_t study_id) {
  return impl_->Transact<std::optional<std::string>>(
      "GetStudyResult", false,
      [&](pqxx::dbtransaction& txn)
          -> absl::StatusOr<std::optional<std::string>> {
        const pqxx::result r = txn.exec_params(
            "SELECT result_json FROM study_results WHERE study_id = $1",
            study_id);
        if (r.empty()) return std::optional<std::string>();
        return std::optional<std::string>(r[0][0].as<std::string>());
      });
}

absl::StatusOr<std::vector<ArtifactRow>> PgStore::ListArtifacts(
    int64_t trial_id) {
  return impl_->Transact<std::vector<ArtifactRow>>(
      "ListArtifacts", false,
      [&](pqxx::dbtransaction& txn)
          -> absl::StatusOr<std::vector<ArtifactRow>> {
        RETURN_IF_ERROR(RequireTrial(txn, trial_id));
        impl_->Between("ListArtifacts");
        std::vector<ArtifactRow> rows;
        for (const pqxx::row& r : txn.exec_params(
                 "SELECT id, study_id, trial_id, COALESCE(run_id, 0), kind, "
                 "path, sha256 FROM artifacts WHERE trial_id = $1 "
                 "ORDER BY id",
                 trial_id)) {
          ArtifactRow a;
          a.id = r[0].as<int64_t>();
          a.study_id = r[1].as<int64_t>();
          a.trial_id = r[2].as<int64_t>();
          a.run_id = r[3].as<int64_t>();
          a.kind = r[4].as<std::string>();
          a.path = r[5].as<std::string>();
          a.sha256 = r[6].as<std::string>();
          rows.push_back(std::move(a));
        }
        return rows;
      });
}

// --------------------------------------------------------------- members

absl::Status PgStore::UpsertMember(const MemberRow& row) {
  RETURN_IF_ERROR(CheckUpsertMember(row));
  return impl_->TransactStatus("UpsertMember", [&](pqxx::dbtransaction& txn) {
    // A learner's row is updated only by a learner (Store::UpsertMember).
    const pqxx::result r = txn.exec_params(
        "INSERT INTO members (id, kind, address, capacity_json) "
        "VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO UPDATE SET "
        "kind = EXCLUDED.kind, address = EXCLUDED.address, "
        "capacity_json = EXCLUDED.capacity_json, last_seen = now() "
        "WHERE members.kind <> 'learner' OR EXCLUDED.kind = 'learner'",
        row.id, row.kind, row.address,
        row.capacity_json.empty() ? std::string("{}") : row.capacity_json);
    if (r.affected_rows() == 0) return LearnersMemberIdError(row);
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<MemberRow>> PgStore::ListMembers() {
  return impl_->Transact<std::vector<MemberRow>>(
      "ListMembers", false,
      [](pqxx::dbtransaction& txn) -> absl::StatusOr<std::vector<MemberRow>> {
        std::vector<MemberRow> rows;
        for (const pqxx::row& r : txn.exec(absl::StrCat(
                 "SELECT ", kMemberColumns, " FROM members m ORDER BY m.id"))) {
          rows.push_back(ParseMember(r));
        }
        return rows;
      });
}

absl::StatusOr<int64_t> PgStore::ForgetMembers(absl::Time last_seen_before) {
  return impl_->Transact<int64_t>(
      "ForgetMembers", true,
      [&](pqxx::dbtransaction& txn) -> absl::StatusOr<int64_t> {
        const pqxx::result r = txn.exec_params(
            absl::StrCat("DELETE FROM members m WHERE m.last_seen < ",
                         TsParam(1),
                         " AND NOT EXISTS (SELECT 1 FROM runs r "
                         "WHERE r.member_id = m.id) "
                         "AND NOT EXISTS (SELECT 1 FROM leases l "
                         "WHERE l.member_id = m.id)"),
            Micros(last_seen_before));
        return static_cast<int64_t>(r.affected_rows());
      });
}

absl::StatusOr<MemberRow> PgStore::GetMember(const std::string& id) {
  return impl_->Transact<MemberRow>(
      "GetMember", false,
      [&](pqxx::dbtransaction& txn) -> absl::StatusOr<MemberRow> {
        const pqxx::result r =
            txn.exec_params(absl::StrCat("SELECT ", kMemberColumns,
                                         " FROM members m WHERE m.id = $1"),
                            id);
        if (r.empty()) {
          return absl::NotFoundError(
              absl::StrCat("no member with id '", id, "'"));
        }
        return ParseMember(r[0]);
      });
}

}  // namespace ristretto::coordinator

namespace ristretto::coordinator {

void PgStore::SetBetweenStatementsHookForTest(
    std::function<void(const char* read)> hook) {
  impl_->SetBetweenHook(std::move(hook));
}

}  // namespace ristretto::coordinator
