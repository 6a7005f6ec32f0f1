/* SPDX-License-Identifier: Apache-2.0 */
/* The backend of the CUDA build, over the CUDA runtime. Every failure goes
 * through cmr_cuda_failure, which maps the error and names the call; every
 * call that may wait (allocation and free, synchronization, a copy that may
 * be from pageable memory) is preceded by cmr_before_blocking (lock.h). */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <cuda.h> /* the driver's functions, reached through cudaGetDriverEntryPointByVersion */
#include <cuda_runtime_api.h>

#include "backend.h"
#include "driver_entry.h"
#include "host_range.h"
#include "lock.h"
#include "stream_ids.h"

#if !CMR_WITH_CUDA
#error "backend_cuda.c belongs to the CUDA build (CMR_WITH_CUDA=1)"
#endif

static cmr_status cmr_status_of(cudaError_t error) {
  switch (error) {
  case cudaErrorMemoryAllocation: return CMR_ERROR_OUT_OF_MEMORY;
  case cudaErrorInsufficientDriver:
  case cudaErrorNoDevice:
  case cudaErrorStubLibrary: return CMR_ERROR_NO_DEVICE;
  case cudaErrorInvalidDevice: return CMR_ERROR_UNKNOWN_DEVICE;
  case cudaErrorStreamCaptureUnsupported:
  case cudaErrorStreamCaptureInvalidated:
  case cudaErrorStreamCaptureImplicit:
  case cudaErrorStreamCaptureIsolation:
  case cudaErrorStreamCaptureUnjoined:
  case cudaErrorStreamCaptureMerge:
  case cudaErrorStreamCaptureUnmatched:
  case cudaErrorStreamCaptureWrongThread:
  case cudaErrorCapturedEvent: return CMR_ERROR_STREAM_CAPTURE;
  default: return CMR_ERROR_CUDA;
  }
}

/* Whether `error` says there is no driver or no device (and clears it). */
static bool cmr_no_driver(cudaError_t error) {
  if (error != cudaErrorInsufficientDriver && error != cudaErrorNoDevice) return false;
  (void)cudaGetLastError();
  return true;
}

/* Records "<call with its arguments>: <error name> (<error text>)", clears
 * CUDA's non-sticky last error and returns the mapped status. */
static cmr_status cmr_cuda_failure(cudaError_t error, const char *call_format, ...) CMR_PRINTF(2, 3);

static cmr_status cmr_cuda_failure(cudaError_t error, const char *call_format, ...) {
  char call[256];
  va_list args;
  va_start(args, call_format);
  vsnprintf(call, sizeof call, call_format, args);
  va_end(args);
  (void)cudaGetLastError();
  return cmr_error(cmr_status_of(error), "%s: %s (%s)", call, cudaGetErrorName(error), cudaGetErrorString(error));
}

/* ---- devices ------------------------------------------------------------------- */

cmr_status cmr_backend_device_count(int *out) {
  int count = 0; /* left unwritten on failure */
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    *out = 0;
    return cmr_cuda_failure(error, "cudaGetDeviceCount");
  }
  if (count == 0) {
    *out = 0;
    return cmr_error(CMR_ERROR_NO_DEVICE, "cudaGetDeviceCount: no CUDA device");
  }
  *out = count;
  return CMR_SUCCESS;
}

cmr_status cmr_backend_get_device(int *out) {
  int device = 0;
  cudaError_t error = cudaGetDevice(&device);
  *out = device;
  return error == cudaSuccess ? CMR_SUCCESS : cmr_cuda_failure(error, "cudaGetDevice");
}

cmr_status cmr_backend_set_device(int device) {
  cudaError_t error = cudaSetDevice(device);
  return error == cudaSuccess ? CMR_SUCCESS : cmr_cuda_failure(error, "cudaSetDevice(%d)", device);
}

cmr_status cmr_backend_memory_info(size_t *free_bytes, size_t *total_bytes) {
  size_t free_now = 0;
  size_t total = 0;
  cudaError_t error = cudaMemGetInfo(&free_now, &total);
  *free_bytes = free_now;
  *total_bytes = total;
  return error == cudaSuccess ? CMR_SUCCESS : cmr_cuda_failure(error, "cudaMemGetInfo");
}

/* An attribute of the current device. */
static cmr_status cmr_device_attribute(enum cudaDeviceAttr attribute, const char *name, int *out) {
  int device = 0;
  cmr_status status = cmr_backend_get_device(&device);
  if (status != CMR_SUCCESS) {
    return status;
  }
  int value = 0;
  cudaError_t error = cudaDeviceGetAttribute(&value, attribute, device);
  if (error != cudaSuccess) {
    return cmr_cuda_failure(error, "cudaDeviceGetAttribute(%s, device %d)", name, device);
  }
  *out = value;
  return CMR_SUCCESS;
}

static cmr_status cmr_device_flag(enum cudaDeviceAttr attribute, const char *name, bool *out) {
  int value = 0;
  cmr_status status = cmr_device_attribute(attribute, name, &value);
  *out = status == CMR_SUCCESS && value != 0;
  return status;
}

cmr_status cmr_backend_pageable_memory_access(bool *out) {
  return cmr_device_flag(cudaDevAttrPageableMemoryAccess, "cudaDevAttrPageableMemoryAccess", out);
}

/* ---- the driver's stream queries ------------------------------------------------ */

/* cuStreamIsCapturing and cuStreamGetId, called directly: a suballocator
 * asks the first on every allocation and free, and the second on every one
 * on a stream cmr did not make, and the runtime's wrappers of them
 * (cudaStreamIsCapturing, cudaStreamGetId) add their own entry work to a
 * call that is already about as dear as the rest of a warm pair. Where the
 * driver has neither, or a direct call fails (no context current for a
 * per-thread stream, the legacy stream while another captures, no
 * driver), the runtime's wrapper is asked, and its answer and error are
 * the ones cmr gives. */
