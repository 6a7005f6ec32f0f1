/* SPDX-License-Identifier: Apache-2.0 */
/* Dispatch's out-of-memory report (stats.c), made once per failed
 * allocation. */
#ifndef CMR_STATS_REPORT_H
#define CMR_STATS_REPORT_H

#include "internal.h"

/* `ref` (checked) answered a request of `bytes` at `alignment` on `stream`
 * with CMR_ERROR_OUT_OF_MEMORY, its message recorded after `serial_before`:
 * counts it for the resource and, unless an inner resource already reported
 * this very message, extends the message with the state of a suballocator
 * (what it holds, what is free, the largest free block, the free bytes by
 * stream) and calls the observer (cmr_set_oom_observer). Returns
 * CMR_ERROR_OUT_OF_MEMORY. */
cmr_status cmr_stats_out_of_memory(cmr_resource_ref ref, size_t bytes, size_t alignment, cmr_stream stream,
                                   unsigned long serial_before);

#endif /* CMR_STATS_REPORT_H */
