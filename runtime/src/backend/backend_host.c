/* SPDX-License-Identifier: Apache-2.0 */
/* The backend of the host build: simulated devices whose memory is the
 * host's (CMR_HOST_DEVICE_COUNT of them, so the per-device logic runs
 * without a GPU); streams are tokens whose work is always complete; copies
 * are memmove; virtual memory is mmap's. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE, madvise */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend.h"
#include "host_capture.h"
#include "host_range.h"
#include "live_streams.h"

#if CMR_WITH_CUDA
#error "backend_host.c belongs to the host build (CMR_WITH_CUDA=0)"
#endif

/* ---- devices: CMR_HOST_DEVICE_COUNT, read once; each thread's current one -------- */

enum { cmr_host_max_devices = 64 };

static struct {
  pthread_once_t once;
  int count;     /* 0: the variable is not a count */
  char text[32]; /* the variable's value, for the message */
} cmr_host_devices = {.once = PTHREAD_ONCE_INIT};

static _Thread_local int cmr_host_current_device;

static void cmr_host_read_device_count(void) {
  const char *text = getenv("CMR_HOST_DEVICE_COUNT");
  if (text == NULL || text[0] == '\0') {
    cmr_host_devices.count = 1;
    return;
  }
  snprintf(cmr_host_devices.text, sizeof cmr_host_devices.text, "%s", text);
  char *end = NULL;
  errno = 0;
  long count = strtol(text, &end, 10);
  bool valid = errno == 0 && *end == '\0' && count >= 1 && count <= cmr_host_max_devices;
  cmr_host_devices.count = valid ? (int)count : 0;
}

cmr_status cmr_backend_device_count(int *out) {
  pthread_once(&cmr_host_devices.once, cmr_host_read_device_count);
  *out = cmr_host_devices.count;
  if (cmr_host_devices.count == 0) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "CMR_HOST_DEVICE_COUNT=\"%s\" is not a device count in [1, %d]",
                     cmr_host_devices.text, cmr_host_max_devices);
  }
  return CMR_SUCCESS;
}

cmr_status cmr_backend_get_device(int *out) {
  *out = cmr_host_current_device;
  return CMR_SUCCESS;
}

cmr_status cmr_backend_set_device(int device) {
  int count = 0;
  cmr_status status = cmr_backend_device_count(&count);
  if (status == CMR_SUCCESS && (device < 0 || device >= count)) {
    status =
        cmr_error(CMR_ERROR_UNKNOWN_DEVICE, "cudaSetDevice(%d): device %d is not in [0, %d)", device, device, count);
  }
  if (status == CMR_SUCCESS) cmr_host_current_device = device;
  return status;
}

static cmr_status cmr_sysconf(int name, const char *name_text, size_t *out) {
  long value = sysconf(name);
  if (value < 0) {
    return cmr_error(CMR_ERROR_UNSUPPORTED, "sysconf(%s) is not available", name_text);
  }
  *out = (size_t)value;
  return CMR_SUCCESS;
}

cmr_status cmr_backend_memory_info(size_t *free_bytes, size_t *total_bytes) {
  size_t page = 0;
  size_t free_pages = 0;
  size_t total_pages = 0;
  cmr_status status = cmr_sysconf(_SC_PAGESIZE, "_SC_PAGESIZE", &page);
  if (status == CMR_SUCCESS) {
    status = cmr_sysconf(_SC_AVPHYS_PAGES, "_SC_AVPHYS_PAGES", &free_pages);
  }
  if (status == CMR_SUCCESS) {
    status = cmr_sysconf(_SC_PHYS_PAGES, "_SC_PHYS_PAGES", &total_pages);
  }
  if (status != CMR_SUCCESS) {
    return status;
  }
  *free_bytes = free_pages * page;
  *total_bytes = total_pages * page;
  return CMR_SUCCESS;
}

/* The host build's device is the host: its memory is all "pageable". */
cmr_status cmr_backend_pageable_memory_access(bool *out) {
  *out = true;
  return CMR_SUCCESS;
}

/* A stream is a token that no other stream, live or destroyed, is ever
 * given: a counter placed where no pointer a test makes up, nor the
 * default streams 0, 1 and 2, can be. Nothing is allocated for it, so a
 * stale token is never read; live_streams.h knows which are live. */