static struct {
  pthread_once_t once;
  __typeof__(&cuStreamIsCapturing) is_capturing;
  __typeof__(&cuStreamGetId) get_id;
} cmr_stream_queries = {.once = PTHREAD_ONCE_INIT};

static void cmr_stream_queries_find(void) {
  char why[160]; /* unused: without them the runtime's wrappers answer */
  __typeof__(&cuStreamIsCapturing) is_capturing = NULL;
  __typeof__(&cuStreamGetId) get_id = NULL;
  if (cmr_driver_entry_find("cuStreamIsCapturing", &is_capturing, sizeof is_capturing, why, sizeof why) ==
          CMR_SUCCESS &&
      cmr_driver_entry_find("cuStreamGetId", &get_id, sizeof get_id, why, sizeof why) == CMR_SUCCESS) {
    cmr_stream_queries.is_capturing = is_capturing;
    cmr_stream_queries.get_id = get_id;
  }
}

/* Whether the driver answered `stream`'s capture status directly. */
static bool cmr_driver_capture_status(cmr_stream stream, bool *capturing) {
  pthread_once(&cmr_stream_queries.once, cmr_stream_queries_find);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (cmr_stream_queries.is_capturing == NULL || cmr_stream_queries.is_capturing(stream, &status) != CUDA_SUCCESS) {
    return false;
  }
  *capturing = status != CU_STREAM_CAPTURE_STATUS_NONE;
  return true;
}

/* Whether the driver answered `stream`'s id directly. */
static bool cmr_driver_stream_id(cmr_stream stream, uint64_t *id) {
  pthread_once(&cmr_stream_queries.once, cmr_stream_queries_find);
  unsigned long long found = 0;
  if (cmr_stream_queries.get_id == NULL || cmr_stream_queries.get_id(stream, &found) != CUDA_SUCCESS) return false;
  *id = found;
  return true;
}

/* ---- streams and copies ---------------------------------------------------------- */

cmr_status cmr_backend_stream_create(unsigned flags, cmr_stream *out) {
  _Static_assert(
      CMR_STREAM_FLAGS_SYNC_DEFAULT == cudaStreamDefault && CMR_STREAM_FLAGS_NON_BLOCKING == cudaStreamNonBlocking,
      "cmr's stream flags are CUDA's");
  cudaStream_t stream = NULL;
  cudaError_t error = cudaStreamCreateWithFlags(&stream, flags);
  if (error != cudaSuccess) {
    return cmr_cuda_failure(error, "cudaStreamCreateWithFlags(flags %u)", flags);
  }
  unsigned long long id = 0;
  error = cudaStreamGetId(stream, &id);
  if (error != cudaSuccess) {
    cmr_status status = cmr_cuda_failure(error, "cudaStreamGetId(%p) of a new stream", (void *)stream);
    (void)cudaStreamDestroy(stream);
    return status;
  }
  cmr_stream_ids_add(stream, id);
  *out = stream;
  return CMR_SUCCESS;
}

cmr_status cmr_backend_stream_destroy(cmr_stream stream) {
  cmr_stream_ids_remove(stream); /* before its handle can be another stream's */
  cudaError_t error = cudaStreamDestroy(stream);
  return error == cudaSuccess ? CMR_SUCCESS : cmr_cuda_failure(error, "cudaStreamDestroy(%p)", (void *)stream);
}

/* CUDA recycles stream handles: a destroyed stream's cannot be told from
 * another's, so only the driver can say (cudaErrorInvalidResourceHandle). */
bool cmr_backend_stream_destroyed(cmr_stream stream) {
  (void)stream;
  return false;
}

cmr_status cmr_backend_stream_synchronize(cmr_stream stream) {
  cmr_before_blocking();
  cudaError_t error = cudaStreamSynchronize(stream);
  /* Without a driver or device no work can have been queued, so the default
   * stream is idle (no other stream can exist). */
  if (stream == NULL && cmr_no_driver(error)) return CMR_SUCCESS;
  return error == cudaSuccess ? CMR_SUCCESS : cmr_cuda_failure(error, "cudaStreamSynchronize(%p)", (void *)stream);
}

cmr_status cmr_backend_stream_id(cmr_stream stream, uint64_t *out) {
  if (cmr_stream_ids_find(stream, out) || cmr_driver_stream_id(stream, out)) return CMR_SUCCESS;
  unsigned long long id = 0;
  cudaError_t error = cudaStreamGetId(stream, &id);
  /* Without a driver only the default streams can be named; they are told
   * apart by their handles, which are fixed values. */
  if (cmr_backend_stream_kind_of(stream) != CMR_BACKEND_STREAM_MADE && cmr_no_driver(error)) {
    *out = (uint64_t)(uintptr_t)stream;
    return CMR_SUCCESS;
  }
  if (error != cudaSuccess) {
    return cmr_cuda_failure(error, "cudaStreamGetId(%p)", (void *)stream);
  }
  *out = id;
  return CMR_SUCCESS;
}

cmr_status cmr_backend_stream_id_in_capture(cmr_stream stream, uint64_t *out, bool *of_capture) {
  *of_capture = false;
  if (cmr_stream_ids_find(stream, out)) return CMR_SUCCESS;
  enum cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  unsigned long long sequence = 0;
#if CUDART_VERSION >= 13000
  cudaError_t error = cudaStreamGetCaptureInfo(stream, &capture, &sequence, NULL, NULL, NULL, NULL);
#else
  cudaError_t error = cudaStreamGetCaptureInfo(stream, &capture, &sequence, NULL, NULL, NULL);
#endif
  if (error != cudaSuccess) return cmr_cuda_failure(error, "cudaStreamGetCaptureInfo(%p)", (void *)stream);
  /* A capture that ended since the caller asked leaves 0: a name too, of no capture. */
  *out = capture == cudaStreamCaptureStatusNone ? 0 : sequence;
  *of_capture = true;
  return CMR_SUCCESS;
}

