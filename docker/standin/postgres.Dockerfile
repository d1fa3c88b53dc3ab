# Stand-in for the official postgres:15-bookworm image, built from Debian's
# postgresql-15 package, for machines that cannot pull from Docker Hub
# (deploy/docker-compose.standins.yml; scripts/compose_test.sh uses it only
# when the upstream image cannot be pulled). Same contract as upstream for
# what ristretto uses: POSTGRES_DB, POSTGRES_USER, POSTGRES_PASSWORD; data in
# /var/lib/postgresql/data (a volume); on an empty data directory it runs
# /docker-entrypoint-initdb.d/*.sh and *.sql once; listens on 5432 on every
# interface with scram-sha-256 passwords; pg_isready on PATH; SIGTERM is a
# fast shutdown.
ARG DEBIAN_IMAGE=debian:12
FROM ${DEBIAN_IMAGE}
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends postgresql-15 util-linux \
 && rm -rf /var/lib/apt/lists/* \
 && rm -rf /var/lib/postgresql/15/main /etc/postgresql/15/main \
 && mkdir -p /var/lib/postgresql/data /docker-entrypoint-initdb.d /var/run/postgresql \
 && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
ENV PATH=/usr/lib/postgresql/15/bin:$PATH \
    PGDATA=/var/lib/postgresql/data
COPY docker/standin/postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
VOLUME /var/lib/postgresql/data
EXPOSE 5432
STOPSIGNAL SIGINT
ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]
CMD ["postgres"]
