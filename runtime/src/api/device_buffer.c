/* SPDX-License-Identifier: Apache-2.0 */
/* cmr_device_buffer: RMM's device_buffer over a resource ref. The buffer
 * holds a share of its resource; every allocation, copy and free is ordered
 * on the buffer's stream, with the buffer's device (the one current at its
 * creation, as RMM's) current and the caller's restored after. */
#include <pthread.h>
#include <stdlib.h>

#include "backend.h"
#include "internal.h"
#include "device_buffer_adopt.h"
#include "simulated_range.h"

/* What a cmr_device_buffer handle (an object token) names. */
typedef struct cmr_buffer {
  cmr_object object;             /* first: the counted-object header */
  struct cmr_buffer *next_spare; /* in its thread's spares, once destroyed */
  cmr_resource_ref mr;
  cmr_stream stream;
  void *data; /* NULL when the capacity is 0 */
  size_t size;
  size_t capacity;
  size_t alignment; /* what every allocation of the buffer asks its resource for */
  int device;
} cmr_buffer;

/* ---- spare buffer objects -----------------------------------------------------------
 * A buffer made and destroyed per allocation (Python's DeviceBuffer, CuPy's
 * allocator) would cost a calloc and a free beside its allocation: each
 * thread keeps a few destroyed buffers' objects for the next ones it makes.
 * Per thread (a pthread key, whose destructor frees them when the thread
 * ends), so that taking one and giving it back need no atomic operation. */

enum { cmr_spares_kept = 16 };

typedef struct cmr_spares {
  cmr_buffer *first;
  int count;
} cmr_spares;

static pthread_key_t cmr_spares_key;
static pthread_once_t cmr_spares_once = PTHREAD_ONCE_INIT;
static bool cmr_spares_usable; /* the key was made */

static void cmr_spares_free(void *thread_spares) {
  cmr_spares *spares = thread_spares;
  while (spares->first != NULL) {
    cmr_buffer *buffer = spares->first;
    spares->first = buffer->next_spare;
    free(buffer);
  }
  free(spares);
}

static void cmr_spares_make_key(void) { cmr_spares_usable = pthread_key_create(&cmr_spares_key, cmr_spares_free) == 0; }

/* This thread's spares, made on first use when `make`; NULL without them. */
static cmr_spares *cmr_spares_of_thread(bool make) {
  pthread_once(&cmr_spares_once, cmr_spares_make_key);
  if (!cmr_spares_usable) return NULL;
  cmr_spares *spares = pthread_getspecific(cmr_spares_key);
  if (spares == NULL && make && (spares = calloc(1, sizeof *spares)) != NULL &&
      pthread_setspecific(cmr_spares_key, spares) != 0) {
    free(spares);
    spares = NULL;
  }
  return spares;
}

static cmr_buffer *cmr_buffer_shell(void) {
  cmr_spares *spares = cmr_spares_of_thread(false);
  cmr_buffer *buffer = spares == NULL ? NULL : spares->first;
  if (buffer == NULL) return malloc(sizeof *buffer);
  spares->first = buffer->next_spare;
  --spares->count;
  return buffer;
}

static void cmr_buffer_shell_free(cmr_buffer *buffer) {
  cmr_spares *spares = cmr_spares_of_thread(true);
  if (spares == NULL || spares->count == cmr_spares_kept) {
    free(buffer);
    return;
  }
  buffer->next_spare = spares->first;
  spares->first = buffer;
  ++spares->count;
}

static cmr_status cmr_buffer_free_memory(cmr_buffer *buffer) {
  if (buffer->data == NULL) return CMR_SUCCESS; /* freed already, or never held any */
  cmr_backend_device_guard guard;
  cmr_status status = cmr_backend_device_enter(buffer->device, &guard);
  if (status != CMR_SUCCESS) return status; /* the memory stays, for a later try */
  status = cmr_deallocate_aligned(buffer->mr, buffer->data, buffer->capacity, buffer->alignment, buffer->stream);
  buffer->data = NULL;
  buffer->size = 0;
  buffer->capacity = 0;
  return cmr_backend_device_leave(&guard, status);
}

