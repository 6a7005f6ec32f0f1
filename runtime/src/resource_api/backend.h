/* SPDX-License-Identifier: Apache-2.0 */
/* The one interface between cmr and CUDA. backend_cuda.c implements it over
 * the CUDA runtime; backend_host.c implements the part the host build needs
 * over plain host memory. Nothing else in cmr calls CUDA. Every function
 * returns a cmr_status with a message naming the CUDA call and error. */
#ifndef CMR_BACKEND_H
#define CMR_BACKEND_H

#include "internal.h"

/* Devices. In the host build the devices are simulated: CMR_HOST_DEVICE_COUNT
 * of them (1 when unset), all with the host's memory, and each thread has
 * its current one (0 at first), as CUDA's threads do. Without a driver or
 * device: CMR_ERROR_NO_DEVICE. */
cmr_status cmr_backend_device_count(int *out);
cmr_status cmr_backend_get_device(int *out);
cmr_status cmr_backend_set_device(int device);

/* A resource's CUDA calls run with the resource's device current (the one
 * current when it was made) and leave the caller's as it was:
 *   cmr_backend_device_guard guard;
 *   status = cmr_backend_device_enter(device, &guard);
 *   if (status == CMR_SUCCESS) status = cmr_backend_device_leave(&guard, <the CUDA calls>);
 * Entering costs one cudaGetDevice when `device` is current already, and
 * leaving nothing then. */
typedef struct cmr_backend_device_guard {
  int previous;  /* the caller's current device */
  bool switched; /* whether enter made another device current */
} cmr_backend_device_guard;
cmr_status cmr_backend_device_enter(int device, cmr_backend_device_guard *guard);
/* Restores the caller's device; returns `status` (what the guarded calls
 * returned) unless that was success and the restore failed. */
cmr_status cmr_backend_device_leave(const cmr_backend_device_guard *guard, cmr_status status);
/* The device a resource made now belongs to: the current one, or -1 where
 * none can be named (a CUDA build without a driver), which the _on calls
 * below and cmr_backend_device_enter take as "leave the current one". */
int cmr_backend_device_at_creation(void);
cmr_status cmr_backend_memory_info(size_t *free_bytes, size_t *total_bytes);
/* Whether the current device can access pageable host memory (HMM / ATS). */
cmr_status cmr_backend_pageable_memory_access(bool *out);

/* Streams. In the host build a stream is a token and all work is complete.
 * `flags` are CMR_STREAM_FLAGS_* (cmr/stream_pool.h), already checked. */
cmr_status cmr_backend_stream_create(unsigned flags, cmr_stream *out);
cmr_status cmr_backend_stream_destroy(cmr_stream stream);
cmr_status cmr_backend_stream_synchronize(cmr_stream stream);
/* Whether `stream` is a handle cmr_stream_create gave out and
 * cmr_stream_destroy has destroyed since. Only the host build can know (its
 * tokens are never given out twice); the CUDA build answers false. */
bool cmr_backend_stream_destroyed(cmr_stream stream);

/* A process-wide identity of a stream that a destroyed stream's successor
 * at the same address never shares (cudaStreamGetId). In the host build it
 * is the token's value: host work is complete when a call returns, so a
 * recycled token cannot be confused with pending work. */
cmr_status cmr_backend_stream_id(cmr_stream stream, uint64_t *out);
/* A name for a stream that is capturing a graph, found without a call
 * capture forbids: the driver refuses cudaStreamGetId on a capturing
 * stream (cudaErrorStreamCaptureUnsupported, in every capture mode) and
 * the refusal invalidates the capture. A stream cmr made is named by its
 * id, known without asking (*of_capture false); any other by the id of the
 * capture sequence under way on it (cudaStreamGetCaptureInfo, which
 * capture allows; unique in the process), *of_capture true. */
