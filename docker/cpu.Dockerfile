# ristretto CPU image: ristretto (CLI), ristretto-coordinator,
# ristretto-actor and ristretto-learner (CPU LibTorch 1.13), all from
# Debian 12 packages.
#
#   docker build -f docker/cpu.Dockerfile -t ristretto-cpu .      # from the repo root
#
# Stage 1 builds with CMake/Ninja against Debian's -dev packages; stage 2 is
# debian:12-slim plus exactly the shared-library packages the binaries link
# (found with ldd + dpkg -S in stage 1), a non-root user and nothing else.
# No secrets are baked in: the database DSN/password and the registration
# token come from the environment or from files at run time (see
# docker/entrypoint.sh).

ARG DEBIAN_IMAGE=debian:12

############################ build ############################
FROM ${DEBIAN_IMAGE} AS build
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
# ccache survives between builds when BuildKit is used (the default builder).
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
 && strip --strip-unneeded /out/bin/*
# The run-time packages: the Debian package that owns every shared library
# the binaries load (merged /usr: try the resolved path, then without /usr).
RUN for lib in $(ldd /out/bin/* | awk '/=> \//{print $3}' | sort -u); do \
      real=$(readlink -f "$lib"); \
      dpkg -S "$real" 2>/dev/null || dpkg -S "${real#/usr}" 2>/dev/null \
        || dpkg -S "$lib" 2>/dev/null || echo "unowned: $lib" >&2; \
    done | cut -d: -f1 | sort -u > /out/runtime-packages.txt \
 && echo "run-time packages:" && cat /out/runtime-packages.txt

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
COPY deploy/studies/ /usr/share/ristretto/studies/
# Non-root user; /data is the shared data directory (datasets, checkpoints)
# and is created owned by it, so a fresh named volume inherits the owner.
RUN groupadd --system --gid 10001 ristretto \
 && useradd --system --uid 10001 --gid 10001 --home-dir /data --shell /usr/sbin/nologin ristretto \
 && mkdir -p /data \
 && chown ristretto:ristretto /data \
 && chmod 0755 /usr/local/bin/ristretto-entrypoint /usr/local/bin/ristretto-healthcheck \
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
