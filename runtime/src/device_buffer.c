/* cmr_device_buffer: RMM's device_buffer over a resource ref. The buffer
 * holds a share of its resource; every allocation, copy and free is ordered
 * on the buffer's stream. */
#include <stdlib.h>

#include "backend.h"
#include "internal.h"

struct cmr_device_buffer {
  cmr_object object; /* first: a destroyed buffer is reported as such */
  cmr_resource_ref mr;
  cmr_stream stream;
  void *data; /* NULL when the capacity is 0 */
  size_t size;
  size_t capacity;
};

static cmr_status cmr_buffer_free_memory(cmr_device_buffer *buffer) {
  cmr_status status = cmr_deallocate(buffer->mr, buffer->data, buffer->capacity, buffer->stream);
  buffer->data = NULL;
  buffer->size = 0;
  buffer->capacity = 0;
  return status;
}

static void cmr_buffer_finalize(cmr_object *object) {
  cmr_device_buffer *buffer = (cmr_device_buffer *)object;
  cmr_buffer_free_memory(buffer); /* a no-op after destroy freed it */
  cmr_ref_drop(buffer->mr);
}

/* Moves the contents into a new allocation of `capacity` bytes on `stream`
 * (which becomes the buffer's), keeping min(size, capacity) bytes. On failure
 * the buffer is as it was. */
static cmr_status cmr_buffer_reallocate(cmr_device_buffer *buffer, size_t capacity,
                                        cmr_stream stream) {
  void *data = NULL;
  cmr_status status = cmr_allocate(buffer->mr, capacity, stream, &data);
  if (status != CMR_SUCCESS) {
    return status;
  }
  size_t kept = buffer->size < capacity ? buffer->size : capacity;
  if (kept > 0) {
    status = cmr_backend_copy(data, buffer->data, kept, stream);
    if (status != CMR_SUCCESS) {
      cmr_deallocate(buffer->mr, data, capacity, stream);
      return status;
    }
  }
  /* The old memory is freed in order after the copy, on the same stream. */
  status = cmr_deallocate(buffer->mr, buffer->data, buffer->capacity, stream);
  buffer->data = data;
  buffer->size = kept;
  buffer->capacity = capacity;
  buffer->stream = stream;
  return status;
}

static cmr_status cmr_buffer_check(const cmr_device_buffer *buffer, const char *what) {
  return cmr_object_check(buffer == NULL ? NULL : &buffer->object, what);
}

/* ---- lifetime ------------------------------------------------------------------ */

cmr_status cmr_device_buffer_create(size_t size, cmr_stream stream, cmr_resource_ref mr,
                                    cmr_device_buffer **out) {
  static const char what[] = "cmr_device_buffer_create";
  if (out == NULL) {
    return cmr_error(CMR_ERROR_NULL_POINTER, "%s: out is NULL", what);
  }
  *out = NULL;
  cmr_status status = cmr_ref_check(mr, what);
  if (status != CMR_SUCCESS) {
    return status;
  }
  cmr_device_buffer *buffer = calloc(1, sizeof *buffer);
  if (buffer == NULL) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: no host memory for the buffer object", what);
  }
  status = cmr_allocate(mr, size, stream, &buffer->data);
  if (status != CMR_SUCCESS) {
    free(buffer);
    return cmr_error_context(status, "%s(%zu bytes)", what, size);
  }
  cmr_ref_hold(mr);
  buffer->mr = mr;
  buffer->stream = stream;
  buffer->size = size;
  buffer->capacity = size;
  cmr_object_init(&buffer->object, cmr_buffer_finalize);
  *out = buffer;
  return CMR_SUCCESS;
}