cmr_status cmr_backend_stream_id_in_capture(cmr_stream stream, uint64_t *out, bool *of_capture);
/* What kind of stream a handle names, known without asking the driver. */
typedef enum cmr_backend_stream_kind {
  CMR_BACKEND_STREAM_MADE,              /* one made by cudaStreamCreate (or a host token) */
  CMR_BACKEND_STREAM_LEGACY_DEFAULT,    /* NULL or cudaStreamLegacy: one stream for the process */
  CMR_BACKEND_STREAM_PER_THREAD_DEFAULT /* cudaStreamPerThread: each thread's own stream */
} cmr_backend_stream_kind;
cmr_backend_stream_kind cmr_backend_stream_kind_of(cmr_stream stream);

/* Events, for ordering one stream's work after another's. In the host build
 * they are tokens, and every call is counted (cmr_backend_host_counts) so
 * tests can check the ordering logic without a GPU. */
typedef struct cmr_backend_event_st *cmr_backend_event;
cmr_status cmr_backend_event_create(cmr_backend_event *out);
void cmr_backend_event_destroy(cmr_backend_event event);
/* Marks the point in `stream` up to which its work has been enqueued. */
cmr_status cmr_backend_event_record(cmr_backend_event event, cmr_stream stream);
/* Makes later work on `stream` wait for `event`'s last recorded point. */
cmr_status cmr_backend_stream_wait_event(cmr_stream stream, cmr_backend_event event);
/* Whether `event`'s last recorded point has been reached, without blocking
 * (an event never recorded has). */
cmr_status cmr_backend_event_query(cmr_backend_event event, bool *reached);
/* Blocks the calling thread until `event`'s last recorded point is reached. */
cmr_status cmr_backend_event_synchronize(cmr_backend_event event);
/* Blocks until all work on the current device, on every stream, is done. */
cmr_status cmr_backend_device_synchronize(void);
/* The same two with `device` current (see cmr_backend_device_enter): an
 * event belongs to the device current when it is made, and can be recorded
 * only on that device's streams. */
cmr_status cmr_backend_event_create_on(int device, cmr_backend_event *out);
cmr_status cmr_backend_device_synchronize_on(int device);
/* cudaStreamSynchronize with `device` current: the legacy default stream
 * (NULL) is the current device's. */
cmr_status cmr_backend_stream_synchronize_on(int device, cmr_stream stream);

/* Stream capture (CUDA graphs). Whether `stream` is capturing work into a
 * graph (cudaStreamIsCapturing: active, or invalidated and not yet ended).
 * The legacy default stream while another stream of its device captures is
 * CMR_ERROR_STREAM_CAPTURE: it cannot be used then. Capture forbids on a
 * capturing stream, and on the device while any stream captures, every
 * call that waits or asks how far work has got (event and stream
 * synchronization and queries, device synchronization), and an event
 * recorded there would pull any stream that waits for it into the capture. */
/* Whether `stream` is surely not capturing: true when it is not; false
 * when it is, or when telling takes more (the caller then asks
 * cmr_backend_stream_capturing, whose status says what went wrong). The
 * host build answers with one load, inline, on the path of every
 * allocation and free. */
static inline bool cmr_backend_stream_surely_not_capturing(cmr_stream stream);
#if CMR_WITH_CUDA
cmr_status cmr_backend_stream_capturing(cmr_stream stream, bool *out);
static inline bool cmr_backend_stream_surely_not_capturing(cmr_stream stream) {
  /* The legacy default stream (NULL) is never captured: CUDA refuses to
   * begin a capture on it. The driver call is left out for it (on the
   * GPU machine the query is about as dear as the rest of a pool's warm
   * pair); a warm pair on it calls nothing a capture of another stream
   * could be broken by, and a colder path's driver call gets the driver's
   * own answer. */
  if (stream == NULL) return true;
  bool capturing = false;
  return cmr_backend_stream_capturing(stream, &capturing) == CMR_SUCCESS && !capturing;
}
#else
/* Streams marked capturing, and whether `stream` is one (host_capture.c). */
extern _Atomic size_t cmr_host_capturing_streams;
bool cmr_host_stream_in_table(cmr_stream stream);
static inline cmr_status cmr_backend_stream_capturing(cmr_stream stream, bool *out) {
  *out =
      atomic_load_explicit(&cmr_host_capturing_streams, memory_order_acquire) != 0 && cmr_host_stream_in_table(stream);
  return CMR_SUCCESS;
}
static inline bool cmr_backend_stream_surely_not_capturing(cmr_stream stream) {
  (void)stream;
  return atomic_load_explicit(&cmr_host_capturing_streams, memory_order_acquire) == 0;
}
#endif
/* Memory a capture may allocate, at least 256-aligned: on a capturing
 * stream a graph memory node (cudaMallocAsync on the current device's
 * current pool), which every launch of the graph maps anew and whose free
 * node, or a free after the capture, gives back: launched any number of
 * times, a graph that frees what it allocates holds the same memory. In
 * the host build, host memory (counted: cmr_backend_host_graph_memory). */
