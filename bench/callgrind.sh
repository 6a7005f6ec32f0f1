# SPDX-License-Identifier: Apache-2.0
# What the callgrind scripts of bench/ share (instructions.sh,
# dispatch_instructions.sh source it). Each sets `script` to its own name,
# which the messages carry.

# callgrind_start: exits 77 (skipped) without valgrind; else makes the
# scratch folder $work, removed when the script exits.
callgrind_start() {
  if ! command -v valgrind >/dev/null; then
    echo "$script: valgrind is not installed: skipped" >&2
    exit 77
  fi
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
}

# callgrind OUT OPTION... PROGRAM ARG...: runs PROGRAM under callgrind with
# the given valgrind options, its profile into OUT and its output into
# OUT.log; fails, showing that output, when the run does.
callgrind() {
  local out=$1
  shift
  if ! valgrind --tool=callgrind --callgrind-out-file="$out" "$@" >"$out.log" 2>&1; then
    echo "$script: $* failed under callgrind:" >&2
    cat "$out.log" >&2
    return 1
  fi
}
