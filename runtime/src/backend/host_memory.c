/* SPDX-License-Identifier: Apache-2.0 */
/* Aligned host memory (host_memory.h). */
#include <errno.h>
#include <stdlib.h>

#include "backend.h"
#include "host_memory.h"

cmr_status cmr_host_memory_allocate(const char *owner, size_t bytes, size_t alignment, void **out) {
  int error = posix_memalign(out, alignment, bytes);
  if (error == 0) return CMR_SUCCESS;
  *out = NULL;
  if (error == ENOMEM) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: posix_memalign(%zu bytes, alignment %zu): out of memory", owner,
                     bytes, alignment);
  }
  return cmr_error(CMR_ERROR_INTERNAL, "%s: posix_memalign(%zu bytes, alignment %zu) failed with errno %d", owner,
                   bytes, alignment, error);
}

cmr_status cmr_host_memory_deallocate(const char *owner, void *ptr, int device, cmr_stream stream) {
  cmr_status status = cmr_backend_stream_synchronize_on(device, stream);
  if (status != CMR_SUCCESS) return cmr_error_context(status, "%s: deallocate", owner);
  free(ptr);
  return CMR_SUCCESS;
}
