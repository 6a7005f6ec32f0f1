#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The fragmentation table and its plot: every trace of bench/traces/ (the
# committed .csv.gz files, decompressed into OUT_DIR/traces/ for the run so
# that a build without zlib reads them too) replayed by cmr-bench-fragmentation through every
# allocator, the table in OUT_DIR/fragmentation.txt (and on stdout), its
# rows in OUT_DIR/fragmentation.csv, the plot in OUT_DIR/fragmentation.svg,
# which is then read back and checked against the rows (plot.py --check).
#
#   bench/fragmentation/run.sh BENCH OUT_DIR [BENCH OPTIONS...]
#
# BENCH is the cmr-bench-fragmentation program; the options go to it as
# they are (--leaf cuda on a GPU, --cap-ratio R). Fails (1) when the
# benchmark, the plot or its check fails, never on a figure; exits 77 (a
# skip) where the benchmark does: a CUDA build without a GPU.
set -euo pipefail
bench=${1:-}
out=${2:-}
if [[ -z $bench || -z $out || ! -x $bench ]]; then
  echo "usage: run.sh BENCH OUT_DIR [BENCH OPTIONS...] (BENCH: cmr-bench-fragmentation)" >&2
  exit 2
fi
shift 2
here=$(cd "$(dirname "$0")" && pwd)
traces=("$here"/../traces/*.csv.gz)
[[ -e ${traces[0]} ]] || { echo "run.sh: no traces in $here/../traces" >&2; exit 1; }
# Decompressed here, so a build without zlib replays them too.
mkdir -p "$out/traces"
plain=()
for trace in "${traces[@]}"; do
  name=$(basename "$trace" .gz)
  python3 -c 'import gzip, shutil, sys; shutil.copyfileobj(gzip.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
    "$trace" "$out/traces/$name"
  plain+=("$out/traces/$name")
done
status=0
"$bench" "$@" --csv "$out/fragmentation.csv" "${plain[@]}" | tee "$out/fragmentation.txt" || status=$?
rm -r "$out/traces"
((status == 0)) || exit "$status"
python3 "$here/plot.py" "$out/fragmentation.csv" "$out/fragmentation.svg"
python3 "$here/plot.py" --check "$out/fragmentation.csv" "$out/fragmentation.svg"
echo "run.sh: $out/fragmentation.txt, fragmentation.csv and fragmentation.svg (checked)"
