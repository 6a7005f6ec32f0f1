/* SPDX-License-Identifier: Apache-2.0 */
/* Size arithmetic the algorithms share, with the overflow a caller reports. */
#ifndef CMR_SIZES_H
#define CMR_SIZES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* `value` rounded up to a multiple of `multiple` (a power of two) in *out;
 * false, leaving *out alone, when that does not fit in a size_t. */
static inline bool cmr_round_up(size_t value, size_t multiple, size_t *out) {
  if (value > SIZE_MAX - (multiple - 1)) return false;
  *out = (value + multiple - 1) & ~(multiple - 1);
  return true;
}

/* `bytes` rounded up to 256, for a request dispatch has checked: it cannot
 * overflow (cmr_allocate refuses sizes that would). */
static inline size_t cmr_round_up_256(size_t bytes) { return (bytes + 255) & ~(size_t)255; }

#endif /* CMR_SIZES_H */
