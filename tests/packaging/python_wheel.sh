#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Python install paths, as a user takes them (README, "Python"), on the
# host build (CMAKE_ARGS=-DCMR_WITH_CUDA=OFF, so that the suites run here):
#  1. python3 -m build --no-isolation --wheel: the wheel holds the package,
#     the extension (RUNPATH $ORIGIN) and libcmr.so.N, and its name says
#     which build it is (cmr_host-VERSION-...: the distribution cmr-host);
#  2. that wheel installed into a fresh venv outside the tree runs
#     tests/python/ (copied out of the tree) against the installed package,
#     with no PYTHONPATH or LD_LIBRARY_PATH;
#  3. README's commands as written: a venv made with --system-site-packages
#     (Debian's setuptools and wheel; a bare venv has no wheel), then
#     python3 -m pip install --no-build-isolation <checkout>: it imports,
#     allocates, and its metadata's version is cmr.__version__.
# The CMake build is build/wheel (kept, so later runs are incremental).
#
#   bash tests/packaging/python_wheel.sh [PYTHON]   (default /usr/bin/python3)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source=$PWD
python=${1:-/usr/bin/python3}
source tests/packaging/scratch.sh "$source" wheel
export CMAKE_ARGS=-DCMR_WITH_CUDA=OFF CMR_WHEEL_BUILD_DIR=$source/build/wheel

echo "--- 1. python3 -m build --no-isolation --wheel"
"$python" -m build --no-isolation --wheel --outdir "$work/dist" . >"$work/build.log" 2>&1 || {
  cat "$work/build.log"
  exit 1
}
wheel=$(echo "$work"/dist/cmr_host-"$version"-*.whl)
[[ -f $wheel ]] || { echo "no cmr_host-$version wheel: $(ls "$work/dist")"; exit 1; }
"$python" - "$wheel" <<'PY'
import re, subprocess, sys, tempfile, zipfile
wheel = zipfile.ZipFile(sys.argv[1])
names = wheel.namelist()
extension = [n for n in names if re.fullmatch(r"cmr/_capi_c\..*\.so", n)]
assert extension, f"no extension in {names}"
assert [n for n in names if re.fullmatch(r"cmr/libcmr\.so\.\d+", n)], f"no libcmr.so.N in {names}"
assert "cmr/mr.py" in names and "cmr/allocators/__init__.py" in names
assert any(n.endswith(".dist-info/LICENSE") for n in names), "no LICENSE in the wheel"
with tempfile.NamedTemporaryFile(suffix=".so") as copy:
    copy.write(wheel.read(extension[0]))
    copy.flush()
    dynamic = subprocess.run(["readelf", "-d", copy.name], check=True, capture_output=True, text=True).stdout
assert "[$ORIGIN]" in dynamic, f"the extension does not look beside itself for libcmr:\n{dynamic}"
print("the wheel holds", len(names), "files: the package, the extension (RUNPATH $ORIGIN) and libcmr")
PY

echo "--- 2. the wheel in a fresh venv, tests/python against it"
"$python" -m venv --system-site-packages "$work/venv" # numpy and pytest from the system
"$work/venv/bin/python" -m pip install -q --no-index --no-deps "$wheel"
mkdir -p "$work/tests"
cp -r tests/python "$work/tests/python"
cp tests/sizes.txt "$work/tests/"
cd "$work/tests/python"
"$work/venv/bin/python" - "$work/venv" "$version" <<'PY'
import importlib.metadata, sys
import cmr
venv, version = sys.argv[1], sys.argv[2]
assert cmr.__file__.startswith(venv + "/"), f"cmr was imported from {cmr.__file__}"
assert cmr.__version__ == version, cmr.__version__
assert importlib.metadata.version("cmr-host") == version, importlib.metadata.version("cmr-host")  # the metadata's
assert importlib.metadata.packages_distributions()["cmr"] == ["cmr-host"], importlib.metadata.packages_distributions()["cmr"]
assert not cmr._capi.cmr_built_with_cuda()
print("installed:", cmr.__file__, "cmr-host", importlib.metadata.version("cmr-host"))
PY
"$work/venv/bin/python" -m pytest -q -p no:cacheprovider .
cd "$source"

echo "--- 3. pip install --no-build-isolation <checkout> in another venv"
# README, "Python": the venv and the install, offline.
"$python" -m venv --system-site-packages "$work/venv-pip"
(cd "$source" && "$work/venv-pip/bin/python3" -m pip install --no-index --no-build-isolation .) >"$work/pip.log" 2>&1 || {
  cat "$work/pip.log"
  exit 1
}
cd "$work"
"$work/venv-pip/bin/python" -c '
import importlib.metadata, sys, cmr, cmr.mr
assert cmr.__file__.startswith(sys.argv[1] + "/"), cmr.__file__
assert importlib.metadata.version("cmr-host") == cmr.__version__ == sys.argv[2], (importlib.metadata.version("cmr-host"), cmr.__version__)
pool = cmr.mr.PoolMemoryResource(cmr.mr.SystemMemoryResource(), "1MiB")
pool.deallocate(pool.allocate(1000), 1000)
print("pip install .: cmr", cmr.__version__, "from", cmr.__file__)' "$work/venv-pip" "$version"
echo "python_wheel.sh: the wheel and pip install . both work from outside the tree"
