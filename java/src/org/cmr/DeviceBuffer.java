// SPDX-License-Identifier: Apache-2.0
package org.cmr;

import java.lang.ref.Reference;
import java.util.function.LongSupplier;

/**
 * An untyped, resizable allocation from one resource, ordered on one stream (RMM's
 * device_buffer). It holds a share of its resource, and of its stream when a {@link CmrStream}
 * made it, so both outlive it whatever is closed first; closing the buffer frees its memory on
 * its stream.
 */
public final class DeviceBuffer extends NativeObject {
  private final MemoryResource resource;
  private final HeldStream stream;

  /** {@code size} uninitialised bytes from {@code resource} on the default stream. */
  public DeviceBuffer(long size, MemoryResource resource) {
    this(size, Cmr.DEFAULT_STREAM, resource);
  }

  /** {@code size} uninitialised bytes from {@code resource}, ordered on {@code stream}. */
  public DeviceBuffer(long size, long stream, MemoryResource resource) {
    this(size, Cmr.DEFAULT_ALIGNMENT, stream, resource);
  }

  /**
   * {@code size} uninitialised bytes from {@code resource}, ordered on {@code stream}, aligned to
   * {@code alignment}: a power of two the resource honours (else a CmrIllegalArgumentException, never less
   * aligned memory); every reallocation keeps it. One below {@link Cmr#DEFAULT_ALIGNMENT} gets the
   * default.
   */
  public DeviceBuffer(long size, long alignment, long stream, MemoryResource resource) {
    this(new HeldStream(stream), size, alignment, resource);
  }

  private DeviceBuffer(HeldStream stream, long size, long alignment, MemoryResource resource) {
    super(create(size, alignment, stream, resource), stream::freeBuffer, resource);
    this.resource = resource;
    this.stream = stream;
  }

  /** A buffer holding a copy of {@code source}, from {@code resource} on the default stream. */
  public DeviceBuffer(byte[] source, MemoryResource resource) {
    this(source, Cmr.DEFAULT_STREAM, resource);
  }

  /** A buffer holding a copy of {@code source}, from {@code resource}, the copy ordered on {@code stream}. */
  public DeviceBuffer(byte[] source, long stream, MemoryResource resource) {
    this(source, Cmr.DEFAULT_ALIGNMENT, stream, resource);
  }

  /** As {@link #DeviceBuffer(byte[], long, MemoryResource)}, aligned as {@link #DeviceBuffer(long, long, long, MemoryResource)} says. */
  public DeviceBuffer(byte[] source, long alignment, long stream, MemoryResource resource) {
    this(new HeldStream(stream), source, alignment, resource);
  }

  private DeviceBuffer(HeldStream stream, byte[] source, long alignment, MemoryResource resource) {
    super(createCopy(source, alignment, stream, resource), stream::freeBuffer, resource);
    this.resource = resource;
    this.stream = stream;
  }

  private static long create(long size, long alignment, HeldStream stream, MemoryResource resource) {
    return created(stream, resource, () -> CmrNative.cmr_device_buffer_create_aligned(Arguments.size("size", size),
        Arguments.size("alignment", alignment), stream.handle(), Arguments.ref("resource", resource)));
  }

  private static long createCopy(byte[] source, long alignment, HeldStream stream, MemoryResource resource) {
    return created(stream, resource, () -> CmrNative.cmr_device_buffer_create_copy_aligned(bytes("source", source),
        source.length, Arguments.size("alignment", alignment), stream.handle(), Arguments.ref("resource", resource)));
  }

  /** The buffer {@code make} creates; when it throws, the stream's share goes back. */
  private static long created(HeldStream stream, MemoryResource resource, LongSupplier make) {
    try {
      return make.getAsLong();
    } catch (RuntimeException | Error e) {
      stream.release();
      throw e;
    } finally {
      Reference.reachabilityFence(resource);
    }
  }

  /** The address of the first byte (0 for an empty buffer). */
  public long getAddress() {
    return longFromAddress(CmrNative::cmr_device_buffer_data);
  }

  /** The bytes the buffer holds. */
  public long getSize() {
    return longFromAddress(CmrNative::cmr_device_buffer_size);
  }

  /** Bytes allocated, at least the size. */
  public long getCapacity() {
    return longFromAddress(CmrNative::cmr_device_buffer_capacity);
  }

