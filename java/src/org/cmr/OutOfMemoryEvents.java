// SPDX-License-Identifier: Apache-2.0
package org.cmr;

/** What C's observer calls (java/swig/stats.swg): it hands each event to the user's observer. */
final class OutOfMemoryEvents {
  private static final OutOfMemoryEvents DELIVERER = new OutOfMemoryEvents();
  private static volatile OutOfMemoryObserver observer;
  private static final ThreadLocal<Boolean> DELIVERING = ThreadLocal.withInitial(() -> false);

  private OutOfMemoryEvents() {}

  static void set(OutOfMemoryObserver replacement) {
    if (DELIVERING.get()) {
      // C refuses it too; refused here before the lock, which a thread setting the observer
      // may hold while it waits for this one to return.
      throw new IllegalStateException("OutOfMemoryObserver.set: called from inside the observer");
    }
    NativeLibrary.load();
    synchronized (OutOfMemoryEvents.class) {
      CmrNative.cmr_java_set_oom_observer(replacement == null ? null : DELIVERER);
      observer = replacement;
    }
  }

  /** Called by C inside a failing allocation; reports, never throws, what the observer throws. */
  void deliver(String type, long identity, long[] stats, long bytes, long alignment, long stream, String message) {
    OutOfMemoryObserver current = observer;
    if (current == null) {
      return;
    }
    DELIVERING.set(true);
    try {
      current.onOutOfMemory(
          new OutOfMemoryEvent(type, identity, new MemoryStats(stats), bytes, alignment, stream, message));
    } catch (Throwable failure) {
      Thread thread = Thread.currentThread();
      thread.getUncaughtExceptionHandler().uncaughtException(thread, failure);
    } finally {
      DELIVERING.set(false);
    }
  }
}
