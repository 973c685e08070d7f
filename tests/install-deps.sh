#!/usr/bin/env bash
# install-deps.sh: install what the build and the whole test suite need, exactly as CI has it (.ci/run calls
# this, then tests/check-all.sh; the README's test command is the same two steps): the Debian packages,
# then for /usr/bin/python3 (the tests' Python) onnx, onnxruntime and tritonclient from PyPI, then Triton's
# perf_analyzer.  What is there already is left alone, so it needs root (sudo) only to install something.
# Exits 1 only when the Debian packages cannot be installed; a PyPI or perf_analyzer failure is reported
# and the tests that need it skip.
set -uo pipefail
cd "$(dirname "$0")/.."

export DEBIAN_FRONTEND=noninteractive
packages="build-essential autoconf automake libtool pkg-config libmicrohttpd-dev libjansson-dev
  libopenblas-dev libdnnl-dev libsystemd-dev systemd curl python3 dataset-fashion-mnist util-linux
  nginx-light python3-yaml debhelper lintian dpkg-dev zlib1g-dev python3-pip libfast-float-dev libxxhash-dev
  libprotobuf-dev protobuf-compiler
  python3-numpy python3-pytest python3-setuptools clang libclang-rt-14-dev python3-torch python3-torchvision"
if ! dpkg -s $packages >/dev/null 2>&1; then
	apt-get update -qq && apt-get install -y -qq --no-install-recommends $packages </dev/null ||
		{ echo "install-deps.sh: installing the Debian packages failed (as root? sudo tests/install-deps.sh)" >&2; exit 1; }
fi

# onnx and onnxruntime from PyPI, the references of the ONNX tests (test_onnx_*, test_cpu_kernels_ort,
# test_multi_tensor; they skip without them, and then nothing checks the importer and kernels against an
# independent implementation).  onnx 1.22 is the last release whose wheel ships the node test data that
# test_onnx_node runs; numpy stays Debian's 1.x, which Debian's torch is built against.
/usr/bin/python3 -c 'import os, onnx, onnxruntime
assert os.path.isdir(os.path.join(os.path.dirname(onnx.__file__), "backend/test/data/node"))' 2>/dev/null ||
	/usr/bin/python3 -m pip install -q --break-system-packages 'onnx==1.22.0' 'onnxruntime==1.32.0' 'numpy<2' </dev/null ||
	echo "pip install onnx onnxruntime failed: the ONNX reference tests will skip"
# Triton's Python client from PyPI, for tests/integration/test_triton_client.sh (it skips without it).
/usr/bin/python3 -c 'import tritonclient.http' 2>/dev/null ||
	/usr/bin/python3 -m pip install -q --break-system-packages 'tritonclient[http]' </dev/null ||
	echo "pip install tritonclient[http] failed: the tritonclient tests will skip"
# Triton's perf_analyzer, for tests/integration/test_perf_analyzer.sh (it skips without it).
command -v perf_analyzer >/dev/null 2>&1 || .ci/install-perf-analyzer.sh ||
	echo "installing perf_analyzer failed: test_perf_analyzer will skip"
exit 0
