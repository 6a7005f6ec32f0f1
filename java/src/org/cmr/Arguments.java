// SPDX-License-Identifier: Apache-2.0
package org.cmr;

import java.util.Set;

/** Checks of Java arguments that C cannot see: a Java long is signed, a size_t is not. */
final class Arguments {
  private Arguments() {}

  /** A size, which cannot be negative. */
  static long size(String name, long value) {
    if (value < 0) {
      throw new IllegalArgumentException(name + " is " + value + ": a size cannot be negative");
    }
    return value;
  }

  /** A size parameter with a default: null asks for the default, a value cannot be negative. */
  static Long optionalSize(String name, Long value) {
    return value == null ? null : size(name, value);
  }

  /** The CMR_PROPERTY_* mask of a set of properties. */
  static long properties(String name, Set<Property> properties) {
    if (properties == null) {
      throw new NullPointerException(name + " is null: pass an empty set for none");
    }
    long mask = 0;
    for (Property property : properties) {
      mask |= property.swigValue();
    }
    return mask;
  }

  /** The ref of a resource argument, which must be given and open. */
  static long ref(String name, MemoryResource resource) {
    if (resource == null) {
      throw new NullPointerException(name + " is null: a resource is required");
    }
    return resource.ref();
  }
}
