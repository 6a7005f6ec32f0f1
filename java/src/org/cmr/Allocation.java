// SPDX-License-Identifier: Apache-2.0
package org.cmr;

import java.lang.ref.Cleaner;

/**
 * One block of memory from a resource (what {@link MemoryResource#allocation} hands out), which
 * knows its address, size, alignment and stream: {@link #close()} frees it with exactly those,
 * and a {@link Cleaner} frees a block that became unreachable unclosed. It holds a share of its
 * resource, and of its stream when a {@link CmrStream} made it, so closing them first is safe.
 * Its getters throw {@link CmrIllegalStateException} once it is closed. For a block that grows,
 * copies or changes streams, see {@link DeviceBuffer}.
 */
public final class Allocation implements AutoCloseable {
  private static final Cleaner CLEANER = Cleaner.create();

  private final Free free;
  private final Cleaner.Cleanable cleanable;

  /** Allocates from {@code resource} (the caller's object: this takes a share of its own). */
  Allocation(MemoryResource resource, long bytes, long alignment, long stream) {
    Arguments.size("bytes", bytes);
    Arguments.size("alignment", alignment);
    MemoryResource owner = resource.share();
    boolean heldStream = false;
    try {
      heldStream = CmrStream.hold(stream);
      long address = owner.allocateAligned(bytes, alignment, stream);
      free = new Free(owner, address, bytes, alignment, stream, heldStream);
    } catch (RuntimeException | Error e) {
      try {
        if (heldStream) {
          CmrStream.release(stream);
        }
      } finally {
        owner.close();
      }
      throw e;
    }
    cleanable = CLEANER.register(this, free);
  }

  /** The address of the first byte (0 for a block of 0 bytes). */
  public long getAddress() {
    return open().address;
  }

  /** The bytes asked for, which {@link #close()} frees. */
  public long getSize() {
    return open().bytes;
  }

  /** The alignment of the address, which {@link #close()} frees with. */
  public long getAlignment() {
    return open().alignment;
  }

  /** The stream the block was allocated on and is freed on. */
  public long getStream() {
    return open().stream;
  }

  /** The resource the block came from (a new share: close it when done). */
  public MemoryResource getResource() {
    return open().resource.share();
  }

  /** Whether {@link #close()} has run. */
  public boolean isClosed() {
    return free.done;
  }

  /** Frees the block on its stream, with its size and alignment (once; later calls do nothing). */
  @Override
  public void close() {
    cleanable.clean();
  }

  @Override
  public String toString() {
    return free.done ? "Allocation(closed)" : "Allocation(" + free.bytes + " bytes at 0x" + Long.toHexString(free.address) + ")";
  }

  private Free open() {
    if (free.done) {
      throw Failures.closed("Allocation of " + free.bytes + " bytes");
    }
    return free;
  }

  /** What frees the block: it must not refer to the Allocation (see {@link NativeObject}). */
  private static final class Free implements Runnable {
    final MemoryResource resource;
    final long address;
    final long bytes;
    final long alignment;
    final long stream;
    private final boolean heldStream;
    volatile boolean done;

    Free(MemoryResource resource, long address, long bytes, long alignment, long stream, boolean heldStream) {
      this.resource = resource;
      this.address = address;
      this.bytes = bytes;
      this.alignment = alignment;
      this.stream = stream;
      this.heldStream = heldStream;
    }

    @Override
    public void run() {
      done = true;
      try {
        resource.deallocateAligned(address, bytes, alignment, stream);
      } finally {
        try {
          if (heldStream) {
            CmrStream.release(stream);
          }
        } finally {
          resource.close();
        }
      }
    }
  }
}
