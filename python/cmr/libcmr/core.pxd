# SPDX-License-Identifier: Apache-2.0
# Cython declarations of <cmr/core.h>: statuses, streams, refs, allocation
# through a ref, refcounts, properties and the per-device table. Every call
# returns a cmr_status; results come back through the last argument, and
# cmr_last_error_message() says what went wrong on this thread.

from libc.stdint cimport uintptr_t


cdef extern from "cmr/cmr.h" nogil:
    ctypedef bint bool

    ctypedef enum cmr_status:
        CMR_SUCCESS
        CMR_ERROR_INVALID_ARGUMENT
        CMR_ERROR_NULL_POINTER
        CMR_ERROR_INVALID_REF
        CMR_ERROR_DESTROYED_HANDLE
        CMR_ERROR_BAD_ALIGNMENT
        CMR_ERROR_UNSUPPORTED_ALIGNMENT
        CMR_ERROR_SIZE_OVERFLOW
        CMR_ERROR_OUT_OF_MEMORY
        CMR_ERROR_UNKNOWN_DEVICE
        CMR_ERROR_NO_DEVICE
        CMR_ERROR_CUDA
        CMR_ERROR_UNSUPPORTED
        CMR_ERROR_PROPERTY_MISSING
        CMR_ERROR_UNKNOWN_POINTER
        CMR_ERROR_INTERNAL
        CMR_ERROR_IO
        CMR_ERROR_REENTRANT_CALL
        CMR_ERROR_FORKED
        CMR_ERROR_STREAM_CAPTURE
        CMR_ERROR_IPC_SAME_PROCESS
        CMR_ERROR_IPC_GONE

    const char *cmr_status_string(cmr_status status)
    const char *cmr_last_error_message()
    void cmr_clear_last_error()

    # A cudaStream_t in the CUDA build; a host token in the host build.
    ctypedef void *cmr_stream
    cmr_stream CMR_DEFAULT_STREAM
    cmr_status cmr_stream_create(cmr_stream *out)
    cmr_status cmr_stream_destroy(cmr_stream stream)
    cmr_status cmr_stream_synchronize(cmr_stream stream)

    ctypedef struct cmr_resource_ops:
        pass

    # Non-owning, copied freely: RMM's device_async_resource_ref.
    ctypedef struct cmr_resource_ref:
        void *self
        const cmr_resource_ops *ops

    unsigned CMR_PROPERTY_DEVICE_ACCESSIBLE
    unsigned CMR_PROPERTY_HOST_ACCESSIBLE

    cmr_status cmr_allocate(cmr_resource_ref ref, size_t bytes, cmr_stream stream, void **out)
    cmr_status cmr_deallocate(cmr_resource_ref ref, void *ptr, size_t bytes, cmr_stream stream)
    cmr_status cmr_allocate_aligned(cmr_resource_ref ref, size_t bytes, size_t alignment, cmr_stream stream,
                                    void **out)
    cmr_status cmr_deallocate_aligned(cmr_resource_ref ref, void *ptr, size_t bytes, size_t alignment,
                                      cmr_stream stream)
    cmr_status cmr_allocate_sync(cmr_resource_ref ref, size_t bytes, size_t alignment, void **out)
    cmr_status cmr_deallocate_sync(cmr_resource_ref ref, void *ptr, size_t bytes, size_t alignment)
    cmr_status cmr_ref_equal(cmr_resource_ref a, cmr_resource_ref b, bool *out)
    cmr_status cmr_ref_properties(cmr_resource_ref ref, unsigned *out)
    cmr_status cmr_ref_require_properties(cmr_resource_ref ref, unsigned required)
    cmr_status cmr_ref_type_name(cmr_resource_ref ref, const char **out)
    cmr_status cmr_ref_retain(cmr_resource_ref ref)
    cmr_status cmr_ref_release(cmr_resource_ref ref)
    cmr_status cmr_ref_validate(cmr_resource_ref ref)

    cmr_status cmr_acquire_per_device_resource_ref(int device, cmr_resource_ref *out)
    cmr_status cmr_acquire_current_device_resource_ref(cmr_resource_ref *out)
    cmr_status cmr_get_per_device_resource_ref(int device, cmr_resource_ref *out)
    cmr_status cmr_set_per_device_resource_ref(int device, cmr_resource_ref ref)
    cmr_status cmr_reset_per_device_resource_ref(int device)
    size_t cmr_per_device_resource_changes()
    cmr_status cmr_get_current_device_resource_ref(cmr_resource_ref *out)
    cmr_status cmr_set_current_device_resource_ref(cmr_resource_ref ref)
    cmr_status cmr_reset_current_device_resource_ref()

    cmr_status cmr_device_count(int *out)
    cmr_status cmr_current_device(int *out)
    cmr_status cmr_set_current_device(int device)
    cmr_status cmr_device_memory_info(size_t *free_bytes, size_t *total_bytes)
    bool cmr_built_with_cuda()
    const char *cmr_version()


# The cmr_resource_ref of a cmr.mr resource (any DeviceMemoryResource),
# through its c_ref property; valid while that object lives (hold it).
cdef inline cmr_resource_ref resource_ref_of(object mr) except *:
    return (<cmr_resource_ref *><uintptr_t>mr.c_ref)[0]


# The cmr_stream of a stream argument (a cmr.Stream, or any int handle).
cdef inline cmr_stream stream_of(object stream) except? NULL:
    return <cmr_stream><uintptr_t>int(stream)
