#!/usr/bin/env bash
# Runs once, when the official postgres image initialises an empty data
# directory (/docker-entrypoint-initdb.d). Creates grafana_reader, a role
# that can only read ristretto's tables: Grafana's PostgreSQL data source
# logs in with it, so a dashboard query can never change the study.
#
# Its password comes from $GRAFANA_DB_PASSWORD (deploy/.env in compose, the
# ristretto-db Secret in Kubernetes); without one the role is not created.
# The coordinator creates the tables later (its migrations), so the grant is
# a default privilege on tables that $POSTGRES_USER creates.
set -euo pipefail

if [ -z "${GRAFANA_DB_PASSWORD:-}" ]; then
  echo "10-grafana-reader: GRAFANA_DB_PASSWORD is empty; no grafana_reader role" >&2
  exit 0
fi

psql -v ON_ERROR_STOP=1 \
     --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
     --set=reader_password="$GRAFANA_DB_PASSWORD" \
     --set=db="$POSTGRES_DB" --set=owner="$POSTGRES_USER" <<'SQL'
CREATE ROLE grafana_reader LOGIN PASSWORD :'reader_password';
GRANT CONNECT ON DATABASE :"db" TO grafana_reader;
GRANT USAGE ON SCHEMA public TO grafana_reader;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO grafana_reader;
ALTER DEFAULT PRIVILEGES FOR ROLE :"owner" IN SCHEMA public
  GRANT SELECT ON TABLES TO grafana_reader;
ALTER ROLE grafana_reader SET default_transaction_read_only = on;
ALTER ROLE grafana_reader SET statement_timeout = '10s';
SQL
echo "10-grafana-reader: role grafana_reader created"
