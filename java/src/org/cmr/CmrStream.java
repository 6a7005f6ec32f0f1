// SPDX-License-Identifier: Apache-2.0
package org.cmr;

import java.util.HashMap;
import java.util.Map;

/**
 * A stream made by cmr (a {@code cudaStream_t} in CUDA builds, a token whose work is always
 * complete in the host build), to order allocations on: pass {@link #handle()} where a stream is
 * asked for.
 *
 * <p>A {@link DeviceBuffer} ordered on the stream holds a share of it (as RMM's buffer keeps its
 * stream), taken by the stream's handle: closing this object (or its Cleaner) drops the
 * creator's share, and the stream itself is destroyed when the last buffer ordered on it has
 * freed its memory, in whatever order they are closed.
 */
public final class CmrStream extends NativeObject {
  /** Streams made here and not yet destroyed -> the shares held of each (guarded by itself). */
  private static final Map<Long, int[]> SHARES = new HashMap<>();

  public CmrStream() {
    super(create(), CmrStream::release);
  }

  private static long create() {
    long stream = CmrNative.cmr_stream_create();
    synchronized (SHARES) {
      SHARES.put(stream, new int[] {1});
    }
    return stream;
  }

  /** The stream as the allocation calls take it. */
  public long handle() {
    return nativeAddress();
  }

  /** Waits for the work ordered on the stream. */
  public void synchronize() {
    useAddress(CmrNative::cmr_stream_synchronize);
  }

  /** How many streams made by CmrStream exist (not yet destroyed: open, or held by a buffer). */
  public static int liveCount() {
    synchronized (SHARES) {
      return SHARES.size();
    }
  }

  /** Takes a share of {@code stream} if a CmrStream made it (else it is not ours to keep): whether one was taken. */
  static boolean hold(long stream) {
    synchronized (SHARES) {
      int[] shares = SHARES.get(stream);
      if (shares == null) {
        return false;
      }
      shares[0]++;
      return true;
    }
  }

  /** Drops a share of {@code stream}, destroying it with the last. */
  static void release(long stream) {
    synchronized (SHARES) {
      int[] shares = SHARES.get(stream);
      if (shares == null || --shares[0] > 0) {
        return;
      }
      SHARES.remove(stream);
    }
    CmrNative.cmr_stream_destroy(stream);
  }
}
