/* SPDX-License-Identifier: Apache-2.0 */
/* Reserved address ranges and the granules committed in them (see vm_ranges.h). */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "invariants.h"
#include "lock.h"
#include "vm_ranges.h"

cmr_status cmr_vm_ranges_init(cmr_vm_ranges *ranges, const char *owner, size_t granule, size_t reservation,
                              size_t maximum) {
  memset(ranges, 0, sizeof *ranges);
  ranges->owner = owner;
  ranges->device = cmr_backend_device_at_creation();
  ranges->granule = granule;
  ranges->reservation = reservation;
  ranges->maximum = maximum;
  size_t granularity = 0;
  cmr_status status = cmr_backend_vm_granularity(ranges->device, &granularity);
  if (status != CMR_SUCCESS) return cmr_error_context(status, "%s: virtual memory", owner);
  if (granularity == 0 || granule % granularity != 0) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT,
                     "%s: granule_size %zu is not a multiple of the device's virtual memory granularity %zu", owner,
                     granule, granularity);
  }
  return cmr_mutex_init(&ranges->lock, owner);
}

static bool cmr_granule_committed(const cmr_vm_range *range, size_t index) {
  return index < range->extent && (range->committed[index / 64] >> (index % 64) & 1) != 0;
}

/* Sets or clears the bits of granules [first, first + count). */
static void cmr_granules_mark(cmr_vm_range *range, size_t first, size_t count, bool committed) {
  for (size_t i = first; i < first + count; ++i) {
    uint64_t bit = UINT64_C(1) << (i % 64);
    range->committed[i / 64] = committed ? range->committed[i / 64] | bit : range->committed[i / 64] & ~bit;
  }
}

static bool cmr_vm_range_valid(const cmr_vm_ranges *ranges, const cmr_vm_range *range, size_t *committed,
                               const char **why) {
  if (range->base == NULL || range->size == 0 || range->size % ranges->granule != 0) {
    *why = "vm_ranges: a range has no address, no size or a size that is not a multiple of the granule";
    return false;
  }
  if (range->extent > range->size / ranges->granule || range->extent > range->words * 64) {
    *why = "vm_ranges: a range's committed bits pass its end or their room";
    return false;
  }
  for (size_t i = 0; i < range->extent; ++i) *committed += cmr_granule_committed(range, i) ? ranges->granule : 0;
  return true;
}

bool cmr_vm_ranges_valid(const cmr_vm_ranges *ranges, const char **why) {
  size_t committed = 0, reserved = 0;
  for (size_t i = 0; i < ranges->count; ++i) {
    const cmr_vm_range *range = &ranges->items[i];
    if (!cmr_vm_range_valid(ranges, range, &committed, why)) return false;
    reserved += range->size;
    for (size_t j = i + 1; j < ranges->count; ++j) {
      const cmr_vm_range *other = &ranges->items[j];
      if (range->base < other->base + other->size && other->base < range->base + range->size) {
        *why = "vm_ranges: two ranges overlap";
        return false;
      }
    }
  }
  if (committed != atomic_load(&ranges->committed_bytes) || committed > ranges->maximum) {
    *why = "vm_ranges: the committed bytes are not the committed granules', or pass the maximum";
    return false;
  }
  if (reserved != atomic_load(&ranges->reserved_bytes) || ranges->count != atomic_load(&ranges->range_count)) {
    *why = "vm_ranges: the reserved bytes or the range count are not the ranges'";
    return false;
  }
  return true;
}

/* Every committed run of `range` decommitted, its addresses unreserved. */
static void cmr_vm_range_free(const cmr_vm_ranges *ranges, cmr_vm_range *range) {
  for (size_t i = 0; i < range->extent;) {
    if (!cmr_granule_committed(range, i)) {
      ++i;
      continue;
    }
    size_t first = i;
    while (i < range->extent && cmr_granule_committed(range, i)) ++i;
    (void)cmr_backend_vm_decommit(ranges->device, range->base + first * ranges->granule, (i - first) * ranges->granule);
  }
  (void)cmr_backend_vm_unreserve(range->base, range->size);
  free(range->committed);
}