cmr_status cmr_backend_graph_alloc(size_t bytes, cmr_stream stream, void **out);
/* Frees memory of cmr_backend_graph_alloc, ordered on `stream` (a free node
 * when `stream` is capturing): cudaFreeAsync. Memory a graph keeps (does
 * not free in it) exists only once the graph has launched: freed after the
 * capture while the graph never launched, there is nothing at `ptr`, which
 * the driver answers cudaErrorInvalidValue and this CMR_ERROR_UNKNOWN_POINTER. */
cmr_status cmr_backend_graph_free(void *ptr, cmr_stream stream);
/* What graph memory is (CMR_PROPERTY_* bits): device memory in the CUDA
 * build, host memory every simulated device reaches in the host build. */
unsigned cmr_backend_graph_memory_properties(void);

#if !CMR_WITH_CUDA
/* The host build's simulation of capture: a stream marked capturing answers
 * cmr_backend_stream_capturing true, and every call capture forbids (see
 * above: an event recorded on it, a wait or synchronization on it, a
 * device synchronization or an event query or synchronization while any
 * stream is marked) fails with CMR_ERROR_STREAM_CAPTURE, as the driver's
 * cudaErrorStreamCaptureUnsupported, and is counted. Test-only; at most 64
 * streams are marked at once (a 65th mark is ignored and counted too). */
void cmr_backend_host_mark_capturing(cmr_stream stream, bool capturing);
/* Forbidden calls made since the process started. */
unsigned long cmr_backend_host_capture_violations(void);
/* Blocks of cmr_backend_graph_alloc not yet freed, and their bytes. */
void cmr_backend_host_graph_memory(size_t *blocks, size_t *bytes);
/* While `never` holds, graph memory is freed as after graphs that never
 * launched: each free finds nothing there (CMR_ERROR_UNKNOWN_POINTER), as
 * the driver's does. */
void cmr_backend_host_graphs_never_launched(bool never);
/* How many ordering calls the host backend has answered, process-wide. */
typedef struct cmr_backend_host_counts {
  unsigned long event_records;
  unsigned long stream_waits;
  unsigned long event_synchronizes;
  unsigned long device_synchronizes;
  unsigned long event_queries;
} cmr_backend_host_counts;
void cmr_backend_host_counts_read(cmr_backend_host_counts *out);

/* Test-only fault injection: the `nth` call from now (1 = the next) of
 * `call`, from any thread, fails with CMR_ERROR_CUDA and a message naming
 * the call; 0 cancels. Failed calls are counted like the others. */
