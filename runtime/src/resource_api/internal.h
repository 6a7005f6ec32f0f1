/* What the runtime, the generated wrappers and the algorithm files share and
 * no user sees: error reporting, the counted-object header, named defaults. */
#ifndef CMR_INTERNAL_H
#define CMR_INTERNAL_H

#include <stdatomic.h>

#include <cmr/cmr.h>

#include "log_write.h"
#include "object.h"

#if defined(__GNUC__)
#  define CMR_PRINTF(fmt_index, args_index) __attribute__((format(printf, fmt_index, args_index)))
#else
#  define CMR_PRINTF(fmt_index, args_index)
#endif

/* Record `status` with a formatted message as this thread's last error and
 * return `status`, so a failure is one line: return cmr_error(...). */
cmr_status cmr_error(cmr_status status, const char *format, ...) CMR_PRINTF(2, 3);

/* Prefix this thread's last message with "<context>: " (used when a callee's
 * message needs the caller's name and argument in front) and return status. */
cmr_status cmr_error_context(cmr_status status, const char *format, ...) CMR_PRINTF(2, 3);

/* How many messages this thread has recorded so far (cmr_error and
 * cmr_error_context count them; hidden, like every runtime symbol). */
extern _Thread_local unsigned long cmr_error_serial_count;

/* The count of messages so far. Comparing two readings tells whether a
 * callee (e.g. a foreign resource) recorded one. Inline: dispatch reads it
 * around every call through a ref, and a function call costs more than the
 * read itself. */
static inline unsigned long cmr_error_serial(void) { return cmr_error_serial_count; }

/* ---- counted objects: object.h ------------------------------------------- */

/* The retain / release entries of a generated ops table: they take the
 * ref's self, an object token (dispatch itself calls cmr_object_retain /
 * cmr_object_release, which report failures). */
static inline void cmr_object_retain_self(void *token) { (void)cmr_object_retain(token, "retain"); }
static inline void cmr_object_release_self(void *token) { (void)cmr_object_release(token, "release"); }

/* CMR_ERROR_UNSUPPORTED for a resource this build does not have, saying
 * which build it needs. */
cmr_status cmr_unavailable(const char *function, const char *resource);

/* ---- refs -------------------------------------------------------------------- */

/* Liveness and shape of a ref, with "<what>: ..." in the message. */
cmr_status cmr_ref_check(cmr_resource_ref ref, const char *what);
/* The `self` the ops functions of `ref` take: for cmr's own (counted)
 * resources the object its token names, else ref.self as it is. False when
 * cmr_ref_check would refuse the ref (it then gives the message). Inline:
 * every call through a ref asks. */
static inline bool cmr_ref_target(cmr_resource_ref ref, void **self) {
  if (ref.ops == NULL || ref.ops->allocate == NULL || ref.ops->deallocate == NULL) return false;
  if (!(ref.ops->flags & CMR_OPS_FLAG_COUNTED)) {
    *self = ref.self;
    return true;
  }
  *self = cmr_object_peek(ref.self);
  return *self != NULL;
}
/* The same for a ref already checked (NULL only if it died since). */
static inline void *cmr_ref_self(cmr_resource_ref ref) {
  return (ref.ops->flags & CMR_OPS_FLAG_COUNTED) ? (void *)cmr_object_peek(ref.self) : ref.self;
}
/* Properties of a ref already checked. */
unsigned cmr_ref_properties_of(cmr_resource_ref ref);
/* Retain / release a ref already checked (no-ops for foreign resources
 * without retain / release). Retaining fails (CMR_ERROR_DESTROYED_HANDLE)
 * when the resource's last share is being released meanwhile. */
cmr_status cmr_ref_hold(cmr_resource_ref ref, const char *what);
void cmr_ref_drop(cmr_resource_ref ref);
/* Whether two checked refs are interchangeable (cmr_ref_equal without checks). */
bool cmr_ref_same(cmr_resource_ref a, cmr_resource_ref b);

/* ---- streams (device.c) ------------------------------------------------------ */

/* CMR_ERROR_INVALID_ARGUMENT unless `flags` is one of CMR_STREAM_FLAGS_*. */
cmr_status cmr_stream_flags_check(unsigned flags, const char *what);
/* A new stream made with (checked) `flags`, known to cmr as those of
 * cmr_stream_create are; the backend's message on failure. */
cmr_status cmr_stream_make(unsigned flags, cmr_stream *out);
/* Destroys a live stream of cmr_stream_make, once; any other stream is
 * CMR_ERROR_INVALID_ARGUMENT, with "<what>: ..." in the message. */
cmr_status cmr_stream_end(cmr_stream stream, const char *what);

/* ---- named defaults of spec parameters ------------------------------------ */

/* Half of the current device's free memory, rounded down to 256 bytes (the
 * pool's and arena's initial size in RMM's Python API). */
cmr_status cmr_default_half_of_free_device_memory(size_t *out);

#endif /* CMR_INTERNAL_H */
