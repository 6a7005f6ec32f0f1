/* SPDX-License-Identifier: Apache-2.0 */
/* cmr history and snapshots: a bounded, process-wide record of what the
 * resources did (allocations, frees, upstream growth and release, out of
 * memory, failure-callback retries), each event with its time, resource,
 * stream, address, size and, when asked, its C call stack; and snapshots of
 * a resource stack's current segments (each chunk a suballocator took from
 * its upstream, with its blocks in use and free) plus that history, written
 * as PyTorch's memory-snapshot pickle (what torch.cuda.memory._snapshot()
 * returns and torch.cuda._memory_viz reads), as JSON of the same dict, or
 * as a self-contained HTML report.
 *
 * Recording is off until cmr_history_start; while off, each allocate and
 * free pays one predictable branch. While on, every call through a ref
 * appends an event: C stacks (backtrace) are taken at record time and
 * symbolised only when a snapshot is written. Thread-safe: events are
 * appended from any thread, and read or written while others append. */
#ifndef CMR_HISTORY_H
#define CMR_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmr/core.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the history ------------------------------------------------------------ */

/* Take the C call stack of every event (backtrace(3)). */
#define CMR_HISTORY_C_STACKS 1

/* The most frames an event keeps. */
#define CMR_HISTORY_MAX_FRAMES 64

/* A binding's own frames (Python's): called on the recording thread for
 * each event while recording, it returns a token of the binding's (0 for
 * none) that the event keeps in `context` and snapshots write as
 * "context" beside the C frames; the binding turns it into its frames when
 * it reads the snapshot (cmr.memory does). It must not call into cmr, nor
 * wait for anything a caller of cmr may hold (it runs under cmr's locks).
 * The options' entry_context has the same type. */
typedef uint64_t (*cmr_history_context_function)(void *user);

/* Versioned: set `size` to sizeof(cmr_history_options); later versions
 * append fields. A zeroed struct (size set) asks for the defaults. */
typedef struct cmr_history_options {
  size_t size;
  /* Events kept (the oldest are overwritten): 0 for 65,536; at most 2^26. */
  size_t capacity;
  /* CMR_HISTORY_C_STACKS, or 0. */
  unsigned flags;
  /* Frames kept per event with CMR_HISTORY_C_STACKS: 0 for 16; at most
   * CMR_HISTORY_MAX_FRAMES. */
  unsigned stack_depth;
  /* Called for each event (NULL: none), with `context_user`. */
  cmr_history_context_function context;
  void *context_user;
  /* The binding's frames where it may wait for its interpreter (NULL:
   * none), with `context_user`: the entry points that foreign code calls
   * from outside cmr, holding none of cmr's locks (cmr_pluggable_allocate
   * and cmr_pluggable_deallocate, which PyTorch calls with the GIL let go),
   * call it before they enter cmr, and its token (0 for none) goes to every
   * event of that call in place of the context function's. Unlike the
   * context function, which runs inside cmr where another thread may wait
   * for a lock this one holds, it may wait (Python's takes the GIL). It
   * must not call into cmr. An entry point that began before a later start
   * or stop returned may still call it after that return: it and
   * `context_user` must stay callable (a binding's own, for the life of the
   * process). */
  cmr_history_context_function entry_context;
} cmr_history_options;

typedef enum cmr_history_action {
  CMR_HISTORY_ALLOCATE = 1,         /* a resource handed out `bytes` at `address` */
  CMR_HISTORY_FREE = 2,             /* a resource took back `bytes` at `address` */
  CMR_HISTORY_SEGMENT_ALLOCATE = 3, /* a suballocator took a chunk from its upstream (`resource`) */
  CMR_HISTORY_SEGMENT_FREE = 4,     /* a suballocator gave a chunk back to its upstream (`resource`) */
  CMR_HISTORY_OUT_OF_MEMORY = 5,    /* an allocation of `bytes` failed with CMR_ERROR_OUT_OF_MEMORY */
  CMR_HISTORY_RETRY = 6             /* failure_callback's callback asked for a retry of `bytes` */
} cmr_history_action;

/* One event. Versioned like the options: cmr_history_read fills `size`
 * bytes of each, so a caller built against an older (shorter) struct gets
 * the fields it knows. */
