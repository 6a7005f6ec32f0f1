/* SPDX-License-Identifier: Apache-2.0 */
/* The address range of the `simulated` resource: addresses without memory,
 * which the resource hands out and every copy of the runtime refuses (a copy
 * would fault on the host, or leave the device's context broken). */
#ifndef CMR_SIMULATED_RANGE_H
#define CMR_SIMULATED_RANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* From 2^62, 2^61 bytes: non-canonical on x86-64 (4- and 5-level paging) and
 * above every arm64 virtual address size, so no real pointer is ever in it
 * and a touch faults instead of corrupting something. */
#define CMR_SIMULATED_BASE ((uintptr_t)1 << 62)
#define CMR_SIMULATED_RANGE ((uintptr_t)1 << 61)
_Static_assert(sizeof(uintptr_t) >= 8, "simulated needs 64-bit addresses");

/* Whether any of the `bytes` bytes from `address` lie in the range. */
static inline bool cmr_simulated_overlaps(const void *address, size_t bytes) {
  uintptr_t start = (uintptr_t)address;
  uintptr_t end = bytes > UINTPTR_MAX - start ? UINTPTR_MAX : start + bytes;
  return bytes > 0 && start < CMR_SIMULATED_BASE + CMR_SIMULATED_RANGE && end > CMR_SIMULATED_BASE;
}

#endif /* CMR_SIMULATED_RANGE_H */
