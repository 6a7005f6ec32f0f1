/* SPDX-License-Identifier: Apache-2.0 */
/* Call stacks (see call_stack.h), through glibc's backtrace. */
#include "call_stack.h"

#include <execinfo.h>
#include <stdlib.h>

int cmr_call_stack_capture(void **frames, int depth) { return depth > 0 ? backtrace(frames, depth) : 0; }

void cmr_call_stack_write(FILE *out, void *const *frames, int count, const char *indent, const char *infix) {
  if (count <= 0) return;
  char **symbols = backtrace_symbols(frames, count);
  for (int i = 0; i < count; ++i) {
    if (symbols != NULL) {
      fprintf(out, "%s#%d %s%s\n", indent, i, infix, symbols[i]);
    } else {
      fprintf(out, "%s#%d %s%p\n", indent, i, infix, frames[i]);
    }
  }
  free(symbols);
}
