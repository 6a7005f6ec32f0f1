#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Replays allocation logs over the suballocators and compares what each held
# from its upstream with what the log had in use. The logs are made here by
# cmr-make-random-log (cmr's logging adaptor writes them):
#
#   random  RMM's random_allocations shape: 10,000 allocations of 1 B..4 MiB
#           (uniform), allocating with probability 0.73 while under 1 GiB
#           in use, else freeing a random live one
#   mixed   100,000 small allocations, 1 B..64 KiB log-uniform, under 32 MiB
#
# and each is replayed by cmr-replay --simulated (addresses without memory,
# so it runs anywhere) over
#
#   pool(simulated, initial_pool_size=0)       grows on demand: what it holds is its own choice
#   pool(..., maximum_growth=8MiB)             grows by at most 8 MiB beyond a request (the
#                                              documented setting for the target below)
#   arena(simulated, arena_size=1.15 x peak)   takes arena_size at creation and never grows:
#                                              its "held" is what it was given; the failures
#                                              column says whether that sufficed
#   binning(pool(simulated, initial_pool_size=0), min_size_exponent=8, max_size_exponent=16)
#
# The table gives replayed events per second, the most bytes in use at once
# (peak live), the most bytes held from the simulated upstream (peak held),
# their ratio and the allocations that failed. The target, pool held / peak
# live <= 1.15 on the random log, is printed as met or missed; missing it does
# not fail the script, which fails (1) only when a program fails.
#
#   bench/bench_replay.sh BUILD_DIR [--quick]
#
# BUILD_DIR holds cmr-replay and cmr-make-random-log; --quick makes the logs
# a tenth as long.
set -euo pipefail

build=${1:-}
quick=false
[[ ${2:-} == --quick ]] && quick=true
if [[ -z $build || ! -x $build/cmr-replay || ! -x $build/cmr-make-random-log ]]; then
  echo "usage: bench_replay.sh BUILD_DIR [--quick] (BUILD_DIR holds cmr-replay and cmr-make-random-log)" >&2
  exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

declare -A peak_of  # log -> its peak bytes in use, from the generator
logs=(random mixed)
for log in "${logs[@]}"; do
  args=()
  if $quick; then
    [[ $log == random ]] && args=(--allocations 1000) || args=(--allocations 10000)
  fi
  line=$("$build/cmr-make-random-log" "$log" "$work/$log.csv" "${args[@]}")
  echo "$line"
  peak_of[$log]=${line##*peak bytes in use }
done
echo

# field NAME REPORT: the value after "NAME: " in cmr-replay's report.
field() {
  local value
  value=$(sed -n "s/^$1: //p" <<<"$2")
  [[ -n $value ]] || { echo "bench_replay.sh: the report lacks \"$1\":" >&2; echo "$2" >&2; return 1; }
  echo "${value%% *}"
}

row() {
  printf '%-7s | %-88s | %12s | %12s | %12s | %10s | %8s\n' "$@"
}

row log stack "events/s" "peak live B" "peak held B" "held/live" failures
pool_random_ratio=
for log in "${logs[@]}"; do
  # 1.15 x the log's peak, up to a MiB (the arena takes whole MiBs at least).
  arena_bytes=$(( (peak_of[$log] * 115 / 100 + (1 << 20) - 1) / (1 << 20) * (1 << 20) ))
  stacks=("pool(simulated, initial_pool_size=0)"
          "pool(simulated, initial_pool_size=0, maximum_growth=8MiB)"
          "arena(simulated, arena_size=$arena_bytes)"
          "binning(pool(simulated, initial_pool_size=0), min_size_exponent=8, max_size_exponent=16)")
  for stack in "${stacks[@]}"; do
    if ! report=$("$build/cmr-replay" --simulated "$work/$log.csv" "$stack" 2>&1); then
      echo "bench_replay.sh: cmr-replay failed on the $log log over $stack:" >&2
      echo "$report" >&2
      exit 1
    fi
    rate=$(field rate "$report")
    live=$(field "peak bytes in use" "$report")
    held=$(field "peak bytes held from the upstream" "$report")
    failures=$(field "allocation failures" "$report")
    ratio=$(awk -v h="$held" -v l="$live" 'BEGIN { printf "%.3f", (l > 0 ? h / l : 0) }')
    [[ $log == random && $stack == *maximum_growth* ]] && pool_random_ratio=$ratio
    row "$log" "$stack" "$rate" "$live" "$held" "$ratio" "$failures"
  done
done
echo
[[ -n $pool_random_ratio ]] || { echo "bench_replay.sh: no pool figure for the random log" >&2; exit 1; }
verdict=$(awk -v r="$pool_random_ratio" 'BEGIN { print (r <= 1.15) ? "met" : "missed" }')
echo "target: pool held / peak live <= 1.15 on the random_allocations log (maximum_growth=8MiB): $pool_random_ratio, $verdict"