cmr_backend_stream_kind cmr_backend_stream_kind_of(cmr_stream stream) {
  if (stream == NULL || stream == cudaStreamLegacy) return CMR_BACKEND_STREAM_LEGACY_DEFAULT;
  return stream == cudaStreamPerThread ? CMR_BACKEND_STREAM_PER_THREAD_DEFAULT : CMR_BACKEND_STREAM_MADE;
}

/* ---- events ---------------------------------------------------------------------------- */

/* cmr's events only order work: no timing, which makes them cheaper. */
cmr_status cmr_backend_event_create(cmr_backend_event *out) {
  cudaEvent_t event = NULL;
  cudaError_t error = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
  if (error != cudaSuccess) {
    return cmr_cuda_failure(error, "cudaEventCreateWithFlags(cudaEventDisableTiming)");
  }
  *out = (cmr_backend_event)event;
  return CMR_SUCCESS;
}

void cmr_backend_event_destroy(cmr_backend_event event) {
  cudaError_t error = cudaEventDestroy((cudaEvent_t)event);
  if (error != cudaSuccess) {
    (void)cmr_cuda_failure(error, "cudaEventDestroy(%p)", (void *)event);
  }
}

cmr_status cmr_backend_event_record(cmr_backend_event event, cmr_stream stream) {
  cudaError_t error = cudaEventRecord((cudaEvent_t)event, stream);
  return error == cudaSuccess
             ? CMR_SUCCESS
             : cmr_cuda_failure(error, "cudaEventRecord(%p, stream %p)", (void *)event, (void *)stream);
}

cmr_status cmr_backend_stream_wait_event(cmr_stream stream, cmr_backend_event event) {
  cudaError_t error = cudaStreamWaitEvent(stream, (cudaEvent_t)event, 0);
  return error == cudaSuccess
             ? CMR_SUCCESS
             : cmr_cuda_failure(error, "cudaStreamWaitEvent(stream %p, %p)", (void *)stream, (void *)event);
}

cmr_status cmr_backend_event_query(cmr_backend_event event, bool *reached) {
  cudaError_t error = cudaEventQuery((cudaEvent_t)event);
  *reached = error == cudaSuccess;
  if (error == cudaSuccess || error == cudaErrorNotReady) return CMR_SUCCESS;
  return cmr_cuda_failure(error, "cudaEventQuery(%p)", (void *)event);
}

cmr_status cmr_backend_event_synchronize(cmr_backend_event event) {
  cmr_before_blocking();
  cudaError_t error = cudaEventSynchronize((cudaEvent_t)event);
  return error == cudaSuccess ? CMR_SUCCESS : cmr_cuda_failure(error, "cudaEventSynchronize(%p)", (void *)event);
}

cmr_status cmr_backend_device_synchronize(void) {
  cmr_before_blocking();
  cudaError_t error = cudaDeviceSynchronize();
  if (cmr_no_driver(error)) return CMR_SUCCESS; /* no device, so no work to wait for */
  return error == cudaSuccess ? CMR_SUCCESS : cmr_cuda_failure(error, "cudaDeviceSynchronize");
}

cmr_status cmr_backend_copy(void *destination, const void *source, size_t bytes, cmr_stream stream) {
  if (bytes == 0) {
    return CMR_SUCCESS;
  }
  cmr_before_blocking();
  cudaError_t error = cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDefault, stream);
  return error == cudaSuccess ? CMR_SUCCESS
                              : cmr_cuda_failure(error, "cudaMemcpyAsync(%p <- %p, %zu bytes, stream %p)", destination,
                                                 source, bytes, (void *)stream);
}

cmr_status cmr_backend_fill(void *ptr, unsigned char byte, size_t bytes, cmr_stream stream) {
  if (bytes == 0) {
    return CMR_SUCCESS;
  }
  cmr_before_blocking();
  cudaError_t error = cudaMemsetAsync(ptr, byte, bytes, stream);
  return error == cudaSuccess ? CMR_SUCCESS
                              : cmr_cuda_failure(error, "cudaMemsetAsync(%p, %u, %zu bytes, stream %p)", ptr,
                                                 (unsigned)byte, bytes, (void *)stream);
}

/* ---- managed memory ------------------------------------------------------------------ */

cmr_status cmr_backend_pointer_is_managed(const void *ptr, bool *out) {
  struct cudaPointerAttributes attributes;
  cudaError_t error = cudaPointerGetAttributes(&attributes, ptr);
  if (error != cudaSuccess) {
    *out = false;
    /* Without a driver no memory is managed: an answer, not a failure. */
    return cmr_no_driver(error) ? CMR_SUCCESS : cmr_cuda_failure(error, "cudaPointerGetAttributes(%p)", ptr);
  }
  *out = attributes.type == cudaMemoryTypeManaged;
  return CMR_SUCCESS;
}

cmr_status cmr_backend_check_address(const void *ptr, size_t bytes, const char *name, const char *what) {
  struct cudaPointerAttributes attributes;
  cudaError_t error = cudaPointerGetAttributes(&attributes, ptr);
  if (error == cudaSuccess && attributes.type != cudaMemoryTypeUnregistered) return CMR_SUCCESS;
  /* Unregistered, refused (an address CUDA cannot place) or no driver: CUDA
   * does not know it, which is an answer, not an error to keep. */
  if (error != cudaSuccess) (void)cudaGetLastError();
  if (cmr_host_range_mapped(ptr, bytes)) return CMR_SUCCESS;
  return cmr_error(CMR_ERROR_INVALID_ARGUMENT,
                   "%s: %s %p (%zu bytes) is neither memory CUDA knows nor host memory of this process: no page is "
                   "mapped there",
                   what, name, ptr, bytes);
}

