// SPDX-License-Identifier: Apache-2.0
package org.cmr;

import java.lang.ref.Reference;
import java.util.EnumSet;
import java.util.Set;

/**
 * A memory resource: one share of a C resource, which lives while any share does (an adaptor, a
 * buffer or the per-device table holds one of its upstream, so closing in any order is safe).
 * The generated subclasses (one per resource of the spec, such as {@link PoolMemoryResource}) add
 * their constructors and typed methods. Addresses, sizes and streams are longs; a stream is a
 * {@code cudaStream_t} in CUDA builds, {@link Cmr#DEFAULT_STREAM} for the default one.
 */
public class MemoryResource extends NativeObject {
  private final long handle;

  MemoryResource(Share share) {
    super(share.ref(), share.releaser(), share.kept());
    this.handle = share.handle();
  }

  /**
   * The resource the stack expression {@code expression} describes, e.g. {@code
   * "statistics(pool(system, initial_pool_size=1MiB))"}: the top of the stack, holding everything
   * below it. See {@link ResourceStack} for the stack itself.
   */
  public static MemoryResource parse(String expression) {
    try (ResourceStack stack = new ResourceStack(expression)) {
      return stack.top();
    }
  }

  /**
   * A block of {@code bytes} from the resource on the default stream, aligned to 256 bytes, which
   * frees itself (with its size and stream) when closed: {@code try (Allocation block =
   * resource.allocation(1000)) { ... block.getAddress() ... }}.
   */
  public final Allocation allocation(long bytes) {
    return allocation(bytes, Cmr.DEFAULT_ALIGNMENT, Cmr.DEFAULT_STREAM);
  }

  /** As {@link #allocation(long)}, ordered on {@code stream} (and freed on it). */
  public final Allocation allocation(long bytes, long stream) {
    return allocation(bytes, Cmr.DEFAULT_ALIGNMENT, stream);
  }

  /** As {@link #allocation(long, long)}, at a power-of-two {@code alignment} the resource honours (else it throws). */
  public final Allocation allocation(long bytes, long alignment, long stream) {
    return new Allocation(this, bytes, alignment, stream);
  }

  /**
   * {@code bytes} from the resource on the default stream, aligned to 256 bytes (0 for 0 bytes):
   * the raw address, which {@link #deallocate(long, long)} must be given with the same size.
   * {@link #allocation(long)} hands out a block that remembers both.
   */
  public final long allocate(long bytes) {
    return allocate(bytes, Cmr.DEFAULT_STREAM);
  }

  /** {@code bytes} from the resource, ordered on {@code stream}, aligned to 256 bytes (0 for 0 bytes). */
  public final long allocate(long bytes, long stream) {
    try {
      return CmrNativeJNI.cmr_allocate(ref(), Arguments.size("bytes", bytes), stream);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** As {@link #allocate(long, long)} at a power-of-two {@code alignment}, which the resource honours or refuses. */
  public final long allocateAligned(long bytes, long alignment, long stream) {
    try {
      return CmrNativeJNI.cmr_allocate_aligned(
          ref(), Arguments.size("bytes", bytes), Arguments.size("alignment", alignment), stream);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** Frees {@code ptr}, of {@code bytes} as allocated, on the default stream (0 is a no-op). */
  public final void deallocate(long ptr, long bytes) {
    deallocate(ptr, bytes, Cmr.DEFAULT_STREAM);
  }

  /** Frees {@code ptr}, of {@code bytes} as allocated, ordered on {@code stream} (0 is a no-op). */
  public final void deallocate(long ptr, long bytes, long stream) {
    try {
      CmrNativeJNI.cmr_deallocate(ref(), ptr, Arguments.size("bytes", bytes), stream);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** Frees what {@link #allocateAligned} gave, with the same bytes and alignment. */
  public final void deallocateAligned(long ptr, long bytes, long alignment, long stream) {
    try {
      CmrNativeJNI.cmr_deallocate_aligned(
          ref(), ptr, Arguments.size("bytes", bytes), Arguments.size("alignment", alignment), stream);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** Whether memory from this resource can be freed through {@code other} and vice versa. */
  public final boolean isEqual(MemoryResource other) {
    try {
      return CmrNative.cmr_ref_equal(ref(), Arguments.ref("other", other));
    } finally {
      Reference.reachabilityFence(this);
      Reference.reachabilityFence(other);
    }
  }

  /** What the resource's memory is accessible from. */
  public final Set<Property> properties() {
    int mask;
    try {
      mask = CmrNative.cmr_ref_properties(ref());
    } finally {
      Reference.reachabilityFence(this);
    }
    Set<Property> properties = EnumSet.noneOf(Property.class);
    for (Property property : Property.values()) {
      if ((mask & property.swigValue()) != 0) {
        properties.add(property);
      }
    }
    return properties;
  }

  /** The resource's name in the spec and in stack expressions, e.g. "pool". */
  public final String typeName() {
    try {
      return CmrNative.cmr_ref_type_name(ref());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** Another object over the same resource, with a share of its own (keeping this one's Java objects). */
  final MemoryResource share() {
    try {
      return fromRef(CmrNative.cmr_java_ref_duplicate(ref()), this);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  @Override
  public String toString() {
    return getClass().getSimpleName() + (isClosed() ? "(closed)" : "(" + typeName() + ")");
  }

  /** The ref copy the common calls take; throws once closed. */
  final long ref() {
    return nativeAddress();
  }

  /** The typed handle the resource's own methods take; throws once closed. */
  final long handle() {
    nativeAddress();
    return handle;
  }

  /**
   * A new object, of the resource's class, holding a share of its own of the resource behind
   * {@code ref} (a copy this takes over): what stacks and buffers hand out. It keeps {@code kept},
   * the Java objects the resource may have been made from.
   */
  static MemoryResource fromRef(long ref, Object... kept) {
    return ResourceClasses.of(ref, false, kept);
  }

  /** As {@link #fromRef}, giving back the share the caller took with {@code ref} (cmr_acquire_*). */
  static MemoryResource fromAcquired(long ref, Object... kept) {
    return ResourceClasses.of(ref, true, kept);
  }
}
