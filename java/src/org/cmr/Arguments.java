package org.cmr;

/** Checks of Java arguments that C cannot see: a Java long is signed, a size_t is not. */
final class Arguments {
  /** What a size parameter with a default takes for it (CMR_SIZE_DEFAULT, SIZE_MAX). */
  static final long SIZE_DEFAULT = -1L;
  /** What an int parameter with a default takes for it (CMR_INT_DEFAULT, INT32_MIN). */
  static final int INT_DEFAULT = Integer.MIN_VALUE;

  private Arguments() {}

  /** A size, which cannot be negative. */
  static long size(String name, long value) {
    if (value < 0) {
      throw new IllegalArgumentException(name + " is " + value + ": a size cannot be negative");
    }
    return value;
  }

  /** The ref of a resource argument, which must be given and open. */
  static long ref(String name, MemoryResource resource) {
    if (resource == null) {
      throw new NullPointerException(name + " is null: a resource is required");
    }
    return resource.ref();
  }
}
