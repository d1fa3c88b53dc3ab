#!/usr/bin/env bash
# Health check of the ristretto images, with bash alone (no curl in the image):
#
#   ristretto-healthcheck tcp:PORT ...        a TCP connect to 127.0.0.1:PORT succeeds
#   ristretto-healthcheck http:PORT/PATH ...  GET http://127.0.0.1:PORT/PATH answers 200
#
# Every check must pass (exit 0); the first failure prints why and exits 1.
set -uo pipefail

fail() { echo "unhealthy: $*" >&2; exit 1; }

[ "$#" -gt 0 ] || fail "usage: ristretto-healthcheck (tcp:PORT | http:PORT/PATH)..."
for check in "$@"; do
  case "$check" in
    tcp:*)
      port="${check#tcp:}"
      timeout 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null \
        || fail "nothing listens on port $port"
      ;;
    http:*)
      rest="${check#http:}"
      port="${rest%%/*}"
      path="/${rest#*/}"
      [ "$rest" != "$port" ] || path="/"
      status="$(timeout 5 bash -c '
        exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
        printf "GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n" "$2" >&3
        IFS=" " read -r _ code _ <&3 && echo "$code"' _ "$port" "$path" 2>/dev/null)"
      [ "$status" = "200" ] || fail "GET :$port$path answered '${status:-nothing}'"
      ;;
    *) fail "unknown check '$check'" ;;
  esac
done
exit 0
