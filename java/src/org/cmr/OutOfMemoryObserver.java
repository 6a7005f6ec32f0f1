// SPDX-License-Identifier: Apache-2.0
package org.cmr;

/**
 * Told each time a resource answers an allocation with out of memory, before the caller's {@link
 * CmrOutOfMemoryError} is thrown (C's {@code cmr_set_oom_observer}): once per failure, by the
 * innermost resource that ran out. It runs on the allocating thread, inside the allocation; it may
 * read statistics but must not allocate from the resources of that allocation (their locks may be
 * held), and a failure inside it does not call it again. What it throws cannot replace the
 * caller's error: it goes to the thread's uncaught-exception handler.
 */
@FunctionalInterface
public interface OutOfMemoryObserver {
  /** Called with what ran out and why. */
  void onOutOfMemory(OutOfMemoryEvent event);

  /**
   * Makes {@code observer} the process-wide observer ({@code null}: none). When it returns, the one
   * before is running on no thread. Calling it from inside an observer throws {@link
   * IllegalStateException}.
   */
  static void set(OutOfMemoryObserver observer) {
    OutOfMemoryEvents.set(observer);
  }
}