cmr_status cmr_backend_prefetch(const void *ptr, size_t bytes, int device, cmr_stream stream) {
  struct cudaMemLocation location = {.type = cudaMemLocationTypeDevice, .id = device};
  cudaError_t error = cudaMemPrefetchAsync(ptr, bytes, location, 0, stream);
  return error == cudaSuccess ? CMR_SUCCESS
                              : cmr_cuda_failure(error, "cudaMemPrefetchAsync(%p, %zu bytes, device %d, stream %p)",
                                                 ptr, bytes, device, (void *)stream);
}

/* ---- plain allocations ------------------------------------------------------------- */

/* A plain allocation call, made after cmr_before_blocking (it may block):
 * *out is NULL after a failure, whose message names `call`. */
static cmr_status cmr_cuda_alloc(cudaError_t (*alloc)(void **, size_t), const char *call, size_t bytes, void **out) {
  cmr_before_blocking();
  cudaError_t error = alloc(out, bytes);
  if (error == cudaSuccess) return CMR_SUCCESS;
  *out = NULL;
  return cmr_cuda_failure(error, "%s(%zu bytes)", call, bytes);
}

/* A plain free call, made after cmr_before_blocking; a failure's message names `call`. */
static cmr_status cmr_cuda_free(cudaError_t (*free_call)(void *), const char *call, void *ptr) {
  cmr_before_blocking();
  cudaError_t error = free_call(ptr);
  return error == cudaSuccess ? CMR_SUCCESS : cmr_cuda_failure(error, "%s(%p)", call, ptr);
}

/* Managed memory any device and the host reach. */
static cudaError_t cmr_cuda_malloc_managed(void **out, size_t bytes) {
  return cudaMallocManaged(out, bytes, cudaMemAttachGlobal);
}

cmr_status cmr_backend_device_alloc(size_t bytes, void **out) {
  return cmr_cuda_alloc(cudaMalloc, "cudaMalloc", bytes, out);
}

/* Frees device and managed memory alike. */
cmr_status cmr_backend_device_free(void *ptr) { return cmr_cuda_free(cudaFree, "cudaFree", ptr); }

cmr_status cmr_backend_managed_alloc(size_t bytes, void **out) {
  return cmr_cuda_alloc(cmr_cuda_malloc_managed, "cudaMallocManaged", bytes, out);
}

cmr_status cmr_backend_pinned_alloc(size_t bytes, void **out) {
  return cmr_cuda_alloc(cudaMallocHost, "cudaMallocHost", bytes, out);
}

cmr_status cmr_backend_pinned_free(void *ptr) { return cmr_cuda_free(cudaFreeHost, "cudaFreeHost", ptr); }

cmr_status cmr_backend_advise_location(const void *ptr, size_t bytes, int device) {
  struct cudaMemLocation where = {device < 0 ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice,
                                  device < 0 ? 0 : device};
  cudaError_t error = cudaMemAdvise(ptr, bytes, cudaMemAdviseSetPreferredLocation, where);
  if (error == cudaSuccess && device >= 0) error = cudaMemAdvise(ptr, bytes, cudaMemAdviseSetAccessedBy, where);
  return error == cudaSuccess ? CMR_SUCCESS
                              : cmr_cuda_failure(error, "cudaMemAdvise(%p, %zu bytes, %s %d)", ptr, bytes,
                                                 device < 0 ? "host" : "device", device);
}

/* ---- stream-ordered pools ------------------------------------------------------------ */

cmr_status cmr_backend_pools_supported(bool *out) {
  return cmr_device_flag(cudaDevAttrMemoryPoolsSupported, "cudaDevAttrMemoryPoolsSupported", out);
}

static cmr_status cmr_require_pools(const char *what) {
  bool supported = false;
  cmr_status status = cmr_backend_pools_supported(&supported);
  if (status == CMR_SUCCESS && !supported) {
    status =
        cmr_error(CMR_ERROR_UNSUPPORTED, "%s: the current device does not support stream-ordered memory pools", what);
  }
  return status;
}

/* The driver's handle types (a mask, as cudaMemPoolProps takes them) of a
 * set of cmr_backend_pool_export bits. */
static enum cudaMemAllocationHandleType cmr_handle_types_of(unsigned exports) {
  unsigned types = cudaMemHandleTypeNone;
  if (exports & CMR_BACKEND_POOL_EXPORT_POSIX_FILE_DESCRIPTOR) types |= cudaMemHandleTypePosixFileDescriptor;
  if (exports & CMR_BACKEND_POOL_EXPORT_FABRIC) types |= cudaMemHandleTypeFabric;
  return (enum cudaMemAllocationHandleType)types;
}

/* Whether the current device can export pool memory as every one of `handle_types`. */
static cmr_status cmr_require_handle_type(enum cudaMemAllocationHandleType handle_type) {
  if (handle_type == cudaMemHandleTypeNone) {
    return CMR_SUCCESS;
  }
  int supported = 0;
  cmr_status status = cmr_device_attribute(cudaDevAttrMemoryPoolSupportedHandleTypes,
                                           "cudaDevAttrMemoryPoolSupportedHandleTypes", &supported);
  if (status == CMR_SUCCESS && ((unsigned)supported & (unsigned)handle_type) != (unsigned)handle_type) {
    status = cmr_error(CMR_ERROR_UNSUPPORTED,
                       "cudaMemPoolCreate: the current device cannot export pool memory as every one of the "
                       "handle types 0x%x (it supports the mask 0x%x)",
                       (unsigned)handle_type, (unsigned)supported);
  }
  return status;
}

cmr_status cmr_backend_pool_set_release_threshold(cmr_backend_pool pool, size_t release_threshold) {
  uint64_t threshold = release_threshold;
  cudaError_t error = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold);
  return error == cudaSuccess ? CMR_SUCCESS
                              : cmr_cuda_failure(error,
                                                 "cudaMemPoolSetAttribute(%p, cudaMemPoolAttrReleaseThreshold, "
                                                 "%zu bytes)",
                                                 (void *)pool, release_threshold);
}

