/* SPDX-License-Identifier: Apache-2.0 */
/* cmr_stream_pool: RMM's cuda_stream_pool. A fixed set of streams made
 * together and handed out round robin by an atomic counter. The handle is
 * the object token, as a device buffer's: one owner, no refs. */
#include <stdlib.h>

#include "internal.h"

enum { cmr_stream_pool_default_size = 16 }; /* RMM's default_size */

/* What a cmr_stream_pool handle (an object token) names. */
typedef struct cmr_stream_pool_object {
  cmr_object object;   /* first: the counted-object header */
  _Atomic size_t next; /* how many streams get_stream has handed out */
  size_t size;
  size_t made; /* streams[0, made) exist */
  cmr_stream streams[];
} cmr_stream_pool_object;

static void cmr_stream_pool_finalize(cmr_object *object) { free(object); }

static const cmr_object_type cmr_stream_pool_type = {"stream_pool", cmr_stream_pool_finalize, NULL};

/* Destroys the streams made so far; the first failure is returned. */
static cmr_status cmr_stream_pool_end_streams(cmr_stream_pool_object *pool, const char *what) {
  cmr_status first = CMR_SUCCESS;
  for (size_t i = 0; i < pool->made; ++i) {
    cmr_status status = cmr_stream_end(pool->streams[i], what);
    if (first == CMR_SUCCESS) first = status;
  }
  pool->made = 0;
  return first;
}

static cmr_status cmr_stream_pool_resolve(const cmr_stream_pool *handle, const char *what,
                                          cmr_stream_pool_object **out) {
  return cmr_object_resolve(handle, &cmr_stream_pool_type, what, (cmr_object **)out);
}

cmr_status cmr_stream_pool_create(size_t pool_size, unsigned flags, cmr_stream_pool **out) {
  static const char what[] = "cmr_stream_pool_create";
  if (out == NULL) return cmr_error(CMR_ERROR_NULL_POINTER, "%s: out is NULL", what);
  *out = NULL;
  cmr_status status = cmr_stream_flags_check(flags, what);
  if (status != CMR_SUCCESS) return status;
  size_t size = pool_size == 0 ? cmr_stream_pool_default_size : pool_size;
  if (size > (SIZE_MAX - sizeof(cmr_stream_pool_object)) / sizeof(cmr_stream)) {
    return cmr_error(CMR_ERROR_SIZE_OVERFLOW, "%s: pool_size %zu: its table would overflow a size_t", what, size);
  }
  cmr_stream_pool_object *pool = calloc(1, sizeof *pool + size * sizeof(cmr_stream));
  if (pool == NULL) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: no host memory for a pool of %zu streams", what, size);
  }
  pool->size = size;
  while (pool->made < size && status == CMR_SUCCESS) {
    status = cmr_stream_make(flags, &pool->streams[pool->made]);
    if (status == CMR_SUCCESS) pool->made++;
  }
  void *token = NULL;
  if (status == CMR_SUCCESS) status = cmr_object_register(&pool->object, &cmr_stream_pool_type, what, &token);
  if (status != CMR_SUCCESS) {
    cmr_kept_message reason; /* ending the streams must not replace it */
    cmr_keep_message(&reason);
    (void)cmr_stream_pool_end_streams(pool, what);
    free(pool);
    return cmr_error(status, "%s(%zu streams, flags %u): %s", what, size, flags, reason.text);
  }
  cmr_log(CMR_LOG_DEBUG, "%s: stream pool %p of %zu streams (flags %u)", what, token, size, flags);
  *out = token;
  return CMR_SUCCESS;
}

cmr_status cmr_stream_pool_destroy(cmr_stream_pool *handle) {
  static const char what[] = "cmr_stream_pool_destroy";
  if (handle == NULL || cmr_object_forget_parents(handle)) return CMR_SUCCESS;
  cmr_stream_pool_object *pool;
  /* Of two destroys racing, the one that ends the pool ends its streams. */
  cmr_status status = cmr_object_end(handle, &cmr_stream_pool_type, what, (cmr_object **)&pool);
  if (status != CMR_SUCCESS) return status;
  /* Ended here rather than in finalize so that a failure is reported. */
  status = cmr_stream_pool_end_streams(pool, what);
  cmr_object_finish(handle);
  cmr_log(CMR_LOG_DEBUG, "%s: stream pool %p", what, (void *)handle);
  return status;
}

/* The start of every reader: `out` checked, then the pool resolved. */
static cmr_status cmr_stream_pool_read(const cmr_stream_pool *handle, const char *what, const void *out,
                                       cmr_stream_pool_object **pool) {
  if (out == NULL) return cmr_error(CMR_ERROR_NULL_POINTER, "%s: out is NULL", what);
  return cmr_stream_pool_resolve(handle, what, pool);
}

cmr_status cmr_stream_pool_get_stream(cmr_stream_pool *handle, cmr_stream *out) {
  cmr_stream_pool_object *pool = NULL;
  cmr_status status = cmr_stream_pool_read(handle, "cmr_stream_pool_get_stream", out, &pool);
  if (status == CMR_SUCCESS) {
    size_t turn = atomic_fetch_add_explicit(&pool->next, 1, memory_order_relaxed);
    *out = pool->streams[turn % pool->size];
  } else if (out != NULL) {
    *out = CMR_DEFAULT_STREAM;
  }
  return status;
}

cmr_status cmr_stream_pool_get_stream_at(cmr_stream_pool *handle, size_t index, cmr_stream *out) {
  cmr_stream_pool_object *pool = NULL;
  cmr_status status = cmr_stream_pool_read(handle, "cmr_stream_pool_get_stream_at", out, &pool);
  if (out != NULL) *out = status == CMR_SUCCESS ? pool->streams[index % pool->size] : CMR_DEFAULT_STREAM;
  return status;
}

cmr_status cmr_stream_pool_size(const cmr_stream_pool *handle, size_t *out) {
  cmr_stream_pool_object *pool = NULL;
  cmr_status status = cmr_stream_pool_read(handle, "cmr_stream_pool_size", out, &pool);
  if (out != NULL) *out = status == CMR_SUCCESS ? pool->size : 0;
  return status;
}
