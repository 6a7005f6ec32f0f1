#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A readme.<KIND> test: README.md's blocks marked <!-- test: KIND -->
# (tests/readme/README.md), extracted, built and run from a folder outside
# the tree against cmr installed from BUILD_DIR into a prefix there, the
# way the README says a user builds each: a block that does not build, or
# exits non-zero, fails the test.
#
#   run.sh SOURCE_DIR BUILD_DIR KIND
# Tools from the environment (the CMake build sets them): PYTHON, CUDA_BUILD
# (1 in a CUDA build: the Python programs then skip, 77, without a GPU), PKG_CONFIG (c, go),
# GO, GOCACHE, NO_SWIG_FOLDER (go: a `swig` that fails, first on PATH), JAVAC, JAVA (java), MCS, MONO (csharp).
set -euo pipefail
source_dir=$1 build_dir=$2 kind=$3
source "$source_dir/tests/packaging/scratch.sh" "$source_dir" "readme-$kind"
prefix=$work/prefix
cmake --install "$build_dir" --prefix "$prefix" >"$work/install.log" 2>&1 || {
  echo "FAIL: cmake --install into $prefix:"; cat "$work/install.log"; exit 1; }
mapfile -t blocks < <("$PYTHON" "$source_dir/tests/readme/extract.py" "$source_dir/README.md" "$kind" "$work/blocks")
pc_dir=$(dirname "$(find "$prefix" -name cmr.pc)")
site_packages=$(find "$prefix" -type d -name site-packages -print -quit)
if [[ $kind == c || $kind == cpp || $kind == go ]]; then
  export PKG_CONFIG_PATH=$pc_dir
  libdir=$("$PKG_CONFIG" --variable=libdir cmr)
fi
cd "$work"

# run_clean COMMAND...: runs it with only PATH and HOME in its environment, plus the VAR=value words first.
run_clean() {
  local assignments=()
  while [[ $1 == *=* ]]; do assignments+=("$1"); shift; done
  env -i PATH=/usr/bin:/bin HOME="$work" "${assignments[@]}" "$@"
}

for block in "${blocks[@]}"; do
  echo "--- $block:"
  cat -n "$block"
  case $kind in
    c)
      # README, "Using the C API": pkg-config's flags, and the prefix's libdir as the program's run path.
      cc -Wall -Werror "$block" $("$PKG_CONFIG" --cflags --libs cmr) -Wl,-rpath,"$libdir" -o "${block%.c}"
      run_clean "${block%.c}"
      ;;
    cpp)
      # README, "C++": the same flags with the C++ compiler, C++17.
      "${CXX:-c++}" -std=c++17 -Wall -Werror "$block" $("$PKG_CONFIG" --cflags --libs cmr) -Wl,-rpath,"$libdir" \
        -o "${block%.cpp}"
      run_clean "${block%.cpp}"
      ;;
    python | dask)
      # The Python programs use the current device: a CUDA build needs a GPU for them.
      if [[ ${CUDA_BUILD:-0} == 1 ]] &&
        ! run_clean PYTHONPATH="$site_packages" "$PYTHON" -c 'import cmr._capi as c; c.cmr_device_count()' >/dev/null 2>&1; then
        echo "SKIP: a CUDA build without a GPU (the Python programs allocate on the current device)"
        exit 77
      fi
      if [[ $kind == dask ]] && ! "$PYTHON" -c 'import distributed' 2>/dev/null; then
        echo "SKIP: $PYTHON has no distributed (Debian: python3-distributed)"
        exit 77
      fi
      run_clean PYTHONPATH="$site_packages" "$PYTHON" "$block"
      ;;
    go)
      # README, "Go": a module of the user's own requiring cmr's through a replace, cmr.pc found through PKG_CONFIG_PATH.
      module=$work/go-${block##*/}
      mkdir -p "$module"
      cp "$block" "$module/main.go"
      printf 'module example.com/readme\n\ngo 1.19\n\nrequire github.com/cmr-project/cmr/go v0.0.0\n\nreplace github.com/cmr-project/cmr/go => %s/go\n' \
        "$source_dir" >"$module/go.mod"
      (cd "$module" &&
        run_clean PATH="${NO_SWIG_FOLDER:+$NO_SWIG_FOLDER:}/usr/bin:/bin" GOCACHE="$GOCACHE" GOPATH="$work/gopath" GOFLAGS=-mod=mod \
          GOPROXY=off GOENV=off GOTOOLCHAIN=local CGO_ENABLED=1 PKG_CONFIG_PATH="$pc_dir" CGO_LDFLAGS="-Wl,-rpath,$libdir" \
          "$GO" build -o program . &&
        run_clean ./program)
      ;;
    java)
      # README, "Java": the JAR alone on the class path. The file is named after its public class.
      class=$(sed -n 's/^public \(final \)\{0,1\}class \([A-Za-z_][A-Za-z0-9_]*\).*/\2/p' "$block" | sed -n 1p)
      [[ -n $class ]] || { echo "FAIL: $block declares no public class"; exit 1; }
      mkdir -p "$work/java-${block##*/}"
      cp "$block" "$work/java-${block##*/}/$class.java"
      (cd "$work/java-${block##*/}" && "$JAVAC" -cp "$prefix/share/java/cmr.jar" "$class.java" &&
        run_clean "$JAVA" -cp "$prefix/share/java/cmr.jar:." "$class")
      ;;
    csharp)
      # README, "C#": compiled against the installed Cmr.dll, run with its folder as MONO_PATH.
      assembly=$(dirname "$(find "$prefix" -name Cmr.dll -print -quit)")
      "$MCS" -r:"$assembly/Cmr.dll" -out:"${block%.cs}.exe" "$block"
      run_clean MONO_PATH="$assembly" "$MONO" "${block%.cs}.exe"
      ;;
    *)
      echo "FAIL: no way to run a $kind block"
      exit 1
      ;;
  esac
done
echo "run.sh: ${#blocks[@]} README block(s) of kind $kind built and ran against cmr installed in $prefix"
