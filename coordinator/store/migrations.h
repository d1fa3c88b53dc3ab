// The coordinator's schema as an ordered list of numbered SQL migrations.
// Store::Migrate() applies those whose version is not yet recorded in
// schema_migrations, each in its own transaction. Never edit a released
// migration: append a new one with the next version.
// Thread-safe (immutable data).
#ifndef RISTRETTO_COORDINATOR_STORE_MIGRATIONS_H_
#define RISTRETTO_COORDINATOR_STORE_MIGRATIONS_H_

#include <vector>

namespace ristretto::coordinator {

struct Migration {
  int version;       // 1, 2, 3, … strictly increasing
  const char* name;  // short description, recorded with the version
  const char* sql;   // one or more statements, run in one transaction
};

// All migrations in version order.
const std::vector<Migration>& Migrations();

// Version of the last migration (the schema this binary expects).
int LatestSchemaVersion();

}  // namespace ristretto::coordinator

#endif  // RISTRETTO_COORDINATOR_STORE_MIGRATIONS_H_
