/* SPDX-License-Identifier: Apache-2.0 */
/* The CUDA build's virtual memory (backend.h): the driver's virtual memory
 * management, reached through cudaGetDriverEntryPointByVersion so that
 * libcmr links the CUDA runtime alone. Each granule is its own physical
 * allocation, mapped and then released (the mapping keeps it alive until
 * cuMemUnmap), so any granule may be decommitted on its own. */
#include <pthread.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "backend.h"
#include "driver_entry.h"
#include "lock.h"

#if !CMR_WITH_CUDA
#error "cuda_vm.c belongs to the CUDA build (CMR_WITH_CUDA=1)"
#endif

/* The driver's entry points, found once. */
static struct {
  pthread_once_t once;
  cmr_status status;
  char message[256]; /* why they could not be found */
  __typeof__(&cuGetErrorName) get_error_name;
  __typeof__(&cuMemGetAllocationGranularity) granularity;
  __typeof__(&cuMemAddressReserve) reserve;
  __typeof__(&cuMemAddressFree) address_free;
  __typeof__(&cuMemCreate) create;
  __typeof__(&cuMemRelease) release;
  __typeof__(&cuMemMap) map;
  __typeof__(&cuMemUnmap) unmap;
  __typeof__(&cuMemSetAccess) set_access;
} cmr_vm = {.once = PTHREAD_ONCE_INIT};

/* One entry point into *slot (a function pointer of the entry's type); false
 * with the reason in cmr_vm.status and cmr_vm.message when the driver has none. */
static bool cmr_vm_find(const char *name, void *slot, size_t slot_size) {
  cmr_vm.status = cmr_driver_entry_find(name, slot, slot_size, cmr_vm.message, sizeof cmr_vm.message);
  return cmr_vm.status == CMR_SUCCESS;
}

#define CMR_VM_FIND(name, field) cmr_vm_find(name, &cmr_vm.field, sizeof cmr_vm.field)

static void cmr_vm_load(void) {
  cmr_vm.status = CMR_SUCCESS;
  (void)(CMR_VM_FIND("cuGetErrorName", get_error_name) && CMR_VM_FIND("cuMemGetAllocationGranularity", granularity) &&
         CMR_VM_FIND("cuMemAddressReserve", reserve) && CMR_VM_FIND("cuMemAddressFree", address_free) &&
         CMR_VM_FIND("cuMemCreate", create) && CMR_VM_FIND("cuMemRelease", release) && CMR_VM_FIND("cuMemMap", map) &&
         CMR_VM_FIND("cuMemUnmap", unmap) && CMR_VM_FIND("cuMemSetAccess", set_access));
}

static cmr_status cmr_vm_loaded(void) {
  pthread_once(&cmr_vm.once, cmr_vm_load);
  return cmr_vm.status == CMR_SUCCESS ? CMR_SUCCESS : cmr_error(cmr_vm.status, "%s", cmr_vm.message);
}

static cmr_status cmr_vm_status_of(CUresult result) {
  switch (result) {
  case CUDA_ERROR_OUT_OF_MEMORY: return CMR_ERROR_OUT_OF_MEMORY;
  case CUDA_ERROR_NOT_SUPPORTED: return CMR_ERROR_UNSUPPORTED;
  case CUDA_ERROR_NO_DEVICE:
  case CUDA_ERROR_NOT_INITIALIZED: return CMR_ERROR_NO_DEVICE;
  case CUDA_ERROR_INVALID_DEVICE: return CMR_ERROR_UNKNOWN_DEVICE;
  default: return CMR_ERROR_CUDA;
  }
}

/* "<call>: <error name>", mapped. */
static cmr_status cmr_vm_failure(CUresult result, const char *call, const void *address, size_t bytes) {
  const char *name = NULL;
  if (cmr_vm.get_error_name(result, &name) != CUDA_SUCCESS || name == NULL) name = "an unknown CUresult";
  return cmr_error(cmr_vm_status_of(result), "%s(%p, %zu bytes): %s (%d)", call, address, bytes, name, (int)result);
}

