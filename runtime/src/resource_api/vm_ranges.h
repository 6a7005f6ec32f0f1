/* SPDX-License-Identifier: Apache-2.0 */
/* The memory of a suballocator over reserved address ranges (expandable):
 * ranges of addresses reserved from the backend (backend.h's virtual
 * memory) and memory committed into them a granule at a time, within a
 * maximum. A growth commits the lowest run of uncommitted granules long
 * enough, so memory committed in two growths is contiguous whenever the
 * range has room, and reserves another range only when none has; a trim
 * decommits the whole granules of a free block. Thread-safe. */
#ifndef CMR_VM_RANGES_H
#define CMR_VM_RANGES_H

#include <cmr/stats.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "internal.h"

typedef struct cmr_vm_range {
  char *base;
  size_t size; /* bytes of addresses reserved */
  /* One bit per granule of the first `extent` granules, set where committed
   * (none is past them). */
  uint64_t *committed;
  size_t extent;
  size_t words; /* room in `committed` */
} cmr_vm_range;

typedef struct cmr_vm_ranges {
  const char *owner;  /* names the resource in messages */
  int device;         /* whose memory (cmr_backend_device_at_creation) */
  size_t granule;     /* bytes committed and decommitted at a time */
  size_t reservation; /* bytes a range reserves, unless one growth needs more */
  size_t maximum;     /* most bytes committed at once; SIZE_MAX for no limit */
  pthread_mutex_t lock;
  cmr_vm_range *items; /* lock held */
  size_t count, capacity;
  _Atomic size_t committed_bytes;
  _Atomic size_t reserved_bytes;
  _Atomic size_t range_count;
  size_t committed_peak; /* the most committed_bytes has been; lock held */
} cmr_vm_ranges;

/* Bytes committed now and at peak, and how many ranges, into *out (the
 * held fields of cmr_stats: committed memory is what is held). */
void cmr_vm_ranges_stats(cmr_vm_ranges *ranges, cmr_stats *out);
/* Sets the peak of committed bytes to the bytes committed now. */
void cmr_vm_ranges_reset_peak(cmr_vm_ranges *ranges);

/* Nothing reserved yet. `granule` must be a multiple of the backend's
 * granularity on the device (else CMR_ERROR_INVALID_ARGUMENT, saying it),
 * `reservation` a multiple of `granule`; fails as cmr_backend_vm_granularity
 * does where there is no virtual memory (then nothing is left to release). */
cmr_status cmr_vm_ranges_init(cmr_vm_ranges *ranges, const char *owner, size_t granule, size_t reservation,
                              size_t maximum);
/* Decommits and unreserves everything, once the device has finished the
 * work queued on it (this is the owner's end). */
void cmr_vm_ranges_release_all(cmr_vm_ranges *ranges);

/* Commits at least `bytes` (rounded up to the granule) of contiguous
 * memory into *out: in the lowest run of uncommitted granules of a range
 * that is long enough, else in a new range (of `reservation` bytes, or what
 * the growth needs). *starts_range says whether it begins its range (a
 * block there must not merge with what lies before). CMR_ERROR_OUT_OF_MEMORY
 * past the maximum (saying so) or where the backend has no more. */
cmr_status cmr_vm_ranges_grow(cmr_vm_ranges *ranges, size_t bytes, char **address, size_t *size, bool *starts_range);

/* The whole granules inside the committed bytes [address, address + size)
 * of one range, [*first, *end) (empty, *first == *end, when there are
 * none). */
void cmr_vm_ranges_interior(cmr_vm_ranges *ranges, const char *address, size_t size, char **first, char **end);
/* Decommits [first, end), whole granules of one range (from
 * cmr_vm_ranges_interior), no work pending on them. On failure they stay
 * counted as committed. */
cmr_status cmr_vm_ranges_decommit(cmr_vm_ranges *ranges, char *first, char *end);

/* Invariants (invariants.h), the lock held or the ranges unshared: every
 * range reserved at a non-NULL address with a nonzero size that is a
 * multiple of the granule, its bits within it, no two ranges overlapping,
 * the committed bytes the granules whose bits are set and within the
 * maximum, the reserved bytes and the range count the ranges'. Each growth
 * and decommit checks them. False, with the broken invariant in *why. */
bool cmr_vm_ranges_valid(const cmr_vm_ranges *ranges, const char **why);

/* Bytes committed now (inline: read on every free). */
static inline size_t cmr_vm_ranges_committed(cmr_vm_ranges *ranges) {
  return atomic_load_explicit(&ranges->committed_bytes, memory_order_relaxed);
}

#endif /* CMR_VM_RANGES_H */
