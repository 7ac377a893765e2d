#!/usr/bin/env bash
# setup.sh — installs what batchd needs from Debian (only what is missing) and builds it into build/.
# Idempotent: a second run installs nothing and rebuilds only what changed.
#
#   ./setup.sh              dependencies + build
#   (the Python client's tests and the benchmarks' PyTorch peer need python3-torch: always installed)
set -euo pipefail
cd "$(dirname "$0")"

packages=(
  build-essential cmake pkg-config            # toolchain
  libboost-dev                                # Boost.Asio, Boost.Interprocess (header-only)
  libprotobuf-dev protobuf-compiler           # proto/batchd.proto
  libgtest-dev                                # tests
  libcli11-dev libtomlplusplus-dev libspdlog-dev zlib1g-dev
  libturbojpeg0-dev libjpeg62-turbo-dev libspng-dev  # JPEG (TurboJPEG + libjpeg APIs) and PNG decoding
  libsystemd-dev                              # sd_notify, the journal
  libacl1-dev                                 # POSIX ACLs: who may open a file_system segment
  libarchive-dev                              # webdataset tar shards: the member index (data/tar_index)
  libxxhash-dev                               # dataset fingerprints, XXH3-128 (data/fingerprint)
  libhwy-dev                                  # Highway SIMD: the resampling passes (transforms/resample_passes)
  libcurl4-openssl-dev python3-botocore openssl  # remote shards: libcurl (daemon/remote), botocore's SigV4, a test CA
  pybind11-dev python3-dev python3-numpy python3-torch python3-torchvision python3-pytest  # Python client + tests
  python3 python3-pil python3-skimage libjpeg-turbo-progs  # test images (make_imagefolder.py), djpeg reference
  python3-matplotlib                          # bench/plot.py
  python3-yaml python3-kubernetes binutils    # tests/kubernetes: manifests, API schema (offline), objdump
  curl                                        # tests/remote and bench/compare_remote.py: the curl CLI
  python3-pip python3-venv python3-setuptools python3-wheel  # pip install --no-build-isolation . (pyproject.toml)
  dataset-fashion-mnist                       # /usr/share/datasets/fashion-mnist/*-ubyte.gz
  clang-14 libclang-rt-14-dev                 # the libFuzzer target (tests/fuzz), -Wthread-safety (build-tsa/)
)
# (--bench is accepted for compatibility: the benchmark's Python dependencies are always installed now.)
# npm's s3rver for the remote-shard tests (tests/remote/s3rver/install.sh): Debian's nodejs and npm where no npm
# is on PATH; an npm that is there already (NodeSource, nvm) is used as it is.
command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup.sh: installing ${missing[*]}"
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# s3rver 3.7.1 with `npm ci` from tests/remote/s3rver/package-lock.json into build-node/s3rver/ (git-ignored);
# nothing when that install is current. Network: the npm registry only.
tests/remote/s3rver/install.sh build-node/s3rver

jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
if ! cmake --build build -j "$jobs" >build/build.log 2>&1; then
  cat build/build.log
  echo "setup.sh: the build failed (full log above and in build/build.log)" >&2
  exit 1
fi
grep -E 'warning:' build/build.log || true

# The fuzz targets: clang with libFuzzer + ASan/UBSan, in their own tree (ctest runs each for a bounded time).
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DBATCHD_FUZZ=ON \
  -DBATCHD_BUILD_TESTS=OFF -DBATCHD_WITH_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
if ! cmake --build build-fuzz -j "$jobs" --target fuzz_control fuzz_decode fuzz_shards fuzz_spec >build-fuzz/build.log 2>&1; then
  cat build-fuzz/build.log
  echo "setup.sh: the fuzz targets failed to build (log above and in build-fuzz/build.log)" >&2
  exit 1
fi
# The client's lock annotations (client/src/mutex.h), checked by clang in its own tree: -Wthread-safety -Werror on
# batchd_client (and batchd_cuda where the toolkit is found), so a lock that does not guard what it says fails here.
cmake -S . -B build-tsa -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DBATCHD_THREAD_SAFETY=ON \
  -DBATCHD_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Debug >/dev/null
if ! cmake --build build-tsa -j "$jobs" --target thread_safety >build-tsa/build.log 2>&1; then
  cat build-tsa/build.log
  echo "setup.sh: clang's thread-safety analysis of the client failed (log above and in build-tsa/build.log)" >&2
  exit 1
fi
echo "setup.sh: built build/bin/batchd, build/bin/batchctl, build/bin/batchd-bench (and build-fuzz/bin/fuzz_control," \
  "build-fuzz/bin/fuzz_decode, build-fuzz/bin/fuzz_shards, build-fuzz/bin/fuzz_spec; build-tsa/ checked the client's locks)"
