/* SPDX-License-Identifier: Apache-2.0 */
/* The history ring (cmr/history.h, resource_api/history.h).
 *
 * Slots are claimed without a lock: a writer takes the next sequence number
 * with one fetch-add, and the slot it names (sequence % capacity) under
 * that slot's own lock, which no other writer wants unless the ring has
 * wrapped around onto a slow writer: then the older event yields (a slot
 * never goes back to an older sequence) and counts as lost. Readers take
 * each slot's lock in turn, so a copy is never torn.
 *
 * A start swaps the ring; the old one is freed once the writers that may
 * have loaded it are done. Writers count themselves in one of two counters,
 * the one of the current epoch, before they load the ring (and look again
 * if the epoch moved meanwhile); a swap moves the epoch and waits for the
 * old epoch's counter alone, which no new writer joins.
 *
 * An entry point's call (history_entry.h) runs the ring's entry context
 * before it enters cmr, outside that count (the context may wait for a
 * thread that is starting a history, and so waiting for the writers), and
 * keeps its token in a thread-local pending context, which the writes of
 * that call take in place of the context function's. */
#include <execinfo.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "errors.h"
#include "fork.h"
#include "history.h"
#include "history_entry.h"
#include "lock.h"

enum { cmr_history_default_capacity = 65536, cmr_history_default_depth = 16 };
#define CMR_HISTORY_MAX_CAPACITY ((size_t)1 << 26)

typedef struct cmr_history_slot {
  cmr_lock lock;
  uint64_t sequence_plus_one; /* 0: never written */
  uint64_t time_ns;
  uint64_t resource;
  uint64_t stream;
  uint64_t address;
  uint64_t thread;
  uint64_t context;
  size_t bytes;
  const char *resource_type;
  cmr_history_action action;
  unsigned frame_count;
} cmr_history_slot;

typedef struct cmr_history_ring {
  size_t capacity;
  unsigned depth; /* frames per event, 0 without stacks */
  cmr_history_context_function context;
  cmr_history_context_function entry_context;
  void *context_user;
  _Atomic uint64_t next;
  _Atomic uint64_t lost; /* yielded to a newer event in their slot */
  cmr_history_slot *slots;
  void **frames; /* capacity * depth */
} cmr_history_ring;

_Atomic bool cmr_history_on = false;
static _Atomic(cmr_history_ring *) cmr_history_ring_now = NULL;
static _Atomic unsigned cmr_history_epoch = 0;
static _Atomic size_t cmr_history_writers[2];
/* Starts, stops and readers, one at a time (readers hold the ring alive). */
static pthread_mutex_t cmr_history_control = PTHREAD_MUTEX_INITIALIZER;

static uint64_t cmr_history_clock(void) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

static void cmr_history_ring_free(cmr_history_ring *ring) {
  if (ring == NULL) return;
  free(ring->frames);
  free(ring->slots);
  free(ring);
}

static cmr_status cmr_history_ring_new(size_t capacity, unsigned depth, cmr_history_ring **out) {
  cmr_history_ring *ring = calloc(1, sizeof *ring);
  if (ring != NULL) {
    ring->capacity = capacity;
    ring->depth = depth;
    ring->slots = calloc(capacity, sizeof *ring->slots);
    ring->frames = depth > 0 ? calloc(capacity * depth, sizeof *ring->frames) : NULL;
  }
  if (ring == NULL || ring->slots == NULL || (depth > 0 && ring->frames == NULL)) {
    cmr_history_ring_free(ring);
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "cmr_history_start: no host memory for a ring of %zu events", capacity);
  }
  for (size_t i = 0; i < capacity; ++i) cmr_lock_init(&ring->slots[i].lock);
  atomic_init(&ring->next, 0);
  atomic_init(&ring->lost, 0);
  *out = ring;
  return CMR_SUCCESS;
}

/* Puts `ring` in place (NULL: none) and frees the one it replaces once no
 * writer can still be in it. Control lock held. */
static void cmr_history_swap(cmr_history_ring *ring) {
  cmr_history_ring *old = atomic_exchange(&cmr_history_ring_now, ring);
  unsigned epoch = atomic_fetch_add(&cmr_history_epoch, 1);
  while (atomic_load(&cmr_history_writers[epoch & 1]) != 0) sched_yield();
  cmr_history_ring_free(old);
}

