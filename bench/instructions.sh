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
#   torch    (pool only) Ir per pair through cmr_pluggable_allocate /
#            _deallocate, PyTorch's entry points: the pair less this is what
#            cmr adds on PyTorch's path
#
# for pool, fixed_size, arena, binning (over pool) and expandable; then the
# same lines for the host's own allocators, measured the same way
# (bench/instructions_peers.c, compiled here with ${CC:-cc} -O2: the same
# loops, sizes and orders over malloc/free): glibc, and jemalloc and
# mimalloc where their libraries link (Debian: libjemalloc-dev,
# libmimalloc-dev; one that does not is named on stderr and left out).
# Last, after an empty line, each subject's figures over each peer's:
#
#   subject,case,over_glibc,over_jemalloc,over_mimalloc
#
# The issue targets are reported by bench/RESULTS.md, not asserted here.
# The exit status says only whether the measurement worked: 0 when every
# line of cmr's subjects and glibc's was printed; 1 when a program or the
# parsing fails; 2 for bad usage; 77 without valgrind.
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

# count NAME CASE PROGRAM [ARG...]: the Ir collected in the counted
# function of CASE, from the callgrind output's totals line.
count() {
  local out=$work/$1.$2.callgrind function=bench_instructions_pairs
  [[ $2 == live10k ]] && function=bench_instructions_live
  [[ $2 == torch ]] && function=bench_instructions_torch_pairs
  shift 2
  callgrind "$out" --toggle-collect="$function" "$@" || return 1
  awk '/^(totals|summary): [0-9]+/ { total = $2 } END { if (total == "") exit 1; print total }' "$out"
}

# per_op NAME CASE TOTAL: the CSV line, TOTAL over the case's operations
# (pairs, or 10,000 allocations and 10,000 frees); also kept for the ratios.
declare -A figures
per_op() {
  local ops=$pairs
  [[ $2 == live10k ]] && ops=20000
  figures[$1,$2]=$(awk -v t="$3" -v n="$ops" 'BEGIN { printf "%.0f", t / n }')
  echo "$1,$2,${figures[$1,$2]}"
}

# The peers, built with no cmr at all: glibc's malloc, Debian's jemalloc
# (linked, it replaces malloc), mimalloc's mi_malloc/mi_free.
peer_source=$(dirname "${BASH_SOURCE[0]}")/instructions_peers.c
build_peer() {
  local name=$1
  shift
  "${CC:-cc}" -O2 -o "$work/peer.$name" "$peer_source" "$@" >"$work/peer.$name.log" 2>&1
}
peers=()
if ! build_peer glibc; then
  echo "instructions.sh: cannot build $peer_source:" >&2
  cat "$work/peer.glibc.log" >&2
  exit 1
fi
peers+=(glibc)
if build_peer jemalloc -ljemalloc; then
  peers+=(jemalloc)
else
  echo "instructions.sh: jemalloc does not link (libjemalloc-dev): left out" >&2
fi
if build_peer mimalloc -DPEER_MIMALLOC -lmimalloc; then
  peers+=(mimalloc)
else
  echo "instructions.sh: mimalloc does not link (libmimalloc-dev): left out" >&2
fi

subjects=(pool fixed_size arena binning expandable)
echo "subject,case,ir_per_op"
# torch: the pool's pair through PyTorch's entry points (cmr_pluggable_*,
# the per-device table's lookup and share included), for what cmr adds there.
for subject in "${subjects[@]}"; do
  cases=(pair live10k)
  [[ $subject == pool ]] && cases+=(torch)
  for case in "${cases[@]}"; do
    if ! total=$(count "$subject" "$case" "$program" "$subject" "$case" "$pairs"); then
      echo "instructions.sh: no instruction count for $subject $case" >&2
      exit 1
    fi
    per_op "$subject" "$case" "$total"
  done
done
for peer in "${peers[@]}"; do
  for case in pair live10k; do
    if ! total=$(count "$peer" "$case" "$work/peer.$peer" "$case" "$pairs"); then
      echo "instructions.sh: no instruction count for $peer $case" >&2
      exit 1
    fi
    per_op "$peer" "$case" "$total"
  done
done

echo
header="subject,case"
for peer in glibc jemalloc mimalloc; do header+=",over_$peer"; done
echo "$header"
for subject in "${subjects[@]}"; do
  for case in pair live10k; do
    line="$subject,$case"
    for peer in glibc jemalloc mimalloc; do
      peer_figure=${figures[$peer,$case]:-}
      if [[ -z $peer_figure ]]; then
        line+=","
      else
        line+=$(awk -v a="${figures[$subject,$case]}" -v b="$peer_figure" 'BEGIN { printf ",%.2f", a / b }')
      fi
    done
    echo "$line"
  done
done
