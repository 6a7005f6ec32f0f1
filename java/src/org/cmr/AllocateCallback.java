// SPDX-License-Identifier: Apache-2.0
package org.cmr;

/** The allocate function of a {@link CallbackMemoryResource}. */
@FunctionalInterface
public interface AllocateCallback {
  /**
   * The address of {@code bytes} bytes, aligned to 256, ordered on {@code stream}; 0 when it
   * cannot (the allocation then fails as out of memory). An exception it throws reaches the
   * caller of the allocation.
   */
  long allocate(long bytes, long stream);
}
