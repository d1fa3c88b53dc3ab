#!/usr/bin/env bash
# Entry point of the ristretto images. Turns secrets given as files into the
# environment variables the binaries (and libpq) read, then execs the command
# (signals go straight to the binary; tini is PID 1 and reaps).
#
#   RISTRETTO_DB / RISTRETTO_DB_FILE        libpq DSN (coordinator, `ristretto study ...`)
#   PGPASSWORD / PGPASSWORD_FILE            database password, read by libpq when
#                                           the DSN has none (keeps it out of the DSN)
#   RISTRETTO_TOKEN / RISTRETTO_TOKEN_FILE  cluster token; read from the
#                                           environment by ristretto-coordinator,
#                                           ristretto-learner and ristretto-actor
#                                           (never put in argv, where `ps` shows
#                                           it: the binaries refuse --token VALUE)
#   RISTRETTO_ACTOR_TOKEN / RISTRETTO_ACTOR_TOKEN_FILE  the actors' token, read by
#                                           ristretto-coordinator (actors get it
#                                           as their RISTRETTO_TOKEN)
#
# A command that starts with "-" runs `ristretto` with those arguments.
set -euo pipefail

# VAR_FILE=path → VAR=<contents without the trailing newline>; both set is an error.
from_file() {
  local var="$1" file_var="$1_FILE"
  local file="${!file_var:-}"
  [ -n "$file" ] || return 0
  if [ -n "${!var:-}" ]; then
    echo "ristretto-entrypoint: set $var or $file_var, not both" >&2
    exit 2
  fi
  if [ ! -r "$file" ]; then
    echo "ristretto-entrypoint: $file_var=$file is not readable" >&2
    exit 2
  fi
  local value
  value="$(cat "$file")"
  export "$var=$value"
  unset "$file_var"
}

from_file RISTRETTO_DB
from_file PGPASSWORD
from_file RISTRETTO_TOKEN
from_file RISTRETTO_ACTOR_TOKEN

if [ "$#" -eq 0 ]; then set -- ristretto --help; fi
case "$1" in
  -*) set -- ristretto "$@" ;;
esac

# Only the binaries that take it see the token (in their environment,
# which only their user can read, not in argv).
case "$(basename "$1")" in
  ristretto-coordinator|ristretto-learner|ristretto-actor) ;;
  *) unset RISTRETTO_TOKEN ;;
esac
[ "$(basename "$1")" = ristretto-coordinator ] || unset RISTRETTO_ACTOR_TOKEN

exec "$@"