static const uintptr_t cmr_host_stream_base = (uintptr_t)0x57 << (sizeof(uintptr_t) * 8 - 16);
enum { cmr_host_stream_step = 16 };
static _Atomic uintptr_t cmr_host_streams_made;

cmr_status cmr_backend_stream_create(unsigned flags, cmr_stream *out) {
  (void)flags; /* host work never waits for another stream's */
  uintptr_t number = atomic_fetch_add_explicit(&cmr_host_streams_made, 1, memory_order_relaxed) + 1;
  *out = (cmr_stream)(cmr_host_stream_base + number * cmr_host_stream_step);
  return CMR_SUCCESS;
}

cmr_status cmr_backend_stream_destroy(cmr_stream stream) {
  (void)stream; /* a token holds nothing */
  return CMR_SUCCESS;
}

/* A token this backend gave out that is no longer live. */
bool cmr_backend_stream_destroyed(cmr_stream stream) {
  uintptr_t offset = (uintptr_t)stream - cmr_host_stream_base;
  uintptr_t made = atomic_load_explicit(&cmr_host_streams_made, memory_order_relaxed);
  bool given_out = (uintptr_t)stream > cmr_host_stream_base && offset % cmr_host_stream_step == 0 &&
                   offset / cmr_host_stream_step <= made;
  return given_out && !cmr_live_streams_contains(stream);
}

/* Host memory is never managed: nothing to migrate. */
cmr_status cmr_backend_pointer_is_managed(const void *ptr, bool *out) {
  (void)ptr;
  *out = false;
  return CMR_SUCCESS;
}

cmr_status cmr_backend_prefetch(const void *ptr, size_t bytes, int device, cmr_stream stream) {
  (void)ptr, (void)bytes, (void)device, (void)stream;
  return CMR_SUCCESS;
}

/* ---- ordering: host work is complete on return, so these only count (and fail when
 * a test injects a failure) ------------------------------------------------------ */

static struct {
  _Atomic unsigned long event_records;
  _Atomic unsigned long stream_waits;
  _Atomic unsigned long event_synchronizes;
  _Atomic unsigned long device_synchronizes;
  _Atomic unsigned long event_queries;
} cmr_host_counts;

/* Calls left before each injected failure (0: none pending). */
static _Atomic unsigned long cmr_host_fail_in[CMR_BACKEND_HOST_CALLS];
/* The device current at each call's last call, plus one (0: never called). */
static _Atomic int cmr_host_device_seen[CMR_BACKEND_HOST_CALLS];

int cmr_backend_host_device_seen(cmr_backend_host_call call) { return atomic_load(&cmr_host_device_seen[call]) - 1; }

void cmr_backend_host_fail_call(cmr_backend_host_call call, unsigned long nth) {
  atomic_store(&cmr_host_fail_in[call], nth);
}

/* Whether this call of `call` is the one to fail: counts its countdown down
 * (atomically, so exactly one caller among threads meets the failure). */
static cmr_status cmr_host_injected(cmr_backend_host_call call, const char *name) {
  atomic_store(&cmr_host_device_seen[call], cmr_host_current_device + 1);
  unsigned long left = atomic_load(&cmr_host_fail_in[call]);
  do {
    if (left == 0) return CMR_SUCCESS;
  } while (!atomic_compare_exchange_weak(&cmr_host_fail_in[call], &left, left - 1));
  return left == 1 ? cmr_error(CMR_ERROR_CUDA, "%s: injected failure (cudaErrorUnknown)", name) : CMR_SUCCESS;
}

cmr_status cmr_backend_stream_id(cmr_stream stream, uint64_t *out) {
  /* The driver refuses to name a capturing stream, and the capture is lost. */
  cmr_status status = cmr_host_capture_forbids(CMR_HOST_CAPTURE_STREAM, stream, "cudaStreamGetId");
  if (status == CMR_SUCCESS) status = cmr_host_injected(CMR_BACKEND_HOST_STREAM_ID, "cudaStreamGetId");
  if (status == CMR_SUCCESS) *out = (uint64_t)(uintptr_t)stream;
  return status;
}

/* As the CUDA build's: a stream cmr_stream_create made (live) is named
 * without a call, any other by its capture. */
