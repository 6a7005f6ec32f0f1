/* SPDX-License-Identifier: Apache-2.0 */
/* Whether a range of addresses is host memory of this process, asked of the
 * kernel (mincore) before a copy touches it, so that an address the caller
 * made up is refused instead of faulting. A mapped page that may not be
 * read (a PROT_NONE guard page) counts as mapped: that is not detected. */
#ifndef CMR_HOST_RANGE_H
#define CMR_HOST_RANGE_H

#include <stdbool.h>
#include <stddef.h>

/* Whether every page of the `bytes` (> 0) at `ptr` is mapped in this
 * process: false where the kernel says one is not (or the range runs past
 * the end of the address space), true otherwise. */
bool cmr_host_range_mapped(const void *ptr, size_t bytes);

#endif /* CMR_HOST_RANGE_H */
