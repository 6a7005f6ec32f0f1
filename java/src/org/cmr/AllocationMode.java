// SPDX-License-Identifier: Apache-2.0
package org.cmr;

/**
 * What {@link Cmr#initialize(AllocationMode, long, long)} sets up for the current device, as
 * cuDF's {@code RmmAllocationMode} does: each mode is a stack expression over the build's device
 * memory ({@code cuda} in a CUDA build, {@code system} in the host build).
 */
public enum AllocationMode {
  /** The device memory itself, every allocation a call to it (takes no sizes). */
  DEFAULT,
  /** A coalescing pool ({@code pool}) over the device memory. */
  POOL,
  /** An arena ({@code arena}) over the device memory, for many threads and streams. */
  ARENA,
  /** The driver's stream-ordered pool ({@code cuda_async}; CUDA builds only). */
  ASYNC,
  /** Managed (unified) memory ({@code managed}; CUDA builds only; takes no sizes). */
  MANAGED,
  /** A pool over managed memory ({@code pool(managed, ...)}; CUDA builds only). */
  MANAGED_POOL;

  /**
   * The stack expression of the mode: {@code initialSize} and {@code maximumSize} (0: the
   * resource's default) are the pool's initial and largest size, the arena's size, or the driver
   * pool's initial size and release threshold.
   */
  String expression(long initialSize, long maximumSize) {
    Arguments.size("initialSize", initialSize);
    Arguments.size("maximumSize", maximumSize);
    String device = Cmr.builtWithCuda() ? "cuda" : "system";
    switch (this) {
      case DEFAULT:
        return sizeless(device, initialSize, maximumSize);
      case MANAGED:
        return sizeless("managed", initialSize, maximumSize);
      case POOL:
        return call("pool", device, size("initial_pool_size", initialSize), size("maximum_pool_size", maximumSize));
      case MANAGED_POOL:
        return call("pool", "managed", size("initial_pool_size", initialSize), size("maximum_pool_size", maximumSize));
      case ARENA:
        if (maximumSize != 0) {
          throw new IllegalArgumentException("ARENA takes one size (the arena's), not a maximum of " + maximumSize);
        }
        return call("arena", device, size("arena_size", initialSize));
      case ASYNC:
        return call("cuda_async", size("initial_pool_size", initialSize), size("release_threshold", maximumSize));
      default:
        throw new AssertionError(this);
    }
  }

  private String sizeless(String expression, long initialSize, long maximumSize) {
    if (initialSize != 0 || maximumSize != 0) {
      throw new IllegalArgumentException(this + " takes no sizes (given " + initialSize + " and " + maximumSize + ")");
    }
    return expression;
  }

  /** "name=bytes", or null for 0 (the resource's default). */
  private static String size(String name, long bytes) {
    return bytes == 0 ? null : name + "=" + bytes;
  }

  /** "resource(argument, ...)" of the arguments that are not null; "resource" alone for none. */
  private static String call(String resource, String... arguments) {
    java.util.StringJoiner joined = new java.util.StringJoiner(", ", resource + "(", ")").setEmptyValue(resource);
    for (String argument : arguments) {
      if (argument != null) {
        joined.add(argument);
      }
    }
    return joined.toString();
  }
}
