#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The dispatch layer's cost in instructions: runs cmr-bench-dispatch under
# callgrind once per subject, collecting only inside its two loop functions
# (bench_dispatch_via_ref: N pairs through cmr_allocate/cmr_deallocate;
# bench_dispatch_direct: N pairs through the resource's own ops), and reads
# the callgrind.out file:
#
#   via ref / direct Ir/pair  inclusive Ir of each loop function / N
#   overhead Ir/pair          their difference: everything dispatch adds to a
#                             pair, the caller's argument set-up included
#   allocate / deallocate     Ir of the cmr_allocate (cmr_deallocate) calls
#   Ir/call                   less those of the direct ops->allocate
#                             (ops->deallocate) calls, / N: the cost of one
#                             dispatched call over one direct call
#
# The target is at most 10 instructions of overhead per call; "met?" says
# whether both the allocate and the deallocate figure meet it. The exit
# status says only whether the measurement worked: 0, also when the target
# is missed (a benchmark figure is not a test assertion); 1 when the
# program or the parsing fails; 2 for bad usage; 77 without valgrind.
#
#   bench/dispatch_instructions.sh PATH/cmr-bench-dispatch [PAIRS] [--annotate]
#
# --annotate also prints callgrind_annotate's per-line counts of dispatch.c
# for the pool subject: where the overhead goes.
set -euo pipefail

program=${1:-}
pairs=10000
annotate=false
for arg in "${@:2}"; do
  case $arg in
    --annotate) annotate=true ;;
    *[!0-9]* | '' | 0) echo "dispatch_instructions.sh: PAIRS must be a positive number, not '$arg'" >&2; exit 2 ;;
    *) pairs=$arg ;;
  esac
done
if [[ -z $program || ! -x $program ]]; then
  echo "usage: dispatch_instructions.sh PATH/cmr-bench-dispatch [PAIRS] [--annotate]" >&2
  exit 2
fi
script=dispatch_instructions.sh
source "$(dirname "${BASH_SOURCE[0]}")/callgrind.sh"
callgrind_start

# subject: the resource's type name; its ops functions are <type>_allocate
# and <type>_deallocate (the generator's names in generated/src/resources/<type>.c).
subjects=(pool fixed_size system statistics limiting)

# parse OUT_FILE TYPE PAIRS: prints "via direct alloc_ref alloc_direct
# free_ref free_direct" in Ir per pair or per call, or fails naming what is missing.
parse() {
  awk -v type="$2" -v pairs="$3" '
    # "(id) name" defines a compressed name, "(id)" uses it.
    function resolve(spec,    id, rest) {
      if (match(spec, /^\([0-9]+\)/)) {
        id = substr(spec, 2, RLENGTH - 2)
        rest = substr(spec, RLENGTH + 1)
        sub(/^ /, "", rest)
        if (rest != "") names[id] = rest
        spec = names[id]
      }
      sub(/[.'"'"'].*$/, "", spec) # clones (foo.constprop.0) and recursion levels (foo'"'"'2) count as foo
      return spec
    }
    /^fn=/ { fn = resolve(substr($0, 4)); next }
    /^cfn=/ { cfn = resolve(substr($0, 5)); next }
    /^calls=/ { in_call = 1; next }
    /^([0-9]|[+-][0-9]|\*)/ {
      if (in_call) { call[fn, cfn] += $2; in_call = 0 } else { self[fn] += $2 }
      seen[fn] = 1
      next
    }
    function inclusive(f,    key, parts, total) {
      total = self[f]
      for (key in call) { split(key, parts, SUBSEP); if (parts[1] == f) total += call[key] }
      return total
    }
    function arc(caller, callee) {
      if (!((caller, callee) in call)) { missing = missing " " caller "->" callee; return 0 }
      return call[caller, callee]
    }
    END {
      via = "bench_dispatch_via_ref"; direct = "bench_dispatch_direct"
      if (!(via in seen)) missing = missing " " via
      if (!(direct in seen)) missing = missing " " direct
      ra = arc(via, "cmr_allocate"); rd = arc(via, "cmr_deallocate")
      da = arc(direct, type "_allocate"); dd = arc(direct, type "_deallocate")
      if (missing != "") { print "not in the callgrind output:" missing > "/dev/stderr"; exit 1 }
      printf "%.1f %.1f %.1f %.1f %.1f %.1f\n", inclusive(via) / pairs, inclusive(direct) / pairs,
             ra / pairs, da / pairs, rd / pairs, dd / pairs
    }' "$1"
}

row() {
  printf '%-11s | %15s | %14s | %25s | %18s | %20s | %18s | %s\n' "$@"
}

echo "cmr dispatch overhead in instructions (callgrind Ir), $pairs warm allocate+deallocate pairs of 1000 B per subject"
echo
row subject "via ref Ir/pair" "direct Ir/pair" "dispatch overhead Ir/pair" "allocate Ir/call" "deallocate Ir/call" "target <= 10/call" "met?"
for subject in "${subjects[@]}"; do
  out="$work/$subject.callgrind"
  callgrind "$out" --toggle-collect='bench_dispatch_via_ref*' --toggle-collect='bench_dispatch_direct*' \
    "$program" --pairs "$pairs" --repeats 1 "$subject" || exit 1
  if ! figures=$(parse "$out" "$subject" "$pairs"); then
    echo "dispatch_instructions.sh: cannot read the figures of $subject from $out" >&2
    exit 1
  fi
  read -r via direct alloc_ref alloc_direct free_ref free_direct <<<"$figures"
  read -r overhead alloc free met < <(awk -v v="$via" -v d="$direct" -v ar="$alloc_ref" -v ad="$alloc_direct" \
    -v fr="$free_ref" -v fd="$free_direct" 'BEGIN {
      a = ar - ad; f = fr - fd
      printf "%.1f %.1f %.1f %s\n", v - d, a, f, (a <= 10 && f <= 10) ? "yes" : "no"
    }')
  row "$subject" "$via" "$direct" "$overhead" "$alloc" "$free" "10" "$met"
done
echo
echo "allocate / deallocate Ir/call: the cmr_allocate (cmr_deallocate) call less the direct ops call;"
echo "met? is yes only when both are at most 10 instructions."

if $annotate; then
  echo
  echo "dispatch.c and internal.h per line (pool subject: Ir over the $pairs pairs of the via-ref loop; a line inlined into both calls counts both):"
  callgrind_annotate --auto=yes --show-percs=no "$work/pool.callgrind" |
    awk '/Auto-annotated source: .*runtime\/src\/(dispatch\.c|internal\.h)/ { show = 1; print; next }
         /Auto-annotated source:/ { show = 0 }
         show && !/^ *\. /'
fi