static void cmr_buffer_finalize(cmr_object *object) {
  cmr_buffer *buffer = (cmr_buffer *)object;
  cmr_buffer_free_memory(buffer); /* a no-op after destroy freed it */
  cmr_ref_drop(buffer->mr);
  cmr_buffer_shell_free(buffer);
}

/* cmr_backend_copy, refusing memory of the `simulated` resource: there is
 * nothing behind its addresses to copy (a host copy would fault, a device
 * copy would break the context). */
static cmr_status cmr_copy_memory(void *destination, const void *source, size_t bytes, cmr_stream stream) {
  if (cmr_simulated_overlaps(destination, bytes) || cmr_simulated_overlaps(source, bytes)) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT,
                     "copying %zu bytes from %p to %p: simulated memory (the `simulated` resource's) has no bytes to "
                     "copy",
                     bytes, source, destination);
  }
  return cmr_backend_copy(destination, source, bytes, stream);
}

/* Checks memory the caller names (not the buffer's own): `bytes` at `ptr`
 * must be memory a copy can reach (cmr_backend_check_address). Simulated
 * memory passes here: cmr_copy_memory refuses it with its own message. */
static cmr_status cmr_check_foreign(const void *ptr, size_t bytes, const char *name, const char *what) {
  if (ptr == NULL || bytes == 0 || cmr_simulated_overlaps(ptr, bytes)) return CMR_SUCCESS;
  return cmr_backend_check_address(ptr, bytes, name, what);
}

static const cmr_object_type cmr_buffer_type = {"device_buffer", cmr_buffer_finalize, NULL};

/* Moves the contents into a new allocation of `capacity` bytes on `stream`
 * (which becomes the buffer's), keeping min(size, capacity) bytes. On failure
 * the buffer is as it was. */
static cmr_status cmr_buffer_move(cmr_buffer *buffer, size_t capacity, cmr_stream stream) {
  void *data = NULL;
  cmr_status status = cmr_allocate_aligned(buffer->mr, capacity, buffer->alignment, stream, &data);
  if (status != CMR_SUCCESS) {
    return status;
  }
  size_t kept = buffer->size < capacity ? buffer->size : capacity;
  if (kept > 0) {
    status = cmr_copy_memory(data, buffer->data, kept, stream);
    if (status != CMR_SUCCESS) {
      cmr_deallocate_aligned(buffer->mr, data, capacity, buffer->alignment, stream);
      return status;
    }
  }
  /* The old memory is freed in order after the copy, on the same stream. */
  status = cmr_deallocate_aligned(buffer->mr, buffer->data, buffer->capacity, buffer->alignment, stream);
  buffer->data = data;
  buffer->size = kept;
  buffer->capacity = capacity;
  buffer->stream = stream;
  return status;
}

/* cmr_buffer_move on the buffer's device. */
static cmr_status cmr_buffer_reallocate(cmr_buffer *buffer, size_t capacity, cmr_stream stream) {
  cmr_backend_device_guard guard;
  cmr_status status = cmr_backend_device_enter(buffer->device, &guard);
  return status == CMR_SUCCESS ? cmr_backend_device_leave(&guard, cmr_buffer_move(buffer, capacity, stream)) : status;
}

/* Copies `bytes` on the buffer's stream, on its device; with `wait`, waits
 * for the copy. */
static cmr_status cmr_buffer_copy(const cmr_buffer *buffer, void *destination, const void *source, size_t bytes,
                                  bool wait) {
  cmr_backend_device_guard guard;
  cmr_status status = cmr_backend_device_enter(buffer->device, &guard);
  if (status != CMR_SUCCESS) return status;
  status = cmr_copy_memory(destination, source, bytes, buffer->stream);
  if (status == CMR_SUCCESS && wait) status = cmr_backend_stream_synchronize(buffer->stream);
  return cmr_backend_device_leave(&guard, status);
}

