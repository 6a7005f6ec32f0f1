package org.cmr;

/**
 * A stream made by cmr (a {@code cudaStream_t} in CUDA builds, a token whose work is always
 * complete in the host build), to order allocations on: pass {@link #handle()} where a stream is
 * asked for.
 */
public final class CmrStream extends NativeObject {
  public CmrStream() {
    super(CmrNative.cmr_stream_create(), CmrNative::cmr_stream_destroy);
  }

  /** The stream as the allocation calls take it. */
  public long handle() {
    return nativeAddress();
  }

  /** Waits for the work ordered on the stream. */
  public void synchronize() {
    useAddress(CmrNative::cmr_stream_synchronize);
  }
}
