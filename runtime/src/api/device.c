/* SPDX-License-Identifier: Apache-2.0 */
/* Devices, streams and build facts: the public face of the backend. */
#include "backend.h"
#include "internal.h"
#include "live_streams.h"
#include "stream_ends.h"

#ifndef CMR_VERSION_STRING
#error "the build defines CMR_VERSION_STRING, e.g. -DCMR_VERSION_STRING=\"0.1.0\""
#endif

/* Names the public call in front of the backend's message. */
static cmr_status cmr_forward(cmr_status status, const char *what) {
  return status == CMR_SUCCESS ? status : cmr_error_context(status, "%s", what);
}

cmr_status cmr_device_count(int *out) {
  static const char what[] = "cmr_device_count";
  if (out == NULL) {
    return cmr_error(CMR_ERROR_NULL_POINTER, "%s: out is NULL", what);
  }
  *out = 0;
  return cmr_forward(cmr_backend_device_count(out), what);
}

cmr_status cmr_current_device(int *out) {
  static const char what[] = "cmr_current_device";
  if (out == NULL) {
    return cmr_error(CMR_ERROR_NULL_POINTER, "%s: out is NULL", what);
  }
  *out = 0;
  return cmr_forward(cmr_backend_get_device(out), what);
}

cmr_status cmr_set_current_device(int device) {
  static const char what[] = "cmr_set_current_device";
  int count = 0;
  cmr_status status = cmr_backend_device_count(&count);
  if (status != CMR_SUCCESS) {
    return cmr_forward(status, what);
  }
  if (device < 0 || device >= count) {
    return cmr_error(CMR_ERROR_UNKNOWN_DEVICE, "%s: device %d is not in [0, %d)", what, device, count);
  }
  return cmr_forward(cmr_backend_set_device(device), what);
}

cmr_status cmr_device_memory_info(size_t *free_bytes, size_t *total_bytes) {
  static const char what[] = "cmr_device_memory_info";
  if (free_bytes != NULL) {
    *free_bytes = 0;
  }
  if (total_bytes != NULL) {
    *total_bytes = 0;
  }
  if (free_bytes == NULL || total_bytes == NULL) {
    return cmr_error(CMR_ERROR_NULL_POINTER, "%s: %s is NULL", what, free_bytes == NULL ? "free_bytes" : "total_bytes");
  }
  return cmr_forward(cmr_backend_memory_info(free_bytes, total_bytes), what);
}

/* percent% of the free memory, rounded down to 256 bytes. */
static cmr_status cmr_share_of_free_memory(int percent, size_t *out, const char *what) {
  if (out == NULL) {
    return cmr_error(CMR_ERROR_NULL_POINTER, "%s: out is NULL", what);
  }
  *out = 0;
  if (percent < 0 || percent > 100) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: percent %d is not in [0, 100]", what, percent);
  }
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  cmr_status status = cmr_backend_memory_info(&free_bytes, &total_bytes);
  if (status != CMR_SUCCESS) {
    return cmr_forward(status, what);
  }
  /* free * percent / 100 without overflowing free * percent. */
  size_t share = free_bytes / 100 * (size_t)percent + free_bytes % 100 * (size_t)percent / 100;
  *out = share & ~(CMR_DEFAULT_ALIGNMENT - 1);
  return CMR_SUCCESS;
}

cmr_status cmr_percent_of_free_device_memory(int percent, size_t *out) {
  return cmr_share_of_free_memory(percent, out, "cmr_percent_of_free_device_memory");
}

cmr_status cmr_default_half_of_free_device_memory(size_t *out) {
  return cmr_share_of_free_memory(50, out, "cmr_default_half_of_free_device_memory");
}

bool cmr_built_with_cuda(void) { return CMR_WITH_CUDA != 0; }

const char *cmr_version(void) { return CMR_VERSION_STRING; }

/* ---- streams ---------------------------------------------------------------- */

cmr_status cmr_stream_flags_check(unsigned flags, const char *what) {
  if (flags == CMR_STREAM_FLAGS_SYNC_DEFAULT || flags == CMR_STREAM_FLAGS_NON_BLOCKING) return CMR_SUCCESS;
  return cmr_error(CMR_ERROR_INVALID_ARGUMENT,
                   "%s: flags %u are not CMR_STREAM_FLAGS_SYNC_DEFAULT (0) or CMR_STREAM_FLAGS_NON_BLOCKING (1)", what,
                   flags);
}

cmr_status cmr_stream_make(unsigned flags, cmr_stream *out) {
  cmr_stream stream = CMR_DEFAULT_STREAM;
  cmr_status status = cmr_backend_stream_create(flags, &stream);
  if (status == CMR_SUCCESS) {
    status = cmr_live_streams_add(stream);
    if (status != CMR_SUCCESS) (void)cmr_backend_stream_destroy(stream);
  }
  if (status == CMR_SUCCESS) *out = stream;
  return status;
}

/* Only a live stream of cmr_stream_make is destroyed: taking it out of the
 * live set first means that of two threads destroying it one does. */
cmr_status cmr_stream_end(cmr_stream stream, const char *what) {
  if (!cmr_live_streams_remove(stream)) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT,
                     "%s: stream %p is not a live stream of cmr_stream_create (destroyed already, or made "
                     "elsewhere: destroy such a stream where it was made)",
                     what, (void *)stream);
  }
  cmr_stream_ends_stream(stream); /* the resources' lists of it, while it exists */
  return cmr_forward(cmr_backend_stream_destroy(stream), what);
}

cmr_status cmr_stream_create_with_flags(unsigned flags, cmr_stream *out) {
  static const char what[] = "cmr_stream_create_with_flags";
  if (out == NULL) {
    return cmr_error(CMR_ERROR_NULL_POINTER, "%s: out is NULL", what);
  }
  *out = CMR_DEFAULT_STREAM;
  cmr_status status = cmr_stream_flags_check(flags, what);
  return status == CMR_SUCCESS ? cmr_forward(cmr_stream_make(flags, out), what) : status;
}

cmr_status cmr_stream_create(cmr_stream *out) {
  static const char what[] = "cmr_stream_create";
  if (out == NULL) {
    return cmr_error(CMR_ERROR_NULL_POINTER, "%s: out is NULL", what);
  }
  *out = CMR_DEFAULT_STREAM;
  return cmr_forward(cmr_stream_make(CMR_STREAM_FLAGS_SYNC_DEFAULT, out), what);
}

cmr_status cmr_stream_destroy(cmr_stream stream) {
  static const char what[] = "cmr_stream_destroy";
  if (stream == CMR_DEFAULT_STREAM) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: the default stream cannot be destroyed", what);
  }
  return cmr_stream_end(stream, what);
}

cmr_status cmr_stream_synchronize(cmr_stream stream) {
  static const char what[] = "cmr_stream_synchronize";
  if (cmr_backend_stream_destroyed(stream)) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: stream %p was destroyed", what, (void *)stream);
  }
  return cmr_forward(cmr_backend_stream_synchronize(stream), what);
}