cmr_status cmr_device_buffer_create_copy(const void *source, size_t size, cmr_stream stream,
                                         cmr_resource_ref mr, cmr_device_buffer **out) {
  static const char what[] = "cmr_device_buffer_create_copy";
  if (out == NULL) {
    return cmr_error(CMR_ERROR_NULL_POINTER, "%s: out is NULL", what);
  }
  *out = NULL;
  if (source == NULL && size > 0) {
    return cmr_error(CMR_ERROR_NULL_POINTER, "%s: source is NULL for %zu bytes", what, size);
  }
  cmr_device_buffer *buffer = NULL;
  cmr_status status = cmr_device_buffer_create(size, stream, mr, &buffer);
  if (status != CMR_SUCCESS) {
    return status;
  }
  status = cmr_device_buffer_copy_from(buffer, source, size);
  if (status != CMR_SUCCESS) {
    cmr_object_release(&buffer->object);
    return cmr_error_context(status, "%s", what);
  }
  *out = buffer;
  return CMR_SUCCESS;
}

cmr_status cmr_device_buffer_destroy(cmr_device_buffer *buffer) {
  static const char what[] = "cmr_device_buffer_destroy";
  cmr_status status = cmr_buffer_check(buffer, what);
  if (status != CMR_SUCCESS) {
    return status;
  }
  /* Freed here rather than in finalize so that a failure is reported. */
  status = cmr_buffer_free_memory(buffer);
  cmr_object_release(&buffer->object);
  return status == CMR_SUCCESS ? status : cmr_error_context(status, "%s", what);
}

/* ---- size and capacity ------------------------------------------------------------- */

cmr_status cmr_device_buffer_resize(cmr_device_buffer *buffer, size_t new_size, cmr_stream stream) {
  static const char what[] = "cmr_device_buffer_resize";
  cmr_status status = cmr_buffer_check(buffer, what);
  if (status != CMR_SUCCESS) {
    return status;
  }
  if (new_size > buffer->capacity) {
    status = cmr_buffer_reallocate(buffer, new_size, stream);
    if (status != CMR_SUCCESS) {
      return cmr_error_context(status, "%s(%zu bytes)", what, new_size);
    }
  }
  buffer->size = new_size;
  buffer->stream = stream;
  return CMR_SUCCESS;
}

cmr_status cmr_device_buffer_reserve(cmr_device_buffer *buffer, size_t new_capacity,
                                     cmr_stream stream) {
  static const char what[] = "cmr_device_buffer_reserve";
  cmr_status status = cmr_buffer_check(buffer, what);
  if (status != CMR_SUCCESS) {
    return status;
  }
  if (new_capacity > buffer->capacity) {
    status = cmr_buffer_reallocate(buffer, new_capacity, stream);
    if (status != CMR_SUCCESS) {
      return cmr_error_context(status, "%s(%zu bytes)", what, new_capacity);
    }
  }
  buffer->stream = stream;
  return CMR_SUCCESS;
}

cmr_status cmr_device_buffer_shrink_to_fit(cmr_device_buffer *buffer, cmr_stream stream) {
  static const char what[] = "cmr_device_buffer_shrink_to_fit";
  cmr_status status = cmr_buffer_check(buffer, what);
  if (status != CMR_SUCCESS) {
    return status;
  }
  if (buffer->size != buffer->capacity) {
    status = cmr_buffer_reallocate(buffer, buffer->size, stream);
    if (status != CMR_SUCCESS) {
      return cmr_error_context(status, "%s(to %zu bytes)", what, buffer->size);
    }
  }
  buffer->stream = stream;
  return CMR_SUCCESS;
}

cmr_status cmr_device_buffer_set_stream(cmr_device_buffer *buffer, cmr_stream stream) {
  cmr_status status = cmr_buffer_check(buffer, "cmr_device_buffer_set_stream");
  if (status == CMR_SUCCESS) {
    buffer->stream = stream;
  }
  return status;
}

/* ---- accessors ---------------------------------------------------------------------- */

/* Checks an accessor's buffer and out-parameter. */
static cmr_status cmr_buffer_check_get(const cmr_device_buffer *buffer, const void *out,
                                       const char *what) {
  if (out == NULL) {
    return cmr_error(CMR_ERROR_NULL_POINTER, "%s: out is NULL", what);
  }
  return cmr_buffer_check(buffer, what);
}