void cmr_vm_ranges_release_all(cmr_vm_ranges *ranges) {
  /* Memory was used on many streams: waiting for the whole device is the one
   * order that covers them all. It fails only where there is no device, and
   * then there is no work. */
  if (atomic_load(&ranges->committed_bytes) > 0) (void)cmr_backend_device_synchronize_on(ranges->device);
  for (size_t i = 0; i < ranges->count; ++i) cmr_vm_range_free(ranges, &ranges->items[i]);
  free(ranges->items);
  ranges->items = NULL;
  ranges->count = ranges->capacity = 0;
  pthread_mutex_destroy(&ranges->lock);
}

/* The first granule of the lowest run of `count` uncommitted granules of
 * `range`, or SIZE_MAX. Whole committed words are skipped at once. */
static size_t cmr_vm_range_find(const cmr_vm_range *range, size_t granule, size_t count) {
  size_t run = 0;
  for (size_t i = 0; i < range->extent;) {
    if (run == 0 && i % 64 == 0 && i + 64 <= range->extent && range->committed[i / 64] == UINT64_MAX) {
      i += 64;
      continue;
    }
    run = cmr_granule_committed(range, i) ? 0 : run + 1;
    ++i;
    if (run == count) return i - count;
  }
  /* The run that ends the extent, continued past it. */
  size_t start = range->extent - run;
  return count <= range->size / granule - start ? start : SIZE_MAX;
}

/* Room in `range`'s bits for granules up to `end`. Lock held. */
static cmr_status cmr_vm_range_extend(const cmr_vm_ranges *ranges, cmr_vm_range *range, size_t end) {
  size_t words = (end + 63) / 64;
  if (words > range->words) {
    size_t room = range->words * 2 > words ? range->words * 2 : words;
    uint64_t *bits = realloc(range->committed, room * sizeof *bits);
    if (bits == NULL) {
      return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: no host memory to record committed memory", ranges->owner);
    }
    memset(bits + range->words, 0, (room - range->words) * sizeof *bits);
    range->committed = bits;
    range->words = room;
  }
  if (end > range->extent) range->extent = end;
  return CMR_SUCCESS;
}

/* A new range of at least `bytes`, the last of the list. Lock held. */
static cmr_status cmr_vm_ranges_add(cmr_vm_ranges *ranges, size_t bytes) {
  if (ranges->count == ranges->capacity) {
    size_t capacity = ranges->capacity ? ranges->capacity * 2 : 4;
    cmr_vm_range *items = realloc(ranges->items, capacity * sizeof *items);
    if (items == NULL) {
      return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: no host memory to record a range", ranges->owner);
    }
    ranges->items = items;
    ranges->capacity = capacity;
  }
  cmr_vm_range range = {.size = bytes > ranges->reservation ? bytes : ranges->reservation};
  void *base = NULL;
  cmr_status status = cmr_backend_vm_reserve(ranges->device, range.size, &base);
  if (status != CMR_SUCCESS) {
    return cmr_error_context(status, "%s: reserving %zu bytes of addresses (range %zu)", ranges->owner, range.size,
                             ranges->count + 1);
  }
  range.base = base;
  ranges->items[ranges->count++] = range;
  atomic_fetch_add(&ranges->reserved_bytes, range.size);
  atomic_fetch_add(&ranges->range_count, 1);
  cmr_log(CMR_LOG_DEBUG, "%s: reserved range %zu of %zu bytes at %p", ranges->owner, ranges->count, range.size, base);
  return CMR_SUCCESS;
}

/* Commits `count` granules at `first` of `range`. Lock held. */
static cmr_status cmr_vm_range_commit(cmr_vm_ranges *ranges, cmr_vm_range *range, size_t first, size_t count) {
  cmr_status status = cmr_vm_range_extend(ranges, range, first + count);
  if (status == CMR_SUCCESS) {
    status = cmr_backend_vm_commit(ranges->device, range->base + first * ranges->granule, count * ranges->granule);
  }
  if (status != CMR_SUCCESS) {
    return cmr_error_context(status, "%s: committing %zu bytes (committed %zu)", ranges->owner, count * ranges->granule,
                             atomic_load(&ranges->committed_bytes));
  }
  cmr_granules_mark(range, first, count, true);
  size_t now = atomic_fetch_add(&ranges->committed_bytes, count * ranges->granule) + count * ranges->granule;
  if (now > ranges->committed_peak) ranges->committed_peak = now;
  return CMR_SUCCESS;
}

