#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# No shell script pipes into a reader that may exit before the writer is
# done: `cmd | grep -q`, `cmd | grep -m N`, `cmd | head`. Under
# `set -o pipefail` the writer then dies of SIGPIPE and the pipeline fails
# now and then, however the reader answered; without it the rule still
# holds, so that adding pipefail later breaks nothing. Write
# `grep -q pattern <<<"$(cmd)"`, or let the reader read everything
# (`cmd | grep pattern >/dev/null`, `cmd | sed -n 1p`).
#
#   bash tests/boundary/early_exit_pipes.sh [SOURCE_DIR]
#
# Checks every *.sh and .ci/ script under SOURCE_DIR (default: this
# checkout) outside build trees, this one aside, after checking that it
# finds each form in a sample of its own.
set -euo pipefail
root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}

# A pipe into a reader that stops early: grep -q/--quiet/-m, head.
pattern='\|[[:space:]]*(grep([[:space:]]+-[[:alnum:]]+)*[[:space:]]+(-[[:alnum:]]*[qm][[:alnum:]]*|--quiet|--silent|--max-count)|head)([[:space:]]|$)'

offenders() { grep -HnE "$pattern" "$@" | grep -vE '^[^:]+:[0-9]+:[[:space:]]*#' || true; }

sample=$(mktemp)
trap 'rm -f "$sample"' EXIT
printf '%s\n' 'ldd x | grep -q libcmr' 'git diff | grep -Fq x' 'cmd | grep -c x | grep --quiet 1' \
  'cmd | grep -m1 x' 'cmd | head -1' 'cmd |head' 'grep -q x <<<"$(cmd)"' 'cmd | grep x >/dev/null' \
  'cmd | sed -n 1p' '# cmd | grep -q x' >"$sample"
found=$(offenders "$sample" | cut -d: -f2 | tr '\n' ' ')
if [[ $found != "1 2 3 4 5 6 " ]]; then
  echo "early_exit_pipes.sh: the check itself is broken: it flags sample lines ${found:-none}, not 1 2 3 4 5 6" >&2
  exit 2
fi

mapfile -t scripts < <(find "$root" \( -path "$root/build" -o -path "$root/.git" -o -path "$root/generated" \) -prune \
  -o -type f \( -name '*.sh' -o -path "$root/.ci/*" \) -print | sort | grep -vF "/tests/boundary/early_exit_pipes.sh")
bad=$(offenders "${scripts[@]}")
if [[ -n $bad ]]; then
  echo "early_exit_pipes.sh: a pipe into a reader that may exit first (SIGPIPE under pipefail):" >&2
  echo "${bad//$root\//}" >&2
  exit 1
fi
echo "early_exit_pipes.sh: ${#scripts[@]} scripts, no pipe into an early-exiting reader"
