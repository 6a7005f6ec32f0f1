/* SPDX-License-Identifier: Apache-2.0 */
/* Call stacks: captured as bare return addresses when an event happens (no
 * symbol lookup then, so recording stays cheap) and symbolised only when
 * they are written out. */
#ifndef CMR_CALL_STACK_H
#define CMR_CALL_STACK_H

#include <stdio.h>

/* Fills up to `depth` frames of the caller's stack; returns how many. */
int cmr_call_stack_capture(void **frames, int depth);

/* One line per frame, "<indent>#<i> <infix><symbol>\n": the symbol as
 * backtrace_symbols gives it, or the bare address when it cannot be had.
 * Errors show in ferror(out). */
void cmr_call_stack_write(FILE *out, void *const *frames, int count, const char *indent, const char *infix);

#endif /* CMR_CALL_STACK_H */