  /** The alignment of the buffer's memory, which each of its allocations asks for (at least {@link Cmr#DEFAULT_ALIGNMENT}). */
  public long getAlignment() {
    return longFromAddress(CmrNative::cmr_device_buffer_alignment);
  }

  /** The stream the buffer's work (and its final free) is ordered on. */
  public long getStream() {
    return longFromAddress(CmrNative::cmr_device_buffer_stream);
  }

  /** Orders later work, and the final free, on {@code stream}. */
  public void setStream(long stream) {
    orderedOn(stream, buffer -> CmrNative.cmr_device_buffer_set_stream(buffer, stream));
  }

  /** Runs {@code call}, which orders the buffer on {@code stream} from now on, moving the share held. */
  private void orderedOn(long stream, java.util.function.LongConsumer call) {
    boolean took = CmrStream.hold(stream);
    try {
      useAddress(call);
    } catch (RuntimeException | Error e) {
      if (took) {
        CmrStream.release(stream);
      }
      throw e;
    }
    this.stream.replace(stream, took);
  }

  /** The buffer's resource (a new share: close it when done). */
  public MemoryResource getResource() {
    return fromAddress(buffer -> MemoryResource.fromRef(CmrNative.cmr_device_buffer_resource(buffer), resource));
  }

  /** Makes the size {@code newSize}, keeping the first bytes; reallocates (on the buffer's stream) past the capacity. */
  public void resize(long newSize) {
    resize(newSize, getStream());
  }

  /** As {@link #resize(long)}, ordered on {@code stream}. */
  public void resize(long newSize, long stream) {
    long size = Arguments.size("newSize", newSize);
    orderedOn(stream, buffer -> CmrNative.cmr_device_buffer_resize(buffer, size, stream));
  }

  /** Makes the capacity at least {@code newCapacity}, keeping the contents, on the buffer's stream. */
  public void reserve(long newCapacity) {
    long capacity = Arguments.size("newCapacity", newCapacity);
    useAddress(buffer -> CmrNative.cmr_device_buffer_reserve(buffer, capacity, getStream()));
  }

  /** Makes the capacity equal to the size, keeping the contents, on the buffer's stream. */
  public void shrinkToFit() {
    useAddress(buffer -> CmrNative.cmr_device_buffer_shrink_to_fit(buffer, getStream()));
  }

  /** Copies the first {@code destination.length} bytes (at most the size) into {@code destination}, and waits for the copy. */
  public void copyToHost(byte[] destination) {
    byte[] array = bytes("destination", destination);
    useAddress(buffer -> CmrNative.cmr_device_buffer_copy_to_host(buffer, array, array.length));
  }

  /** Copies {@code source} (at most the size) to the start of the buffer, ordered on the buffer's stream. */
  public void copyFrom(byte[] source) {
    byte[] array = bytes("source", source);
    useAddress(buffer -> CmrNative.cmr_device_buffer_copy_from(buffer, array, array.length));
  }

  /** The buffer's contents, copied to a new array. */
  public byte[] toByteArray() {
    long size = getSize();
    if (size > Integer.MAX_VALUE - 8) {
      throw new IllegalStateException("a buffer of " + size + " bytes does not fit a Java array");
    }
    byte[] contents = new byte[(int) size];
    copyToHost(contents);
    return contents;
  }

  private static byte[] bytes(String name, byte[] array) {
    if (array == null) {
      throw new NullPointerException(name + " is null: an array is required");
    }
    return array;
  }

  /**
   * The stream a buffer is ordered on and whether it holds a share of it (a CmrStream's): what
   * frees the buffer, so it must not refer to the DeviceBuffer (see {@link NativeObject}).
   */
  private static final class HeldStream {
    private long stream;
    private boolean held;

    HeldStream(long stream) {
      this.stream = stream;
      this.held = CmrStream.hold(stream);
    }

    synchronized long handle() {
      return stream;
    }

    /** The buffer is ordered on {@code next} now ({@code took}: a share of it was taken). */
    synchronized void replace(long next, boolean took) {
      release();
      stream = next;
      held = took;
    }

    synchronized void release() {
      if (held) {
        held = false;
        CmrStream.release(stream);
      }
    }

    /** Frees the buffer on its stream, then lets the stream go. */
    void freeBuffer(long buffer) {
      try {
        CmrNative.cmr_device_buffer_destroy(buffer);
      } finally {
        release();
      }
    }
  }
}
