/* SPDX-License-Identifier: Apache-2.0 */
/* cmr core: status codes, the resource ref and its ops table, dispatch,
 * lifetimes, the per-device resource table, device helpers and streams.
 *
 * Conventions: every fallible call returns a cmr_status and hands results
 * back through trailing out-parameters; on failure cmr_last_error_message()
 * says what was wrong and with which value.
 *
 * Ownership (the README says it the same way):
 * 1. Every handle obtained (_create, _from_ref, cmr_stack_parse,
 *    cmr_device_buffer_create) owns one share: destroy it once. destroy(NULL)
 *    is a no-op; a second destroy is CMR_ERROR_DESTROYED_HANDLE and never
 *    drops anyone else's share.
 * 2. A ref is not a share: it works while some share of its resource lives.
 *    Whatever keeps a ref beyond a call (an adaptor's upstream, a bin, a
 *    buffer, the per-device table) takes a share of its own.
 * 3. cmr_ref_retain / cmr_ref_release take and give back a share through a
 *    ref; a retain as the last share goes fails (CMR_ERROR_DESTROYED_HANDLE).
 * 4. Threads that may race with a replacement of the per-device entry use
 *    cmr_acquire_*_resource_ref and cmr_ref_release the ref when done.
 * 5. A handle or ref used after its resource is gone is reported as
 *    CMR_ERROR_DESTROYED_HANDLE however long ago that was; no misuse reads
 *    freed memory.
 * 6. A call into a resource (through a ref, a typed method, a device buffer)
 *    holds it alive until it returns: a resource destroyed from inside its
 *    own call, on that thread (its callback, an adaptor above it, a failure
 *    callback), goes when the thread's outermost call returns. Destroys
 *    racing on two threads tear down once; the loser is told
 *    CMR_ERROR_DESTROYED_HANDLE. A destroy on another thread while a call
 *    is under way is the caller's race: hold a share of what another thread
 *    may destroy (rule 4).
 * 7. A resource called again from inside its own upstream's call on the
 *    same thread serves the call, or, where that would wait for a lock the
 *    thread holds, refuses it with CMR_ERROR_REENTRANT_CALL (each resource's
 *    documentation says which).
 * 8. A forked child has only what it makes itself: it can always make and
 *    use resources, buffers, stacks and streams of its own (fork handlers
 *    hold cmr's process-wide locks across fork), and its per-device table
 *    starts empty. Whatever the parent made is the parent's: any use in the
 *    child is CMR_ERROR_FORKED; a destroy there succeeds once and a
 *    cmr_ref_release succeeds, freeing nothing and calling no CUDA (the
 *    parent's device memory, streams and events do not exist in a child). */
#ifndef CMR_CORE_H
#define CMR_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmr/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status -------------------------------------------------------------- */

typedef enum cmr_status {
  CMR_SUCCESS = 0,
  CMR_ERROR_INVALID_ARGUMENT = 1,      /* a value outside what the call accepts */
  CMR_ERROR_NULL_POINTER = 2,          /* a required pointer (out-parameter, handle) was NULL */
  CMR_ERROR_INVALID_REF = 3,           /* a ref with a NULL ops table (zeroed, or never made) */
  CMR_ERROR_DESTROYED_HANDLE = 4,      /* a handle used after its last release */
  CMR_ERROR_BAD_ALIGNMENT = 5,         /* an alignment that is zero or not a power of two */
  CMR_ERROR_UNSUPPORTED_ALIGNMENT = 6, /* a valid alignment the resource cannot honour */
  CMR_ERROR_SIZE_OVERFLOW = 7,         /* a size that overflows once rounded or added */
  CMR_ERROR_OUT_OF_MEMORY = 8,
  CMR_ERROR_UNKNOWN_DEVICE = 9,    /* a device id outside [0, device count) */
  CMR_ERROR_NO_DEVICE = 10,        /* no CUDA driver or no CUDA device */
  CMR_ERROR_CUDA = 11,             /* another CUDA error; the message names it */
  CMR_ERROR_UNSUPPORTED = 12,      /* not available in this build or on this device */
  CMR_ERROR_PROPERTY_MISSING = 13, /* the resource lacks a property the caller requires */
  CMR_ERROR_UNKNOWN_POINTER = 14,  /* a pointer the resource did not hand out */
  CMR_ERROR_INTERNAL = 15,         /* a broken invariant inside cmr (a bug: please report) */
  CMR_ERROR_IO = 16,               /* a file could not be written or flushed (a full disk): the message says why */
  CMR_ERROR_REENTRANT_CALL = 17,   /* a resource called from its own upstream's call, where that would deadlock */
  CMR_ERROR_FORKED = 18,           /* in a forked child: a handle, ref or stream the parent made */
  CMR_ERROR_STREAM_CAPTURE = 19,   /* refused on a stream capturing a CUDA graph, where it would break the capture */
  CMR_ERROR_IPC_SAME_PROCESS = 20, /* shared memory imported into the very process that exported it (cmr/ipc.h) */
  CMR_ERROR_IPC_GONE = 21 /* what an IPC descriptor names is gone: freed, or its pool destroyed, by the exporter */
} cmr_status;

