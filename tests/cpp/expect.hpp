// SPDX-License-Identifier: Apache-2.0
// The C++ tests' expectations: EXPECT(condition) reports a condition that
// does not hold on stderr, with its place, and counts it in
// cmr_test::failures; cmr_test::finish ends main by what the count says.
#pragma once

#include <cstdio>

namespace cmr_test {

// How many expectations have failed so far.
inline int failures = 0;

// main's result: 1, saying how many expectations failed, if any did; else 0,
// printing "<name>: every case held<note>".
inline int finish(const char *name, const char *note = "") {
  if (failures != 0) {
    std::fprintf(stderr, "%d expectation(s) failed\n", failures);
    return 1;
  }
  std::printf("%s: every case held%s\n", name, note);
  return 0;
}

} // namespace cmr_test

#define EXPECT(condition)                                                           \
  do {                                                                              \
    if (!(condition)) {                                                             \
      std::fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #condition); \
      ++cmr_test::failures;                                                         \
    }                                                                               \
  } while (0)
