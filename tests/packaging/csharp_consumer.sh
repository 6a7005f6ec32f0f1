#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The packaging.csharp_consumer test: the NuGet package, installed from a
# local feed into a project folder outside the tree (nuget install, offline),
# holds Cmr.dll (lib/net45) and libcmr with the wrapper
# (runtimes/linux-x64/native); a program (csharp/App.cs) compiled against the
# package's Cmr.dll runs with them beside it (where Mono looks; .NET does that
# copy itself) and no LD_LIBRARY_PATH, and reports VERSION as both the
# library's and the assembly's version.
#
#   csharp_consumer.sh SOURCE_DIR NUPKG NUGET MCS MONO
set -euo pipefail
source_dir=$1 nupkg=$2 nuget=$3 mcs=$4 mono=$5
source "$source_dir/tests/packaging/scratch.sh" "$source_dir" csharp
mkdir "$work/feed" "$work/app"
cp "$nupkg" "$work/feed/"
cd "$work/app"
export HOME=$work NUGET_PACKAGES=$work/nuget-cache # no user state, nothing fetched
"$nuget" install Cmr -Version "$version" -Source "$work/feed" -OutputDirectory packages -NonInteractive >/dev/null
package=packages/Cmr.$version
for file in lib/net45/Cmr.dll runtimes/linux-x64/native/libcmr_csharp.so; do
  [[ -f $package/$file ]] || { echo "FAIL: the package has no $file: $(cd "$package" && find . -type f)"; exit 1; }
done
ls "$package"/runtimes/linux-x64/native/libcmr.so.* >/dev/null
"$mcs" -nologo -warnaserror+ -r:"$package/lib/net45/Cmr.dll" -out:App.exe "$source_dir/tests/packaging/csharp/App.cs"
cp "$package/lib/net45/Cmr.dll" "$package"/runtimes/linux-x64/native/* .
out=$("$mono" App.exe)
echo "$out"
[[ $out == "cmr $version assembly $version.0 "* ]] || { echo "FAIL: App did not report cmr $version and assembly $version.0"; exit 1; }
echo "csharp_consumer.sh: the Cmr $version package, installed from a local feed, ran App outside the tree"
