# SPDX-License-Identifier: Apache-2.0
# Cython declarations of <cmr/device_buffer.h>: RMM's device_buffer in C.

from libc.stdint cimport uintptr_t

from cmr.libcmr.core cimport cmr_resource_ref, cmr_status, cmr_stream


cdef extern from "cmr/cmr.h" nogil:
    ctypedef struct cmr_device_buffer:
        pass

    cmr_status cmr_device_buffer_create(size_t size, cmr_stream stream, cmr_resource_ref mr,
                                        cmr_device_buffer **out)
    cmr_status cmr_device_buffer_create_copy(const void *source, size_t size, cmr_stream stream,
                                             cmr_resource_ref mr, cmr_device_buffer **out)
    cmr_status cmr_device_buffer_create_aligned(size_t size, size_t alignment, cmr_stream stream,
                                                cmr_resource_ref mr, cmr_device_buffer **out)
    cmr_status cmr_device_buffer_create_copy_aligned(const void *source, size_t size, size_t alignment,
                                                     cmr_stream stream, cmr_resource_ref mr, cmr_device_buffer **out)
    cmr_status cmr_device_buffer_destroy(cmr_device_buffer *buffer)
    cmr_status cmr_device_buffer_resize(cmr_device_buffer *buffer, size_t new_size, cmr_stream stream)
    cmr_status cmr_device_buffer_reserve(cmr_device_buffer *buffer, size_t new_capacity, cmr_stream stream)
    cmr_status cmr_device_buffer_shrink_to_fit(cmr_device_buffer *buffer, cmr_stream stream)
    cmr_status cmr_device_buffer_set_stream(cmr_device_buffer *buffer, cmr_stream stream)
    cmr_status cmr_device_buffer_data(const cmr_device_buffer *buffer, void **out)
    cmr_status cmr_device_buffer_size(const cmr_device_buffer *buffer, size_t *out)
    cmr_status cmr_device_buffer_capacity(const cmr_device_buffer *buffer, size_t *out)
    cmr_status cmr_device_buffer_alignment(const cmr_device_buffer *buffer, size_t *out)
    cmr_status cmr_device_buffer_stream(const cmr_device_buffer *buffer, cmr_stream *out)
    cmr_status cmr_device_buffer_resource(const cmr_device_buffer *buffer, cmr_resource_ref *out)
    cmr_status cmr_device_buffer_copy_to_host(const cmr_device_buffer *buffer, void *destination, size_t bytes)
    cmr_status cmr_device_buffer_copy_from(cmr_device_buffer *buffer, const void *source, size_t bytes)
    cmr_status cmr_memcpy(void *destination, const void *source, size_t bytes, cmr_stream stream)
    cmr_status cmr_device_buffer_prefetch(const cmr_device_buffer *buffer, int device, cmr_stream stream)


# The cmr_device_buffer of a cmr.DeviceBuffer, through its c_handle
# property; valid while that object lives (hold it). Do not destroy it: the
# DeviceBuffer does.
cdef inline cmr_device_buffer *device_buffer_of(object buffer) except NULL:
    return <cmr_device_buffer *><uintptr_t>buffer.c_handle
