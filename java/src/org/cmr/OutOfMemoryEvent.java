// SPDX-License-Identifier: Apache-2.0
package org.cmr;

/**
 * What an {@link OutOfMemoryObserver} is told: the resource that ran out (its kind, and whether
 * it is a given resource: {@link #isFrom}), its statistics then, the request, and the message of
 * the {@link CmrOutOfMemoryError} the caller gets.
 */
public final class OutOfMemoryEvent {
  private final String resourceType;
  private final long resourceIdentity;
  private final MemoryStats stats;
  private final long bytes;
  private final long alignment;
  private final long stream;
  private final String message;

  OutOfMemoryEvent(String resourceType, long resourceIdentity, MemoryStats stats, long bytes, long alignment,
      long stream, String message) {
    this.resourceType = resourceType;
    this.resourceIdentity = resourceIdentity;
    this.stats = stats;
    this.bytes = bytes;
    this.alignment = alignment;
    this.stream = stream;
    this.message = message;
  }

  /** The kind of the resource that ran out, as the spec names it ("pool"). */
  public String resourceType() {
    return resourceType;
  }

  /** Whether {@code resource} is the one that ran out. */
  public boolean isFrom(MemoryResource resource) {
    return resource.identity() == resourceIdentity;
  }

  /** Its statistics when it ran out. */
  public MemoryStats stats() {
    return stats;
  }

  /** The bytes asked for. */
  public long bytes() {
    return bytes;
  }

  /** The alignment asked for. */
  public long alignment() {
    return alignment;
  }

  /** The stream the request was ordered on. */
  public long stream() {
    return stream;
  }

  /** The message the caller's error carries, which describes the resource's state. */
  public String message() {
    return message;
  }
}
