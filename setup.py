# SPDX-License-Identifier: Apache-2.0
"""The CMake hook of `pip install .` (pyproject.toml): setuptools' build_ext
configures, builds and installs cmr with CMake and takes the installed
package (cmr/, its extension and libcmr) as the wheel's contents.

The wheel's version is VERSION's, with the build as its local label:
0.1.0+cuda (a CUDA toolkit was found) or 0.1.0+host (the host build).
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
    and returns which build it is, "cuda" or "host"."""
    command = ["cmake", "-S", SOURCE, "-B", BUILD, f"-DPython3_EXECUTABLE={sys.executable}",
               "-DCMR_BUILD_PYTHON=ON", "-DCMR_BUILD_TESTS=OFF", "-DCMR_BUILD_DEMO=OFF", "-DCMR_BUILD_BENCH=OFF",
               "-DCMR_BUILD_TOOLS=OFF", "-DCMAKE_BUILD_TYPE=Release"]
    if shutil.which("ninja") and not os.path.exists(os.path.join(BUILD, "CMakeCache.txt")):
        command += ["-G", "Ninja"]
    subprocess.run(command + shlex.split(os.environ.get("CMAKE_ARGS", "")), check=True, stdout=sys.stderr)
    with open(os.path.join(BUILD, "CMakeCache.txt"), encoding="utf-8") as cache:
        for line in cache:
            if line.startswith("CMR_BUILD_KIND:"):
                return line.split("=", 1)[1].strip()
    raise RuntimeError(f"{BUILD}/CMakeCache.txt has no CMR_BUILD_KIND")


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


with open(os.path.join(SOURCE, "VERSION"), encoding="utf-8") as version_file:
    VERSION = version_file.read().strip()

KIND = configure()
# egg_info's scratch (cmr.egg-info) in the build folder, not the checkout.
setup(version=f"{VERSION}+{KIND}", distclass=BinaryDistribution, cmdclass={"build_ext": CMakeBuild},
      packages=[], zip_safe=False, options={"egg_info": {"egg_base": os.path.relpath(BUILD, SOURCE)}})
