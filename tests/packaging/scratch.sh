# SPDX-License-Identifier: Apache-2.0
# Sourced by the packaging tests: `source scratch.sh SOURCE_DIR NAME` sets
# version (the checkout's VERSION) and work (a scratch folder outside the
# tree, /tmp/cmr-NAME.*, removed on exit), and clears the variables that
# could let a test find cmr where a user would not.
version=$(cat "$1/VERSION")
work=$(mktemp -d "/tmp/cmr-$2.XXXXXX")
trap 'rm -rf "$work"' EXIT
unset PYTHONPATH LD_LIBRARY_PATH MONO_PATH
