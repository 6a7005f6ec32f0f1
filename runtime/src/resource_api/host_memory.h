/* SPDX-License-Identifier: Apache-2.0 */
/* Aligned host memory for the leaves that hand it out (system memory and
 * what is built on it): posix_memalign with cmr's statuses, and a free that
 * first waits for the work queued on the stream, which may still read it. */
#ifndef CMR_HOST_MEMORY_H
#define CMR_HOST_MEMORY_H

#include "internal.h"

/* `bytes` at `alignment` (a power of two >= sizeof(void *)); out of memory
 * is CMR_ERROR_OUT_OF_MEMORY, with "<owner>: ..." in the message. */
cmr_status cmr_host_memory_allocate(const char *owner, size_t bytes, size_t alignment, void **out);
/* Frees `ptr` once `stream`'s work on `device` (-1: the current one) is
 * done. If the wait fails the memory is kept (safer than freeing it under
 * running work) and the failure returned. */
cmr_status cmr_host_memory_deallocate(const char *owner, void *ptr, int device, cmr_stream stream);

#endif /* CMR_HOST_MEMORY_H */