/* A fixed English name for a status, e.g. "CMR_ERROR_OUT_OF_MEMORY". Never NULL. */
CMR_API const char *cmr_status_string(cmr_status status);

/* The message of the last failed call on this thread ("" if none yet). The
 * pointer stays valid until the next cmr call on this thread. */
CMR_API const char *cmr_last_error_message(void);

/* Forget the last message on this thread. */
CMR_API void cmr_clear_last_error(void);

/* ---- streams --------------------------------------------------------------- */

/* A cudaStream_t in CUDA builds (the same type, so CUDA streams pass as they
 * are); in the host build an opaque token whose work is always complete.
 * NULL is the default stream. */
typedef struct CUstream_st *cmr_stream;

#define CMR_DEFAULT_STREAM ((cmr_stream)0)

/* A stream of cmr_stream_create is known to cmr by its handle, which saves
 * a driver call on every allocation and free on it: destroy it with
 * cmr_stream_destroy, not cudaStreamDestroy (else a later stream made
 * elsewhere and given the same handle by CUDA would be taken for it, and
 * could reuse its free memory before its work is done). Destroying it
 * lets the resources drop what they kept for it, its free memory going
 * where other streams take it once its work is done. Streams made
 * elsewhere work too, at the cost of the driver call; what the resources
 * keep for them goes once unused for a while. */
CMR_API cmr_status cmr_stream_create(cmr_stream *out);
/* Destroys a live stream of cmr_stream_create, once. Any other stream - one
 * destroyed already, one made elsewhere (destroy it where it was made, e.g.
 * cudaStreamDestroy), a made-up handle - is refused with
 * CMR_ERROR_INVALID_ARGUMENT and left alone; so is the default stream. Both
 * builds behave alike (the two cases share one status: CUDA reuses a
 * destroyed stream's handle, so a destroyed stream cannot be told from
 * another). */
CMR_API cmr_status cmr_stream_destroy(cmr_stream stream);
/* Waits for the work ordered on `stream` (any stream, made here or
 * elsewhere). A stream destroyed by cmr_stream_destroy is refused: in the
 * host build with CMR_ERROR_INVALID_ARGUMENT; in the CUDA build, whose
 * handles are recycled, the driver decides (CMR_ERROR_CUDA, or the stream
 * that now has the handle). */
CMR_API cmr_status cmr_stream_synchronize(cmr_stream stream);

/* ---- the resource ref ---------------------------------------------------- */

/* Default alignment of every allocation, in bytes (as cudaMalloc's). */
#define CMR_DEFAULT_ALIGNMENT ((size_t)256)

/* Property bits of a resource. */
#define CMR_PROPERTY_DEVICE_ACCESSIBLE 0x1u
#define CMR_PROPERTY_HOST_ACCESSIBLE 0x2u

struct cmr_resource_ops;

/* A non-owning reference to a resource: copied freely, passed by value. */
typedef struct cmr_resource_ref {
  void *self;
  const struct cmr_resource_ops *ops;
} cmr_resource_ref;

/* Set in cmr_resource_ops.flags of cmr's own resources (reserved: a foreign
 * ops table leaves it clear). Their ref's `self` is then not an address but
 * a generation-checked token the runtime resolves on every call, so a ref
 * or handle used after its resource is gone is reported, however long ago
 * that was, and never reads freed memory. */
#define CMR_OPS_FLAG_COUNTED 0x1u

/* What a resource implements. The dispatch functions below validate their
 * arguments before calling through the table, so an implementation sees:
 * bytes > 0, a power-of-two alignment, and no overflow of bytes rounded up
 * to the alignment. allocate_sync / deallocate_sync may be NULL: the runtime
 * then uses allocate / deallocate on the default stream and synchronizes it.
 * retain / release may be NULL for a foreign resource the caller keeps alive
 * itself (then nothing that stores the ref extends its life); cmr's own
 * resources (CMR_OPS_FLAG_COUNTED) leave them NULL, as the runtime counts
 * their shares itself (cmr_ref_retain / cmr_ref_release). */