static cmr_status cmr_buffer_resolve(const cmr_device_buffer *handle, const char *what, cmr_buffer **out) {
  return cmr_object_resolve(handle, &cmr_buffer_type, what, (cmr_object **)out);
}

/* ---- lifetime ------------------------------------------------------------------ */

/* The alignment a buffer's memory has when `alignment` (a power of two) was
 * asked for: at least the default, as every allocation gets. */
static size_t cmr_buffer_alignment_of(size_t alignment) {
  return alignment < CMR_DEFAULT_ALIGNMENT ? CMR_DEFAULT_ALIGNMENT : alignment;
}

/* Fills in `buffer` (its memory in buffer->data, of `size` bytes, and a
 * share of `mr` held) and hands out its token; on failure the caller
 * finalizes the buffer. */
static cmr_status cmr_buffer_publish(cmr_buffer *buffer, cmr_resource_ref mr, cmr_stream stream, size_t size,
                                     size_t alignment, const char *what, cmr_device_buffer **out) {
  buffer->mr = mr;
  buffer->stream = stream;
  buffer->device = cmr_backend_device_at_creation();
  buffer->size = size;
  buffer->capacity = size;
  buffer->alignment = cmr_buffer_alignment_of(alignment);
  void *token;
  cmr_status status = cmr_object_register(&buffer->object, &cmr_buffer_type, what, &token);
  if (status == CMR_SUCCESS) *out = token;
  return status;
}

cmr_status cmr_device_buffer_adopt(void *data, size_t size, cmr_stream stream, cmr_resource_ref mr, const char *what,
                                   cmr_device_buffer **out) {
  cmr_status status = cmr_ref_hold(mr, what);
  if (status != CMR_SUCCESS) return status;
  cmr_buffer *buffer = cmr_buffer_shell();
  if (buffer == NULL) {
    cmr_ref_drop(mr);
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: no host memory for the buffer object", what);
  }
  buffer->data = data;
  status = cmr_buffer_publish(buffer, mr, stream, size, CMR_DEFAULT_ALIGNMENT, what, out);
  if (status != CMR_SUCCESS) {
    buffer->data = NULL; /* the caller's still */
    cmr_buffer_finalize(&buffer->object);
  }
  return status;
}

/* cmr_device_buffer_create_aligned, reporting as `what`. */
static cmr_status cmr_buffer_create(size_t size, size_t alignment, cmr_stream stream, cmr_resource_ref mr,
                                    const char *what, cmr_device_buffer **out) {
  if (out == NULL) {
    return cmr_error(CMR_ERROR_NULL_POINTER, "%s: out is NULL", what);
  }
  *out = NULL;
  void *self = NULL;
  /* The inline check of a live ref; the full one only to say what is wrong. */
  cmr_status status = cmr_ref_target(mr, &self) ? CMR_SUCCESS : cmr_ref_check(mr, what);
  if (status != CMR_SUCCESS) {
    return status;
  }
  cmr_buffer *buffer = cmr_buffer_shell();
  if (buffer == NULL) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: no host memory for the buffer object", what);
  }
  buffer->data = NULL;
  /* The resource stays until its share is taken, even if the allocate
   * destroys it (the share is then refused, and the memory given back). */
  cmr_call_begin();
  if (alignment == CMR_DEFAULT_ALIGNMENT) {
    status = cmr_allocate(mr, size, stream, &buffer->data);
  } else {
    status = cmr_allocate_aligned(mr, size, alignment, stream, &buffer->data);
  }
  if (status != CMR_SUCCESS) {
    status = alignment == CMR_DEFAULT_ALIGNMENT
                 ? cmr_error_context(status, "%s(%zu bytes)", what, size)
                 : cmr_error_context(status, "%s(%zu bytes, alignment %zu)", what, size, alignment);
  } else if ((status = cmr_ref_hold(mr, what)) != CMR_SUCCESS && buffer->data != NULL) {
    status = cmr_held_give_back(status, mr, self, buffer->data, size, cmr_buffer_alignment_of(alignment), stream);
  }
  cmr_call_end();
  if (status != CMR_SUCCESS) {
    cmr_buffer_shell_free(buffer);
    return status;
  }
  status = cmr_buffer_publish(buffer, mr, stream, size, alignment, what, out);
  if (status != CMR_SUCCESS) cmr_buffer_finalize(&buffer->object);
  return status;
}

