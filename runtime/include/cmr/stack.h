/* SPDX-License-Identifier: Apache-2.0 */
/* Resource stacks written as text, e.g.
 *
 *   statistics(pool(cuda, initial_pool_size=1GiB, maximum_pool_size=80%))
 *
 * A stack expression is a resource name, optionally followed by arguments in
 * parentheses: first the upstream (itself an expression) for suballocators
 * and adaptors, then `name=value` parameters as the spec names them, in any
 * order; parameters left out take their spec defaults. Sizes are written as
 * cmr_parse_size reads them (below), or as the name of the parameter's named
 * default ("unlimited"); ints as [-]digits; booleans true/false; enums their
 * value names; strings "double-quoted". spec/README.md has the grammar. */
#ifndef CMR_STACK_H
#define CMR_STACK_H

#include <cmr/core.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The number of bytes `text` writes, by the size grammar of spec/README.md
 * that stack expressions, Python and every binding share:
 *
 *   size = digits [ "." digits ] [ blanks unit ]  |  digits [ blanks ] "%"
 *
 * with blanks spaces or tabs, and the unit one of B, KB, MB, GB, TB, PB
 * (powers of 1000) or KiB, MiB, GiB, TiB, PiB (powers of 1024), in any
 * case; no unit means bytes. "1.5GiB" is 1610612736; a decimal must come to
 * a whole number of bytes ("0.3KiB" is refused, nothing is rounded). "80%"
 * is that whole percentage (0 to 100) of the current device's free memory,
 * rounded down to a multiple of 256, as cmr_percent_of_free_device_memory.
 * Nothing else is read: no sign, exponent, hexadecimal, surrounding blanks
 * or unit without a number. A text outside the grammar is
 * CMR_ERROR_INVALID_ARGUMENT and one of more than SIZE_MAX bytes
 * CMR_ERROR_SIZE_OVERFLOW, each with a message quoting the text; *out is 0
 * on failure. */
CMR_API cmr_status cmr_parse_size(const char *text, size_t *out);

/* The resources an expression built; owns all of them. */
typedef struct cmr_stack cmr_stack;

/* Builds the stack `expression` describes. A bad expression gives
 * CMR_ERROR_INVALID_ARGUMENT with a message naming the position (a 1-based
 * column) and the problem: an unknown resource, an unknown, repeated or
 * missing parameter, a bad value (a size too large for a size_t:
 * CMR_ERROR_SIZE_OVERFLOW). Errors of the resources' own creation
 * (a value out of range, out of memory) come back as they are, with the
 * resource's place in the expression in the message. */
CMR_API cmr_status cmr_stack_parse(const char *expression, cmr_stack **out);
/* Builds the stack `expression` describes over another leaf: every resource
 * in it that takes no upstream (cuda, system, ...: a leaf), with its
 * arguments, gives way to the resource `leaf` describes (an expression of
 * one leaf, e.g. "simulated(capacity=80GiB)"), unless it is a resource of
 * the same name, which stays as written. A leaf that gives way is read and
 * checked as cmr_stack_parse reads it, and not made; the written-out
 * expression names `leaf` in its place. A `leaf` that is not one resource
 * taking no upstream is CMR_ERROR_INVALID_ARGUMENT. cmr-replay --simulated
 * replays a log over "simulated" this way. */
CMR_API cmr_status cmr_stack_parse_over(const char *expression, const char *leaf, cmr_stack **out);
/* Drops the stack's share of every resource in it (an adaptor made from it
 * elsewhere keeps what it retained). */
CMR_API cmr_status cmr_stack_destroy(cmr_stack *stack);
/* The top of the stack, valid while the stack lives (retain it to keep it longer). */
CMR_API cmr_status cmr_stack_ref(const cmr_stack *stack, cmr_resource_ref *out);
/* The innermost resource, the leaf the others sit on (the first made), valid
 * while the stack lives. cmr-replay reads a simulated leaf's figures here. */
CMR_API cmr_status cmr_stack_leaf(const cmr_stack *stack, cmr_resource_ref *out);
/* The expression the stack was built from, with every default written out. */
CMR_API cmr_status cmr_stack_expression(const cmr_stack *stack, const char **out);

#ifdef __cplusplus
}
#endif

#endif /* CMR_STACK_H */