typedef struct cmr_resource_ops {
  uint32_t flags;
  const char *type_name;
  cmr_status (*allocate)(void *self, size_t bytes, size_t alignment, cmr_stream stream, void **out);
  cmr_status (*deallocate)(void *self, void *ptr, size_t bytes, size_t alignment, cmr_stream stream);
  cmr_status (*allocate_sync)(void *self, size_t bytes, size_t alignment, void **out);
  cmr_status (*deallocate_sync)(void *self, void *ptr, size_t bytes, size_t alignment);
  bool (*is_equal)(const void *self, cmr_resource_ref other);
  unsigned (*properties)(const void *self);
  void (*retain)(void *self);
  void (*release)(void *self);
} cmr_resource_ops;

/* Stream-ordered allocation of `bytes` with the default alignment (256).
 * bytes == 0 succeeds with *out = NULL. */
CMR_API cmr_status cmr_allocate(cmr_resource_ref ref, size_t bytes, cmr_stream stream, void **out);
/* Free `ptr` (of `bytes`, as allocated) in stream order. ptr == NULL is a no-op. */
CMR_API cmr_status cmr_deallocate(cmr_resource_ref ref, void *ptr, size_t bytes, cmr_stream stream);

/* As above with an explicit power-of-two alignment. A resource that cannot
 * honour it returns CMR_ERROR_UNSUPPORTED_ALIGNMENT, never a less aligned
 * pointer. */
CMR_API cmr_status cmr_allocate_aligned(cmr_resource_ref ref, size_t bytes, size_t alignment, cmr_stream stream,
                                        void **out);
CMR_API cmr_status cmr_deallocate_aligned(cmr_resource_ref ref, void *ptr, size_t bytes, size_t alignment,
                                          cmr_stream stream);

/* Synchronous pair: the memory is ready to use when allocate returns and no
 * longer in use by any queued work when deallocate returns. */
CMR_API cmr_status cmr_allocate_sync(cmr_resource_ref ref, size_t bytes, size_t alignment, void **out);
CMR_API cmr_status cmr_deallocate_sync(cmr_resource_ref ref, void *ptr, size_t bytes, size_t alignment);

/* Whether memory from `a` can be freed through `b` and vice versa. */
CMR_API cmr_status cmr_ref_equal(cmr_resource_ref a, cmr_resource_ref b, bool *out);

/* The CMR_PROPERTY_* mask of the resource. */
CMR_API cmr_status cmr_ref_properties(cmr_resource_ref ref, unsigned *out);

/* CMR_SUCCESS when the resource has every property in `required`, else
 * CMR_ERROR_PROPERTY_MISSING naming the missing ones. */
CMR_API cmr_status cmr_ref_require_properties(cmr_resource_ref ref, unsigned required);

/* The resource's type name, e.g. "pool". */
CMR_API cmr_status cmr_ref_type_name(cmr_resource_ref ref, const char **out);

/* Take and drop a share of the resource behind a ref (no-ops for a foreign
 * resource without retain/release). Use them to keep a resource alive past
 * its owner's destroy. Retaining a resource whose last share is being
 * released (by another thread, or by a destroy running right now) fails with
 * CMR_ERROR_DESTROYED_HANDLE: it never brings a dying resource back.
 * Release only shares you took: a ref is not a share, and a release of a
 * resource with no share left is CMR_ERROR_DESTROYED_HANDLE. */
CMR_API cmr_status cmr_ref_retain(cmr_resource_ref ref);
CMR_API cmr_status cmr_ref_release(cmr_resource_ref ref);

/* Whether the ref points at a live resource (CMR_SUCCESS) or not (the
 * status that any call through it would return). */
CMR_API cmr_status cmr_ref_validate(cmr_resource_ref ref);

/* ---- types used by resource parameters ------------------------------------ */

/* A size_t / int parameter of a resource's create function that has a
 * default (documented per parameter) takes one of these: a value, or "use
 * the default", which no value can be mistaken for (an explicit SIZE_MAX is
 * a size like any other, checked as such).
 *
 *   cmr_pool_resource_create(upstream, CMR_SIZE(1 << 30), CMR_SIZE_DEFAULT, CMR_SIZE_DEFAULT, CMR_POOL_CAPTURE_SERVE, &pool);
 *
 * In C the macros are compound literals; in C++ they are the same values
 * written as aggregates (cmr_optional_size{v, true}, cmr_optional_size{}),
 * so C++ callers use the same macros. A zeroed struct is the default. */
typedef struct cmr_optional_size {
  size_t value; /* read only when is_set */
  bool is_set;
} cmr_optional_size;

typedef struct cmr_optional_int {
  int value; /* read only when is_set */
  bool is_set;
} cmr_optional_int;

