#!/usr/bin/env bash
# Makes a development certificate authority and the certificates ristretto's
# gRPC servers and clients use for TLS and mutual TLS (openssl only).
#
# Usage: scripts/make_dev_certs.sh DIR [--client FILE]... [--actor ID]...
#                                  [--learner ID]... [NAME...]
#   DIR   created if missing; existing files in it are kept (re-running
#         does not replace a CA that certificates were already issued from)
#   --client FILE
#         also issue a client certificate FILE.pem/FILE.key (letters, digits,
#         '-', '_'), CN "ristretto client FILE": one per actor host. Under
#         mutual TLS the coordinator binds each actor id to the client
#         certificate that first asked for it, so hosts with certificates of
#         their own cannot take each other's ids (docs/security.md).
#   --actor ID, --learner ID
#         also issue a client certificate that names its holder: actor id ID
#         (actor-ID.pem/.key, URI SAN urn:ristretto:actor:ID) or learner
#         member id ID (learner-ID.pem/.key, urn:ristretto:learner:ID).
#         ID: letters, digits, '.', '-', '_'. The coordinator lets such a
#         certificate use only the ids it names, across coordinator restarts
#         (no trust on first use); an actor or learner started with it takes
#         that id (--actor-id/--member-id may be left out).
#   NAME  extra DNS names or IP addresses the server certificate is valid for
#         (compose service names, a host's address, a wildcard such as
#         '*.learner.ristretto.svc' for Kubernetes learners); localhost and
#         127.0.0.1 are always included.
#
# Writes (keys mode 600, certificates 644):
#   ca.pem, ca.key          the development CA (10 years; keep ca.key private)
#   server.pem, server.key  for --tls-cert/--tls-key of the coordinator and
#                           learners (serverAuth and clientAuth: a learner is
#                           both a server and a client of the coordinator)
#   client.pem, client.key  for actors and tools under mutual TLS (clientAuth);
#                           also usable as a learner's --coordinator-tls-cert/
#                           --coordinator-tls-key
#   FILE.pem, FILE.key      the same, for each --client FILE
#   actor-ID.pem/.key, learner-ID.pem/.key  for each --actor/--learner ID
#
# Not for production: one server certificate for every server, no
# revocation, CA key on the same disk. (`ristretto up` needs none of this: it
# makes a throw-away set per run in its data directory, common/dev_certs.h.)
set -euo pipefail
if [ $# -lt 1 ]; then
  echo "usage: $0 DIR [--client FILE]... [--actor ID]... [--learner ID]..." \
    "[NAME...]" >&2
  exit 2
fi
dir=$1
shift
clients=()
named=()  # FILE=URI
names=()
while [ $# -gt 0 ]; do
  if [ "$1" = --actor ] || [ "$1" = --learner ]; then
    if [ $# -lt 2 ] || [[ ! $2 =~ ^[A-Za-z0-9._-]{1,64}$ ]]; then
      echo "make_dev_certs: $1 needs an id of 1-64 letters, digits, '.', '-'" \
        "and '_'" >&2
      exit 2
    fi
    named+=("${1#--}-$2=urn:ristretto:${1#--}:$2")
    shift 2
  elif [ "$1" = --client ]; then
    if [ $# -lt 2 ] || [[ ! $2 =~ ^[A-Za-z0-9_-]+$ ]] ||
       [[ $2 =~ ^(ca|server|client)$ ]]; then
      echo "make_dev_certs: --client needs a file name of letters, digits, '-'" \
        "and '_' other than ca, server and client" >&2
      exit 2
    fi
    clients+=("$2")
    shift 2
  else
    names+=("$1")
    shift
  fi
done
command -v openssl >/dev/null || { echo "make_dev_certs: openssl not found" >&2; exit 1; }
mkdir -p "$dir"
umask 077

san="DNS:localhost,IP:127.0.0.1"
for name in ${names[@]+"${names[@]}"}; do
  if [[ $name =~ ^[0-9.]+$ || $name == *:* ]]; then
    san+=",IP:$name"
  elif [[ $name =~ ^(\*\.)?[A-Za-z0-9.-]+$ ]]; then  # *.x.y: a wildcard (Kubernetes learners)
    san+=",DNS:$name"
  else
    echo "make_dev_certs: not a DNS name or IP address: '$name'" >&2
    exit 2
  fi
done

key() {  # key FILE: a P-256 private key
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null
}

if [ ! -f "$dir/ca.pem" ] || [ ! -f "$dir/ca.key" ]; then
  key "$dir/ca.key"
  openssl req -x509 -new -key "$dir/ca.key" -sha256 -days 3650 \
    -subj "/CN=ristretto development CA" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out "$dir/ca.pem"
fi

issue() {  # issue NAME CN EXTENDED_KEY_USAGE [SAN]
  local name=$1 cn=$2 eku=$3 alt=${4:-}
  local ext
  ext=$(mktemp)
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$eku"
    if [ -n "$alt" ]; then echo "subjectAltName=$alt"; fi
  } > "$ext"
  key "$dir/$name.key"
  openssl req -new -key "$dir/$name.key" -subj "/CN=$cn" -out "$dir/$name.csr"
  openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
    -CAcreateserial -days 825 -sha256 -extfile "$ext" -out "$dir/$name.pem" 2>/dev/null
  rm -f "$dir/$name.csr" "$ext"
}

issue server "ristretto server" "serverAuth,clientAuth" "$san"
issue client "ristretto client" "clientAuth"
chmod 644 "$dir/ca.pem" "$dir/server.pem" "$dir/client.pem"
chmod 600 "$dir/ca.key" "$dir/server.key" "$dir/client.key"
for client in ${clients[@]+"${clients[@]}"}; do
  issue "$client" "ristretto client $client" "clientAuth"
  chmod 644 "$dir/$client.pem"
  chmod 600 "$dir/$client.key"
done
for entry in ${named[@]+"${named[@]}"}; do
  file=${entry%%=*}
  issue "$file" "ristretto client $file" "clientAuth" "URI:${entry#*=}"
  chmod 644 "$dir/$file.pem"
  chmod 600 "$dir/$file.key"
  clients+=("$file")
done
rm -f "$dir/ca.srl"
echo "make_dev_certs: wrote $dir/{ca,server,client}.{pem,key} (server names: $san)"
if [ ${#clients[@]} -gt 0 ]; then
  echo "make_dev_certs: and client certificates ${clients[*]/%/.pem}"
fi
