#!/usr/bin/env bash
# Entrypoint of the postgres stand-in (postgres.Dockerfile): initialises an
# empty $PGDATA like the official image does, then execs the server as the
# postgres user.
set -euo pipefail

: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
if [ -z "${POSTGRES_PASSWORD:-}" ]; then
  echo "postgres stand-in: POSTGRES_PASSWORD is empty; refusing to start" >&2
  exit 1
fi

as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }

if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 700 "$PGDATA"
fi

if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  chown postgres "$pwfile"
  as_postgres initdb --username="$POSTGRES_USER" --pwfile="$pwfile" \
    --auth-local=trust --auth-host=scram-sha-256 -D "$PGDATA" >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  # Initialise over the Unix socket only, then restart listening on TCP.
  as_postgres pg_ctl -D "$PGDATA" -w -o "-c listen_addresses=''" start >/dev/null
  if [ "$POSTGRES_DB" != postgres ]; then
    as_postgres psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
      --set=db="$POSTGRES_DB" -c 'CREATE DATABASE :"db"' >/dev/null \
      || as_postgres psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
           -c "CREATE DATABASE \"$POSTGRES_DB\"" >/dev/null
  fi
  for f in /docker-entrypoint-initdb.d/*; do
    [ -e "$f" ] || continue
    case "$f" in
      *.sh)  echo "postgres stand-in: running $f"
             as_postgres env POSTGRES_USER="$POSTGRES_USER" POSTGRES_DB="$POSTGRES_DB" \
               PGUSER="$POSTGRES_USER" bash "$f" ;;
      *.sql) echo "postgres stand-in: running $f"
             as_postgres psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" \
               --dbname "$POSTGRES_DB" -f "$f" ;;
      *)     echo "postgres stand-in: ignoring $f" ;;
    esac
  done
  as_postgres pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  echo "postgres stand-in: database initialised"
fi

if [ "${1:-}" = postgres ]; then
  shift
  exec setpriv --reuid=postgres --regid=postgres --init-groups \
    postgres -D "$PGDATA" -c listen_addresses='*' "$@"
fi
exec "$@"