cmr_status cmr_device_buffer_create(size_t size, cmr_stream stream, cmr_resource_ref mr, cmr_device_buffer **out) {
  return cmr_buffer_create(size, CMR_DEFAULT_ALIGNMENT, stream, mr, "cmr_device_buffer_create", out);
}

cmr_status cmr_device_buffer_create_aligned(size_t size, size_t alignment, cmr_stream stream, cmr_resource_ref mr,
                                            cmr_device_buffer **out) {
  return cmr_buffer_create(size, alignment, stream, mr, "cmr_device_buffer_create_aligned", out);
}

/* cmr_device_buffer_create_copy_aligned, reporting as `what`. */
static cmr_status cmr_buffer_create_copy(const void *source, size_t size, size_t alignment, cmr_stream stream,
                                         cmr_resource_ref mr, const char *what, cmr_device_buffer **out) {
  if (out == NULL) {
    return cmr_error(CMR_ERROR_NULL_POINTER, "%s: out is NULL", what);
  }
  *out = NULL;
  if (source == NULL && size > 0) {
    return cmr_error(CMR_ERROR_NULL_POINTER, "%s: source is NULL for %zu bytes", what, size);
  }
  cmr_device_buffer *buffer = NULL;
  cmr_status status = cmr_buffer_create(size, alignment, stream, mr, what, &buffer);
  if (status != CMR_SUCCESS) {
    return status;
  }
  status = cmr_device_buffer_copy_from(buffer, source, size);
  if (status != CMR_SUCCESS) {
    cmr_device_buffer_destroy(buffer);
    return cmr_error_context(status, "%s", what);
  }
  *out = buffer;
  return CMR_SUCCESS;
}

cmr_status cmr_device_buffer_create_copy(const void *source, size_t size, cmr_stream stream, cmr_resource_ref mr,
                                         cmr_device_buffer **out) {
  return cmr_buffer_create_copy(source, size, CMR_DEFAULT_ALIGNMENT, stream, mr, "cmr_device_buffer_create_copy", out);
}

cmr_status cmr_device_buffer_create_copy_aligned(const void *source, size_t size, size_t alignment, cmr_stream stream,
                                                 cmr_resource_ref mr, cmr_device_buffer **out) {
  return cmr_buffer_create_copy(source, size, alignment, stream, mr, "cmr_device_buffer_create_copy_aligned", out);
}

cmr_status cmr_device_buffer_destroy(cmr_device_buffer *handle) {
  static const char what[] = "cmr_device_buffer_destroy";
  if (handle == NULL || cmr_object_forget_parents(handle)) {
    return CMR_SUCCESS;
  }
  cmr_buffer *buffer;
  /* Of two destroys racing, the one that ends the buffer frees it. */
  cmr_status status = cmr_object_end(handle, &cmr_buffer_type, what, (cmr_object **)&buffer);
  if (status != CMR_SUCCESS) {
    return status;
  }
  /* Freed here rather than in finalize so that a failure is reported. */
  cmr_call_begin();
  status = cmr_buffer_free_memory(buffer);
  cmr_object_finish(handle);
  cmr_call_end();
  return status == CMR_SUCCESS ? status : cmr_error_context(status, "%s", what);
}

/* ---- size and capacity ------------------------------------------------------------- */

/* Grows the buffer's capacity to at least `bytes` on `stream` (which then
 * becomes its stream), and its size to `bytes` when `sized`. */