cmr_status cmr_device_buffer_data(const cmr_device_buffer *buffer, void **out) {
  cmr_status status = cmr_buffer_check_get(buffer, out, "cmr_device_buffer_data");
  if (out != NULL) {
    *out = status == CMR_SUCCESS ? buffer->data : NULL;
  }
  return status;
}

cmr_status cmr_device_buffer_size(const cmr_device_buffer *buffer, size_t *out) {
  cmr_status status = cmr_buffer_check_get(buffer, out, "cmr_device_buffer_size");
  if (out != NULL) {
    *out = status == CMR_SUCCESS ? buffer->size : 0;
  }
  return status;
}

cmr_status cmr_device_buffer_capacity(const cmr_device_buffer *buffer, size_t *out) {
  cmr_status status = cmr_buffer_check_get(buffer, out, "cmr_device_buffer_capacity");
  if (out != NULL) {
    *out = status == CMR_SUCCESS ? buffer->capacity : 0;
  }
  return status;
}

cmr_status cmr_device_buffer_stream(const cmr_device_buffer *buffer, cmr_stream *out) {
  cmr_status status = cmr_buffer_check_get(buffer, out, "cmr_device_buffer_stream");
  if (out != NULL) {
    *out = status == CMR_SUCCESS ? buffer->stream : CMR_DEFAULT_STREAM;
  }
  return status;
}

cmr_status cmr_device_buffer_resource(const cmr_device_buffer *buffer, cmr_resource_ref *out) {
  cmr_status status = cmr_buffer_check_get(buffer, out, "cmr_device_buffer_resource");
  if (out != NULL) {
    *out = status == CMR_SUCCESS ? buffer->mr : (cmr_resource_ref){0};
  }
  return status;
}

/* ---- copies --------------------------------------------------------------------------- */

/* Checks a copy of `bytes` to or from the start of the buffer. */
static cmr_status cmr_buffer_check_copy(const cmr_device_buffer *buffer, const void *other,
                                        const char *other_name, size_t bytes, const char *what) {
  cmr_status status = cmr_buffer_check(buffer, what);
  if (status != CMR_SUCCESS) {
    return status;
  }
  if (bytes > buffer->size) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: %zu bytes exceed the buffer's size of %zu",
                     what, bytes, buffer->size);
  }
  if (other == NULL && bytes > 0) {
    return cmr_error(CMR_ERROR_NULL_POINTER, "%s: %s is NULL for %zu bytes", what, other_name,
                     bytes);
  }
  return CMR_SUCCESS;
}

cmr_status cmr_device_buffer_copy_to_host(const cmr_device_buffer *buffer, void *destination,
                                          size_t bytes) {
  static const char what[] = "cmr_device_buffer_copy_to_host";
  cmr_status status = cmr_buffer_check_copy(buffer, destination, "destination", bytes, what);
  if (status != CMR_SUCCESS || bytes == 0) {
    return status;
  }
  status = cmr_backend_copy(destination, buffer->data, bytes, buffer->stream);
  if (status == CMR_SUCCESS) {
    status = cmr_backend_stream_synchronize(buffer->stream);
  }
  return status == CMR_SUCCESS ? status : cmr_error_context(status, "%s", what);
}

cmr_status cmr_device_buffer_copy_from(cmr_device_buffer *buffer, const void *source, size_t bytes) {
  static const char what[] = "cmr_device_buffer_copy_from";
  cmr_status status = cmr_buffer_check_copy(buffer, source, "source", bytes, what);
  if (status != CMR_SUCCESS || bytes == 0) {
    return status;
  }
  status = cmr_backend_copy(buffer->data, source, bytes, buffer->stream);
  return status == CMR_SUCCESS ? status : cmr_error_context(status, "%s", what);
}

/* ---- prefetching ---------------------------------------------------------------------- */

cmr_status cmr_device_buffer_prefetch(const cmr_device_buffer *buffer, int device, cmr_stream stream) {
  static const char what[] = "cmr_device_buffer_prefetch";
  cmr_status status = cmr_buffer_check(buffer, what);
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