cmr_status cmr_backend_stream_id_in_capture(cmr_stream stream, uint64_t *out, bool *of_capture) {
  *of_capture = !cmr_live_streams_contains(stream);
  *out = *of_capture ? cmr_host_capture_sequence(stream) : (uint64_t)(uintptr_t)stream;
  return CMR_SUCCESS;
}

cmr_backend_stream_kind cmr_backend_stream_kind_of(cmr_stream stream) {
  return stream == CMR_DEFAULT_STREAM ? CMR_BACKEND_STREAM_LEGACY_DEFAULT : CMR_BACKEND_STREAM_MADE;
}

/* An event is a distinct heap token, like a stream. */
cmr_status cmr_backend_event_create(cmr_backend_event *out) {
  cmr_status status = cmr_host_injected(CMR_BACKEND_HOST_EVENT_CREATE, "cudaEventCreateWithFlags");
  if (status != CMR_SUCCESS) return status;
  void *token = malloc(1);
  if (token == NULL) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "no host memory for an event token");
  }
  *out = token;
  return CMR_SUCCESS;
}

void cmr_backend_event_destroy(cmr_backend_event event) { free(event); }

cmr_status cmr_backend_event_record(cmr_backend_event event, cmr_stream stream) {
  (void)event, (void)stream;
  atomic_fetch_add_explicit(&cmr_host_counts.event_records, 1, memory_order_relaxed);
  cmr_status status = cmr_host_capture_forbids(CMR_HOST_CAPTURE_STREAM, stream, "cudaEventRecord");
  return status != CMR_SUCCESS ? status : cmr_host_injected(CMR_BACKEND_HOST_EVENT_RECORD, "cudaEventRecord");
}

cmr_status cmr_backend_stream_wait_event(cmr_stream stream, cmr_backend_event event) {
  (void)stream, (void)event;
  atomic_fetch_add_explicit(&cmr_host_counts.stream_waits, 1, memory_order_relaxed);
  cmr_status status = cmr_host_capture_forbids(CMR_HOST_CAPTURE_STREAM, stream, "cudaStreamWaitEvent");
  return status != CMR_SUCCESS ? status : cmr_host_injected(CMR_BACKEND_HOST_STREAM_WAIT, "cudaStreamWaitEvent");
}

cmr_status cmr_backend_event_synchronize(cmr_backend_event event) {
  (void)event;
  atomic_fetch_add_explicit(&cmr_host_counts.event_synchronizes, 1, memory_order_relaxed);
  cmr_status status = cmr_host_capture_forbids(CMR_HOST_CAPTURE_ANY, NULL, "cudaEventSynchronize");
  return status != CMR_SUCCESS ? status : cmr_host_injected(CMR_BACKEND_HOST_EVENT_SYNCHRONIZE, "cudaEventSynchronize");
}

/* Host work is complete: reached, unless a test injects a failure. */
cmr_status cmr_backend_event_query(cmr_backend_event event, bool *reached) {
  (void)event;
  atomic_fetch_add_explicit(&cmr_host_counts.event_queries, 1, memory_order_relaxed);
  cmr_status status = cmr_host_capture_forbids(CMR_HOST_CAPTURE_ANY, NULL, "cudaEventQuery");
  if (status == CMR_SUCCESS) status = cmr_host_injected(CMR_BACKEND_HOST_EVENT_QUERY, "cudaEventQuery");
  *reached = status == CMR_SUCCESS;
  return status;
}

cmr_status cmr_backend_stream_synchronize(cmr_stream stream) {
  /* host work is complete when it returns */
  cmr_status status = cmr_host_capture_forbids(CMR_HOST_CAPTURE_STREAM, stream, "cudaStreamSynchronize");
  return status != CMR_SUCCESS ? status
                               : cmr_host_injected(CMR_BACKEND_HOST_STREAM_SYNCHRONIZE, "cudaStreamSynchronize");
}

cmr_status cmr_backend_check_address(const void *ptr, size_t bytes, const char *name, const char *what) {
  if (cmr_host_range_mapped(ptr, bytes)) return CMR_SUCCESS;
  return cmr_error(CMR_ERROR_INVALID_ARGUMENT,
                   "%s: %s %p (%zu bytes) is not memory of this process: no page is mapped there", what, name, ptr,
                   bytes);
}