/* The first driver that takes cudaMemPoolCreateUsageHwDecompress in a pool's
 * usage (an older one refuses the pool): RMM's gate, CUDA 12.8. */
enum { cmr_hw_decompress_driver = 12080 };

cmr_status cmr_backend_hw_decompress_supported(bool *out) {
  *out = false;
#ifdef cudaMemPoolCreateUsageHwDecompress
  int version = 0;
  cudaError_t error = cudaDriverGetVersion(&version);
  if (error != cudaSuccess) return cmr_cuda_failure(error, "cudaDriverGetVersion");
  *out = version >= cmr_hw_decompress_driver;
#endif
  return CMR_SUCCESS;
}

/* The pool's usage: buffers for hardware decompression where the driver
 * supports it (as RMM's pools), else none. */
static cmr_status cmr_pool_usage(unsigned short *out) {
  bool supported = false;
  cmr_status status = cmr_backend_hw_decompress_supported(&supported);
  *out = 0;
#ifdef cudaMemPoolCreateUsageHwDecompress
  if (supported) *out = cudaMemPoolCreateUsageHwDecompress;
#endif
  return status;
}

cmr_status cmr_backend_pool_create(unsigned exports, size_t release_threshold, cmr_backend_pool *out) {
  enum cudaMemAllocationHandleType handle_type = cmr_handle_types_of(exports);
  int device = 0;
  unsigned short usage = 0;
  cmr_status status = cmr_backend_get_device(&device);
  if (status == CMR_SUCCESS) {
    status = cmr_require_pools("cudaMemPoolCreate");
  }
  if (status == CMR_SUCCESS) {
    status = cmr_require_handle_type(handle_type);
  }
  if (status == CMR_SUCCESS) {
    status = cmr_pool_usage(&usage);
  }
  if (status != CMR_SUCCESS) {
    return status;
  }
  struct cudaMemPoolProps props = {0};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = handle_type;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  props.usage = usage;
  cudaMemPool_t pool = NULL;
  cudaError_t error = cudaMemPoolCreate(&pool, &props);
  if (error != cudaSuccess) {
    return cmr_cuda_failure(error, "cudaMemPoolCreate(device %d, handle types 0x%x, usage 0x%x)", device,
                            (unsigned)handle_type, (unsigned)usage);
  }
  status = cmr_backend_pool_set_release_threshold(pool, release_threshold);
  if (status != CMR_SUCCESS) {
    cudaMemPoolDestroy(pool);
    return status;
  }
  *out = pool;
  return CMR_SUCCESS;
}

cmr_status cmr_backend_pool_release_threshold(cmr_backend_pool pool, uint64_t *out) {
  uint64_t threshold = 0;
  cudaError_t error = cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold);
  if (error != cudaSuccess) {
    return cmr_cuda_failure(error, "cudaMemPoolGetAttribute(%p, cudaMemPoolAttrReleaseThreshold)", (void *)pool);
  }
  *out = threshold;
  return CMR_SUCCESS;
}

typedef CUresult (*cmr_pointer_attribute_function)(void *data, CUpointer_attribute attribute, CUdeviceptr ptr);

cmr_status cmr_backend_hw_decompress_capable(const void *ptr, bool *out) {
  *out = false;
#ifdef cudaMemPoolCreateUsageHwDecompress
  char why[160];
  cmr_pointer_attribute_function get_attribute = NULL;
  cmr_status status =
      cmr_driver_entry_find("cuPointerGetAttribute", &get_attribute, sizeof get_attribute, why, sizeof why);
  if (status != CMR_SUCCESS) return cmr_error(status, "%s", why);
  int capable = 0;
  CUresult result = get_attribute(&capable, CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE, (CUdeviceptr)(uintptr_t)ptr);
  if (result != CUDA_SUCCESS) {
    return cmr_error(CMR_ERROR_CUDA, "cuPointerGetAttribute(%p, CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE): %d",
                     ptr, (int)result);
  }
  *out = capable != 0;
#else
  (void)ptr;
#endif
  return CMR_SUCCESS;
}

cmr_status cmr_backend_pool_destroy(cmr_backend_pool pool) {
  cmr_before_blocking();
  cudaError_t error = cudaMemPoolDestroy(pool);
  return error == cudaSuccess ? CMR_SUCCESS : cmr_cuda_failure(error, "cudaMemPoolDestroy(%p)", (void *)pool);
}

cmr_status cmr_backend_pool_grant_access(cmr_backend_pool pool, int owner, int device) {
  int can_access = 0;
  cudaError_t error = cudaDeviceCanAccessPeer(&can_access, device, owner);
  if (error != cudaSuccess) {
    return cmr_cuda_failure(error, "cudaDeviceCanAccessPeer(device %d, peer %d)", device, owner);
  }
  if (!can_access) {
    return cmr_error(CMR_ERROR_UNSUPPORTED, "cudaDeviceCanAccessPeer: device %d cannot access device %d's memory",
                     device, owner);
  }
  struct cudaMemAccessDesc access = {0};
  access.location.type = cudaMemLocationTypeDevice;
  access.location.id = device;
  access.flags = cudaMemAccessFlagsProtReadWrite;
  error = cudaMemPoolSetAccess(pool, &access, 1);
  return error == cudaSuccess
             ? CMR_SUCCESS
             : cmr_cuda_failure(error, "cudaMemPoolSetAccess(%p, device %d, read-write)", (void *)pool, device);
}

/* As RMM's managed async resource: the driver's default managed pool
 * releases its memory at every synchronization (threshold 0), so a zero
 * threshold is raised to the maximum; one somebody set is left as it is.
 * The pool is the device's: everyone who uses it sees the change. */