#ifdef __cplusplus
#define CMR_SIZE(v) (cmr_optional_size{static_cast<size_t>(v), true})
#define CMR_SIZE_DEFAULT (cmr_optional_size{0, false})
#define CMR_INT(v) (cmr_optional_int{static_cast<int>(v), true})
#define CMR_INT_DEFAULT (cmr_optional_int{0, false})
#else
#define CMR_SIZE(v) ((cmr_optional_size){(v), true})
#define CMR_SIZE_DEFAULT ((cmr_optional_size){0, false})
#define CMR_INT(v) ((cmr_optional_int){(v), true})
#define CMR_INT_DEFAULT ((cmr_optional_int){0, false})
#endif

/* The callback resource's functions. allocate returns NULL when it cannot
 * serve `bytes` (reported as out of memory); the memory must be aligned to
 * CMR_DEFAULT_ALIGNMENT. */
typedef void *(*cmr_allocate_callback)(size_t bytes, cmr_stream stream, void *arg);
typedef void (*cmr_deallocate_callback)(void *ptr, size_t bytes, cmr_stream stream, void *arg);

/* Called by the failure_callback resource when its upstream is out of memory
 * for `bytes`: return true to try the allocation again, false to give up. */
typedef bool (*cmr_failure_callback)(size_t bytes, void *arg);

/* ---- per-device resource table --------------------------------------------- */

/* The resource used for `device`: whatever was set, or else (made on first
 * use) the cuda resource of that device — the system resource in the host
 * build. The table holds a share of what it stores.
 *
 * cmr_acquire_* hand out a share of the entry, taken under the table's lock,
 * that the caller gives back with cmr_ref_release: the race-free way to use
 * the entry while other threads may replace it. cmr_get_* hand out the ref
 * alone, valid while the entry stays (a call through it after the resource
 * is gone reports CMR_ERROR_DESTROYED_HANDLE, and so does a cmr_ref_retain
 * that comes too late). */
CMR_API cmr_status cmr_acquire_per_device_resource_ref(int device, cmr_resource_ref *out);
CMR_API cmr_status cmr_acquire_current_device_resource_ref(cmr_resource_ref *out);
CMR_API cmr_status cmr_get_per_device_resource_ref(int device, cmr_resource_ref *out);
/* Store `ref` for `device`, retaining it and releasing what was there. */
CMR_API cmr_status cmr_set_per_device_resource_ref(int device, cmr_resource_ref ref);
/* Drop the stored resource so the default is used again. */
CMR_API cmr_status cmr_reset_per_device_resource_ref(int device);
/* How many times the table has changed: an entry set or reset, or a
 * default made. What a caller resolved from the table (the object a
 * binding wraps an entry in) stands while this count is the same; reading
 * it takes no lock. */
CMR_API size_t cmr_per_device_resource_changes(void);

CMR_API cmr_status cmr_get_current_device_resource_ref(cmr_resource_ref *out);
CMR_API cmr_status cmr_set_current_device_resource_ref(cmr_resource_ref ref);
CMR_API cmr_status cmr_reset_current_device_resource_ref(void);

/* ---- devices ------------------------------------------------------------------ */

/* Number of devices (1 in the host build, whose one device is host memory). */
CMR_API cmr_status cmr_device_count(int *out);
CMR_API cmr_status cmr_current_device(int *out);
CMR_API cmr_status cmr_set_current_device(int device);
/* Free and total memory of the current device (of the host in the host build). */
CMR_API cmr_status cmr_device_memory_info(size_t *free_bytes, size_t *total_bytes);
/* `percent` (0..100) of the current device's free memory, rounded down to a
 * multiple of 256. */
CMR_API cmr_status cmr_percent_of_free_device_memory(int percent, size_t *out);

/* Whether cmr was built with CUDA (true) or as the host build (false). */
CMR_API bool cmr_built_with_cuda(void);

/* ---- blocking ------------------------------------------------------------------ */

/* Called on the calling thread right before cmr may block it: before a
 * backend call that can wait (cudaMalloc, cudaFree, a pool allocation that
 * may grow the driver's pool, a synchronization, a copy from pageable
 * memory) and before waiting for a lock another thread holds (an
 * uncontended lock never calls it). The thread may hold cmr's locks when it
 * runs, so the hook must not call cmr, nor wait for anything a caller of cmr
 * may hold; it should return quickly. A binding uses it to let go of what
 * other threads may need while this one waits (Python: the GIL, taken back
 * when the call returns). One hook per process; NULL (the start) for none;
 * the previous hook is returned. */
typedef void (*cmr_blocking_hook)(void);
CMR_API cmr_blocking_hook cmr_set_blocking_hook(cmr_blocking_hook hook);

/* The library's version, "MAJOR.MINOR.PATCH". */
CMR_API const char *cmr_version(void);

#ifdef __cplusplus
}
#endif

#endif /* CMR_CORE_H */