/* The options as given (the fields of the caller's version; the rest zero) in *given. */
static cmr_status cmr_history_check_options(const cmr_history_options *options, cmr_history_options *given,
                                            size_t *capacity, unsigned *depth) {
  static const char what[] = "cmr_history_start";
  *given = (cmr_history_options){.size = sizeof *given};
  if (options != NULL) {
    if (options->size < offsetof(cmr_history_options, context) || options->size > sizeof *options) {
      return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: options->size %zu is not the size of any version (%zu)", what,
                       options->size, sizeof *given);
    }
    memcpy(given, options, options->size);
  }
  if (given->capacity > CMR_HISTORY_MAX_CAPACITY) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: capacity %zu is above the most, %zu events", what,
                     given->capacity, CMR_HISTORY_MAX_CAPACITY);
  }
  if (given->flags & ~CMR_HISTORY_C_STACKS) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: unknown flags 0x%x", what, given->flags & ~CMR_HISTORY_C_STACKS);
  }
  if (given->stack_depth > CMR_HISTORY_MAX_FRAMES) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: stack_depth %u is above the most, %u frames", what,
                     given->stack_depth, CMR_HISTORY_MAX_FRAMES);
  }
  *capacity = given->capacity != 0 ? given->capacity : cmr_history_default_capacity;
  *depth = 0;
  if (given->flags & CMR_HISTORY_C_STACKS) {
    *depth = given->stack_depth != 0 ? given->stack_depth : cmr_history_default_depth;
  }
  return CMR_SUCCESS;
}

cmr_status cmr_history_start(const cmr_history_options *options) {
  size_t capacity = 0;
  unsigned depth = 0;
  cmr_history_options given;
  cmr_status status = cmr_history_check_options(options, &given, &capacity, &depth);
  cmr_history_ring *ring = NULL;
  if (status == CMR_SUCCESS) status = cmr_history_ring_new(capacity, depth, &ring);
  if (status != CMR_SUCCESS) return status;
  ring->context = given.context;
  ring->entry_context = given.entry_context;
  ring->context_user = given.context_user;
  if (depth > 0) {
    /* backtrace's first call loads the unwinder (and may allocate): done
     * here, not inside the first recorded call. */
    void *warm[2];
    (void)backtrace(warm, 2);
  }
  cmr_mutex_lock(&cmr_history_control);
  cmr_history_swap(ring);
  atomic_store(&cmr_history_on, true);
  cmr_mutex_unlock(&cmr_history_control);
  return CMR_SUCCESS;
}

cmr_status cmr_history_stop(void) {
  atomic_store(&cmr_history_on, false);
  return CMR_SUCCESS;
}

bool cmr_history_recording(void) { return atomic_load(&cmr_history_on); }

/* The calling frames, outside the ring's own (this function, the write and
 * the append, none of them inlined), innermost first: the first is the
 * recording call's (dispatch's cmr_allocate, the chunks' growth). */
static __attribute__((noinline)) unsigned cmr_history_stack(void **frames, unsigned depth) {
  enum { own = 3 };
  void *taken[CMR_HISTORY_MAX_FRAMES + own];
  int count = backtrace(taken, (int)depth + own);
  if (count <= own) return 0;
  unsigned kept = (unsigned)count - own;
  memcpy(frames, taken + own, kept * sizeof *frames);
  return kept;
}

/* Inside an entry point's call: the token of its entry context. */
static _Thread_local cmr_history_pending cmr_history_pending_now;

/* An event's context: the pending entry context's token inside an entry
 * point's call, else the context function's. */
static uint64_t cmr_history_context_of(const cmr_history_ring *ring) {
  if (ring->entry_context != NULL && cmr_history_pending_now.set) return cmr_history_pending_now.token;
  return ring->context != NULL ? ring->context(ring->context_user) : 0;
}

