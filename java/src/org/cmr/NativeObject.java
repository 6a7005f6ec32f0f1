// SPDX-License-Identifier: Apache-2.0
package org.cmr;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.LongConsumer;
import java.util.function.LongFunction;
import java.util.function.LongUnaryOperator;

/**
 * A Java object owning a native one: {@link #close()} frees it, and if the object becomes
 * unreachable unclosed, a {@link Cleaner} frees it then. Using it after close throws a
 * {@link CmrIllegalStateException} (an {@link IllegalStateException}) with {@link
 * Status#ERROR_DESTROYED_HANDLE}, naming the object. Closing while another thread
 * is using the object is a race the caller must avoid, as with any Java resource.
 *
 * <p>The Java objects the native one was made over (an adaptor's upstream, a buffer's resource)
 * are kept until it is freed, not merely while this object is reachable: the Cleaner runs in no
 * particular order, and the native object may call into them (a pool gives its memory back to
 * its upstream, which may be Java callbacks) when it goes.
 */
public abstract class NativeObject implements AutoCloseable {
  private static final Cleaner CLEANER = Cleaner.create();

  private final Release release;
  private final Cleaner.Cleanable cleanable;

  NativeObject(long address, LongConsumer free, Object... kept) {
    release = new Release(address, free, kept);
    cleanable = CLEANER.register(this, release);
  }

  /** Keeps {@code object} until the native object is freed (it now depends on it). */
  final void keepUntilFreed(Object object) {
    release.keep(object);
  }

  /** The native object's address; throws once closed. */
  final long nativeAddress() {
    long address = release.address;
    if (address == 0) {
      throw Failures.closed(getClass().getSimpleName());
    }
    return address;
  }

  /*
   * The calls below pass the address to a native call and keep this object reachable until it
   * returns: otherwise the JIT may end its reachability at the last read of a field, and the
   * Cleaner could free the native object under the call.
   */

  final void useAddress(LongConsumer call) {
    try {
      call.accept(nativeAddress());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  final long longFromAddress(LongUnaryOperator call) {
    try {
      return call.applyAsLong(nativeAddress());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  final <T> T fromAddress(LongFunction<T> call) {
    try {
      return call.apply(nativeAddress());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** Whether {@link #close()} has run. */
  public final boolean isClosed() {
    return release.address == 0;
  }

  /** Frees the native object (once; later calls do nothing). */
  @Override
  public final void close() {
    cleanable.clean();
  }

  /** What the Cleaner runs: it must not refer to the NativeObject, or that would never become unreachable. */
  private static final class Release implements Runnable {
    private long address;
    private final LongConsumer free;
    private final List<Object> kept;

    Release(long address, LongConsumer free, Object[] kept) {
      this.address = address;
      this.free = free;
      this.kept = new ArrayList<>(Arrays.asList(kept));
    }

    synchronized void keep(Object object) {
      kept.add(object);
    }

    @Override
    public void run() {
      long freed = address;
      address = 0;
      try {
        free.accept(freed);
      } finally {
        synchronized (this) {
          kept.clear();
        }
      }
    }
  }
}
