/* SPDX-License-Identifier: Apache-2.0 */
/* Where a checking build stops at a broken invariant (invariants.h). */
#include <stdio.h>
#include <stdlib.h>

#include "invariants.h"

_Noreturn void cmr_invariant_failed(const char *file, int line, const char *why) {
  fprintf(stderr, "cmr: invariant broken at %s:%d: %s\n", file, line, why);
  fflush(stderr);
  abort();
}
