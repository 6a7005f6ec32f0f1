#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The suballocators' cost in instructions, a figure free of a shared
# machine's noise: runs cmr-bench-instructions under callgrind once per
# subject and case, collecting only inside its counted functions, and prints
# one CSV line each:
#
#   subject,case,ir_per_op
#
#   pair     Ir per allocate+free pair of 1000 B through the ref, warm
#   live10k  Ir per allocate or free with up to 10,000 blocks of
#            256 B..16 KiB alive (allocated, then freed in shuffled order)
#
# for pool, fixed_size, arena, binning (over pool) and expandable. The issue 20 targets
# (pool pair <= 250, live10k <= 500) are reported by bench/RESULTS.md, not
# asserted here. The exit status says only whether the measurement worked:
# 0 when every line was printed; 1 when the program or the parsing fails;
# 2 for bad usage; 77 without valgrind.
#
#   bench/instructions.sh PATH/cmr-bench-instructions [PAIRS]
set -euo pipefail

program=${1:-}
pairs=${2:-10000}
if [[ -z $program || ! -x $program || $pairs == *[!0-9]* || $pairs == 0 ]]; then
  echo "usage: instructions.sh PATH/cmr-bench-instructions [PAIRS]" >&2
  exit 2
fi
script=instructions.sh
source "$(dirname "${BASH_SOURCE[0]}")/callgrind.sh"
callgrind_start

# count SUBJECT CASE: the Ir collected in the counted function of CASE, from
# the callgrind output's totals line.
count() {
  local out=$work/$1.$2.callgrind function=bench_instructions_pairs
  [[ $2 == live10k ]] && function=bench_instructions_live
  callgrind "$out" --toggle-collect="$function" "$program" "$1" "$2" "$pairs" || return 1
  awk '/^(totals|summary): [0-9]+/ { total = $2 } END { if (total == "") exit 1; print total }' "$out"
}

echo "subject,case,ir_per_op"
for subject in pool fixed_size arena binning expandable; do
  for case in pair live10k; do
    if ! total=$(count "$subject" "$case"); then
      echo "instructions.sh: no instruction count for $subject $case" >&2
      exit 1
    fi
    ops=$pairs
    [[ $case == live10k ]] && ops=20000 # 10,000 allocations and 10,000 frees
    awk -v s="$subject" -v c="$case" -v t="$total" -v n="$ops" 'BEGIN { printf "%s,%s,%.0f\n", s, c, t / n }'
  done
done