/* `device`, or the current one when negative. The runtime makes the
 * device's primary context current, which the driver's calls need. */
static cmr_status cmr_vm_device(int device, int *out) {
  cudaError_t error = device >= 0 ? cudaSetDevice(device) : cudaGetDevice(&device);
  if (error == cudaSuccess) error = cudaFree(NULL); /* the primary context, made current */
  if (error != cudaSuccess) {
    (void)cudaGetLastError();
    cmr_status status =
        error == cudaErrorInsufficientDriver || error == cudaErrorNoDevice ? CMR_ERROR_NO_DEVICE : CMR_ERROR_CUDA;
    return cmr_error(status, "cudaFree(NULL) on device %d (making its context): %s", device, cudaGetErrorName(error));
  }
  *out = device;
  return CMR_SUCCESS;
}

static CUmemAllocationProp cmr_vm_properties(int device) {
  CUmemAllocationProp properties;
  memset(&properties, 0, sizeof properties);
  properties.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  properties.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  properties.location.id = device;
  return properties;
}

/* The minimum granularity of memory with `properties`. */
static cmr_status cmr_vm_granule_of(const CUmemAllocationProp *properties, size_t *out) {
  CUresult result = cmr_vm.granularity(out, properties, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  return result == CUDA_SUCCESS ? CMR_SUCCESS : cmr_vm_failure(result, "cuMemGetAllocationGranularity", NULL, 0);
}

/* A call into the driver's virtual memory on one device: the caller's
 * device to restore, the properties of the device's memory and their
 * granularity. */
typedef struct {
  cmr_backend_device_guard guard;
  CUmemAllocationProp properties;
  size_t granularity;
} cmr_vm_call;

/* The driver's calls run with `device` current (the current one when
 * negative), the caller's restored after by cmr_backend_device_leave
 * (&call->guard); on success, call's properties and granularity are the
 * device's. */
static cmr_status cmr_vm_enter(int device, cmr_vm_call *call) {
  cmr_status status = cmr_vm_loaded();
  if (status == CMR_SUCCESS) status = cmr_backend_device_enter(device, &call->guard);
  if (status != CMR_SUCCESS) return status;
  status = cmr_vm_device(device, &device);
  if (status == CMR_SUCCESS) {
    call->properties = cmr_vm_properties(device);
    status = cmr_vm_granule_of(&call->properties, &call->granularity);
  }
  return status == CMR_SUCCESS ? status : cmr_backend_device_leave(&call->guard, status);
}

/* cmr_vm_enter for a call that maps or unmaps memory, which may block. */
static cmr_status cmr_vm_enter_blocking(int device, cmr_vm_call *call) {
  cmr_status status = cmr_vm_enter(device, call);
  if (status == CMR_SUCCESS) cmr_before_blocking();
  return status;
}

cmr_status cmr_backend_vm_granularity(int device, size_t *out) {
  *out = 0;
  cmr_vm_call call;
  cmr_status status = cmr_vm_enter(device, &call);
  if (status != CMR_SUCCESS) return status;
  *out = call.granularity;
  return cmr_backend_device_leave(&call.guard, status);
}

cmr_status cmr_backend_vm_reserve(int device, size_t bytes, void **out) {
  *out = NULL;
  size_t granularity = 0;
  cmr_status status = cmr_backend_vm_granularity(device, &granularity);
  if (status != CMR_SUCCESS) return status;
  CUdeviceptr address = 0;
  CUresult result = cmr_vm.reserve(&address, bytes, granularity, 0, 0);
  if (result != CUDA_SUCCESS) {
    /* A size past the driver's address space (CUDA_ERROR_INVALID_VALUE as
     * well as CUDA_ERROR_OUT_OF_MEMORY) is addresses there are none of. */
    status = cmr_vm_failure(result, "cuMemAddressReserve", NULL, bytes);
    return status == CMR_ERROR_CUDA ? cmr_error_context(CMR_ERROR_OUT_OF_MEMORY, "no addresses to reserve") : status;
  }
  *out = (void *)(uintptr_t)address;
  return CMR_SUCCESS;
}

cmr_status cmr_backend_vm_unreserve(void *address, size_t bytes) {
  cmr_status status = cmr_vm_loaded();
  if (status != CMR_SUCCESS) return status;
  CUresult result = cmr_vm.address_free((CUdeviceptr)(uintptr_t)address, bytes);
  return result == CUDA_SUCCESS ? CMR_SUCCESS : cmr_vm_failure(result, "cuMemAddressFree", address, bytes);
}

/* Unmaps `bytes` at `address`, one granule at a time (each is its own
 * mapping); the first failure is returned, the rest still tried. */
static cmr_status cmr_vm_unmap(void *address, size_t bytes, size_t granularity) {
  cmr_status status = CMR_SUCCESS;
  for (size_t offset = 0; offset < bytes; offset += granularity) {
    CUresult result = cmr_vm.unmap((CUdeviceptr)(uintptr_t)address + offset, granularity);
    if (result != CUDA_SUCCESS && status == CMR_SUCCESS) {
      status = cmr_vm_failure(result, "cuMemUnmap", (char *)address + offset, granularity);
    }
  }
  return status;
}

/* One granule of new physical memory mapped at `address`. */
static cmr_status cmr_vm_map_granule(const CUmemAllocationProp *properties, char *address, size_t granularity) {
  CUmemGenericAllocationHandle handle = 0;
  CUresult result = cmr_vm.create(&handle, granularity, properties, 0);
  if (result != CUDA_SUCCESS) return cmr_vm_failure(result, "cuMemCreate", NULL, granularity);
  result = cmr_vm.map((CUdeviceptr)(uintptr_t)address, granularity, 0, handle, 0);
  cmr_status status = result == CUDA_SUCCESS ? CMR_SUCCESS : cmr_vm_failure(result, "cuMemMap", address, granularity);
  (void)cmr_vm.release(handle); /* the mapping, if any, keeps the memory until it is unmapped */
  return status;
}

cmr_status cmr_backend_vm_commit(int device, void *address, size_t bytes) {
  cmr_vm_call call;
  cmr_status status = cmr_vm_enter_blocking(device, &call);
  if (status != CMR_SUCCESS) return status;
  size_t mapped = 0;
  while (mapped < bytes && status == CMR_SUCCESS) {
    status = cmr_vm_map_granule(&call.properties, (char *)address + mapped, call.granularity);
    if (status == CMR_SUCCESS) mapped += call.granularity;
  }
  if (status == CMR_SUCCESS) {
    CUmemAccessDesc access;
    memset(&access, 0, sizeof access);
    access.location = call.properties.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CUresult result = cmr_vm.set_access((CUdeviceptr)(uintptr_t)address, bytes, &access, 1);
    if (result != CUDA_SUCCESS) status = cmr_vm_failure(result, "cuMemSetAccess", address, bytes);
  }
  if (status != CMR_SUCCESS) {
    cmr_kept_message reason;
    cmr_keep_message(&reason);
    (void)cmr_vm_unmap(address, mapped, call.granularity);
    cmr_restore_message(&reason);
  }
  return cmr_backend_device_leave(&call.guard, status);
}

cmr_status cmr_backend_vm_decommit(int device, void *address, size_t bytes) {
  cmr_vm_call call;
  cmr_status status = cmr_vm_enter_blocking(device, &call);
  if (status != CMR_SUCCESS) return status;
  return cmr_backend_device_leave(&call.guard, cmr_vm_unmap(address, bytes, call.granularity));
}
