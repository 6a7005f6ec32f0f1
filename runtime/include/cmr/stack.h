/* Resource stacks written as text, e.g.
 *
 *   statistics(pool(cuda, initial_pool_size=1GiB, maximum_pool_size=80%))
 *
 * A stack expression is a resource name, optionally followed by arguments in
 * parentheses: first the upstream (itself an expression) for suballocators
 * and adaptors, then `name=value` parameters as the spec names them, in any
 * order; parameters left out take their spec defaults. Sizes accept the
 * units B, KiB, MiB, GiB, TiB, KB, MB, GB, TB and a percentage of the current
 * device's total memory ("80%"); booleans true/false; enums their value
 * names; strings "double-quoted". */
#ifndef CMR_STACK_H
#define CMR_STACK_H

#include <cmr/core.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The resources an expression built; owns all of them. */
typedef struct cmr_stack cmr_stack;

/* Builds the stack `expression` describes. A bad expression gives
 * CMR_ERROR_INVALID_ARGUMENT with a message naming the position (a 1-based
 * column) and the problem: an unknown resource, an unknown, repeated or
 * missing parameter, a bad value. Errors of the resources' own creation
 * (a value out of range, out of memory) come back as they are, with the
 * resource's place in the expression in the message. */
CMR_API cmr_status cmr_stack_parse(const char *expression, cmr_stack **out);
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