static __attribute__((noinline)) void cmr_history_write(cmr_history_ring *ring, cmr_history_action action,
                                                        cmr_resource_ref ref, cmr_stream stream, const void *address,
                                                        size_t bytes) {
  void *frames[CMR_HISTORY_MAX_FRAMES];
  unsigned frame_count = ring->depth > 0 ? cmr_history_stack(frames, ring->depth) : 0;
  uint64_t context = cmr_history_context_of(ring);
  uint64_t time_ns = cmr_history_clock();
  uint64_t sequence = atomic_fetch_add_explicit(&ring->next, 1, memory_order_relaxed);
  size_t index = (size_t)(sequence % ring->capacity);
  cmr_history_slot *slot = &ring->slots[index];
  cmr_lock_acquire(&slot->lock);
  if (slot->sequence_plus_one > sequence) {
    cmr_lock_release(&slot->lock); /* a writer a whole lap ahead was faster */
    atomic_fetch_add_explicit(&ring->lost, 1, memory_order_relaxed);
    return;
  }
  slot->sequence_plus_one = sequence + 1;
  slot->time_ns = time_ns;
  slot->action = action;
  slot->resource = (uint64_t)(uintptr_t)ref.self;
  slot->resource_type = ref.ops != NULL && ref.ops->type_name != NULL ? ref.ops->type_name : "(unnamed)";
  slot->stream = (uint64_t)(uintptr_t)stream;
  slot->address = (uint64_t)(uintptr_t)address;
  slot->bytes = bytes;
  slot->thread = (uint64_t)pthread_self();
  slot->context = context;
  slot->frame_count = frame_count;
  if (frame_count > 0) memcpy(&ring->frames[index * ring->depth], frames, frame_count * sizeof *frames);
  cmr_lock_release(&slot->lock);
}

/* Counts the caller among the writers of the current epoch, whose ring no
 * swap frees until cmr_history_leave_writers; returns that epoch. */
static unsigned cmr_history_join_writers(void) {
  unsigned epoch = atomic_load(&cmr_history_epoch);
  for (;;) {
    atomic_fetch_add(&cmr_history_writers[epoch & 1], 1);
    unsigned now = atomic_load(&cmr_history_epoch);
    if (now == epoch) return epoch;
    atomic_fetch_sub(&cmr_history_writers[epoch & 1], 1);
    epoch = now;
  }
}

static void cmr_history_leave_writers(unsigned epoch) { atomic_fetch_sub(&cmr_history_writers[epoch & 1], 1); }

__attribute__((noinline)) void cmr_history_append(cmr_history_action action, cmr_resource_ref ref, cmr_stream stream,
                                                  const void *address, size_t bytes) {
  unsigned epoch = cmr_history_join_writers();
  cmr_history_ring *ring = atomic_load(&cmr_history_ring_now);
  if (ring != NULL && atomic_load_explicit(&cmr_history_on, memory_order_relaxed)) {
    cmr_history_write(ring, action, ref, stream, address, bytes);
  }
  cmr_history_leave_writers(epoch);
}

cmr_history_pending cmr_history_enter_recording(void) {
  cmr_history_pending outer = cmr_history_pending_now;
  cmr_history_context_function entry_context = NULL;
  void *user = NULL;
  unsigned epoch = cmr_history_join_writers();
  cmr_history_ring *ring = atomic_load(&cmr_history_ring_now);
  if (ring != NULL) {
    entry_context = ring->entry_context;
    user = ring->context_user;
  }
  cmr_history_leave_writers(epoch);
  /* Called outside the writers' count: Python's waits for the GIL, which
   * a thread starting a history holds while it waits for the writers. */
  if (entry_context != NULL) cmr_history_pending_now = (cmr_history_pending){.set = true, .token = entry_context(user)};
  return outer;
}

void cmr_history_leave_recording(cmr_history_pending outer) { cmr_history_pending_now = outer; }

/* ---- reading -------------------------------------------------------------------- */

static int cmr_history_by_sequence(const void *a, const void *b) {
  uint64_t x = ((const cmr_history_event *)a)->sequence, y = ((const cmr_history_event *)b)->sequence;
  return x < y ? -1 : x > y;
}

/* Slot `index` into *event; false when it was never written. */
static bool cmr_history_read_slot(const cmr_history_ring *ring, size_t index, cmr_history_event *event) {
  cmr_history_slot *slot = &ring->slots[index];
  cmr_lock_acquire(&slot->lock);
  bool written = slot->sequence_plus_one != 0;
  if (written) {
    *event = (cmr_history_event){.size = sizeof *event,
                                 .sequence = slot->sequence_plus_one - 1,
                                 .time_ns = slot->time_ns,
                                 .action = slot->action,
                                 .resource_type = slot->resource_type,
                                 .resource = slot->resource,
                                 .stream = slot->stream,
                                 .address = slot->address,
                                 .bytes = slot->bytes,
                                 .thread = slot->thread,
                                 .context = slot->context,
                                 .frame_count = slot->frame_count};
    if (slot->frame_count > 0) {
      memcpy(event->frames, &ring->frames[index * ring->depth], slot->frame_count * sizeof *event->frames);
    }
  }
  cmr_lock_release(&slot->lock);
  return written;
}

