/* What the runtime, the generated wrappers and the algorithm files share and
 * no user sees: error reporting, the counted-object header, named defaults. */
#ifndef CMR_INTERNAL_H
#define CMR_INTERNAL_H

#include <stdatomic.h>

#include <cmr/cmr.h>

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

/* ---- counted objects ------------------------------------------------------- */

/* The first member of every generated resource handle (and of anything else
 * whose lifetime is shared). The magic says whether it is still alive: after
 * the last release it is poisoned and the shell is kept in a bounded
 * quarantine, so a use soon after destroy reads the poison and is reported. */
typedef struct cmr_object {
  _Atomic uint32_t magic;
  _Atomic uint32_t references;
  /* Frees what the object owns (not the shell itself). Called once, at the
   * last release. */
  void (*finalize)(struct cmr_object *object);
} cmr_object;

/* The magic of a live object (anything else: released, or not an object). */
#define CMR_MAGIC_LIVE 0x434d524fu /* "CMRO" */

/* Start life with one reference (the creator's). */
void cmr_object_init(cmr_object *object, void (*finalize)(cmr_object *object));
/* CMR_SUCCESS for a live object; CMR_ERROR_NULL_POINTER for NULL and
 * CMR_ERROR_DESTROYED_HANDLE for a released one, with "<what>: ..." messages. */
cmr_status cmr_object_check(const cmr_object *object, const char *what);
void cmr_object_retain(cmr_object *object);
/* At the last release: finalize, poison the magic and quarantine the shell,
 * which must have come from malloc/calloc. */
void cmr_object_release(cmr_object *object);

/* The retain / release entries of a generated ops table. */
static inline void cmr_object_retain_self(void *self) { cmr_object_retain((cmr_object *)self); }
static inline void cmr_object_release_self(void *self) { cmr_object_release((cmr_object *)self); }

/* CMR_ERROR_UNSUPPORTED for a resource this build does not have, saying
 * which build it needs. */
cmr_status cmr_unavailable(const char *function, const char *resource);

/* ---- refs -------------------------------------------------------------------- */

/* Liveness and shape of a ref, with "<what>: ..." in the message. */
cmr_status cmr_ref_check(cmr_resource_ref ref, const char *what);
/* Whether cmr_ref_check would pass `ref`: inline, since every call through a
 * ref asks; a ref that fails goes to cmr_ref_check for its message. */
static inline bool cmr_ref_usable(cmr_resource_ref ref) {
  if (ref.ops == NULL || ref.ops->allocate == NULL || ref.ops->deallocate == NULL) return false;
  if (!(ref.ops->flags & CMR_OPS_FLAG_COUNTED)) return true;
  const cmr_object *object = ref.self;
  return object != NULL && atomic_load_explicit(&object->magic, memory_order_acquire) == CMR_MAGIC_LIVE;
}
/* Properties of a ref already checked. */
unsigned cmr_ref_properties_of(cmr_resource_ref ref);
/* Retain / release a ref already checked (no-ops for foreign resources). */
void cmr_ref_hold(cmr_resource_ref ref);
void cmr_ref_drop(cmr_resource_ref ref);
/* Whether two checked refs are interchangeable (cmr_ref_equal without checks). */
bool cmr_ref_same(cmr_resource_ref a, cmr_resource_ref b);

/* ---- named defaults of spec parameters ------------------------------------ */

/* Half of the current device's free memory, rounded down to 256 bytes (the
 * pool's and arena's initial size in RMM's Python API). */
cmr_status cmr_default_half_of_free_device_memory(size_t *out);

#endif /* CMR_INTERNAL_H */