cmr_status cmr_backend_copy(void *destination, const void *source, size_t bytes, cmr_stream stream) {
  (void)stream;
  cmr_status status = cmr_host_injected(CMR_BACKEND_HOST_COPY, "cudaMemcpyAsync");
  if (status == CMR_SUCCESS && bytes > 0) {
    memmove(destination, source, bytes);
  }
  return status;
}

cmr_status cmr_backend_fill(void *ptr, unsigned char byte, size_t bytes, cmr_stream stream) {
  (void)stream;
  cmr_status status = cmr_host_injected(CMR_BACKEND_HOST_FILL, "cudaMemsetAsync");
  if (status == CMR_SUCCESS && bytes > 0) {
    memset(ptr, byte, bytes);
  }
  return status;
}

cmr_status cmr_backend_device_synchronize(void) {
  atomic_fetch_add_explicit(&cmr_host_counts.device_synchronizes, 1, memory_order_relaxed);
  cmr_status status = cmr_host_capture_forbids(CMR_HOST_CAPTURE_ANY, NULL, "cudaDeviceSynchronize");
  return status != CMR_SUCCESS ? status
                               : cmr_host_injected(CMR_BACKEND_HOST_DEVICE_SYNCHRONIZE, "cudaDeviceSynchronize");
}

void cmr_backend_host_counts_read(cmr_backend_host_counts *out) {
  out->event_records = atomic_load(&cmr_host_counts.event_records);
  out->stream_waits = atomic_load(&cmr_host_counts.stream_waits);
  out->event_synchronizes = atomic_load(&cmr_host_counts.event_synchronizes);
  out->device_synchronizes = atomic_load(&cmr_host_counts.device_synchronizes);
  out->event_queries = atomic_load(&cmr_host_counts.event_queries);
}

/* ---- virtual memory: mmap reservations, committed by mprotect ------------------------------ */

static cmr_status cmr_host_vm_failure(const char *call, void *address, size_t bytes) {
  int error = errno;
  return cmr_error(error == ENOMEM ? CMR_ERROR_OUT_OF_MEMORY : CMR_ERROR_CUDA, "%s(%p, %zu): %s", call, address, bytes,
                   strerror(error));
}

cmr_status cmr_backend_vm_granularity(int device, size_t *out) {
  (void)device;
  *out = (size_t)sysconf(_SC_PAGESIZE);
  return CMR_SUCCESS;
}

cmr_status cmr_backend_vm_reserve(int device, size_t bytes, void **out) {
  (void)device;
  *out = NULL;
  cmr_status status = cmr_host_injected(CMR_BACKEND_HOST_VM_RESERVE, "cuMemAddressReserve");
  if (status != CMR_SUCCESS) return status;
  void *address = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (address == MAP_FAILED) { /* a size past what the process may map, too, is addresses there are none of */
    int error = errno;
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "mmap(NULL, %zu, PROT_NONE): %s", bytes, strerror(error));
  }
  *out = address;
  return CMR_SUCCESS;
}

cmr_status cmr_backend_vm_unreserve(void *address, size_t bytes) {
  return munmap(address, bytes) == 0 ? CMR_SUCCESS : cmr_host_vm_failure("munmap", address, bytes);
}

cmr_status cmr_backend_vm_commit(int device, void *address, size_t bytes) {
  (void)device;
  cmr_status status = cmr_host_injected(CMR_BACKEND_HOST_VM_COMMIT, "cuMemCreate");
  if (status != CMR_SUCCESS) return status;
  return mprotect(address, bytes, PROT_READ | PROT_WRITE) == 0
             ? CMR_SUCCESS
             : cmr_host_vm_failure("mprotect(PROT_READ | PROT_WRITE)", address, bytes);
}

cmr_status cmr_backend_vm_decommit(int device, void *address, size_t bytes) {
  (void)device;
  cmr_status status = cmr_host_injected(CMR_BACKEND_HOST_VM_DECOMMIT, "cuMemUnmap");
  if (status != CMR_SUCCESS) return status;
  if (madvise(address, bytes, MADV_DONTNEED) != 0) return cmr_host_vm_failure("madvise(MADV_DONTNEED)", address, bytes);
  return mprotect(address, bytes, PROT_NONE) == 0 ? CMR_SUCCESS
                                                  : cmr_host_vm_failure("mprotect(PROT_NONE)", address, bytes);
}
