# cython: language_level=3
# A Cython extension as cuDF writes them: cimports cmr.libcmr and allocates without Python calls.
from libc.stdint cimport uintptr_t
from cmr.libcmr.core cimport (CMR_DEFAULT_STREAM, CMR_SUCCESS, cmr_acquire_current_device_resource_ref, cmr_allocate,
                              cmr_deallocate, cmr_last_error_message, cmr_ref_release, cmr_ref_type_name,
                              cmr_resource_ref, cmr_status, resource_ref_of)
from cmr.libcmr.device_buffer cimport (cmr_device_buffer, cmr_device_buffer_alignment,
                                      cmr_device_buffer_create_aligned, cmr_device_buffer_data,
                                      cmr_device_buffer_destroy, cmr_device_buffer_size, device_buffer_of)


def allocate_and_free(mr, size_t nbytes):
    cdef cmr_resource_ref ref = resource_ref_of(mr)
    cdef void *ptr = NULL
    cdef cmr_status status
    with nogil:
        status = cmr_allocate(ref, nbytes, CMR_DEFAULT_STREAM, &ptr)
    if status != CMR_SUCCESS:
        raise MemoryError(cmr_last_error_message().decode())
    with nogil:
        status = cmr_deallocate(ref, ptr, nbytes, CMR_DEFAULT_STREAM)
    return <uintptr_t>ptr


def buffer_size(buffer):
    cdef size_t size = 0
    if cmr_device_buffer_size(device_buffer_of(buffer), &size) != CMR_SUCCESS:
        raise ValueError(cmr_last_error_message().decode())
    return size


def aligned_buffer(mr, size_t nbytes, size_t alignment):
    """(address, alignment) of a buffer made with an explicit alignment, destroyed again."""
    cdef cmr_resource_ref ref = resource_ref_of(mr)
    cdef cmr_device_buffer *buffer = NULL
    cdef void *data = NULL
    cdef size_t kept = 0
    if cmr_device_buffer_create_aligned(nbytes, alignment, CMR_DEFAULT_STREAM, ref, &buffer) != CMR_SUCCESS:
        raise ValueError(cmr_last_error_message().decode())
    cmr_device_buffer_data(buffer, &data)
    cmr_device_buffer_alignment(buffer, &kept)
    cmr_device_buffer_destroy(buffer)
    return <uintptr_t>data, kept


def current_type_name():
    cdef cmr_resource_ref ref
    cdef const char *name = NULL
    if cmr_acquire_current_device_resource_ref(&ref) != CMR_SUCCESS:
        raise RuntimeError(cmr_last_error_message().decode())
    cmr_ref_type_name(ref, &name)
    text = name.decode()
    cmr_ref_release(ref)
    return text