static cmr_status cmr_buffer_grow(cmr_device_buffer *handle, const char *what, size_t bytes, bool sized,
                                  cmr_stream stream) {
  cmr_buffer *buffer;
  cmr_status status = cmr_buffer_resolve(handle, what, &buffer);
  if (status != CMR_SUCCESS) {
    return status;
  }
  cmr_call_begin(); /* the buffer stays while its resource is called */
  if (bytes > buffer->capacity) status = cmr_buffer_reallocate(buffer, bytes, stream);
  if (status == CMR_SUCCESS) {
    if (sized) buffer->size = bytes;
    buffer->stream = stream;
  }
  cmr_call_end();
  return status == CMR_SUCCESS ? status : cmr_error_context(status, "%s(%zu bytes)", what, bytes);
}

cmr_status cmr_device_buffer_resize(cmr_device_buffer *handle, size_t new_size, cmr_stream stream) {
  return cmr_buffer_grow(handle, "cmr_device_buffer_resize", new_size, true, stream);
}

cmr_status cmr_device_buffer_reserve(cmr_device_buffer *handle, size_t new_capacity, cmr_stream stream) {
  return cmr_buffer_grow(handle, "cmr_device_buffer_reserve", new_capacity, false, stream);
}

cmr_status cmr_device_buffer_shrink_to_fit(cmr_device_buffer *handle, cmr_stream stream) {
  static const char what[] = "cmr_device_buffer_shrink_to_fit";
  cmr_buffer *buffer;
  cmr_status status = cmr_buffer_resolve(handle, what, &buffer);
  if (status != CMR_SUCCESS) {
    return status;
  }
  size_t size = buffer->size;
  cmr_call_begin(); /* the buffer stays while its resource is called */
  if (size != buffer->capacity) status = cmr_buffer_reallocate(buffer, size, stream);
  if (status == CMR_SUCCESS) buffer->stream = stream;
  cmr_call_end();
  return status == CMR_SUCCESS ? status : cmr_error_context(status, "%s(to %zu bytes)", what, size);
}

cmr_status cmr_device_buffer_set_stream(cmr_device_buffer *handle, cmr_stream stream) {
  cmr_buffer *buffer;
  cmr_status status = cmr_buffer_resolve(handle, "cmr_device_buffer_set_stream", &buffer);
  if (status == CMR_SUCCESS) {
    buffer->stream = stream;
  }
  return status;
}

/* ---- accessors ---------------------------------------------------------------------- */

/* Checks an accessor's buffer and out-parameter. */
static cmr_status cmr_buffer_check_get(const cmr_device_buffer *handle, const void *out, const char *what,
                                       cmr_buffer **buffer) {
  *buffer = NULL;
  if (out == NULL) {
    return cmr_error(CMR_ERROR_NULL_POINTER, "%s: out is NULL", what);
  }
  return cmr_buffer_resolve(handle, what, buffer);
}

/* Defines the getter cmr_device_buffer_<name> of the buffer's `field`
 * (`none` in *out when the handle is refused). */
#define CMR_BUFFER_GETTER(name, type, field, none)                                              \
  cmr_status cmr_device_buffer_##name(const cmr_device_buffer *handle, type *out) {             \
    cmr_buffer *buffer;                                                                         \
    cmr_status status = cmr_buffer_check_get(handle, out, "cmr_device_buffer_" #name, &buffer); \
    if (out != NULL) *out = status == CMR_SUCCESS ? buffer->field : (none);                     \
    return status;                                                                              \
  }

CMR_BUFFER_GETTER(data, void *, data, NULL)
CMR_BUFFER_GETTER(size, size_t, size, 0)
CMR_BUFFER_GETTER(capacity, size_t, capacity, 0)
CMR_BUFFER_GETTER(alignment, size_t, alignment, 0)
CMR_BUFFER_GETTER(stream, cmr_stream, stream, CMR_DEFAULT_STREAM)
CMR_BUFFER_GETTER(resource, cmr_resource_ref, mr, (cmr_resource_ref){0})

/* ---- copies --------------------------------------------------------------------------- */

