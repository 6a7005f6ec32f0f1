// SPDX-License-Identifier: Apache-2.0
package org.cmr;

/**
 * The resources a stack expression built, e.g. {@code "statistics(pool(system,
 * initial_pool_size=1MiB))"}: a resource name, then in parentheses its upstream (an expression)
 * and {@code name=value} parameters as the spec names them; the ones left out take their
 * defaults. A bad expression throws a {@link CmrIllegalArgumentException} naming the column and the problem.
 * The stack holds a share of each resource; {@link #top()} and {@link #leaf()} hand out shares of
 * their own, which outlive the stack.
 */
public final class ResourceStack extends NativeObject {
  /** Builds the stack {@code expression} describes. */
  public ResourceStack(String expression) {
    super(CmrNative.cmr_stack_parse(java.util.Objects.requireNonNull(expression, "expression is null: a stack expression is required")),
        CmrNative::cmr_stack_destroy);
  }

  /** The top of the stack, the resource to allocate from (a new share: close it when done). */
  public MemoryResource top() {
    return fromAddress(stack -> MemoryResource.fromRef(CmrNative.cmr_stack_ref(stack)));
  }

  /** The innermost resource, which the others sit on (a new share: close it when done). */
  public MemoryResource leaf() {
    return fromAddress(stack -> MemoryResource.fromRef(CmrNative.cmr_stack_leaf(stack)));
  }

  /** The expression the stack was built from, with every default written out. */
  public String expression() {
    return fromAddress(CmrNative::cmr_stack_expression);
  }
}
