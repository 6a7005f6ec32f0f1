// SPDX-License-Identifier: Apache-2.0
package org.cmr;

import java.util.EnumSet;
import java.util.Set;

/**
 * What a resource knows about its memory at one moment ({@link MemoryResource#stats()}, C's
 * {@code cmr_ref_stats}): an immutable value. A field the resource does not know reads 0 and is
 * absent from {@link #supported()}. What each field means for each kind of resource is in the API
 * reference ("Statistics").
 */
public final class MemoryStats {
  /** The fields, in the order of C's {@code cmr_stats}. */
  public enum Field {
    BYTES_IN_USE,
    BYTES_IN_USE_PEAK,
    BYTES_HELD,
    BYTES_HELD_PEAK,
    ALLOCATIONS,
    DEALLOCATIONS,
    BYTES_FREE,
    FREE_BLOCKS,
    LARGEST_FREE_BLOCK,
    OUT_OF_MEMORY_COUNT,
    FAILURE_CALLBACK_RETRIES,
    SEGMENTS,
    STREAM_LISTS,
    POOL_BYTES_USED,
    POOL_BYTES_USED_PEAK
  }

  private final long[] values; /* the supported bits, then each field */

  MemoryStats(long[] values) {
    if (values.length != Field.values().length + 1) {
      throw new IllegalStateException("cmr_ref_stats answered " + values.length + " values");
    }
    this.values = values.clone();
  }

  /** The value of {@code field} (0 when not supported). */
  public long get(Field field) {
    return values[field.ordinal() + 1];
  }

  /** Whether the resource filled {@code field}. */
  public boolean isSupported(Field field) {
    return (values[0] & (1L << field.ordinal())) != 0;
  }

  /** The fields the resource filled. */
  public Set<Field> supported() {
    Set<Field> fields = EnumSet.noneOf(Field.class);
    for (Field field : Field.values()) {
      if (isSupported(field)) {
        fields.add(field);
      }
    }
    return fields;
  }

  /** Bytes the callers asked for and have not freed. */
  public long bytesInUse() {
    return get(Field.BYTES_IN_USE);
  }

  /** The most bytes in use at once since creation or the last peak reset. */
  public long bytesInUsePeak() {
    return get(Field.BYTES_IN_USE_PEAK);
  }

  /** Bytes held from the memory below the resource, in use or free. */
  public long bytesHeld() {
    return get(Field.BYTES_HELD);
  }

  /** The most bytes held at once since creation or the last peak reset. */
  public long bytesHeldPeak() {
    return get(Field.BYTES_HELD_PEAK);
  }

  /** Successful allocations since creation. */
  public long allocations() {
    return get(Field.ALLOCATIONS);
  }

  /** Successful deallocations since creation. */
  public long deallocations() {
    return get(Field.DEALLOCATIONS);
  }

  /** Free bytes the resource holds. */
  public long bytesFree() {
    return get(Field.BYTES_FREE);
  }

  /** Free blocks the resource holds. */
  public long freeBlocks() {
    return get(Field.FREE_BLOCKS);
  }

  /** The largest free block: the most one allocation could take without new memory. */
  public long largestFreeBlock() {
    return get(Field.LARGEST_FREE_BLOCK);
  }

  /** Allocations answered with out of memory. */
  public long outOfMemoryCount() {
    return get(Field.OUT_OF_MEMORY_COUNT);
  }

  /** Times a failure callback asked for an allocation to be tried again. */
  public long failureCallbackRetries() {
    return get(Field.FAILURE_CALLBACK_RETRIES);
  }

  /** Pieces of memory held from below (a suballocator's chunks). */
  public long segments() {
    return get(Field.SEGMENTS);
  }

  /** Streams (and threads) with free memory lists. */
  public long streamLists() {
    return get(Field.STREAM_LISTS);
  }

  /** A CUDA memory pool's bytes in use by every user of the pool. */
  public long poolBytesUsed() {
    return get(Field.POOL_BYTES_USED);
  }

  /** The high of {@link #poolBytesUsed()}. */
  public long poolBytesUsedPeak() {
    return get(Field.POOL_BYTES_USED_PEAK);
  }

  @Override
  public String toString() {
    StringBuilder text = new StringBuilder("MemoryStats{");
    String separator = "";
    for (Field field : supported()) {
      text.append(separator).append(field.name().toLowerCase()).append('=').append(get(field));
      separator = ", ";
    }
    return text.append('}').toString();
  }
}