static cmr_status cmr_keep_everything_unless_set(cudaMemPool_t pool) {
  uint64_t threshold = 0;
  cmr_status status = cmr_backend_pool_release_threshold(pool, &threshold);
  if (status == CMR_SUCCESS && threshold == 0) status = cmr_backend_pool_set_release_threshold(pool, SIZE_MAX);
  return status;
}

/* CUDA 13's default managed pool with the current device as its location.
 * The driver refuses it (cudaErrorNotSupported) where managed memory cannot
 * be accessed concurrently; both that and the missing attributes read as
 * CMR_ERROR_UNSUPPORTED. */
cmr_status cmr_backend_managed_pool(cmr_backend_pool *out) {
  static const char what[] = "cudaMemGetDefaultMemPool(cudaMemAllocationTypeManaged)";
  int device = 0;
  bool concurrent = false;
  cmr_status status = cmr_backend_get_device(&device);
  if (status == CMR_SUCCESS) {
    status = cmr_require_pools(what);
  }
  if (status == CMR_SUCCESS) {
    status = cmr_device_flag(cudaDevAttrConcurrentManagedAccess, "cudaDevAttrConcurrentManagedAccess", &concurrent);
  }
  if (status == CMR_SUCCESS && !concurrent) {
    status = cmr_error(CMR_ERROR_UNSUPPORTED, "%s: device %d has no concurrent managed access, so no managed pool",
                       what, device);
  }
  if (status != CMR_SUCCESS) {
    return status;
  }
  struct cudaMemLocation location = {.type = cudaMemLocationTypeDevice, .id = device};
  cudaMemPool_t pool = NULL;
  cudaError_t error = cudaMemGetDefaultMemPool(&pool, &location, cudaMemAllocationTypeManaged);
  if (error == cudaErrorNotSupported) {
    (void)cudaGetLastError();
    return cmr_error(CMR_ERROR_UNSUPPORTED, "%s on device %d: %s (%s)", what, device, cudaGetErrorName(error),
                     cudaGetErrorString(error));
  }
  if (error != cudaSuccess) {
    return cmr_cuda_failure(error, "%s on device %d", what, device);
  }
  status = cmr_keep_everything_unless_set(pool);
  if (status == CMR_SUCCESS) *out = pool;
  return status;
}

cmr_status cmr_backend_pool_alloc(cmr_backend_pool pool, size_t bytes, cmr_stream stream, void **out) {
  cmr_before_blocking();
  cudaError_t error = cudaMallocFromPoolAsync(out, bytes, pool, stream);
  if (error != cudaSuccess) {
    *out = NULL;
    return cmr_cuda_failure(error, "cudaMallocFromPoolAsync(%zu bytes, pool %p, stream %p)", bytes, (void *)pool,
                            (void *)stream);
  }
  return CMR_SUCCESS;
}

cmr_status cmr_backend_pool_free(void *ptr, cmr_stream stream) {
  cudaError_t error = cudaFreeAsync(ptr, stream);
  return error == cudaSuccess ? CMR_SUCCESS
                              : cmr_cuda_failure(error, "cudaFreeAsync(%p, stream %p)", ptr, (void *)stream);
}

/* ---- a pool's counters (statistics) ---- */

cmr_status cmr_backend_pool_usage(cmr_backend_pool pool, cmr_backend_pool_counters *out) {
  static const struct {
    enum cudaMemPoolAttr attribute;
    const char *name;
    size_t offset;
  } read[] = {
      {cudaMemPoolAttrReservedMemCurrent, "cudaMemPoolAttrReservedMemCurrent",
       offsetof(cmr_backend_pool_counters, reserved)},
      {cudaMemPoolAttrReservedMemHigh, "cudaMemPoolAttrReservedMemHigh",
       offsetof(cmr_backend_pool_counters, reserved_high)},
      {cudaMemPoolAttrUsedMemCurrent, "cudaMemPoolAttrUsedMemCurrent", offsetof(cmr_backend_pool_counters, used)},
      {cudaMemPoolAttrUsedMemHigh, "cudaMemPoolAttrUsedMemHigh", offsetof(cmr_backend_pool_counters, used_high)},
  };
  for (size_t i = 0; i < sizeof read / sizeof read[0]; ++i) {
    cuuint64_t value = 0;
    cudaError_t error = cudaMemPoolGetAttribute(pool, read[i].attribute, &value);
    if (error != cudaSuccess) {
      return cmr_cuda_failure(error, "cudaMemPoolGetAttribute(%p, %s)", (void *)pool, read[i].name);
    }
    *(size_t *)(void *)((char *)out + read[i].offset) = (size_t)value;
  }
  return CMR_SUCCESS;
}

cmr_status cmr_backend_pool_reset_highs(cmr_backend_pool pool) {
  cuuint64_t zero = 0; /* the only value the driver takes: the high becomes the current */
  cudaError_t error = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &zero);
  if (error == cudaSuccess) error = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero);
  return error == cudaSuccess ? CMR_SUCCESS
                              : cmr_cuda_failure(error, "cudaMemPoolSetAttribute(%p, ...MemHigh, 0)", (void *)pool);
}

/* ---- stream capture ------------------------------------------------------------ */

cmr_status cmr_backend_stream_capturing(cmr_stream stream, bool *out) {
  if (cmr_driver_capture_status(stream, out)) return CMR_SUCCESS;
  enum cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  cudaError_t error = cudaStreamIsCapturing(stream, &capture);
  *out = error == cudaSuccess && capture != cudaStreamCaptureStatusNone;
  if (error == cudaSuccess) return CMR_SUCCESS;
  if (error == cudaErrorInsufficientDriver || error == cudaErrorNoDevice) {
    /* No driver or no device: no stream can be capturing, and memory that
     * needs no device (a pool over host memory) is still served. */
    (void)cudaGetLastError();
    return CMR_SUCCESS;
  }
  if (error == cudaErrorStreamCaptureImplicit) {
    (void)cudaGetLastError();
    return cmr_error(CMR_ERROR_STREAM_CAPTURE,
                     "stream %p (the legacy default stream) cannot be used while another stream of its device "
                     "captures a graph: use a stream of cmr_stream_create or a non-blocking one",
                     (void *)stream);
  }
  return cmr_cuda_failure(error, "cudaStreamIsCapturing(stream %p)", (void *)stream);
}

