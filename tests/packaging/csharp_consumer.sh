#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The packaging.csharp_consumer test: the NuGet package, installed from a
# local feed into a project folder outside the tree (nuget install, offline),
# holds Cmr.dll (lib/net45) and libcmr with the wrapper
# (runtimes/linux-x64/native); a program (csharp/App.cs) compiled against the
# package's Cmr.dll runs with them beside it (where Mono looks; .NET does that
# copy itself) and no LD_LIBRARY_PATH, and reports VERSION as both the
# library's and the assembly's version. The package carries the assembly's
# XML documentation beside it (lib/net45/Cmr.xml, documenting the public API)
# and its nuspec the SPDX license expression and the source repository.
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
for file in lib/net45/Cmr.dll lib/net45/Cmr.xml runtimes/linux-x64/native/libcmr_csharp.so; do
  [[ -f $package/$file ]] || { echo "FAIL: the package has no $file: $(cd "$package" && find . -type f)"; exit 1; }
done
ls "$package"/runtimes/linux-x64/native/libcmr.so.* >/dev/null
python3 - "$package/lib/net45/Cmr.xml" "$nupkg" <<'PY'
import sys, zipfile, xml.etree.ElementTree as ET
members = {m.get("name") for m in ET.parse(sys.argv[1]).getroot().iter("member")}
for wanted in ("T:Cmr.PoolMemoryResource", "P:Cmr.PoolMemoryResource.PoolSize", "T:Cmr.Status", "F:Cmr.Status.OutOfMemory"):
    if wanted not in members:
        sys.exit(f"FAIL: Cmr.xml does not document {wanted}")
with zipfile.ZipFile(sys.argv[2]) as package:
    nuspec = ET.fromstring(package.read("Cmr.nuspec"))
metadata = {element.tag.split("}")[-1]: element for element in nuspec.find("{*}metadata")}
license, repository = metadata.get("license"), metadata.get("repository")
if license is None or license.get("type") != "expression" or license.text != "Apache-2.0":
    sys.exit("FAIL: the nuspec has no SPDX license expression Apache-2.0")
if repository is None or repository.get("type") != "git" or not repository.get("url"):
    sys.exit("FAIL: the nuspec has no git repository")
print(f"csharp_consumer.sh: Cmr.xml documents {len(members)} members; nuspec license {license.text}, repository {repository.get('url')}")
PY
"$mcs" -nologo -warnaserror+ -r:"$package/lib/net45/Cmr.dll" -out:App.exe "$source_dir/tests/packaging/csharp/App.cs"
cp "$package/lib/net45/Cmr.dll" "$package"/runtimes/linux-x64/native/* .
out=$("$mono" App.exe)
echo "$out"
[[ $out == "cmr $version assembly $version.0 "* ]] || { echo "FAIL: App did not report cmr $version and assembly $version.0"; exit 1; }
echo "csharp_consumer.sh: the Cmr $version package, installed from a local feed, ran App outside the tree"