typedef enum cmr_backend_host_call {
  CMR_BACKEND_HOST_EVENT_RECORD,
  CMR_BACKEND_HOST_STREAM_WAIT,
  CMR_BACKEND_HOST_EVENT_SYNCHRONIZE,
  CMR_BACKEND_HOST_DEVICE_SYNCHRONIZE,
  CMR_BACKEND_HOST_STREAM_ID,
  CMR_BACKEND_HOST_EVENT_QUERY,
  CMR_BACKEND_HOST_STREAM_SYNCHRONIZE,
  CMR_BACKEND_HOST_COPY,
  CMR_BACKEND_HOST_EVENT_CREATE,
  CMR_BACKEND_HOST_FILL,
  CMR_BACKEND_HOST_VM_RESERVE,
  CMR_BACKEND_HOST_VM_COMMIT,
  CMR_BACKEND_HOST_VM_DECOMMIT,
  CMR_BACKEND_HOST_CALLS
} cmr_backend_host_call;
void cmr_backend_host_fail_call(cmr_backend_host_call call, unsigned long nth);
/* The device that was current at the last call of `call`, from any thread;
 * -1 before the first. Tests read it to check that a resource's work ran on
 * the resource's device. */
int cmr_backend_host_device_seen(cmr_backend_host_call call);
#endif

/* Virtual memory: a range of addresses reserved without memory behind it,
 * into which memory is committed (and out of which it is decommitted) in
 * multiples of the granularity, at offsets from the range's start that are
 * multiples of it, in any order and any pieces: a piece committed in one
 * call may be decommitted a granule at a time. CUDA build: the driver's
 * virtual memory management on `device` (-1: the current one):
 * cuMemAddressReserve, one cuMemCreate + cuMemMap per granule and
 * cuMemSetAccess for read and write from `device` as memory is committed,
 * cuMemUnmap as it is decommitted (the physical memory goes with its
 * mapping), cuMemAddressFree. Host build: mmap(PROT_NONE) reserves,
 * mprotect(PROT_READ | PROT_WRITE) commits, madvise(MADV_DONTNEED) and
 * mprotect(PROT_NONE) decommit (the pages go back to the kernel and read
 * as zeros when committed again), munmap frees.
 * Decommitting does not wait for work on the memory: the caller has. A
 * device or driver without virtual memory management:
 * CMR_ERROR_UNSUPPORTED; no memory to commit, or no addresses to reserve:
 * CMR_ERROR_OUT_OF_MEMORY. */
/* The granularity on `device`: the driver's minimum, or the page size. */
cmr_status cmr_backend_vm_granularity(int device, size_t *out);
/* `bytes` (a multiple of the granularity) of addresses aligned to the
 * granularity, none of it committed. */
cmr_status cmr_backend_vm_reserve(int device, size_t bytes, void **out);
/* Frees a reservation (`address` and `bytes` as reserved) with nothing of
 * it committed. */
cmr_status cmr_backend_vm_unreserve(void *address, size_t bytes);
/* Commits the uncommitted `bytes` at `address`, inside one reservation;
 * on failure nothing of it is committed. */
cmr_status cmr_backend_vm_commit(int device, void *address, size_t bytes);
/* Decommits the committed `bytes` at `address`. */
cmr_status cmr_backend_vm_decommit(int device, void *address, size_t bytes);

/* Whether `ptr` is managed (unified) memory, as cudaPointerGetAttributes
 * says; host memory unknown to CUDA is not, nor is any memory without a
 * driver. Never, in the host build. */
cmr_status cmr_backend_pointer_is_managed(const void *ptr, bool *out);
/* Migrates `bytes` of managed memory at `ptr` to `device`, ordered on
 * `stream` (cudaMemPrefetchAsync to a cudaMemLocationTypeDevice location).
 * A no-op in the host build, whose memory is already where the host is. */
cmr_status cmr_backend_prefetch(const void *ptr, size_t bytes, int device, cmr_stream stream);

/* Whether `bytes` (> 0) at `ptr`, an address a caller gave (`name`, in
 * `what`'s message), are memory a copy can reach: in the CUDA build memory
 * CUDA knows (device, managed or registered host memory, as
 * cudaPointerGetAttributes says; that the range ends inside the allocation
 * is not checked) or else mapped host memory; in the host build mapped host
 * memory (host_range.h, which does not see an unreadable mapped page).
 * CMR_ERROR_INVALID_ARGUMENT, with a message, where it is not. */