typedef struct cmr_history_event {
  size_t size;
  uint64_t sequence;         /* 0, 1, 2, ... in the order events were recorded since the last start */
  uint64_t time_ns;          /* CLOCK_REALTIME, nanoseconds since the epoch */
  cmr_history_action action; /* what happened */
  const char *resource_type; /* the resource's type name ("pool"), static */
  uint64_t resource;         /* its ref's self: the same value for every ref to one resource */
  uint64_t stream;           /* the stream of the call, as an integer (0: the default stream) */
  uint64_t address;          /* the memory's address (0 for an out-of-memory event or a retry) */
  size_t bytes;              /* the call's size */
  uint64_t thread;           /* the recording thread (pthread_self) */
  uint64_t context;          /* the options' context function's token (in an entry point's call, its
                                entry context's), 0 for none */
  unsigned frame_count;      /* frames in `frames`, innermost first (0 without C stacks) */
  void *frames[CMR_HISTORY_MAX_FRAMES];
} cmr_history_event;

/* Starts recording into a new, empty history (NULL: the defaults). An
 * options struct whose size is 0 or that asks for more than the maxima is
 * CMR_ERROR_INVALID_ARGUMENT; no host memory for the ring is
 * CMR_ERROR_OUT_OF_MEMORY (then the previous history, if any, is kept and
 * recording is as it was). A start while recording replaces the history. */
CMR_API cmr_status cmr_history_start(const cmr_history_options *options);
/* Stops recording; the events recorded stay readable (and go into
 * snapshots) until the next start. Stopping when not recording succeeds. */
CMR_API cmr_status cmr_history_stop(void);
/* Whether events are being recorded. */
CMR_API bool cmr_history_recording(void);
/* Copies the events kept, oldest first, into `events` (`capacity` of them,
 * each with `size` set by the caller to sizeof(cmr_history_event) or an
 * older size): *count is how many were copied. With `events` NULL and
 * capacity 0, *count is how many are kept. *dropped, when not NULL, is how
 * many were overwritten or lost since the start. */
CMR_API cmr_status cmr_history_read(cmr_history_event *events, size_t capacity, size_t *count, uint64_t *dropped);
/* A fixed name for an action ("alloc", "free", "segment_alloc",
 * "segment_free", "oom", "retry"; "unknown" otherwise). Never NULL. */
CMR_API const char *cmr_history_action_name(cmr_history_action action);

/* ---- snapshots ------------------------------------------------------------- */

typedef enum cmr_snapshot_format {
  CMR_SNAPSHOT_PICKLE = 1,   /* PyTorch's snapshot dict, pickle protocol 4 */
  CMR_SNAPSHOT_PICKLE_2 = 2, /* the same, pickle protocol 2 (Python 2's and every later pickle reader) */
  CMR_SNAPSHOT_JSON = 3,     /* the same dict as JSON */
  CMR_SNAPSHOT_HTML = 4      /* the self-contained HTML report of it (no network needed to view it) */
} cmr_snapshot_format;

/* The snapshot of the resource stack `ref` names: "segments", one per
 * chunk that each suballocator in it (pool, arena, fixed_size, and those
 * under binning and adaptors) holds from its upstream, each with its blocks
 * ("active_allocated" or "inactive") in address order; "device_traces",
 * one list of the history's events that concern the stack: the
 * allocations and frees through `ref` itself, the segments' growth and
 * release, out-of-memory failures and retries of any resource in it.
 * PyTorch's keys and values (docs/diagnosing-memory.md lists them), plus
 * cmr's own ("resource" on segments, "stream" on free blocks). Each part
 * is read under its own locks: while other threads allocate, the parts
 * need not add up exactly.
 *
 * Written to `path` in `format` (CMR_ERROR_IO, saying why, when it cannot
 * be; an unknown format is CMR_ERROR_INVALID_ARGUMENT). */
CMR_API cmr_status cmr_snapshot_write(cmr_resource_ref ref, cmr_snapshot_format format, const char *path);
/* The same into memory: *out (free it with cmr_snapshot_free) holds *length
 * bytes, followed by a NUL that *length does not count (JSON and HTML read
 * as C strings). */
CMR_API cmr_status cmr_snapshot_bytes(cmr_resource_ref ref, cmr_snapshot_format format, char **out, size_t *length);
/* Frees what cmr_snapshot_bytes returned (NULL: nothing). */
CMR_API void cmr_snapshot_free(char *bytes);
/* The HTML report of a snapshot given as JSON (`length` bytes of UTF-8
 * text: a JSON object, as CMR_SNAPSHOT_JSON writes or Python's json module
 * writes from a snapshot dict), written to `path`. Text that is not a JSON
 * object is CMR_ERROR_INVALID_ARGUMENT. */
CMR_API cmr_status cmr_snapshot_report(const char *json, size_t length, const char *path);

#ifdef __cplusplus
}
#endif

#endif /* CMR_HISTORY_H */
