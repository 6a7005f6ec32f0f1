/* SPDX-License-Identifier: Apache-2.0 */
/* A pool of streams handed out round robin, as RMM's cuda_stream_pool: work
 * that needs "some other stream" takes the next one instead of making and
 * destroying a stream each time. The pool's streams are cmr's own (known to
 * cmr as those of cmr_stream_create are) and live as long as the pool; they
 * must not be destroyed with cmr_stream_destroy, and must not be used after
 * cmr_stream_pool_destroy. In the host build they are host tokens whose
 * work is always complete, as cmr_stream_create's. */
#ifndef CMR_STREAM_POOL_H
#define CMR_STREAM_POOL_H

#include <cmr/core.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cmr_stream_pool cmr_stream_pool;

/* Stream flags, as RMM's cuda_stream::flags. */
#define CMR_STREAM_FLAGS_SYNC_DEFAULT 0u /* synchronizes with the legacy default stream (cudaStreamDefault) */
#define CMR_STREAM_FLAGS_NON_BLOCKING 1u /* does not (cudaStreamNonBlocking) */

/* A pool of `pool_size` new streams made with `flags` (0: RMM's default of
 * 16). Flags other than the two above are CMR_ERROR_INVALID_ARGUMENT. */
CMR_API cmr_status cmr_stream_pool_create(size_t pool_size, unsigned flags, cmr_stream_pool **out);
/* Destroys the pool and its streams, after the work queued on them. NULL
 * is a no-op; a pool destroyed already is CMR_ERROR_DESTROYED_HANDLE. */
CMR_API cmr_status cmr_stream_pool_destroy(cmr_stream_pool *pool);
/* The next stream, round robin; thread-safe. */
CMR_API cmr_status cmr_stream_pool_get_stream(cmr_stream_pool *pool, cmr_stream *out);
/* The stream at `index` modulo the pool's size, as RMM's get_stream(index). */
CMR_API cmr_status cmr_stream_pool_get_stream_at(cmr_stream_pool *pool, size_t index, cmr_stream *out);
/* How many streams the pool holds. */
CMR_API cmr_status cmr_stream_pool_size(const cmr_stream_pool *pool, size_t *out);

/* cmr_stream_create with flags (above); destroy the stream with
 * cmr_stream_destroy. */
CMR_API cmr_status cmr_stream_create_with_flags(unsigned flags, cmr_stream *out);

#ifdef __cplusplus
}
#endif

#endif /* CMR_STREAM_POOL_H */
