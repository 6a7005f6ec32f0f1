#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The packaging.java_consumer test: a cmr.jar user's program (java/App.java),
# compiled against cmr.jar alone and run from a folder outside the tree with
# no java.library.path and no LD_LIBRARY_PATH: the JAR loads the libcmr and
# libcmr_java it carries. The JAR's manifest, its Java accessor and the
# library report VERSION; its pom has the coordinates org.cmr:cmr:VERSION.
# The javadoc JAR documents the public classes and not SWIG's package-private
# modules; the sources JAR holds the source of every class in cmr.jar.
#
#   java_consumer.sh SOURCE_DIR CMR_JAR JAVAC JAVA JAVADOC_JAR SOURCES_JAR
set -euo pipefail
source_dir=$1 jar=$2 javac=$3 java=$4 javadoc_jar=$5 sources_jar=$6
source "$source_dir/tests/packaging/scratch.sh" "$source_dir" java
cp "$jar" "$work/cmr.jar"
cp "$source_dir/tests/packaging/java/App.java" "$work/"
cd "$work"
"$javac" -Xlint:all -Werror -cp cmr.jar App.java
out=$("$java" -cp cmr.jar:. App)
echo "$out"
[[ $out == "cmr $version jar $version "* ]] || { echo "FAIL: App did not report cmr $version from the JAR"; exit 1; }
unzip -p cmr.jar META-INF/maven/org.cmr/cmr/pom.xml >pom.xml
coordinates=$(python3 -c '
import sys, xml.etree.ElementTree as ET
ns = {"m": "http://maven.apache.org/POM/4.0.0"}
pom = ET.parse("pom.xml").getroot()
print(":".join(pom.find("m:" + tag, ns).text for tag in ("groupId", "artifactId", "version", "packaging")))')
[[ $coordinates == "org.cmr:cmr:$version:jar" ]] || { echo "FAIL: the pom says $coordinates"; exit 1; }
echo "java_consumer.sh: App ran on cmr.jar alone from $work; pom org.cmr:cmr:$version"

docs=$(unzip -Z1 "$javadoc_jar")
for page in index.html org/cmr/Cmr.html org/cmr/Allocation.html org/cmr/AllocationMode.html org/cmr/PoolMemoryResource.html org/cmr/Status.html; do
  grep -qx "$page" <<<"$docs" || { echo "FAIL: the javadoc JAR has no $page"; exit 1; }
done
if grep -q 'CmrNative' <<<"$docs"; then echo "FAIL: the javadoc JAR documents SWIG's modules"; exit 1; fi
cmr_page=$(unzip -p "$javadoc_jar" org/cmr/Cmr.html)
[[ $cmr_page == *"initialize(AllocationMode"* ]] || { echo "FAIL: Cmr.html does not document initialize"; exit 1; }
classes=$(unzip -Z1 cmr.jar | grep -E '^org/cmr/[A-Za-z]+\.class$' | sed 's/\.class$//' | sort)
sources=$(unzip -Z1 "$sources_jar" | grep -E '^org/cmr/[A-Za-z]+\.java$' | sed 's/\.java$//' | sort)
[[ $classes == "$sources" ]] || { echo "FAIL: the sources JAR's top-level classes differ from cmr.jar's:"; diff <(echo "$classes") <(echo "$sources"); exit 1; }
echo "java_consumer.sh: javadoc JAR of $(grep -c '\.html$' <<<"$docs") pages; sources JAR of $(wc -l <<<"$sources") classes"
