/* SPDX-License-Identifier: Apache-2.0 */
/* cmr_device_buffer: an untyped, resizable allocation owned by one resource
 * and ordered on one stream (RMM's device_buffer). The buffer retains its
 * resource, so the resource outlives it whatever the caller destroys first,
 * and frees its memory on its stream. */
#ifndef CMR_DEVICE_BUFFER_H
#define CMR_DEVICE_BUFFER_H

#include <cmr/core.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cmr_device_buffer cmr_device_buffer;

/* A buffer of `size` uninitialised bytes from `mr`, ordered on `stream`,
 * aligned to CMR_DEFAULT_ALIGNMENT (256). */
CMR_API cmr_status cmr_device_buffer_create(size_t size, cmr_stream stream, cmr_resource_ref mr,
                                            cmr_device_buffer **out);
/* The same aligned to `alignment` (RMM's device_buffer with an explicit
 * alignment): a power of two (else CMR_ERROR_BAD_ALIGNMENT), which the
 * resource must honour (else CMR_ERROR_UNSUPPORTED_ALIGNMENT, never less
 * aligned memory); one below CMR_DEFAULT_ALIGNMENT gets the default. Every
 * later allocation of the buffer (resize, reserve, shrink_to_fit) asks for
 * the same alignment. */
CMR_API cmr_status cmr_device_buffer_create_aligned(size_t size, size_t alignment, cmr_stream stream,
                                                    cmr_resource_ref mr, cmr_device_buffer **out);
/* A buffer holding a copy of `size` bytes at `source`, which may be host or
 * device memory (checked as cmr_device_buffer_copy_from checks it). The
 * copy is ordered on `stream`. */
CMR_API cmr_status cmr_device_buffer_create_copy(const void *source, size_t size, cmr_stream stream,
                                                 cmr_resource_ref mr, cmr_device_buffer **out);
/* The same with an explicit alignment, as cmr_device_buffer_create_aligned. */
CMR_API cmr_status cmr_device_buffer_create_copy_aligned(const void *source, size_t size, size_t alignment,
                                                         cmr_stream stream, cmr_resource_ref mr,
                                                         cmr_device_buffer **out);
/* Frees the memory on the buffer's stream and drops its share of the resource. */
CMR_API cmr_status cmr_device_buffer_destroy(cmr_device_buffer *buffer);

/* Change the size to `new_size`, keeping the first min(size, new_size) bytes.
 * Reallocates only when new_size exceeds the capacity. */
CMR_API cmr_status cmr_device_buffer_resize(cmr_device_buffer *buffer, size_t new_size, cmr_stream stream);
/* Make the capacity at least `new_capacity`, keeping the contents. */
CMR_API cmr_status cmr_device_buffer_reserve(cmr_device_buffer *buffer, size_t new_capacity, cmr_stream stream);
/* Make the capacity equal to the size, keeping the contents. */
CMR_API cmr_status cmr_device_buffer_shrink_to_fit(cmr_device_buffer *buffer, cmr_stream stream);
/* Order later work (and the final free) on `stream`. */
CMR_API cmr_status cmr_device_buffer_set_stream(cmr_device_buffer *buffer, cmr_stream stream);

CMR_API cmr_status cmr_device_buffer_data(const cmr_device_buffer *buffer, void **out);
CMR_API cmr_status cmr_device_buffer_size(const cmr_device_buffer *buffer, size_t *out);
CMR_API cmr_status cmr_device_buffer_capacity(const cmr_device_buffer *buffer, size_t *out);
/* The alignment the buffer's allocations ask for (at least CMR_DEFAULT_ALIGNMENT). */
CMR_API cmr_status cmr_device_buffer_alignment(const cmr_device_buffer *buffer, size_t *out);
CMR_API cmr_status cmr_device_buffer_stream(const cmr_device_buffer *buffer, cmr_stream *out);
CMR_API cmr_status cmr_device_buffer_resource(const cmr_device_buffer *buffer, cmr_resource_ref *out);

/* Addresses a caller gives the copies below (`destination` of
 * copy_to_host, `source` of copy_from and create_copy, both of cmr_memcpy)
 * are checked before they are touched, where that is cheap: in the CUDA
 * build an address CUDA does not know (cudaPointerGetAttributes) must be
 * mapped host memory; in the host build every one must be (mincore). One
 * that is not is CMR_ERROR_INVALID_ARGUMENT. Not detected: a range that
 * runs past the end of a device allocation, and a mapped host page that
 * may not be read or written (a guard page): copying those is undefined.
 *
 * Copy `bytes` (at most the size) from the start of the buffer to host memory
 * at `destination`, and wait for the copy to finish. */
CMR_API cmr_status cmr_device_buffer_copy_to_host(const cmr_device_buffer *buffer, void *destination, size_t bytes);
/* Copy `bytes` (at most the size) from host or device memory at `source` to
 * the start of the buffer, ordered on the buffer's stream. */
CMR_API cmr_status cmr_device_buffer_copy_from(cmr_device_buffer *buffer, const void *source, size_t bytes);
/* Copies `bytes` from `source` to `destination`, host or device memory in
 * any direction, ordered on `stream`; it returns once the copy is ordered
 * (cmr_stream_synchronize(stream) waits for it). A NULL pointer with bytes
 * > 0 is CMR_ERROR_NULL_POINTER; memory of the `simulated` resource, which
 * has no bytes behind its addresses, is CMR_ERROR_INVALID_ARGUMENT (as is
 * every buffer copy or resize that would copy it). Buffers are not needed: this is RMM's
 * copy_ptr_to_host / copy_host_to_ptr / copy_device_to_ptr. */
CMR_API cmr_status cmr_memcpy(void *destination, const void *source, size_t bytes, cmr_stream stream);
/* Migrates the buffer's memory to `device` (a negative one: the current
 * device), ordered on `stream`, when it is managed memory; other memory
 * (and any memory in the host build) is where it stays and the call does
 * nothing, successfully. A device outside [0, count) is
 * CMR_ERROR_UNKNOWN_DEVICE. */
CMR_API cmr_status cmr_device_buffer_prefetch(const cmr_device_buffer *buffer, int device, cmr_stream stream);

#ifdef __cplusplus
}
#endif

#endif /* CMR_DEVICE_BUFFER_H */
