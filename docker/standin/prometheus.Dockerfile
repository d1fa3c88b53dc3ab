# Stand-in for prom/prometheus, built from Debian's prometheus package, for
# machines that cannot pull from Docker Hub (deploy/docker-compose.standins.yml;
# scripts/compose_test.sh uses it only when the upstream image cannot be
# pulled). Same contract as upstream for what ristretto uses: the compose
# `command:` is prometheus's arguments (ENTRYPOINT is the binary), the
# config at /etc/prometheus/prometheus.yml, data in /prometheus (a volume,
# owned by nobody as upstream), port 9090, wget for the health check.
ARG DEBIAN_IMAGE=debian:12
FROM ${DEBIAN_IMAGE}
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends prometheus wget ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /prometheus /etc/prometheus \
 && chown -R nobody:nogroup /prometheus
USER nobody
VOLUME /prometheus
WORKDIR /prometheus
EXPOSE 9090
ENTRYPOINT ["/usr/bin/prometheus"]
CMD ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"]
