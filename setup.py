# SPDX-License-Identifier: Apache-2.0
"""The CMake hook of `pip install .` (pyproject.toml): setuptools' build_ext
configures, builds and installs cmr with CMake and takes the installed
package (cmr/, its extension and libcmr) as the wheel's contents.

The distribution's name says what the wheel needs, as RMM's rmm-cu12 and
rmm-cu13 do: cmr-cu13 (built with CUDA 13; cmr-cuN for another major
version) or cmr-host (the host build, no CUDA); either installs the package
cmr. Its version is VERSION's, the number cmr.__version__ and cmr_version()
report. The metadata is here, not in pyproject.toml, because the name is
computed (PEP 621 forbids a dynamic name).
Environment: CMR_WHEEL_BUILD_DIR (default build/wheel) is the CMake build
folder, reused between runs; CMAKE_ARGS adds arguments to the configure
step (e.g. -DCMR_WITH_CUDA=OFF)."""

import os
import shlex
import shutil
import subprocess
import sys
import tempfile

from setuptools import Distribution, setup
from setuptools.command.build_ext import build_ext

SOURCE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.abspath(os.environ.get("CMR_WHEEL_BUILD_DIR", os.path.join(SOURCE, "build", "wheel")))


def configure():
    """Configures the CMake build (the library and the Python package only)
    and returns the distribution's name for that build, "cmr-cuN" or "cmr-host"."""
    command = ["cmake", "-S", SOURCE, "-B", BUILD, f"-DPython3_EXECUTABLE={sys.executable}",
               "-DCMR_BUILD_PYTHON=ON", "-DCMR_BUILD_TESTS=OFF", "-DCMR_BUILD_DEMO=OFF", "-DCMR_BUILD_BENCH=OFF",
               "-DCMR_BUILD_TOOLS=OFF", "-DCMAKE_BUILD_TYPE=Release"]
    if shutil.which("ninja") and not os.path.exists(os.path.join(BUILD, "CMakeCache.txt")):
        command += ["-G", "Ninja"]
    subprocess.run(command + shlex.split(os.environ.get("CMAKE_ARGS", "")), check=True, stdout=sys.stderr)
    cache = {}
    with open(os.path.join(BUILD, "CMakeCache.txt"), encoding="utf-8") as lines:
        for line in lines:
            if line.startswith(("CMR_BUILD_KIND:", "CMR_CUDA_VERSION_MAJOR:")):
                key, value = line.split("=", 1)
                cache[key.split(":")[0]] = value.strip()
    if cache.get("CMR_BUILD_KIND") == "host":
        return "cmr-host"
    if cache.get("CMR_BUILD_KIND") == "cuda" and cache.get("CMR_CUDA_VERSION_MAJOR"):
        return f"cmr-cu{cache['CMR_CUDA_VERSION_MAJOR']}"
    raise RuntimeError(f"{BUILD}/CMakeCache.txt names no build (CMR_BUILD_KIND, CMR_CUDA_VERSION_MAJOR): {cache}")


class CMakeBuild(build_ext):
    """Builds and installs with CMake, then copies the installed package
    into build_lib: the modules, the extension (RPATH $ORIGIN) and libcmr
    under its soname, the one name the extension asks for (a wheel holds
    no symlinks)."""

    def run(self):
        subprocess.run(["cmake", "--build", BUILD, "-j", str(os.cpu_count() or 1)], check=True, stdout=sys.stderr)
        with tempfile.TemporaryDirectory() as prefix:
            subprocess.run(["cmake", "--install", BUILD, "--prefix", prefix], check=True, stdout=sys.stderr)
            package = next(os.path.join(root, "cmr") for root, dirs, _ in os.walk(prefix)
                           if root.endswith("site-packages") and "cmr" in dirs)
            target = os.path.join(self.build_lib, "cmr")
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(package, target, symlinks=True,
                            ignore=shutil.ignore_patterns("libcmr.so", "__pycache__"))
            for name in os.listdir(target):
                path = os.path.join(target, name)
                if name.startswith("libcmr.so.") and os.path.islink(path):  # the soname: the real file under its name
                    real = os.path.join(target, os.readlink(path))
                    os.remove(path)
                    os.replace(real, path)


class BinaryDistribution(Distribution):
    """A platform wheel (cpXY-cpXY-linux_x86_64): it holds compiled code."""

    def has_ext_modules(self):
        return True


# Extras: the tests' modules, and cmr.dask's (distributed's WorkerPlugin and Client).
EXTRAS = {"test": ["pytest", "numpy"], "dask": ["dask", "distributed"]}


def main():
    with open(os.path.join(SOURCE, "VERSION"), encoding="utf-8") as version_file:
        version = version_file.read().strip()
    with open(os.path.join(SOURCE, "README.md"), encoding="utf-8") as readme:
        description = readme.read()
    name = configure()
    # egg_info's scratch (the .egg-info) in the build folder, not the checkout.
    setup(name=name, version=version,
          description="GPU memory resources behind a stable C ABI, with RMM's Python API",
          long_description=description, long_description_content_type="text/markdown",
          license="Apache-2.0", license_files=["LICENSE"], python_requires=">=3.11", extras_require=EXTRAS,
          classifiers=["License :: OSI Approved :: Apache Software License", "Programming Language :: C",
                       "Programming Language :: Python :: 3", "Operating System :: POSIX :: Linux"],
          distclass=BinaryDistribution, cmdclass={"build_ext": CMakeBuild},
          packages=[], zip_safe=False, options={"egg_info": {"egg_base": os.path.relpath(BUILD, SOURCE)}})


if __name__ == "__main__":  # setuptools runs setup.py as __main__; tests read EXTRAS without building
    main()