void cmr_vm_ranges_stats(cmr_vm_ranges *ranges, cmr_stats *out) {
  cmr_mutex_lock(&ranges->lock);
  out->bytes_held = atomic_load(&ranges->committed_bytes);
  out->bytes_held_peak = ranges->committed_peak;
  out->segments = ranges->count;
  cmr_mutex_unlock(&ranges->lock);
  out->supported |= CMR_STATS_BYTES_HELD | CMR_STATS_BYTES_HELD_PEAK | CMR_STATS_SEGMENTS;
}

void cmr_vm_ranges_reset_peak(cmr_vm_ranges *ranges) {
  cmr_mutex_lock(&ranges->lock);
  ranges->committed_peak = atomic_load(&ranges->committed_bytes);
  cmr_mutex_unlock(&ranges->lock);
}

cmr_status cmr_vm_ranges_grow(cmr_vm_ranges *ranges, size_t bytes, char **address, size_t *size, bool *starts_range) {
  size_t granule = ranges->granule;
  if (bytes > SIZE_MAX - (granule - 1)) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: %zu bytes overflow the granule", ranges->owner, bytes);
  }
  size_t count = (bytes + granule - 1) / granule;
  cmr_mutex_lock(&ranges->lock);
  size_t committed = atomic_load(&ranges->committed_bytes);
  cmr_status status = CMR_SUCCESS;
  if (count * granule > ranges->maximum - committed) {
    status = cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: %zu more bytes would pass the maximum of %zu (committed %zu)",
                       ranges->owner, count * granule, ranges->maximum, committed);
  }
  size_t in = ranges->count, first = SIZE_MAX;
  for (size_t i = 0; i < ranges->count && status == CMR_SUCCESS && first == SIZE_MAX; ++i) {
    first = cmr_vm_range_find(&ranges->items[i], granule, count);
    in = i;
  }
  if (status == CMR_SUCCESS && first == SIZE_MAX) {
    status = cmr_vm_ranges_add(ranges, count * granule);
    in = ranges->count - 1;
    first = 0;
  }
  if (status == CMR_SUCCESS) status = cmr_vm_range_commit(ranges, &ranges->items[in], first, count);
  if (status == CMR_SUCCESS) {
    *address = ranges->items[in].base + first * granule;
    *size = count * granule;
    *starts_range = first == 0;
  }
  CMR_CHECK(cmr_vm_ranges_valid, ranges);
  cmr_mutex_unlock(&ranges->lock);
  return status;
}

/* The range holding `address`. Lock held. */
static cmr_vm_range *cmr_vm_range_of(cmr_vm_ranges *ranges, const char *address) {
  for (size_t i = 0; i < ranges->count; ++i) {
    cmr_vm_range *range = &ranges->items[i];
    if (address >= range->base && (size_t)(address - range->base) < range->size) return range;
  }
  return NULL;
}

void cmr_vm_ranges_interior(cmr_vm_ranges *ranges, const char *address, size_t size, char **first, char **end) {
  cmr_mutex_lock(&ranges->lock);
  cmr_vm_range *range = cmr_vm_range_of(ranges, address);
  *first = *end = (char *)address;
  if (range != NULL) {
    size_t granule = ranges->granule;
    size_t from = ((size_t)(address - range->base) + granule - 1) / granule;
    size_t to = ((size_t)(address - range->base) + size) / granule;
    if (to > from) {
      *first = range->base + from * granule;
      *end = range->base + to * granule;
    }
  }
  cmr_mutex_unlock(&ranges->lock);
}

cmr_status cmr_vm_ranges_decommit(cmr_vm_ranges *ranges, char *first, char *end) {
  cmr_mutex_lock(&ranges->lock);
  cmr_vm_range *range = cmr_vm_range_of(ranges, first);
  cmr_status status = cmr_backend_vm_decommit(ranges->device, first, (size_t)(end - first));
  if (status == CMR_SUCCESS) {
    cmr_granules_mark(range, (size_t)(first - range->base) / ranges->granule, (size_t)(end - first) / ranges->granule,
                      false);
    atomic_fetch_sub(&ranges->committed_bytes, (size_t)(end - first));
  }
  CMR_CHECK(cmr_vm_ranges_valid, ranges);
  cmr_mutex_unlock(&ranges->lock);
  return status == CMR_SUCCESS ? status
                               : cmr_error_context(status, "%s: decommitting %zu bytes at %p", ranges->owner,
                                                   (size_t)(end - first), (void *)first);
}
