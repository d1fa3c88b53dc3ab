# ristretto learner for NVIDIA GPUs: ristretto-learner built against the
# CUDA LibTorch 2.x of a PyTorch wheel (CMAKE_PREFIX_PATH =
# torch.utils.cmake_prefix_path), on NVIDIA's CUDA images.
#
#   docker build -f docker/learner-cuda.Dockerfile -t ristretto-learner-cuda .
#   docker build -f docker/learner-cuda.Dockerfile \
#       --build-arg TORCH_VERSION=2.7.1 --build-arg TORCH_INDEX=cu126 ...
#
# PyTorch wheels use the C++11 ABI from 2.7 on, which the Ubuntu gRPC,
# protobuf and abseil packages need (an older wheel fails the ABI check
# below instead of failing at link time). Ubuntu 24.04 carries the same gRPC
# 1.51 / protobuf 3.21 / abseil 20220623 as Debian 12.
#
# Run with a GPU: `docker run --gpus all ...` or the compose file's
# `learner` service. NVML (libnvidia-ml.so.1, for the GPU metrics) is
# mounted by the NVIDIA container toolkit when the "utility" driver
# capability is requested (NVIDIA_DRIVER_CAPABILITIES below).

ARG CUDA_VERSION=12.6.3
ARG UBUNTU=ubuntu24.04

############################ build ############################
FROM nvidia/cuda:${CUDA_VERSION}-cudnn-devel-${UBUNTU} AS build
ARG TORCH_VERSION=2.7.1
ARG TORCH_INDEX=cu126
ARG JOBS=
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build ccache pkg-config git \
      python3 python3-venv python3-pip \
      libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler \
      libabsl-dev libgoogle-glog-dev \
      prometheus-cpp-dev libpqxx-dev libpq-dev libyaml-cpp-dev \
      zlib1g-dev nlohmann-json3-dev \
 && rm -rf /var/lib/apt/lists/*

# The CUDA PyTorch wheel and its nvidia-* libraries, in a venv whose
# site-packages layout is copied unchanged into the runtime stage (the
# libraries find each other through relative RPATHs).
RUN python3 -m venv /opt/torch \
 && /opt/torch/bin/pip install --no-cache-dir \
      --index-url "https://download.pytorch.org/whl/${TORCH_INDEX}" \
      "torch==${TORCH_VERSION}" \
 && /opt/torch/bin/python -c "import torch, sys; \
print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cxx11 abi', torch.compiled_with_cxx11_abi()); \
sys.exit(0 if torch.compiled_with_cxx11_abi() else 'this LibTorch uses the pre-C++11 ABI; use torch >= 2.7')"

WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/root/.cache/ccache \
    export CCACHE_DIR=/root/.cache/ccache \
 && TORCH_PREFIX="$(/opt/torch/bin/python -c 'import torch; print(torch.utils.cmake_prefix_path)')" \
 && cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release \
          -DRISTRETTO_BUILD_TESTS=OFF -DRISTRETTO_BUILD_BENCH=OFF \
          -DCMAKE_PREFIX_PATH="${TORCH_PREFIX}" \
          -DTORCH_CUDA_ARCH_LIST="8.0;8.6;8.9;9.0" \
 && cmake --build /build -j "${JOBS:-$(nproc)}" --target ristretto-learner \
 && mkdir -p /out/bin \
 && cp /build/learner/ristretto-learner /out/bin/ \
 && strip --strip-unneeded /out/bin/*
# LibTorch (torch/lib) and the nvidia-* wheels it loads (cuBLAS, cuDNN, NCCL,
# ...), without Python, in the venv's relative layout (RPATH $ORIGIN/../../nvidia).
RUN SITE="$(/opt/torch/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
 && mkdir -p /out/torch/site-packages/torch \
 && cp -a "$SITE/torch/lib" /out/torch/site-packages/torch/ \
 && cp -a "$SITE/nvidia" /out/torch/site-packages/ \
 && LD_LIBRARY_PATH="$SITE/torch/lib" ldd /out/bin/ristretto-learner | grep -q 'libtorch_cuda\.so' \
 || { echo "ristretto-learner does not link libtorch_cuda.so: not a CUDA build" >&2; exit 1; }
# Run-time packages: owners of the shared libraries that are not LibTorch's
# or CUDA's own (those come from the venv and the base image).
RUN export LD_LIBRARY_PATH=/out/torch/site-packages/torch/lib \
 && for lib in $(ldd /out/bin/* | awk '/=> \//{print $3}' | sort -u); do \
      case "$lib" in /out/torch/*|/opt/torch/*|/usr/local/cuda*) continue ;; esac; \
      real=$(readlink -f "$lib"); \
      dpkg -S "$real" 2>/dev/null || dpkg -S "${real#/usr}" 2>/dev/null \
        || dpkg -S "$lib" 2>/dev/null || echo "unowned: $lib" >&2; \
    done | cut -d: -f1 | grep -Ev '^(cuda-|libcublas|libcudnn|libcufft|libcurand|libcusolver|libcusparse|libnccl|libnvjitlink|libnpp|libnvjpeg|libnvidia-)' \
      | sort -u > /out/runtime-packages.txt \
 && echo "run-time packages:" && cat /out/runtime-packages.txt

############################ runtime ############################
FROM nvidia/cuda:${CUDA_VERSION}-runtime-${UBUNTU} AS runtime
ENV DEBIAN_FRONTEND=noninteractive
COPY --from=build /out/runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update \
 && xargs -a /tmp/runtime-packages.txt apt-get install -y --no-install-recommends \
 && apt-get install -y --no-install-recommends ca-certificates tini \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt
COPY --from=build /out/torch/ /opt/torch/
RUN echo /opt/torch/site-packages/torch/lib > /etc/ld.so.conf.d/libtorch.conf && ldconfig
COPY --from=build /out/bin/ /usr/local/bin/
COPY docker/entrypoint.sh /usr/local/bin/ristretto-entrypoint
COPY docker/healthcheck.sh /usr/local/bin/ristretto-healthcheck
COPY docker/install-tls.sh /usr/local/bin/ristretto-install-tls
RUN groupadd --system --gid 10001 ristretto \
 && useradd --system --uid 10001 --gid 10001 --home-dir /data --shell /usr/sbin/nologin ristretto \
 && mkdir -p /data && chown ristretto:ristretto /data \
 && chmod 0755 /usr/local/bin/ristretto-entrypoint /usr/local/bin/ristretto-healthcheck \
      /usr/local/bin/ristretto-install-tls \
 && if ldd /usr/local/bin/ristretto-learner | grep 'not found' \
       | grep -v 'libcuda\.so\|libnvidia-ml\.so'; then exit 1; fi
USER 10001:10001
WORKDIR /data
ENV NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    OMP_NUM_THREADS=1
EXPOSE 50051 9100
ENTRYPOINT ["tini", "--", "ristretto-entrypoint"]
CMD ["ristretto-learner", "--device", "cuda", "--address", "0.0.0.0", "--port", "50051", "--metrics-port", "9100"]
