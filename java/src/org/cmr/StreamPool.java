// SPDX-License-Identifier: Apache-2.0
package org.cmr;

/**
 * A pool of streams handed out round robin, as RMM's {@code cuda_stream_pool}. The streams
 * belong to the pool and are destroyed with it: use them (as {@code long} handles, like {@link
 * CmrStream#handle()}) only while it is open.
 */
public final class StreamPool extends NativeObject {
  /** RMM's default pool size. */
  public static final long DEFAULT_SIZE = 16;
  /** Streams that synchronize with the default stream (RMM's {@code sync_default}). */
  public static final int SYNC_DEFAULT = 0;
  /** Streams that do not ({@code cudaStreamNonBlocking}). */
  public static final int NON_BLOCKING = 1;

  /** A pool of {@link #DEFAULT_SIZE} streams synchronizing with the default stream. */
  public StreamPool() {
    this(DEFAULT_SIZE, SYNC_DEFAULT);
  }

  /** A pool of {@code size} streams (0: the default size) made with {@code flags}. */
  public StreamPool(long size, int flags) {
    super(CmrNative.cmr_stream_pool_create(Arguments.size("size", size), flags), CmrNative::cmr_stream_pool_destroy);
  }

  /** The next stream, round robin (thread-safe). */
  public long getStream() {
    return longFromAddress(CmrNative::cmr_stream_pool_get_stream);
  }

  /** The stream at {@code index} modulo the pool's size. */
  public long getStream(long index) {
    return longFromAddress(pool -> CmrNative.cmr_stream_pool_get_stream_at(pool, Arguments.size("index", index)));
  }

  /** How many streams the pool holds. */
  public long size() {
    return longFromAddress(CmrNative::cmr_stream_pool_size);
  }
}