/* The current device's current pool: on a capturing stream the driver makes
 * the allocation a graph memory node, which every launch of the graph
 * maps anew and whose free node unmaps. */
cmr_status cmr_backend_graph_alloc(size_t bytes, cmr_stream stream, void **out) {
  cudaError_t error = cudaMallocAsync(out, bytes, stream);
  if (error == cudaSuccess) return CMR_SUCCESS;
  *out = NULL;
  return cmr_cuda_failure(error, "cudaMallocAsync(%zu bytes, stream %p)", bytes, (void *)stream);
}

cmr_status cmr_backend_graph_free(void *ptr, cmr_stream stream) {
  cudaError_t error = cudaFreeAsync(ptr, stream);
  if (error == cudaErrorInvalidValue) { /* memory a graph keeps, but its graph never launched */
    (void)cudaGetLastError();
    return cmr_error(CMR_ERROR_UNKNOWN_POINTER,
                     "cudaFreeAsync(%p, stream %p): cudaErrorInvalidValue: no allocation there (graph memory whose "
                     "graph never launched)",
                     ptr, (void *)stream);
  }
  return error == cudaSuccess ? CMR_SUCCESS
                              : cmr_cuda_failure(error, "cudaFreeAsync(%p, stream %p)", ptr, (void *)stream);
}

unsigned cmr_backend_graph_memory_properties(void) { return CMR_PROPERTY_DEVICE_ACCESSIBLE; }
/* ---- a pool's attributes after creation, the device's own pools, host pools ---------- */

static const enum cudaMemPoolAttr cmr_reuse_attributes[] = {
    [CMR_BACKEND_POOL_REUSE_FOLLOW_EVENT_DEPENDENCIES] = cudaMemPoolReuseFollowEventDependencies,
    [CMR_BACKEND_POOL_REUSE_ALLOW_OPPORTUNISTIC] = cudaMemPoolReuseAllowOpportunistic,
    [CMR_BACKEND_POOL_REUSE_ALLOW_INTERNAL_DEPENDENCIES] = cudaMemPoolReuseAllowInternalDependencies,
};
static const char *const cmr_reuse_names[] = {
    [CMR_BACKEND_POOL_REUSE_FOLLOW_EVENT_DEPENDENCIES] = "cudaMemPoolReuseFollowEventDependencies",
    [CMR_BACKEND_POOL_REUSE_ALLOW_OPPORTUNISTIC] = "cudaMemPoolReuseAllowOpportunistic",
    [CMR_BACKEND_POOL_REUSE_ALLOW_INTERNAL_DEPENDENCIES] = "cudaMemPoolReuseAllowInternalDependencies",
};

cmr_status cmr_backend_pool_reuse(cmr_backend_pool pool, cmr_backend_reuse_policy policy, bool *out) {
  int enabled = 0;
  cudaError_t error = cudaMemPoolGetAttribute(pool, cmr_reuse_attributes[policy], &enabled);
  if (error != cudaSuccess) {
    return cmr_cuda_failure(error, "cudaMemPoolGetAttribute(%p, %s)", (void *)pool, cmr_reuse_names[policy]);
  }
  *out = enabled != 0;
  return CMR_SUCCESS;
}

cmr_status cmr_backend_pool_set_reuse(cmr_backend_pool pool, cmr_backend_reuse_policy policy, bool enabled) {
  int value = enabled;
  cudaError_t error = cudaMemPoolSetAttribute(pool, cmr_reuse_attributes[policy], &value);
  return error == cudaSuccess ? CMR_SUCCESS
                              : cmr_cuda_failure(error, "cudaMemPoolSetAttribute(%p, %s, %d)", (void *)pool,
                                                 cmr_reuse_names[policy], value);
}

cmr_status cmr_backend_pool_trim(cmr_backend_pool pool, size_t min_bytes_to_keep) {
  cmr_before_blocking();
  cudaError_t error = cudaMemPoolTrimTo(pool, min_bytes_to_keep);
  return error == cudaSuccess
             ? CMR_SUCCESS
             : cmr_cuda_failure(error, "cudaMemPoolTrimTo(%p, %zu bytes)", (void *)pool, min_bytes_to_keep);
}

cmr_status cmr_backend_device_pool(bool current, cmr_backend_pool *out) {
  const char *what = current ? "cudaDeviceGetMemPool" : "cudaDeviceGetDefaultMemPool";
  int device = 0;
  cmr_status status = cmr_backend_get_device(&device);
  if (status == CMR_SUCCESS) status = cmr_require_pools(what);
  if (status != CMR_SUCCESS) return status;
  cudaMemPool_t pool = NULL;
  cudaError_t error = current ? cudaDeviceGetMemPool(&pool, device) : cudaDeviceGetDefaultMemPool(&pool, device);
  if (error != cudaSuccess) return cmr_cuda_failure(error, "%s(device %d)", what, device);
  *out = pool;
  return CMR_SUCCESS;
}

/* Whether the current device (`device`) takes pools at the host location
 * `numa_node` names (-1: cudaMemLocationTypeHost). */