/* The events of `ring` (control lock held: no swap frees it meanwhile). */
static cmr_status cmr_history_copy_ring(const cmr_history_ring *ring, cmr_history_event **out, size_t *count,
                                        uint64_t *dropped) {
  uint64_t recorded = atomic_load(&((cmr_history_ring *)ring)->next);
  size_t most = recorded < ring->capacity ? (size_t)recorded : ring->capacity;
  cmr_history_event *events = most > 0 ? malloc(most * sizeof *events) : NULL;
  if (most > 0 && events == NULL) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "cmr_history_read: no host memory for a copy of %zu events", most);
  }
  size_t kept = 0;
  for (size_t i = 0; i < most; ++i) kept += cmr_history_read_slot(ring, i, &events[kept]);
  if (kept > 1) qsort(events, kept, sizeof *events, cmr_history_by_sequence);
  *out = events;
  *count = kept;
  uint64_t now = atomic_load(&((cmr_history_ring *)ring)->next);
  *dropped = now > kept ? now - kept : 0;
  return CMR_SUCCESS;
}

cmr_status cmr_history_copy(cmr_history_event **out, size_t *count, uint64_t *dropped) {
  *out = NULL;
  *count = 0;
  *dropped = 0;
  cmr_mutex_lock(&cmr_history_control);
  cmr_history_ring *ring = atomic_load(&cmr_history_ring_now);
  cmr_status status = ring != NULL ? cmr_history_copy_ring(ring, out, count, dropped) : CMR_SUCCESS;
  cmr_mutex_unlock(&cmr_history_control);
  return status;
}

cmr_status cmr_history_read(cmr_history_event *events, size_t capacity, size_t *count, uint64_t *dropped) {
  static const char what[] = "cmr_history_read";
  if (count == NULL) return cmr_error(CMR_ERROR_NULL_POINTER, "%s: count is NULL", what);
  *count = 0;
  if (events == NULL && capacity != 0) {
    return cmr_error(CMR_ERROR_NULL_POINTER, "%s: events is NULL with a capacity of %zu", what, capacity);
  }
  for (size_t i = 0; i < capacity; ++i) {
    if (events[i].size < offsetof(cmr_history_event, frames) || events[i].size > sizeof *events) {
      return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: events[%zu].size %zu is not the size of any version (%zu)",
                       what, i, events[i].size, sizeof *events);
    }
  }
  cmr_history_event *kept = NULL;
  size_t kept_count = 0;
  uint64_t lost = 0;
  cmr_status status = cmr_history_copy(&kept, &kept_count, &lost);
  if (status != CMR_SUCCESS) return cmr_error_context(status, "%s", what);
  if (dropped != NULL) *dropped = lost;
  if (events == NULL) {
    *count = kept_count;
  } else {
    /* The newest `capacity` when there are more. */
    size_t first = kept_count > capacity ? kept_count - capacity : 0;
    for (size_t i = first; i < kept_count; ++i) {
      size_t size = events[i - first].size;
      memcpy(&events[i - first], &kept[i], size);
      events[i - first].size = size;
    }
    *count = kept_count - first;
  }
  free(kept);
  return CMR_SUCCESS;
}

const char *cmr_history_action_name(cmr_history_action action) {
  switch (action) {
  case CMR_HISTORY_ALLOCATE: return "alloc";
  case CMR_HISTORY_FREE: return "free";
  case CMR_HISTORY_SEGMENT_ALLOCATE: return "segment_alloc";
  case CMR_HISTORY_SEGMENT_FREE: return "segment_free";
  case CMR_HISTORY_OUT_OF_MEMORY: return "oom";
  case CMR_HISTORY_RETRY: return "retry";
  }
  return "unknown";
}

/* ---- fork ----------------------------------------------------------------------- */

/* Held over the fork, so that no start swaps the ring and no reader is in it then. */
static void cmr_history_fork_take(void) { cmr_mutex_lock(&cmr_history_control); }

static void cmr_history_fork_give(void) { cmr_mutex_unlock(&cmr_history_control); }

/* The child has none of the parent's writers (a slot lock one of them held
 * would stay held): it starts without a history, as if never started. */
static void cmr_history_fork_child(void) {
  atomic_store(&cmr_history_on, false);
  cmr_history_ring *ring = atomic_exchange(&cmr_history_ring_now, NULL);
  atomic_store(&cmr_history_writers[0], 0);
  atomic_store(&cmr_history_writers[1], 0);
  cmr_history_ring_free(ring);
}

CMR_FORK_PART(CMR_FORK_HISTORY, NULL, cmr_history_fork_take, cmr_history_fork_give, cmr_history_fork_child)
