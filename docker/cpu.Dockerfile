# ristretto CPU image: ristretto (CLI), ristretto-coordinator,
# ristretto-actor and ristretto-learner (CPU LibTorch 1.13), all from
# Debian 12 packages.
#
#   docker build -f docker/cpu.Dockerfile -t ristretto-cpu .      # from the repo root
#
# Two ways to get the binaries, chosen by --build-arg BINARIES (BuildKit
# builds only the stage the choice needs):
#   source    (default) compile them in the image: CMake/Ninja against
#             Debian's -dev packages, ccache in a BuildKit cache mount;
#   prebuilt  take them from docker/prebuilt/, staged from a host build of
#             the same commit on Debian 12 (docker/stage-prebuilt.sh build);
#             what CI does, since it has just built the tree.
# Both produce /out/bin (stripped) and /out/runtime-packages.txt (the
# Debian packages of every shared library the binaries load:
# docker/runtime-packages.sh). The runtime stage, identical for both, is
# debian:12-slim plus exactly those packages, a non-root user and nothing
# else. No secrets are baked in: the database password and the token come
# from the environment or from files at run time, TLS certificates from a
# volume (see docker/entrypoint.sh, deploy/docker-compose.yml).

ARG DEBIAN_IMAGE=debian:12
ARG BINARIES=source

######################## build from source ########################
FROM ${DEBIAN_IMAGE} AS build-source
ARG JOBS=
ENV DEBIAN_FRONTEND=noninteractive
# The build subset of scripts/install_deps.sh (no tests, benchmarks or lint).
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build ccache pkg-config \
      libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler \
      libabsl-dev \
      libtorch-dev libopenblas0-pthread libopenblas-dev libgoogle-glog-dev \
      prometheus-cpp-dev libpqxx-dev libpq-dev libyaml-cpp-dev \
      zlib1g-dev nlohmann-json3-dev \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY . .
# ccache survives between builds in a BuildKit cache mount, so a rebuild
# after a one-file change recompiles only what that file touches.
RUN --mount=type=cache,target=/root/.cache/ccache \
    CCACHE_DIR=/root/.cache/ccache \
    cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release \
          -DRISTRETTO_BUILD_TESTS=OFF -DRISTRETTO_BUILD_BENCH=OFF \
 && CCACHE_DIR=/root/.cache/ccache \
    cmake --build /build -j "${JOBS:-$(nproc)}" --target \
          ristretto ristretto-coordinator ristretto-actor ristretto-learner \
 && mkdir -p /out/bin \
 && cp /build/cli/ristretto /build/coordinator/service/ristretto-coordinator \
       /build/actor/ristretto-actor /build/learner/ristretto-learner /out/bin/ \
 && strip --strip-unneeded /out/bin/* \
 && docker/runtime-packages.sh /out/bin/* > /out/runtime-packages.txt

##################### binaries of a host build #####################
FROM ${DEBIAN_IMAGE} AS build-prebuilt
COPY docker/prebuilt/ /out/
RUN for b in ristretto ristretto-coordinator ristretto-actor ristretto-learner; do \
      [ -x "/out/bin/$b" ] || { echo "docker/prebuilt/bin/$b missing: run docker/stage-prebuilt.sh BUILD_DIR" >&2; exit 1; }; \
    done \
 && [ -s /out/runtime-packages.txt ]

FROM build-${BINARIES} AS build
RUN echo "run-time packages:" && cat /out/runtime-packages.txt

############################ runtime ############################
FROM ${DEBIAN_IMAGE}-slim AS runtime
ENV DEBIAN_FRONTEND=noninteractive
COPY --from=build /out/runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update \
 && xargs -a /tmp/runtime-packages.txt apt-get install -y --no-install-recommends \
 && apt-get install -y --no-install-recommends ca-certificates tini \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt
COPY --from=build /out/bin/ /usr/local/bin/
COPY docker/entrypoint.sh /usr/local/bin/ristretto-entrypoint
COPY docker/healthcheck.sh /usr/local/bin/ristretto-healthcheck
COPY docker/install-tls.sh /usr/local/bin/ristretto-install-tls
COPY deploy/studies/ /usr/share/ristretto/studies/
# Non-root user; /data is the shared data directory (datasets, checkpoints)
# and /etc/ristretto/tls the TLS files' mount point, both created owned by
# it, so a fresh named volume inherits the owner.
RUN groupadd --system --gid 10001 ristretto \
 && useradd --system --uid 10001 --gid 10001 --home-dir /data --shell /usr/sbin/nologin ristretto \
 && mkdir -p /data /etc/ristretto/tls \
 && chown ristretto:ristretto /data /etc/ristretto/tls \
 && chmod 0700 /etc/ristretto/tls \
 && chmod 0755 /usr/local/bin/ristretto-entrypoint /usr/local/bin/ristretto-healthcheck \
      /usr/local/bin/ristretto-install-tls \
 && if ldd /usr/local/bin/ristretto* | grep 'not found'; then exit 1; fi \
 && ristretto --help >/dev/null && ristretto-actor --help >/dev/null
USER 10001:10001
WORKDIR /data
# One OpenBLAS/OpenMP thread per process unless told otherwise: actors and
# learners size their own parallelism.
ENV OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
# gRPC: coordinator 50050, learner 50051; /metrics: 9100 (see deploy/).
EXPOSE 50050 50051 9100
ENTRYPOINT ["tini", "--", "ristretto-entrypoint"]
CMD ["ristretto", "--help"]