cmr_status cmr_backend_check_address(const void *ptr, size_t bytes, const char *name, const char *what);

/* Copy between any two of host and device memory, ordered on `stream`. */
cmr_status cmr_backend_copy(void *destination, const void *source, size_t bytes, cmr_stream stream);
/* Sets `bytes` of memory at `ptr` to `byte`, ordered on `stream`
 * (cudaMemsetAsync; memset in the host build, complete on return). The
 * memory is any the device can write: device, managed or pinned host
 * memory, or host memory in the host build. 0 bytes is a no-op. */
cmr_status cmr_backend_fill(void *ptr, unsigned char byte, size_t bytes, cmr_stream stream);

#if CMR_WITH_CUDA
/* Plain allocations: cudaMalloc, cudaMallocManaged, cudaMallocHost. */
cmr_status cmr_backend_device_alloc(size_t bytes, void **out);
cmr_status cmr_backend_device_free(void *ptr); /* device and managed memory */
cmr_status cmr_backend_managed_alloc(size_t bytes, void **out);
cmr_status cmr_backend_pinned_alloc(size_t bytes, void **out);
cmr_status cmr_backend_pinned_free(void *ptr);

/* Where the driver keeps `bytes` of pageable or managed memory at `ptr`:
 * on `device` (preferred location, and mapped there: accessed by), or on
 * the host when `device` is negative (preferred location only). */
cmr_status cmr_backend_advise_location(const void *ptr, size_t bytes, int device);

/* Stream-ordered memory pools (cudaMemPool_t). */
typedef struct CUmemPoolHandle_st *cmr_backend_pool;

/* The kinds of shareable handle a pool exports: a set of these bits. */
typedef enum cmr_backend_pool_export {
  CMR_BACKEND_POOL_EXPORT_NONE = 0,
  CMR_BACKEND_POOL_EXPORT_POSIX_FILE_DESCRIPTOR = 1 << 0,
  CMR_BACKEND_POOL_EXPORT_FABRIC = 1 << 1
} cmr_backend_pool_export;

/* A new device pool on the current device that exports every kind of handle
 * in `exports` (a set of cmr_backend_pool_export bits; CMR_ERROR_UNSUPPORTED
 * where the device cannot export one of them) and keeps up to
 * `release_threshold` bytes reserved across synchronizations. */
cmr_status cmr_backend_pool_create(unsigned exports, size_t release_threshold, cmr_backend_pool *out);
cmr_status cmr_backend_pool_destroy(cmr_backend_pool pool);
/* Lets work on `device` read and write `pool`'s memory (which is on `owner`):
 * cudaMemPoolSetAccess, after cudaDeviceCanAccessPeer says it can
 * (CMR_ERROR_UNSUPPORTED where it cannot). */
cmr_status cmr_backend_pool_grant_access(cmr_backend_pool pool, int owner, int device);
/* The driver's counters of `pool` (cudaMemPoolAttr{Reserved,Used}Mem{Current,High}):
 * bytes reserved from the device and bytes allocated out of the pool, by
 * every user of it, now and at their highs; and the highs set to the
 * current values. */
typedef struct cmr_backend_pool_counters {
  size_t reserved, reserved_high, used, used_high;
} cmr_backend_pool_counters;
cmr_status cmr_backend_pool_usage(cmr_backend_pool pool, cmr_backend_pool_counters *out);
cmr_status cmr_backend_pool_reset_highs(cmr_backend_pool pool);
/* The release threshold `pool` has now, and a new one. */
cmr_status cmr_backend_pool_release_threshold(cmr_backend_pool pool, uint64_t *out);
cmr_status cmr_backend_pool_set_release_threshold(cmr_backend_pool pool, size_t release_threshold);
/* Whether the driver takes pools whose memory serves hardware decompression
 * (CUDA 12.8 and later): then every pool cmr_backend_pool_create makes does. */
cmr_status cmr_backend_hw_decompress_supported(bool *out);
/* Whether the device memory at `ptr` can be a buffer of hardware
 * decompression, as the driver reports it (CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE). */
