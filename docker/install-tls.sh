#!/usr/bin/env bash
# ristretto-install-tls: installs TLS files into the directory the
# ristretto processes read them from, owned by the image's user (uid/gid
# 10001) with keys mode 600 (the binaries refuse a key group or others may
# read). Two users:
#   * docker compose: the one-shot `tls-init` service runs it as root,
#     because the source is a bind mount of deploy/secrets/tls owned by
#     whoever made it (scripts/compose_up.sh runs scripts/make_dev_certs.sh
#     there; your own certificates go there too); DEST is the `tls` volume;
#   * Kubernetes: an init container runs it as uid 10001, because a Secret
#     volume with fsGroup makes every file group-readable; DEST is an
#     in-memory emptyDir.
#
# Usage: ristretto-install-tls SRC DEST
set -euo pipefail
[ "$#" -eq 2 ] || { echo "usage: ristretto-install-tls SRC DEST" >&2; exit 2; }
src=$1
dest=$2
for f in ca.pem server.pem server.key client.pem client.key; do
  if [ ! -s "$src/$f" ]; then
    echo "ristretto-install-tls: $f is missing in $src (compose: deploy/secrets/tls;" \
         "run scripts/compose_up.sh, which makes development certificates with" \
         "scripts/make_dev_certs.sh, or put your own there; Kubernetes: the Secret ristretto-tls)" >&2
    exit 1
  fi
done
# An existing DEST (a volume or emptyDir mount point) keeps its owner and
# mode: a non-root caller may not change them.
[ -d "$dest" ] || install -d -o 10001 -g 10001 -m 700 "$dest"
install -o 10001 -g 10001 -m 644 "$src/ca.pem" "$src/server.pem" "$src/client.pem" "$dest/"
install -o 10001 -g 10001 -m 600 "$src/server.key" "$src/client.key" "$dest/"
echo "ristretto-install-tls: installed ca.pem, server.pem/.key, client.pem/.key in $dest"
