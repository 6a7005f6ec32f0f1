/* SPDX-License-Identifier: Apache-2.0 */
/* Debug invariant checks. A checking build (cmake -DCMR_CHECK_INVARIANTS=ON;
 * CI's sanitizer, valgrind and fuzz builds) has every structure that hands
 * memory out (the free-block index, the stream lists, the chunk maps) check
 * itself after each change and abort at the first broken invariant, where
 * the break happened rather than where it later loses or doubles memory. In
 * other builds the checks compile to nothing, yet are still compiled (kept
 * from rotting) by the `if (0)`.
 *
 * A structure's check is a function that returns whether it holds and, when
 * not, says which invariant broke in *why, so tests can run it on a
 * structure they broke on purpose; CMR_CHECK calls it and aborts on false. */
#ifndef CMR_INVARIANTS_H
#define CMR_INVARIANTS_H

#include <stdbool.h>

#ifndef CMR_CHECK_INVARIANTS
#define CMR_CHECK_INVARIANTS 0
#endif

/* Prints "cmr: invariant broken at FILE:LINE: WHY" on stderr and aborts. */
_Noreturn void cmr_invariant_failed(const char *file, int line, const char *why);

/* CMR_CHECK(check, structure...): in a checking build, calls
 * check(structure..., &why) (a bool function whose last argument is
 * `const char **why`, where it says what is broken) and aborts with that
 * reason when it fails. */
#define CMR_CHECK(check, ...)                                    \
  do {                                                           \
    if (CMR_CHECK_INVARIANTS) {                                  \
      const char *cmr_check_why = "(no reason given)";           \
      if (!check(__VA_ARGS__, &cmr_check_why)) {                 \
        cmr_invariant_failed(__FILE__, __LINE__, cmr_check_why); \
      }                                                          \
    }                                                            \
  } while (0)

/* CMR_INVARIANT(condition): one condition, checked in a checking build. */
#define CMR_INVARIANT(condition)                                                                    \
  do {                                                                                              \
    if (CMR_CHECK_INVARIANTS && !(condition)) cmr_invariant_failed(__FILE__, __LINE__, #condition); \
  } while (0)

#endif /* CMR_INVARIANTS_H */