cmr_status cmr_backend_hw_decompress_capable(const void *ptr, bool *out);
/* CUDA 13's managed-memory pool of the current device, its release
 * threshold raised to the maximum where it was 0 (the driver's default);
 * CMR_ERROR_UNSUPPORTED where the driver or device has none. */
cmr_status cmr_backend_managed_pool(cmr_backend_pool *out);
/* Whether the current device supports stream-ordered pools at all. */
cmr_status cmr_backend_pools_supported(bool *out);
cmr_status cmr_backend_pool_alloc(cmr_backend_pool pool, size_t bytes, cmr_stream stream, void **out);
cmr_status cmr_backend_pool_free(void *ptr, cmr_stream stream);

/* A pool's reuse policies, each one boolean attribute of the pool. */
typedef enum cmr_backend_reuse_policy {
  CMR_BACKEND_POOL_REUSE_FOLLOW_EVENT_DEPENDENCIES,  /* cudaMemPoolReuseFollowEventDependencies */
  CMR_BACKEND_POOL_REUSE_ALLOW_OPPORTUNISTIC,        /* cudaMemPoolReuseAllowOpportunistic */
  CMR_BACKEND_POOL_REUSE_ALLOW_INTERNAL_DEPENDENCIES /* cudaMemPoolReuseAllowInternalDependencies */
} cmr_backend_reuse_policy;
cmr_status cmr_backend_pool_reuse(cmr_backend_pool pool, cmr_backend_reuse_policy policy, bool *out);
cmr_status cmr_backend_pool_set_reuse(cmr_backend_pool pool, cmr_backend_reuse_policy policy, bool enabled);
/* Releases the pool's unused memory until at most `min_bytes_to_keep`
 * stay reserved (cudaMemPoolTrimTo). */
cmr_status cmr_backend_pool_trim(cmr_backend_pool pool, size_t min_bytes_to_keep);
/* The current device's current pool (cudaDeviceGetMemPool) when `current`,
 * else its default pool (cudaDeviceGetDefaultMemPool): the device's, never
 * to be destroyed by cmr. */
cmr_status cmr_backend_device_pool(bool current, cmr_backend_pool *out);
/* A new pool of pinned host memory on the host (`numa_node` -1) or on host
 * NUMA node `numa_node`, which the current device may read and write;
 * CMR_ERROR_UNSUPPORTED where the device has no pools at that location. */
cmr_status cmr_backend_host_pool_create(int numa_node, size_t release_threshold, cmr_backend_pool *out);

/* Sharing a pool with another process: the pool as a new POSIX file
 * descriptor (the caller closes it), and a pool imported from one (the
 * descriptor stays the caller's; the import is released with
 * cmr_backend_pool_destroy). */
cmr_status cmr_backend_pool_export_file_descriptor(cmr_backend_pool pool, int *out);
cmr_status cmr_backend_pool_import_file_descriptor(int descriptor, cmr_backend_pool *out);
/* One allocation of an exported pool, named for an importer of the pool
 * (cudaMemPoolPtrExportData), and the importer's mapping of it, which it
 * frees with cmr_backend_pool_free. */
enum { CMR_BACKEND_POOL_POINTER_EXPORT_BYTES = 64 };
cmr_status cmr_backend_pool_export_pointer(void *ptr, unsigned char out[CMR_BACKEND_POOL_POINTER_EXPORT_BYTES]);
cmr_status cmr_backend_pool_import_pointer(cmr_backend_pool pool,
                                           const unsigned char data[CMR_BACKEND_POOL_POINTER_EXPORT_BYTES], void **out);

/* Page-locks `bytes` of mapped host memory at `ptr` for every device
 * (cudaHostRegister, portable), and undoes it. */
cmr_status cmr_backend_host_register(void *ptr, size_t bytes);
cmr_status cmr_backend_host_unregister(void *ptr);
#endif

#endif /* CMR_BACKEND_H */
