// SPDX-License-Identifier: Apache-2.0
package org.cmr;

/** The deallocate function of a {@link CallbackMemoryResource}. */
@FunctionalInterface
public interface DeallocateCallback {
  /** Frees {@code ptr}, of {@code bytes} as allocated, ordered on {@code stream}. */
  void deallocate(long ptr, long bytes, long stream);
}
