/* SPDX-License-Identifier: Apache-2.0 */
/* The streams cmr_stream_create made and cmr_stream_destroy has not yet
 * destroyed, every one of them (unlike stream_ids.h, a cache that may leave
 * some out). cmr_stream_destroy destroys only these, so a stream destroyed
 * twice, or one made elsewhere, is refused with a status instead of reaching
 * cudaStreamDestroy or free(). Thread-safe; memory grows with the streams
 * alive at once, not with the streams ever made. */
#ifndef CMR_LIVE_STREAMS_H
#define CMR_LIVE_STREAMS_H

#include <stdbool.h>

#include <cmr/core.h>

/* Adds `stream`; CMR_ERROR_OUT_OF_MEMORY (with a message) when the set cannot grow. */
cmr_status cmr_live_streams_add(cmr_stream stream);
/* Takes `stream` out; false when it was not there. Of two threads removing
 * the same stream, exactly one gets true. */
bool cmr_live_streams_remove(cmr_stream stream);
/* Whether `stream` is there now. */
bool cmr_live_streams_contains(cmr_stream stream);

#endif /* CMR_LIVE_STREAMS_H */
