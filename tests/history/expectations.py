# SPDX-License-Identifier: Apache-2.0
"""What the history suites' scripts share: checks that collect their
failures instead of stopping at the first, and the report of them."""

failures = []


def expect(condition, what):
    """Records `what` as a failure unless `condition`; returns `condition`."""
    if not condition:
        failures.append(what)
    return condition


def finish():
    """Prints every failure and their count: the script's exit status."""
    for failure in failures:
        print("FAILED:", failure)
    print(f"{len(failures)} failures")
    return 1 if failures else 0
