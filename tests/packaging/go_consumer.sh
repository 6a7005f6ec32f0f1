#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The packaging.go_consumer test: a user's Go module (tests/packaging/go/),
# outside the tree, that requires github.com/cmr-project/cmr/go with a
# replace directive to the checkout, over cmr installed into a prefix in the
# build folder and found through its cmr.pc (PKG_CONFIG_PATH), as a user
# with cmr installed somewhere of their own does: `go vet` and `go test`
# pass, and the program runs. The module ships SWIG's output: NO_SWIG_FOLDER
# holds a `swig` that fails, first on PATH, so nothing may run SWIG.
# Offline: GOPROXY=off.
#
#   go_consumer.sh SOURCE_DIR BUILD_DIR GO NO_SWIG_FOLDER PKG_CONFIG
set -euo pipefail
source_dir=$1 build_dir=$2 go=$3 no_swig_folder=$4 pkg_config=$5
source "$source_dir/tests/packaging/scratch.sh" "$source_dir" go
prefix=$build_dir/go-consumer/prefix
rm -rf "$prefix"
cmake --install "$build_dir" --prefix "$prefix" >"$work/install.log" 2>&1 || {
  echo "FAIL: cmake --install into $prefix:"; cat "$work/install.log"; exit 1; }
pc=$(find "$prefix" -name cmr.pc)
[[ -n $pc ]] || { echo "FAIL: no cmr.pc installed under $prefix"; exit 1; }
libdir=$("$pkg_config" --variable=libdir "$pc")

mkdir "$work/consumer"
cp "$source_dir"/tests/packaging/go/*.go "$work/consumer/"
cat >"$work/consumer/go.mod" <<MOD
module example.com/consumer

go 1.19

require github.com/cmr-project/cmr/go v0.0.0

replace github.com/cmr-project/cmr/go => $source_dir/go
MOD
cd "$work/consumer"
export GO111MODULE=on GOFLAGS=-mod=mod GOPROXY=off GOENV=off GOTOOLCHAIN=local CGO_ENABLED=1
# A fresh cache, as a user's first build has.
export GOCACHE=$work/gocache GOPATH=$work/gopath PATH=$no_swig_folder:$PATH
export PKG_CONFIG=$pkg_config PKG_CONFIG_PATH=$(dirname "$pc")
# The prefix is not one the dynamic linker searches: the program says where libcmr is.
export CGO_LDFLAGS="-Wl,-rpath,$libdir"
"$go" vet ./...
"$go" test -count=1 ./...
"$go" build -o consumer .
out=$(./consumer)
echo "$out"
[[ $out == "cmr $version" ]] || { echo "FAIL: the consumer did not report cmr $version"; exit 1; }
grep -q "$libdir/libcmr.so" <<<"$(ldd consumer)" || { echo "FAIL: not linked to the installed libcmr:"; ldd consumer; exit 1; }
echo "go_consumer.sh: a module outside the tree vetted, tested and ran over cmr installed in $prefix"