/* Checks a copy of `bytes` to or from the start of the buffer. */
static cmr_status cmr_buffer_check_copy(const cmr_device_buffer *handle, const void *other, const char *other_name,
                                        size_t bytes, const char *what, cmr_buffer **out) {
  cmr_buffer *buffer;
  cmr_status status = cmr_buffer_resolve(handle, what, &buffer);
  *out = buffer;
  if (status != CMR_SUCCESS) {
    return status;
  }
  if (bytes > buffer->size) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: %zu bytes exceed the buffer's size of %zu", what, bytes,
                     buffer->size);
  }
  if (other == NULL && bytes > 0) {
    return cmr_error(CMR_ERROR_NULL_POINTER, "%s: %s is NULL for %zu bytes", what, other_name, bytes);
  }
  return CMR_SUCCESS;
}

/* Copies `bytes` between the start of the buffer and the caller's `host`
 * memory: to it (waiting for the copy) when `to_host`, else from it. */
static cmr_status cmr_buffer_copy_host(const cmr_device_buffer *handle, void *host, size_t bytes, bool to_host,
                                       const char *what) {
  const char *host_name = to_host ? "destination" : "source";
  cmr_buffer *buffer;
  cmr_status status = cmr_buffer_check_copy(handle, host, host_name, bytes, what, &buffer);
  if (status == CMR_SUCCESS) status = cmr_check_foreign(host, bytes, host_name, what);
  if (status != CMR_SUCCESS || bytes == 0) {
    return status;
  }
  status = to_host ? cmr_buffer_copy(buffer, host, buffer->data, bytes, true)
                   : cmr_buffer_copy(buffer, buffer->data, host, bytes, false);
  return status == CMR_SUCCESS ? status : cmr_error_context(status, "%s", what);
}

cmr_status cmr_device_buffer_copy_to_host(const cmr_device_buffer *handle, void *destination, size_t bytes) {
  return cmr_buffer_copy_host(handle, destination, bytes, true, "cmr_device_buffer_copy_to_host");
}

cmr_status cmr_device_buffer_copy_from(cmr_device_buffer *handle, const void *source, size_t bytes) {
  /* Only read: cmr_buffer_copy takes the source as const. */
  return cmr_buffer_copy_host(handle, (void *)source, bytes, false, "cmr_device_buffer_copy_from");
}

cmr_status cmr_memcpy(void *destination, const void *source, size_t bytes, cmr_stream stream) {
  if (bytes == 0) {
    return CMR_SUCCESS;
  }
  if (destination == NULL || source == NULL) {
    return cmr_error(CMR_ERROR_NULL_POINTER, "cmr_memcpy: %s is NULL for %zu bytes",
                     destination == NULL ? "destination" : "source", bytes);
  }
  cmr_status status = cmr_check_foreign(destination, bytes, "destination", "cmr_memcpy");
  if (status == CMR_SUCCESS) status = cmr_check_foreign(source, bytes, "source", "cmr_memcpy");
  if (status != CMR_SUCCESS) return status;
  status = cmr_copy_memory(destination, source, bytes, stream);
  return status == CMR_SUCCESS ? status : cmr_error_context(status, "cmr_memcpy");
}

/* ---- prefetching ---------------------------------------------------------------------- */

cmr_status cmr_device_buffer_prefetch(const cmr_device_buffer *handle, int device, cmr_stream stream) {
  static const char what[] = "cmr_device_buffer_prefetch";
  cmr_buffer *buffer;
  cmr_status status = cmr_buffer_resolve(handle, what, &buffer);
  int count = 0;
  if (status == CMR_SUCCESS) status = cmr_backend_device_count(&count);
  if (status == CMR_SUCCESS && device < 0) status = cmr_backend_get_device(&device);
  if (status != CMR_SUCCESS) return cmr_error_context(status, "%s", what);
  if (device >= count) {
    return cmr_error(CMR_ERROR_UNKNOWN_DEVICE, "%s: device %d is not one of the %d devices", what, device, count);
  }
  bool managed = false;
  if (buffer->size > 0) status = cmr_backend_pointer_is_managed(buffer->data, &managed);
  if (status == CMR_SUCCESS && managed) status = cmr_backend_prefetch(buffer->data, buffer->size, device, stream);
  return status == CMR_SUCCESS ? status : cmr_error_context(status, "%s", what);
}
