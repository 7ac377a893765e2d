#!/usr/bin/env bash
# setup.sh — installs what batchd needs (only what is missing) and builds it into build/. Idempotent: a second run
# installs nothing and rebuilds only what changed.
#
#   ./setup.sh           Debian's packages for the build; batchd, batchctl, batchd-bench and the client libraries
#   ./setup.sh --tests   also what only the tests need (README's test command; .ci/run):
#                        - Debian's test tools (clang-14 for the fuzz targets and -Wthread-safety, djpeg, curl, ...);
#                        - the project's venv .venv/ (git-ignored) with tests/requirements.txt from PyPI, pinned:
#                          torch, torchvision, numpy 2, Pillow, pybind11, pytest, moto[server] (the S3 test server);
#                        - every test binary and the Python module built against that venv's Python (build/python);
#                        - the fuzz targets (build-fuzz/) and clang's thread-safety check of the locks (build-tsa/);
#                        - PyTorch's own test/test_dataloader.py from Debian's pytorch source package, into
#                          build/conformance/ (tests/conformance/fetch_pytorch_tests.sh; not committed).
#   ./setup.sh --bench-peers  --tests, and the loaders bench/compare_peers.py runs beside batchd (issue 42): the venv
#                        .venv-peers/ with bench/peers/requirements.txt from PyPI, pinned (DataLoader, torchdata.nodes,
#                        SPDL, DALI, FFCV, litdata), and the Debian packages they build or load with (FFCV compiles
#                        against OpenCV and libjpeg-turbo; SPDL loads Debian's FFmpeg libraries).
#
# Network: Debian's archive (apt-get; --tests also a source package) and PyPI (pip, --tests and --bench-peers only).
# Nothing else is downloaded.
# BATCHD_VENV=DIR puts the venv elsewhere (default: .venv beside this file).
set -euo pipefail
cd "$(dirname "$0")"

tests=0
peers=0
for arg in "$@"; do
  case "$arg" in
    --tests) tests=1 ;;
    --bench-peers) tests=1; peers=1 ;;
    --bench) ;;  # accepted for compatibility: the benchmarks' Python is the test venv (--tests)
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake pkg-config            # toolchain
  libboost-dev                                # Boost.Asio, Boost.Interprocess (header-only)
  libprotobuf-dev protobuf-compiler           # proto/*.proto
  libgtest-dev                                # tests (configured always; built by --tests)
  libcli11-dev libtomlplusplus-dev libspdlog-dev zlib1g-dev
  libturbojpeg0-dev libjpeg62-turbo-dev libspng-dev  # JPEG (TurboJPEG + libjpeg APIs) and PNG decoding
  libsystemd-dev                              # sd_notify, the journal
  libacl1-dev                                 # POSIX ACLs: who may open a file_system segment
  libarchive-dev                              # webdataset tar shards: the member index (data/tar_index)
  libxxhash-dev                               # dataset fingerprints, XXH3-128 (data/fingerprint)
  libhwy-dev                                  # Highway SIMD: the resampling passes (transforms/kernels/resample_passes)
  libcurl4-openssl-dev                        # remote shards: libcurl (daemon/remote)
  dataset-fashion-mnist                       # /usr/share/datasets/fashion-mnist/*-ubyte.gz
  python3 python3-dev python3-venv            # the venv (pip install . of the README, and --tests)
)
test_packages=(
  clang-14 libclang-rt-14-dev                 # the libFuzzer targets (tests/fuzz), -Wthread-safety (build-tsa/)
  libjpeg-turbo-progs                         # djpeg, the reference decoder of the codec tests
  openssl curl binutils                       # tests/remote: a test CA, the curl CLI; tests/kubernetes: objdump
)
peer_packages=(
  libopencv-dev libturbojpeg0-dev             # FFCV's C extension (pip builds it from its sdist)
  libavformat59 libavcodec59 libavutil57 libswscale6 libswresample4 libavfilter8 libavdevice59  # SPDL's FFmpeg
)
((tests)) && packages+=("${test_packages[@]}")
((peers)) && packages+=("${peer_packages[@]}")

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

jobs=$(nproc 2>/dev/null || echo 2)
cmake_args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
if ((tests)); then
  venv="$(realpath -m "${BATCHD_VENV:-$PWD/.venv}")"  # absolute: ctest runs the tests from build/
  tests/python_env/make_venv.sh "$venv" tests/requirements.txt
  tests/conformance/fetch_pytorch_tests.sh build/conformance  # PyTorch's DataLoader tests (Debian's source package)
  cmake_args+=(-DPython_EXECUTABLE="$venv/bin/python")
fi
cmake -S . -B build "${cmake_args[@]}" >/dev/null
targets=(--target batchd batchctl batchd-bench batchd_client)
((tests)) && targets=()  # everything: the test binaries and the Python module too
if ! cmake --build build -j "$jobs" "${targets[@]}" >build/build.log 2>&1; then
  cat build/build.log
  echo "setup.sh: the build failed (full log above and in build/build.log)" >&2
  exit 1
fi
grep -E 'warning:' build/build.log || true
if ! ((tests)); then
  echo "setup.sh: built build/bin/batchd, build/bin/batchctl, build/bin/batchd-bench (./setup.sh --tests for the tests)"
  exit 0
fi

# The fuzz targets: clang with libFuzzer + ASan/UBSan, in their own tree (ctest runs each for a bounded time).
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DBATCHD_FUZZ=ON \
  -DBATCHD_BUILD_TESTS=OFF -DBATCHD_WITH_CUDA=OFF -DBATCHD_PYTHON=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
if ! cmake --build build-fuzz -j "$jobs" --target fuzz_control fuzz_decode fuzz_shards fuzz_spec >build-fuzz/build.log 2>&1; then
  cat build-fuzz/build.log
  echo "setup.sh: the fuzz targets failed to build (log above and in build-fuzz/build.log)" >&2
  exit 1
fi
# The lock annotations (proto/include/batchd/mutex.h), checked by clang in its own tree: -Wthread-safety -Werror on
# batchd_client (and batchd_cuda where the toolkit is found) and on the daemon's files whose state a Mutex guards
# (daemon_thread_safety), so a lock that does not guard what it says fails here.
cmake -S . -B build-tsa -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DBATCHD_THREAD_SAFETY=ON \
  -DBATCHD_BUILD_TESTS=OFF -DBATCHD_PYTHON=OFF -DCMAKE_BUILD_TYPE=Debug >/dev/null
if ! cmake --build build-tsa -j "$jobs" --target thread_safety >build-tsa/build.log 2>&1; then
  cat build-tsa/build.log
  echo "setup.sh: clang's thread-safety analysis failed (log above and in build-tsa/build.log)" >&2
  exit 1
fi
if ((peers)); then
  tests/python_env/make_venv.sh "$PWD/.venv-peers" bench/peers/requirements.txt
  echo "setup.sh: made .venv-peers/ for bench/compare_peers.py"
fi
echo "setup.sh: built build/ with its tests and the Python module for $venv/bin/python; build-fuzz/bin/fuzz_{control," \
  "decode,shards,spec}; build-tsa/ checked the locks"