static cmr_status cmr_require_host_pools(int device, int numa_node) {
  const bool numa = numa_node >= 0;
  const char *name = numa ? "cudaDevAttrHostNumaMemoryPoolsSupported" : "cudaDevAttrHostMemoryPoolsSupported";
  bool supported = false;
  cmr_status status = cmr_require_pools("cudaMemPoolCreate(host location)");
  if (status == CMR_SUCCESS) {
    status = cmr_device_flag(numa ? cudaDevAttrHostNumaMemoryPoolsSupported : cudaDevAttrHostMemoryPoolsSupported, name,
                             &supported);
  }
  if (status == CMR_SUCCESS && !supported) {
    status = cmr_error(CMR_ERROR_UNSUPPORTED, "cudaMemPoolCreate: device %d does not support pools on %s (%s is 0)",
                       device, numa ? "a host NUMA node" : "the host", name);
  }
  return status;
}

cmr_status cmr_backend_host_pool_create(int numa_node, size_t release_threshold, cmr_backend_pool *out) {
  int device = 0;
  cmr_status status = cmr_backend_get_device(&device);
  if (status == CMR_SUCCESS) status = cmr_require_host_pools(device, numa_node);
  if (status != CMR_SUCCESS) return status;
  struct cudaMemPoolProps props = {0};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = numa_node >= 0 ? cudaMemLocationTypeHostNuma : cudaMemLocationTypeHost;
  props.location.id = numa_node >= 0 ? numa_node : 0;
  cudaMemPool_t pool = NULL;
  cudaError_t error = cudaMemPoolCreate(&pool, &props);
  if (error != cudaSuccess) {
    return cmr_cuda_failure(error, "cudaMemPoolCreate(%s %d)", numa_node >= 0 ? "host NUMA node" : "host", numa_node);
  }
  /* A host pool's memory is the host's; the device reaches it once granted. */
  struct cudaMemAccessDesc access = {.location = {.type = cudaMemLocationTypeDevice, .id = device},
                                     .flags = cudaMemAccessFlagsProtReadWrite};
  error = cudaMemPoolSetAccess(pool, &access, 1);
  if (error != cudaSuccess) {
    status = cmr_cuda_failure(error, "cudaMemPoolSetAccess(host pool %p, device %d, read-write)", (void *)pool, device);
  }
  if (status == CMR_SUCCESS) status = cmr_backend_pool_set_release_threshold(pool, release_threshold);
  if (status != CMR_SUCCESS) {
    cudaMemPoolDestroy(pool);
    return status;
  }
  *out = pool;
  return CMR_SUCCESS;
}

/* ---- sharing a pool with another process ------------------------------------------------- */

cmr_status cmr_backend_pool_export_file_descriptor(cmr_backend_pool pool, int *out) {
  int descriptor = -1;
  cudaError_t error = cudaMemPoolExportToShareableHandle(&descriptor, pool, cudaMemHandleTypePosixFileDescriptor, 0);
  if (error != cudaSuccess) {
    return cmr_cuda_failure(error, "cudaMemPoolExportToShareableHandle(%p, cudaMemHandleTypePosixFileDescriptor)",
                            (void *)pool);
  }
  *out = descriptor;
  return CMR_SUCCESS;
}

cmr_status cmr_backend_pool_import_file_descriptor(int descriptor, cmr_backend_pool *out) {
  cudaMemPool_t pool = NULL;
  cudaError_t error = cudaMemPoolImportFromShareableHandle(&pool, (void *)(intptr_t)descriptor,
                                                           cudaMemHandleTypePosixFileDescriptor, 0);
  if (error != cudaSuccess) {
    return cmr_cuda_failure(error,
                            "cudaMemPoolImportFromShareableHandle(descriptor %d, "
                            "cudaMemHandleTypePosixFileDescriptor)",
                            descriptor);
  }
  *out = pool;
  return CMR_SUCCESS;
}

_Static_assert(sizeof(struct cudaMemPoolPtrExportData) == CMR_BACKEND_POOL_POINTER_EXPORT_BYTES,
               "cudaMemPoolPtrExportData is CMR_BACKEND_POOL_POINTER_EXPORT_BYTES bytes");

cmr_status cmr_backend_pool_export_pointer(void *ptr, unsigned char out[CMR_BACKEND_POOL_POINTER_EXPORT_BYTES]) {
  struct cudaMemPoolPtrExportData data;
  cudaError_t error = cudaMemPoolExportPointer(&data, ptr);
  if (error != cudaSuccess) return cmr_cuda_failure(error, "cudaMemPoolExportPointer(%p)", ptr);
  memcpy(out, data.reserved, sizeof data.reserved);
  return CMR_SUCCESS;
}

cmr_status cmr_backend_pool_import_pointer(cmr_backend_pool pool,
                                           const unsigned char data[CMR_BACKEND_POOL_POINTER_EXPORT_BYTES],
                                           void **out) {
  struct cudaMemPoolPtrExportData exported;
  memcpy(exported.reserved, data, sizeof exported.reserved);
  void *ptr = NULL;
  cudaError_t error = cudaMemPoolImportPointer(&ptr, pool, &exported);
  if (error != cudaSuccess) return cmr_cuda_failure(error, "cudaMemPoolImportPointer(pool %p)", (void *)pool);
  *out = ptr;
  return CMR_SUCCESS;
}

/* ---- registering host memory ------------------------------------------------------------- */

cmr_status cmr_backend_host_register(void *ptr, size_t bytes) {
  cmr_before_blocking();
  cudaError_t error = cudaHostRegister(ptr, bytes, cudaHostRegisterPortable);
  return error == cudaSuccess ? CMR_SUCCESS
                              : cmr_cuda_failure(error, "cudaHostRegister(%p, %zu bytes, portable)", ptr, bytes);
}

cmr_status cmr_backend_host_unregister(void *ptr) {
  cudaError_t error = cudaHostUnregister(ptr);
  return error == cudaSuccess ? CMR_SUCCESS : cmr_cuda_failure(error, "cudaHostUnregister(%p)", ptr);
}
