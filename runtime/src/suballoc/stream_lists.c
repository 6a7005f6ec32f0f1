/* SPDX-License-Identifier: Apache-2.0 */
/* Stream-ordered free lists (stream_lists.h says what they do;
 * stream_list.h how a list is kept and the lock order): giving, taking,
 * taking back, gathering, releasing and the reports.
 *
 * The warm pair (a stream allocating and freeing on its own list) takes one
 * lock, the list's, found through the thread's last lookup: a recently
 * freed block of the very size is handed out and remembered there, and its
 * free finds it there. Everything else is out of line. */
#include <stdlib.h>

#include "stream_ends.h"
#include "stream_list.h"

/* ---- keys ----------------------------------------------------------------------------- */

static _Atomic uint64_t next_serial = 1;

/* A stream made by the user is named by its id, a driver call: its handle
 * may be recycled once destroyed. The per-thread default stream is each
 * thread's own, so it is keyed by thread, as the legacy default stream is
 * too when the lists want per-thread arenas (legacy and per-thread default
 * streams order their work with each other). */
static inline __attribute__((always_inline)) cmr_status cmr_key_of_stream(const cmr_stream_lists *lists,
                                                                          cmr_stream stream, bool capturing,
                                                                          uint64_t *key) {
  /* NULL is the legacy default stream in every backend: no call for it. */
  cmr_backend_stream_kind kind =
      stream == NULL ? CMR_BACKEND_STREAM_LEGACY_DEFAULT : cmr_backend_stream_kind_of(stream);
  bool by_thread = kind == CMR_BACKEND_STREAM_PER_THREAD_DEFAULT ||
                   (kind == CMR_BACKEND_STREAM_LEGACY_DEFAULT && lists->keying == CMR_KEY_DEFAULT_STREAM_PER_THREAD);
  if (by_thread) {
    *key = cmr_thread_key != 0 ? cmr_thread_key : cmr_stream_ends_thread_key();
    return CMR_SUCCESS;
  }
  if (kind == CMR_BACKEND_STREAM_LEGACY_DEFAULT) {
    *key = CMR_LEGACY_KEY;
    return CMR_SUCCESS;
  }
  bool of_capture = false;
  cmr_status status =
      capturing ? cmr_backend_stream_id_in_capture(stream, key, &of_capture) : cmr_backend_stream_id(stream, key);
  if (of_capture) *key = CMR_CAPTURE_KEY | (*key & (CMR_CAPTURE_KEY - 1));
  return status == CMR_SUCCESS ? status : cmr_error_context(status, "%s", lists->owner);
}

/* The key of a stream known not to be capturing. */
static inline __attribute__((always_inline)) cmr_status cmr_key_of(const cmr_stream_lists *lists, cmr_stream stream,
                                                                   uint64_t *key) {
  return cmr_key_of_stream(lists, stream, false, key);
}

/* The key of a default stream's list, known without a call: false for
 * any other stream, and for a thread whose key is not drawn yet. */
static CMR_PAIR_PATH bool cmr_key_at_hand(const cmr_stream_lists *lists, cmr_stream stream, uint64_t *key) {
  if (stream != NULL) return false;
  *key = lists->keying == CMR_KEY_DEFAULT_STREAM_PER_THREAD ? cmr_thread_key : CMR_LEGACY_KEY;
  return *key != 0;
}

/* The list of `key`, locked. Inlined: this is the path of every allocation
 * and free. */
static inline __attribute__((always_inline)) cmr_status cmr_lock_list(cmr_stream_lists *lists, uint64_t key,
                                                                      cmr_stream_list **out) {
  if (cmr_last_list.serial == lists->serial && cmr_last_list.key == key &&
      cmr_lock_if_keyed(&cmr_last_list, key, out)) {
    return CMR_SUCCESS;
  }
  return cmr_stream_list_lock_registered(lists, key, out);
}

static inline __attribute__((always_inline)) cmr_status cmr_lock_list_of(cmr_stream_lists *lists, cmr_stream stream,
                                                                         cmr_stream_list **out) {
  uint64_t key = 0;
  cmr_status status = cmr_key_of(lists, stream, &key);
  return status == CMR_SUCCESS ? cmr_lock_list(lists, key, out) : status;
}

/* ---- life ------------------------------------------------------------------------------ */

cmr_status cmr_stream_lists_create(const char *owner, cmr_fit fit, cmr_stream_keying keying, cmr_block_map *handed_out,
                                   cmr_stream_lists **out) {
  cmr_stream_lists *lists = calloc(1, sizeof *lists);
  if (lists == NULL) return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: no host memory for the stream lists", owner);
  lists->owner = owner;
  lists->fit = fit;
  lists->keying = keying;
  lists->handed_out = handed_out;
  lists->device = cmr_backend_device_at_creation();
  lists->serial = atomic_fetch_add(&next_serial, 1);
  lists->evict_at = cmr_fewest_evicting;
  atomic_init(&lists->max_split, SIZE_MAX);
  lists->capture = CMR_CAPTURE_SERVE;
  lists->capture_properties = CMR_PROPERTY_DEVICE_ACCESSIBLE;
  cmr_status status = cmr_graph_blocks_init(&lists->graph);
  if (status != CMR_SUCCESS) {
    free(lists);
    return cmr_error_context(status, "%s", owner);
  }
  status = cmr_mutex_init(&lists->registry, owner);
  if (status != CMR_SUCCESS) {
    cmr_graph_blocks_fini(&lists->graph);
    free(lists);
    return status;
  }
  status = cmr_stream_ends_track(lists);
  if (status != CMR_SUCCESS) {
    pthread_mutex_destroy(&lists->registry);
    cmr_graph_blocks_fini(&lists->graph);
    free(lists);
    return cmr_error_context(status, "%s", owner);
  }
  *out = lists;
  return CMR_SUCCESS;
}

void cmr_stream_lists_destroy(cmr_stream_lists *lists) {
  cmr_stream_ends_untrack(lists); /* first: no ending key reaches it after this */
  cmr_stream_list_let_go_all(lists);
  pthread_mutex_destroy(&lists->registry);
  cmr_graph_blocks_fini(&lists->graph);
  free(lists);
}

cmr_status cmr_stream_lists_set_capture(cmr_stream_lists *lists, cmr_capture_rule rule, cmr_resource_ref upstream) {
  lists->capture = rule;
  cmr_status status = cmr_ref_properties(upstream, &lists->capture_properties);
  return status == CMR_SUCCESS ? status : cmr_error_context(status, "%s: its upstream's properties", lists->owner);
}

void cmr_stream_lists_release_dead_units(cmr_stream_lists *lists, pthread_mutex_t *lock,
                                         void (*release)(cmr_block *block, void *arg), void *arg) {
  lists->unit_lock = lock;
  lists->release_unit = release;
  lists->release_arg = arg;
}

void cmr_stream_lists_set_max_split(cmr_stream_lists *lists, size_t max_split) {
  atomic_store_explicit(&lists->max_split, max_split, memory_order_relaxed);
}

/* ---- ordering (the list's lock held) ----------------------------------------------------- */

/* After blocks entered `list` on `stream`: record the list's event there so
 * a later taker can wait for them, once the list is shared; before that,
 * mark it unordered (its first taker synchronizes the device instead). A
 * failed event call degrades to the same. */
static CMR_PAIR_PATH void cmr_order_after_free(const cmr_stream_lists *lists, cmr_stream_list *list,
                                               cmr_stream stream) {
  list->unordered = !list->shared || !cmr_stream_list_record(lists, list, stream);
  CMR_CHECK(cmr_stream_list_free_ordered, list);
}

/* Before `stream` uses blocks taken from `list`: make it wait for the work
 * ordered before their frees. The list is shared from now on, unless it has
 * only ever held idle memory (no free has come in, with or without an
 * event): taking that needs no order at all. */
static cmr_status cmr_order_before_taking(const cmr_stream_lists *lists, cmr_stream_list *list, cmr_stream stream) {
  if (!list->unordered && list->event == NULL) return CMR_SUCCESS;
  cmr_status status = CMR_SUCCESS;
  if (list->unordered) {
    status = cmr_backend_device_synchronize_on(lists->device);
    if (status == CMR_SUCCESS) list->unordered = false; /* all work so far is done */
  } else if (list->event != NULL) {
    status = cmr_backend_stream_wait_event(stream, list->event);
  }
  list->shared = true;
  return status == CMR_SUCCESS ? status
                               : cmr_error_context(status, "%s: ordering memory freed on another stream", lists->owner);
}

/* The same, on the host: block until that work is done. */
static cmr_status cmr_order_before_release(const cmr_stream_lists *lists, cmr_stream_list *list) {
  cmr_status status = CMR_SUCCESS;
  if (list->unordered) {
    status = cmr_backend_device_synchronize_on(lists->device);
    if (status == CMR_SUCCESS) list->unordered = false;
  } else if (list->event != NULL) {
    status = cmr_backend_event_synchronize(list->event);
  }
  return status == CMR_SUCCESS ? status
                               : cmr_error_context(status, "%s: waiting for work on freed memory", lists->owner);
}

/* ---- stream capture (the list's lock held) ------------------------------------------ */

/* `stream`, whose list was marked capturing, is out of capture now: the
 * blocks it freed there are ordered after its work from here on. Out of
 * line: the first call after a capture. */
static __attribute__((noinline)) void cmr_capture_over(const cmr_stream_lists *lists, cmr_stream_list *list,
                                                       cmr_stream stream) {
  cmr_stream_list_unmark_capturing(list);
  if (!cmr_list_empty(list)) cmr_order_after_free(lists, list, stream);
}

/* Marks `list`, `stream`'s (locked), as seen capturing; a list keyed by
 * the capture remembers the stream, whose next call out of capture ends it
 * (cmr_capture_keys_end). */
static void cmr_mark_capturing(cmr_stream_lists *lists, cmr_stream_list *list, cmr_stream stream) {
  cmr_stream_list_mark_capturing(list);
  if (cmr_key_of_capture(list->key) && list->capture_stream == NULL) {
    list->capture_stream = stream;
    atomic_fetch_add(&lists->capture_keyed, 1);
    uintptr_t wanted = (uintptr_t)stream;
    for (size_t i = 0; i < cmr_capture_streams_kept; ++i) {
      uintptr_t empty = 0;
      if (atomic_load(&lists->capture_streams[i]) == wanted ||
          atomic_compare_exchange_strong(&lists->capture_streams[i], &empty, wanted)) {
        return;
      }
    }
    atomic_store(&lists->capture_streams_overflow, true);
  }
}

/* Whether `stream` may have lists keyed by its captures (capture_keyed is
 * not 0): it is in a slot, or the slots overflowed. */
static bool cmr_capture_keyed_stream(cmr_stream_lists *lists, cmr_stream stream) {
  if (atomic_load_explicit(&lists->capture_streams_overflow, memory_order_relaxed)) return true;
  for (size_t i = 0; i < cmr_capture_streams_kept; ++i) {
    if (atomic_load_explicit(&lists->capture_streams[i], memory_order_relaxed) == (uintptr_t)stream) return true;
  }
  return false;
}

/* Ends the lists `stream` was given under captures' keys (its id could not
 * be asked for there), as a stream's list ends when the stream is
 * destroyed: their keys no stream's again, their blocks for the other
 * streams, and the shared list's once idle. With `keep` 0 the stream is
 * out of capture, and an event it records orders their frees after its
 * work (which it may record while other streams capture). Else it
 * captures again, under `keep`: the earlier captures are over, but no
 * event can be recorded on it now, so their frees wait for a device
 * synchronization (unordered). Out of line: only while such lists exist. */
static __attribute__((noinline)) void cmr_capture_keys_end(cmr_stream_lists *lists, cmr_stream stream, uint64_t keep) {
  cmr_registry_lock(lists);
  for (size_t i = 0; i < atomic_load(&lists->count); ++i) {
    cmr_stream_list *list = lists->lists[i];
    cmr_list_lock(list);
    if (cmr_key_of_capture(list->key) && list->key != keep && list->capture_stream == stream) {
      cmr_stream_list_end(lists, list, stream, keep == 0);
    }
    cmr_list_unlock(list);
  }
  /* Under the registry, which every end of such a list holds: out of
   * capture, no list of the stream is left, nor, once the count is 0, of
   * any stream. */
  for (size_t i = 0; keep == 0 && i < cmr_capture_streams_kept; ++i) {
    uintptr_t held = (uintptr_t)stream;
    atomic_compare_exchange_strong(&lists->capture_streams[i], &held, 0);
  }
  if (atomic_load(&lists->capture_keyed) == 0) atomic_store(&lists->capture_streams_overflow, false);
  cmr_registry_unlock(lists);
  cmr_stream_list_recycle_dead(lists);
}

/* Whether `stream` may have lists under its captures' keys. */
static inline __attribute__((always_inline)) bool cmr_capture_keyed_here(cmr_stream_lists *lists, cmr_stream stream) {
  return __builtin_expect(atomic_load_explicit(&lists->capture_keyed, memory_order_relaxed) != 0, 0) &&
         cmr_capture_keyed_stream(lists, stream);
}

/* The key of `stream` at the start of an allocation or a free (no lock
 * held), whose capture status is known (`capturing`); a stream seen out of
 * capture ends the lists its captures were given. */
static inline __attribute__((always_inline)) cmr_status cmr_key_at_entry(cmr_stream_lists *lists, cmr_stream stream,
                                                                         bool capturing, uint64_t *key) {
  if (!capturing && cmr_capture_keyed_here(lists, stream)) cmr_capture_keys_end(lists, stream, 0);
  return cmr_key_of_stream(lists, stream, capturing, key);
}

/* ---- recently freed blocks, and those handed out from a list (its lock held) ---------- */

/* A recent block of exactly `size` bytes at `alignment`, out of the slots,
 * or NULL; the latest freed first (until the slots wrap). */
static CMR_PAIR_PATH cmr_block *cmr_recent_take(cmr_stream_list *list, size_t size, size_t alignment) {
  for (unsigned i = list->recent_count; i-- > 0;) {
    cmr_block *block = list->recent[i];
    if (block->size == size && ((uintptr_t)block->address & (alignment - 1)) == 0) {
      list->recent[i] = list->recent[--list->recent_count];
      list->recent_bytes -= size;
      return block;
    }
  }
  return NULL;
}

/* Keeps a freed block whole in a free slot (one must be free). */
static CMR_PAIR_PATH void cmr_recent_push(cmr_stream_list *list, cmr_block *block) {
  list->recent[list->recent_count++] = block;
  list->recent_bytes += block->size;
}

/* Keeps a freed block whole; when the slots are full, the one in the
 * victim's slot joins the index to make room. */
static CMR_PAIR_PATH void cmr_recent_keep(cmr_stream_list *list, cmr_block *block) {
  if (list->recent_count < cmr_recent_slots) {
    cmr_recent_push(list, block);
  } else {
    cmr_block *evicted = list->recent[list->recent_victim];
    list->recent_bytes -= evicted->size;
    cmr_free_blocks_insert(&list->blocks, evicted);
    list->recent[list->recent_victim] = block;
    list->recent_victim = (list->recent_victim + 1) % cmr_recent_slots;
    list->recent_bytes += block->size;
  }
}

/* Remembers `block`, handed out for a request of `bytes`, in a free slot
 * (one must be free). */
static CMR_PAIR_PATH void cmr_handed_push(cmr_stream_list *list, cmr_block *block, size_t bytes) {
  block->requested = bytes;
  list->handed_filter = UINT64_MAX;
  list->handed[list->handed_count++] = block;
}

/* Remembers `block`, just handed out by `list` for a request of `bytes`;
 * when the slots are full, the oldest goes to the block map to make room. */
static CMR_PAIR_PATH void *cmr_hand_out(const cmr_stream_lists *lists, cmr_stream_list *list, cmr_block *block,
                                        size_t bytes) {
  if (list->handed_count < cmr_handed_slots) {
    cmr_handed_push(list, block, bytes);
  } else {
    block->requested = bytes;
    list->handed_filter = UINT64_MAX;
    cmr_block_map_insert(lists->handed_out, list->handed[list->handed_victim]);
    list->handed[list->handed_victim] = block;
    list->handed_victim = (list->handed_victim + 1) % cmr_handed_slots;
  }
  return block->address;
}

/* Sets `list`'s filter from its remembered hand-outs (once after
 * hand-outs, for the frees that look past the latest). */
static uint64_t cmr_handed_filter_set(cmr_stream_list *list) {
  uint64_t filter = 0;
  for (unsigned i = 0; i < list->handed_count; ++i) filter |= cmr_handed_bit(list->handed[i]->address);
  list->handed_filter = filter;
  return filter;
}

/* `ptr` taken out of `list`'s remembered hand-outs, or NULL; unless the
 * filter says it is none of them, the latest first. */
static cmr_block *cmr_handed_find(cmr_stream_list *list, const void *ptr) {
  uint64_t filter = list->handed_filter;
  if (filter == UINT64_MAX) filter = cmr_handed_filter_set(list);
  if ((filter & cmr_handed_bit(ptr)) == 0) return NULL;
  for (unsigned i = list->handed_count; i-- > 0;) {
    cmr_block *block = list->handed[i];
    if (block->address == ptr) {
      list->handed[i] = list->handed[--list->handed_count];
      return block;
    }
  }
  return NULL;
}

/* ---- giving -------------------------------------------------------------------------- */

/* `block` into `list` (its lock held), on `stream`. Idle memory is merged
 * at once, for a request of any size. */
static CMR_PAIR_PATH void cmr_give_locked(const cmr_stream_lists *lists, cmr_stream_list *list, cmr_stream stream,
                                          cmr_block *block, cmr_given given) {
  list->hot = true;
  if (given == CMR_GIVEN_IDLE) {
    cmr_free_blocks_insert(&list->blocks, block);
    return;
  }
  cmr_recent_keep(list, block);
  cmr_order_after_free(lists, list, stream);
}

cmr_status cmr_stream_lists_give(cmr_stream_lists *lists, cmr_stream stream, cmr_block *block, cmr_given given) {
  cmr_stream_list *list = NULL;
  cmr_status status = cmr_lock_list_of(lists, stream, &list);
  if (status != CMR_SUCCESS) return status;
  cmr_give_locked(lists, list, stream, block, given);
  cmr_list_unlock(list);
  return CMR_SUCCESS;
}

cmr_status cmr_stream_lists_give_idle(cmr_stream_lists *lists, cmr_block *block) {
  cmr_registry_lock(lists);
  cmr_stream_list *shared = cmr_stream_list_shared(lists);
  if (shared != NULL) {
    cmr_list_lock(shared);
    shared->hot = true;
    cmr_free_blocks_insert(&shared->blocks, block);
    cmr_list_unlock(shared);
  }
  cmr_registry_unlock(lists);
  return shared != NULL ? CMR_SUCCESS
                        : cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: no host memory for the shared list", lists->owner);
}

cmr_status cmr_stream_lists_carve(cmr_stream_lists *lists, cmr_stream stream, cmr_block *fresh, size_t size,
                                  size_t alignment, cmr_given given, cmr_block **out) {
  *out = NULL;
  cmr_stream_list *list = NULL; /* found first: past this point nothing fails but the cut */
  cmr_status status = cmr_lock_list_of(lists, stream, &list);
  if (status != CMR_SUCCESS) return status;
  cmr_free_blocks cut;
  cmr_free_blocks_init(&cut);
  cmr_free_blocks_insert(&cut, fresh); /* alone in the set: it stays the same record */
  status = cmr_free_blocks_take(&cut, fresh, size, alignment, out);
  if (status != CMR_SUCCESS) {
    cmr_list_unlock(list);
    cmr_free_blocks_pop(&cut); /* `fresh` again, unchanged */
    return status;
  }
  cmr_free_blocks_absorb(&list->blocks, &cut);
  if (given == CMR_GIVEN_FREED) cmr_order_after_free(lists, list, stream);
  cmr_list_unlock(list);
  return CMR_SUCCESS;
}

/* ---- taking ---------------------------------------------------------------------------- */

static cmr_block *cmr_fit_in(const cmr_stream_lists *lists, const cmr_free_blocks *blocks, size_t needed) {
  return lists->fit == CMR_FIT_BEST ? cmr_free_blocks_best_fit(blocks, needed)
                                    : cmr_free_blocks_first_fit(blocks, needed);
}

/* `fit` as the lists may cut `size` bytes at `alignment` out of it: a
 * block above max_split only whole (`size` becomes its size), for a
 * request above max_split that it starts aligned for; else none (NULL). */
static cmr_block *cmr_unsplit_fit(const cmr_stream_lists *lists, cmr_block *fit, size_t *size, size_t alignment) {
  size_t max_split = atomic_load_explicit(&lists->max_split, memory_order_relaxed);
  if (fit == NULL || fit->size <= max_split) return fit;
  if (*size <= max_split || ((uintptr_t)fit->address & (alignment - 1)) != 0) return NULL;
  *size = fit->size;
  return fit;
}

/* Takes from `list` (lock held) if it has a fit: a recent block of the very
 * size, else from the index, where the recent blocks go before it is found
 * wanting. *out stays NULL otherwise. */
static cmr_status cmr_take_locked(const cmr_stream_lists *lists, cmr_stream_list *list, size_t size, size_t alignment,
                                  cmr_block **out) {
  *out = cmr_recent_take(list, size, alignment);
  if (*out != NULL) return CMR_SUCCESS;
  /* First fit means the lowest address of all: the recent blocks merge first. */
  if (lists->fit == CMR_FIT_FIRST) cmr_stream_list_flush_recent(list);
  size_t needed = cmr_free_blocks_needed(size, alignment);
  cmr_block *fit = cmr_fit_in(lists, &list->blocks, needed);
  if (fit == NULL && list->recent_count > 0) {
    cmr_stream_list_flush_recent(list);
    fit = cmr_fit_in(lists, &list->blocks, needed);
  }
  fit = cmr_unsplit_fit(lists, fit, &size, alignment);
  return fit == NULL ? CMR_SUCCESS : cmr_free_blocks_take(&list->blocks, fit, size, alignment, out);
}

/* Takes the block from the first other list that has a fit, once `stream`
 * is ordered after that list's frees. Only the block moves: the rest of the
 * list stays with its stream, so streams that take from one another do not
 * pass whole lists back and forth. */
static cmr_status cmr_take_from_others(cmr_stream_lists *lists, uint64_t own_key, cmr_stream stream, size_t size,
                                       size_t alignment, cmr_block **out) {
  cmr_stream_list_recycle_dead(lists);
  size_t needed = cmr_free_blocks_needed(size, alignment);
  cmr_status status = CMR_SUCCESS;
  cmr_registry_lock(lists);
  size_t count = atomic_load(&lists->count);
  for (size_t i = 0; i < count && status == CMR_SUCCESS && *out == NULL; ++i) {
    cmr_stream_list *other = lists->lists[i];
    if (other->key == own_key) continue;
    cmr_list_lock(other);
    cmr_stream_list_flush_recent(other);
    if (cmr_stream_list_reusable(other, false) && cmr_fit_in(lists, &other->blocks, needed) != NULL) {
      status = cmr_order_before_taking(lists, other, stream);
      if (status == CMR_SUCCESS) status = cmr_take_locked(lists, other, size, alignment, out);
    }
    cmr_list_unlock(other);
  }
  CMR_CHECK(cmr_stream_lists_valid_locked, lists, cmr_walked_after_change);
  cmr_registry_unlock(lists);
  return status;
}

/* When the own list has no recent block of the very size: the rest of the
 * take (inlined into the paths past the warm one). A fit in the own list is
 * handed out there with CMR_TAKE_HAND_OUT, as a recent block is. */
static inline cmr_status cmr_take_beyond_recent(cmr_stream_lists *lists, cmr_stream_list *own, uint64_t key,
                                                cmr_stream stream, size_t size, size_t alignment, unsigned flags,
                                                size_t bytes, void **handed, cmr_block **out) {
  if (cmr_free_blocks_needed(size, alignment) == SIZE_MAX) {
    cmr_list_unlock(own);
    return CMR_SUCCESS;
  }
  own->hot = true;
  cmr_block *block = NULL;
  cmr_status status = cmr_take_locked(lists, own, size, alignment, &block);
  if (block != NULL && (flags & CMR_TAKE_HAND_OUT)) {
    *handed = cmr_hand_out(lists, own, block, bytes);
  } else {
    *out = block;
  }
  cmr_list_unlock(own);
  if ((flags & CMR_TAKE_OTHERS) && status == CMR_SUCCESS && block == NULL) {
    status = cmr_take_from_others(lists, key, stream, size, alignment, out);
  }
  return status;
}

/* A take from the other streams' lists alone. */
static __attribute__((noinline)) cmr_status cmr_take_from_others_only(cmr_stream_lists *lists, cmr_stream stream,
                                                                      size_t size, size_t alignment, cmr_block **out) {
  uint64_t key;
  cmr_status status = cmr_key_of(lists, stream, &key);
  if (status != CMR_SUCCESS || cmr_free_blocks_needed(size, alignment) == SIZE_MAX) return status;
  return cmr_take_from_others(lists, key, stream, size, alignment, out);
}

/* An allocation on a capturing stream (stream_lists.h, "Under stream
 * capture"): its list is marked capturing, and the request served from
 * graph memory or refused. */
static __attribute__((noinline)) cmr_status cmr_take_in_capture(cmr_stream_lists *lists, uint64_t key,
                                                                cmr_stream stream, size_t size, size_t alignment,
                                                                size_t bytes, void **handed) {
  *handed = NULL;
  cmr_stream_list *own;
  /* Counted as capturing before its list is found: a stream first seen in
   * the capture gets a list made for it, and making one may evict, whose
   * device synchronization must not come while a capture is under way. */
  atomic_fetch_add(&cmr_capturing_lists, 1);
  /* A stream made elsewhere capturing again, never seen out of capture
   * since its last capture: that capture's lists end now. */
  if (cmr_key_of_capture(key) && cmr_capture_keyed_here(lists, stream)) cmr_capture_keys_end(lists, stream, key);
  cmr_status status = cmr_lock_list(lists, key, &own);
  if (status == CMR_SUCCESS) {
    cmr_mark_capturing(lists, own, stream);
    cmr_list_unlock(own);
  }
  atomic_fetch_sub(&cmr_capturing_lists, 1);
  if (status != CMR_SUCCESS) return status;
  if (lists->capture == CMR_CAPTURE_REFUSE) {
    return cmr_error(CMR_ERROR_STREAM_CAPTURE,
                     "%s: %zu bytes on stream %p, which is capturing a graph: this resource refuses allocations "
                     "during capture (capture = \"refuse\"); allocate before the capture, or make it with capture = "
                     "\"serve\"",
                     lists->owner, bytes, (void *)stream);
  }
  if (lists->capture_properties & ~cmr_backend_graph_memory_properties()) {
    return cmr_error(CMR_ERROR_STREAM_CAPTURE,
                     "%s: %zu bytes on stream %p, which is capturing a graph: its memory is host-accessible, and the "
                     "memory a capture allocates (a graph memory node) is device memory only",
                     lists->owner, bytes, (void *)stream);
  }
  return cmr_graph_blocks_allocate(&lists->graph, lists->owner, size, alignment, bytes, stream, handed);
}

/* Whether `stream` is capturing a graph: a backend call on every allocation
 * and free, but for a stream the backend knows without one. */
static inline __attribute__((always_inline)) cmr_status cmr_capturing(const cmr_stream_lists *lists, cmr_stream stream,
                                                                      bool *out) {
  *out = false;
  if (cmr_backend_stream_surely_not_capturing(stream)) return CMR_SUCCESS;
  cmr_status status = cmr_backend_stream_capturing(stream, out);
  return status == CMR_SUCCESS ? status : cmr_error_context(status, "%s", lists->owner);
}

cmr_status cmr_stream_lists_take(cmr_stream_lists *lists, cmr_stream stream, size_t size, size_t alignment,
                                 unsigned flags, size_t bytes, void **handed, cmr_block **out) {
  CMR_INVARIANT((flags & CMR_TAKE_OWN) || !(flags & CMR_TAKE_HAND_OUT)); /* it hands out from the own list only */
  *out = NULL;
  if (!(flags & CMR_TAKE_OWN)) return cmr_take_from_others_only(lists, stream, size, alignment, out);
  uint64_t key;
  cmr_stream_list *own;
  bool capturing = false;
  cmr_status status = CMR_SUCCESS;
  if (flags & CMR_TAKE_HAND_OUT) {
    status = cmr_capturing(lists, stream, &capturing);
    if (status == CMR_SUCCESS) status = cmr_key_at_entry(lists, stream, capturing, &key);
  } else {
    status = cmr_key_of(lists, stream, &key);
  }
  if (status == CMR_SUCCESS && __builtin_expect(capturing, 0)) {
    return cmr_take_in_capture(lists, key, stream, size, alignment, bytes, handed);
  }
  if (status == CMR_SUCCESS) status = cmr_lock_list(lists, key, &own);
  if (status != CMR_SUCCESS) {
    if (flags & CMR_TAKE_HAND_OUT) *handed = NULL;
    return status;
  }
  if (__builtin_expect(own->capturing, 0) && (flags & CMR_TAKE_HAND_OUT)) cmr_capture_over(lists, own, stream);
  if (flags & CMR_TAKE_HAND_OUT) {
    cmr_block *block = cmr_recent_take(own, size, alignment);
    if (block != NULL) {
      *handed = cmr_hand_out(lists, own, block, bytes);
      own->hot = true;
      cmr_list_unlock(own);
      return CMR_SUCCESS;
    }
    *handed = NULL;
  }
  return cmr_take_beyond_recent(lists, own, key, stream, size, alignment, flags, bytes, handed, out);
}

/* ---- the allocation path ----------------------------------------------------------------- */

/* The take with the hand-out, then the path's rest: every allocation the
 * warm path leaves, from the start. */
static __attribute__((noinline)) cmr_status cmr_allocate_taking(const cmr_allocation_path *path, size_t size,
                                                                size_t alignment, size_t bytes, cmr_stream stream,
                                                                void **out) {
  cmr_block *block = NULL;
  cmr_status status =
      cmr_stream_lists_take(path->lists, stream, size, alignment, path->take | CMR_TAKE_HAND_OUT, bytes, out, &block);
  if (status != CMR_SUCCESS || *out != NULL) return status;
  return path->beyond(path->resource, block, size, alignment, bytes, stream, out);
}

/* The same once the warm path had nothing to hand out at once from `own`
 * (locked), for a stream not capturing now. */
static __attribute__((noinline)) cmr_status cmr_allocate_beyond_recent(const cmr_allocation_path *path,
                                                                       cmr_stream_list *own, size_t size,
                                                                       size_t alignment, size_t bytes,
                                                                       cmr_stream stream, void **out) {
  if (__builtin_expect(own->capturing, 0)) cmr_capture_over(path->lists, own, stream);
  *out = NULL;
  cmr_block *block = NULL;
  cmr_status status = cmr_take_beyond_recent(path->lists, own, own->key, stream, size, alignment,
                                             path->take | CMR_TAKE_HAND_OUT, bytes, out, &block);
  if (status != CMR_SUCCESS || *out != NULL) return status;
  return path->beyond(path->resource, block, size, alignment, bytes, stream, out);
}

/* With `own` locked, for a stream not capturing now: the latest recent
 * block, when it has the very size and alignment, handed out and
 * remembered in a free slot; else the rest out of line (which looks at
 * every recent block). */
static CMR_PAIR_PATH cmr_status cmr_allocate_from(const cmr_allocation_path *path, cmr_stream_list *own, size_t size,
                                                  size_t alignment, size_t bytes, cmr_stream stream, void **out) {
  unsigned recent = own->recent_count;
  cmr_block *block = recent != 0 ? own->recent[recent - 1] : NULL;
  if (__builtin_expect(block == NULL || block->size != size || ((uintptr_t)block->address & (alignment - 1)) != 0 ||
                           own->capturing || own->handed_count == cmr_handed_slots,
                       0)) {
    return cmr_allocate_beyond_recent(path, own, size, alignment, bytes, stream, out);
  }
  own->recent_count = recent - 1;
  own->recent_bytes -= size;
  cmr_handed_push(own, block, bytes);
  own->hot = true;
  *out = block->address;
  cmr_list_unlock(own);
  return CMR_SUCCESS;
}

/* When the list of `key` was not the one this thread found last, was busy
 * or is `stale` (locked, recycled to another key since): found (or made)
 * and locked, then as the warm path. */
static __attribute__((noinline)) cmr_status cmr_allocate_registered(const cmr_allocation_path *path,
                                                                    cmr_stream_list *stale, uint64_t key, size_t size,
                                                                    size_t alignment, size_t bytes, cmr_stream stream,
                                                                    void **out) {
  if (stale != NULL) cmr_list_unlock_stale(stale);
  cmr_stream_list *own;
  cmr_status status = cmr_stream_list_lock_registered(path->lists, key, &own);
  if (status != CMR_SUCCESS) {
    *out = NULL;
    return status;
  }
  return cmr_allocate_from(path, own, size, alignment, bytes, stream, out);
}

/* The warm path once the key is known. */
static CMR_PAIR_PATH cmr_status cmr_allocate_keyed(const cmr_allocation_path *path, uint64_t key, size_t size,
                                                   size_t alignment, size_t bytes, cmr_stream stream, void **out) {
  cmr_stream_list *own = cmr_last_list_for(path->lists, key);
  if (__builtin_expect(own == NULL || !cmr_list_try_lock(own), 0)) {
    return cmr_allocate_registered(path, NULL, key, size, alignment, bytes, stream, out);
  }
  if (__builtin_expect(own->key != key, 0)) {
    return cmr_allocate_registered(path, own, key, size, alignment, bytes, stream, out);
  }
  return cmr_allocate_from(path, own, size, alignment, bytes, stream, out);
}

/* A stream whose key takes a call (one the user made): keyed, then as the
 * warm path. */
static __attribute__((noinline)) cmr_status cmr_allocate_on_stream(const cmr_allocation_path *path, size_t size,
                                                                   size_t alignment, size_t bytes, cmr_stream stream,
                                                                   void **out) {
  uint64_t key;
  cmr_status status = cmr_key_at_entry(path->lists, stream, false, &key);
  if (status != CMR_SUCCESS) {
    *out = NULL;
    return status;
  }
  return cmr_allocate_keyed(path, key, size, alignment, bytes, stream, out);
}

cmr_status cmr_stream_lists_allocate(const cmr_allocation_path *path, size_t size, size_t alignment, size_t bytes,
                                     cmr_stream stream, void **out) {
  if (__builtin_expect(!cmr_backend_stream_surely_not_capturing(stream), 0)) {
    return cmr_allocate_taking(path, size, alignment, bytes, stream, out);
  }
  uint64_t key;
  if (__builtin_expect(!cmr_key_at_hand(path->lists, stream, &key), 0)) {
    return cmr_allocate_on_stream(path, size, alignment, bytes, stream, out);
  }
  return cmr_allocate_keyed(path, key, size, alignment, bytes, stream, out);
}

/* ---- taking back ----------------------------------------------------------------------- */

/* `ptr` taken out of another list's remembered hand-outs (freed on a
 * stream other than its allocation's), or NULL. */
static cmr_block *cmr_handed_find_elsewhere(cmr_stream_lists *lists, uint64_t own_key, const void *ptr) {
  cmr_block *block = NULL;
  cmr_registry_lock(lists);
  size_t count = atomic_load(&lists->count);
  for (size_t i = 0; i < count && block == NULL; ++i) {
    cmr_stream_list *other = lists->lists[i];
    if (other->key == own_key) continue;
    cmr_list_lock(other);
    block = cmr_handed_find(other, ptr);
    cmr_list_unlock(other);
  }
  cmr_registry_unlock(lists);
  return block;
}

/* Graph memory the lists handed out on a capturing stream (*found), freed
 * on `stream`. Out of line: only a free no list or map knows gets here. */
static __attribute__((noinline)) cmr_status cmr_take_back_graph(cmr_stream_lists *lists, cmr_stream stream, void *ptr,
                                                                size_t bytes, bool *found) {
  return cmr_graph_blocks_free(&lists->graph, lists->owner, ptr, bytes, stream, found);
}

/* A block freed on `stream` into its list (locked); on a capturing stream
 * without an event, the list marked capturing. */
static CMR_PAIR_PATH void cmr_give_back_locked(cmr_stream_lists *lists, cmr_stream_list *list, cmr_stream stream,
                                               cmr_block *block, bool capturing) {
  if (__builtin_expect(capturing, 0)) {
    list->hot = true;
    cmr_recent_keep(list, block);
    cmr_mark_capturing(lists, list, stream);
    return;
  }
  cmr_give_locked(lists, list, stream, block, CMR_GIVEN_FREED);
}

/* A take-back into `own`, the stream's list (locked), on a stream
 * `capturing` or not, of `block` (taken out of `own`'s remembered
 * hand-outs; NULL when they do not have it): everything the warm path
 * does not do. */
static inline cmr_status cmr_take_back_rest(cmr_stream_lists *lists, cmr_stream_list *own, cmr_stream stream, void *ptr,
                                            size_t bytes, bool capturing, cmr_block *block) {
  uint64_t key = own->key;
  cmr_status status = CMR_SUCCESS;
  if (__builtin_expect(own->capturing, 0) && !capturing) cmr_capture_over(lists, own, stream);
  /* Else the block map (the list's lock comes before a shard's, as where
   * hand-outs move to the map). */
  if (block == NULL) block = cmr_block_map_remove(lists->handed_out, ptr);
  if (block == NULL) {
    cmr_list_unlock(own);
    bool graph = false;
    status = cmr_take_back_graph(lists, stream, ptr, bytes, &graph);
    if (graph) return status;
    block = cmr_handed_find_elsewhere(lists, key, ptr);
    /* A list may have moved it to the map while we looked, under its lock. */
    if (block == NULL) block = cmr_block_map_remove(lists->handed_out, ptr);
    if (block == NULL) {
      return cmr_error(CMR_ERROR_UNKNOWN_POINTER, "%s: %p was not allocated by this resource, or is already free",
                       lists->owner, ptr);
    }
    status = cmr_lock_list(lists, key, &own); /* the key is known: no driver call */
  }
  size_t requested = block->requested; /* read first: once back in the map, another thread may free it */
  if (status == CMR_SUCCESS && requested != bytes) {
    cmr_list_unlock(own);
    status = cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: %p was allocated with %zu bytes, not %zu: nothing was freed",
                       lists->owner, ptr, requested, bytes);
  }
  if (status != CMR_SUCCESS) { /* still handed out, as it was */
    cmr_block_map_insert(lists->handed_out, block);
    return status;
  }
  cmr_give_back_locked(lists, own, stream, block, capturing);
  cmr_list_unlock(own);
  return CMR_SUCCESS;
}

/* The same on a stream not capturing (six arguments: the warm path's
 * call to it passes none on the stack). */
static __attribute__((noinline)) cmr_status cmr_take_back_block(cmr_stream_lists *lists, cmr_stream_list *own,
                                                                cmr_stream stream, void *ptr, size_t bytes,
                                                                cmr_block *block) {
  return cmr_take_back_rest(lists, own, stream, ptr, bytes, false, block);
}

/* The same from `own`'s remembered hand-outs on. */
static __attribute__((noinline)) cmr_status cmr_take_back_into(cmr_stream_lists *lists, cmr_stream_list *own,
                                                               cmr_stream stream, void *ptr, size_t bytes,
                                                               bool capturing) {
  return cmr_take_back_rest(lists, own, stream, ptr, bytes, capturing, cmr_handed_find(own, ptr));
}

/* Every take-back the warm path leaves, from the start. */
static __attribute__((noinline)) cmr_status cmr_take_back_keyed(cmr_stream_lists *lists, cmr_stream stream, void *ptr,
                                                                size_t bytes) {
  uint64_t key;
  cmr_stream_list *own;
  bool capturing = false;
  cmr_status status = cmr_capturing(lists, stream, &capturing);
  if (status == CMR_SUCCESS) status = cmr_key_at_entry(lists, stream, capturing, &key);
  if (status == CMR_SUCCESS) status = cmr_lock_list(lists, key, &own);
  if (status != CMR_SUCCESS) return status;
  return cmr_take_back_into(lists, own, stream, ptr, bytes, capturing);
}

/* When the list of `key` was not the one this thread found last, was busy
 * or is `stale` (locked, recycled to another key since), on a stream not
 * capturing. */
static __attribute__((noinline)) cmr_status cmr_take_back_registered(cmr_stream_lists *lists, cmr_stream_list *stale,
                                                                     uint64_t key, cmr_stream stream, void *ptr,
                                                                     size_t bytes) {
  if (stale != NULL) cmr_list_unlock_stale(stale);
  cmr_stream_list *own;
  cmr_status status = cmr_stream_list_lock_registered(lists, key, &own);
  if (status != CMR_SUCCESS) return status;
  return cmr_take_back_into(lists, own, stream, ptr, bytes, false);
}

/* The warm path once the key is known: a block the list remembers handing
 * out, freed with the size it was asked for, joins the list's recent
 * blocks (while one is free, and the list records no event) under that
 * list's lock alone; anything else goes out of line. */
static CMR_PAIR_PATH cmr_status cmr_take_back_keyed_warm(cmr_stream_lists *lists, uint64_t key, cmr_stream stream,
                                                         void *ptr, size_t bytes) {
  cmr_stream_list *own = cmr_last_list_for(lists, key);
  if (__builtin_expect(own == NULL || !cmr_list_try_lock(own), 0)) {
    return cmr_take_back_registered(lists, NULL, key, stream, ptr, bytes);
  }
  if (__builtin_expect(own->key != key, 0)) return cmr_take_back_registered(lists, own, key, stream, ptr, bytes);
  unsigned latest = own->handed_count - 1; /* what is freed soonest: any other goes out of line */
  if (__builtin_expect(own->handed_count == 0 || own->handed[latest]->address != ptr, 0)) {
    return cmr_take_back_into(lists, own, stream, ptr, bytes, false);
  }
  cmr_block *block = own->handed[latest];
  own->handed_count = latest;
  if (__builtin_expect(
          own->capturing || own->shared || own->recent_count == cmr_recent_slots || block->requested != bytes, 0)) {
    return cmr_take_back_block(lists, own, stream, ptr, bytes, block);
  }
  cmr_recent_push(own, block);
  own->hot = true;
  own->unordered = true; /* a list not shared records no event (cmr_order_after_free) */
  CMR_CHECK(cmr_stream_list_free_ordered, own);
  cmr_list_unlock(own);
  return CMR_SUCCESS;
}

/* A stream whose key takes a call: keyed, then as the warm path. */
static __attribute__((noinline)) cmr_status cmr_take_back_on_stream(cmr_stream_lists *lists, cmr_stream stream,
                                                                    void *ptr, size_t bytes) {
  uint64_t key;
  cmr_status status = cmr_key_at_entry(lists, stream, false, &key);
  if (status != CMR_SUCCESS) return status;
  return cmr_take_back_keyed_warm(lists, key, stream, ptr, bytes);
}

cmr_status cmr_stream_lists_take_back(cmr_stream_lists *lists, cmr_stream stream, void *ptr, size_t bytes) {
  if (__builtin_expect(!cmr_backend_stream_surely_not_capturing(stream), 0)) {
    return cmr_take_back_keyed(lists, stream, ptr, bytes);
  }
  uint64_t key;
  if (__builtin_expect(!cmr_key_at_hand(lists, stream, &key), 0)) {
    return cmr_take_back_on_stream(lists, stream, ptr, bytes);
  }
  return cmr_take_back_keyed_warm(lists, key, stream, ptr, bytes);
}

/* ---- gathering ------------------------------------------------------------------------- */

/* Two lists' locks (the registry held: stream_list.h). */
static void cmr_lock_pair(cmr_stream_list *a, cmr_stream_list *b) {
  cmr_list_lock(a);
  cmr_list_lock(b);
}

static void cmr_unlock_pair(cmr_stream_list *a, cmr_stream_list *b) {
  cmr_list_unlock(a);
  cmr_list_unlock(b);
}

/* Moves all of `from`'s blocks into `own` (both locks held) once `stream` is
 * ordered after them; `own`'s event then covers their work. The move
 * happens under both locks, so no block is ever in neither list, where a
 * thread looking for memory would miss it and grow the resource instead. */
static cmr_status cmr_move_all(cmr_stream_lists *lists, cmr_stream_list *own, cmr_stream_list *from,
                               cmr_stream stream) {
  cmr_status status = cmr_order_before_taking(lists, from, stream);
  if (status != CMR_SUCCESS) return status;
  cmr_stream_list_flush_recent(from);
  cmr_free_blocks_absorb(&own->blocks, &from->blocks);
  cmr_order_after_free(lists, own, stream);
  return CMR_SUCCESS;
}

cmr_status cmr_stream_lists_reclaim(cmr_stream_lists *lists, cmr_stream stream, size_t size, size_t alignment,
                                    cmr_block **out) {
  *out = NULL;
  uint64_t key = 0;
  bool capturing = false;
  cmr_status status = cmr_capturing(lists, stream, &capturing);
  /* A capture's allocation is graph memory, out of which no gathering can make room. */
  if (status != CMR_SUCCESS || capturing) return status;
  status = cmr_key_of(lists, stream, &key);
  if (status != CMR_SUCCESS) return status;
  cmr_stream_list_recycle_dead(lists);
  cmr_stream_list *own = NULL;
  cmr_registry_lock(lists);
  status = cmr_stream_list_register(lists, key, &own); /* under the registry: no one recycles it before we are done */
  size_t count = atomic_load(&lists->count);
  for (size_t i = 0; i < count && status == CMR_SUCCESS; ++i) {
    cmr_stream_list *other = lists->lists[i];
    if (other == own) continue;
    cmr_lock_pair(own, other);
    if (!cmr_list_empty(other) && cmr_stream_list_reusable(other, false)) {
      status = cmr_move_all(lists, own, other, stream);
    }
    cmr_unlock_pair(own, other);
  }
  /* Taken before the registry is let go: a second thread gathering at the
   * same time would otherwise move everything on into its own list first. */
  if (status == CMR_SUCCESS && cmr_free_blocks_needed(size, alignment) != SIZE_MAX) {
    cmr_list_lock(own);
    status = cmr_take_locked(lists, own, size, alignment, out);
    cmr_list_unlock(own);
  }
  CMR_CHECK(cmr_stream_lists_valid_locked, lists, cmr_walked_after_change);
  cmr_registry_unlock(lists);
  return status;
}

/* ---- releasing --------------------------------------------------------------------------- */

/* Every list's blocks into `all` once the host has waited for their work
 * (every list locked); stops at the first failed wait. */
static cmr_status cmr_gather_waited(cmr_stream_lists *lists, cmr_free_blocks *all, size_t *gathered,
                                    cmr_stream_list **last) {
  size_t count = atomic_load(&lists->count);
  for (size_t i = 0; i < count; ++i) {
    cmr_stream_list *list = lists->lists[i];
    if (cmr_list_empty(list) || !cmr_stream_list_reusable(list, true)) continue;
    cmr_status status = cmr_order_before_release(lists, list);
    if (status != CMR_SUCCESS) return status;
    cmr_stream_list_flush_recent(list);
    cmr_free_blocks_absorb(all, &list->blocks);
    ++*gathered;
    *last = list;
  }
  return CMR_SUCCESS;
}

/* All the lists are locked at once (the registry held), so no block is ever
 * in none of them, where a thread looking for memory would miss it and grow
 * the resource instead. What is left goes back to its list when it all came
 * from one (its stream's later frees still merge with it there), else to the
 * shared list, idle for every stream. */
cmr_status cmr_stream_lists_release(cmr_stream_lists *lists, cmr_released which,
                                    void (*release)(cmr_block *block, void *arg), void *arg) {
  cmr_registry_lock(lists);
  cmr_stream_list *shared = cmr_stream_list_shared(lists);
  size_t count = atomic_load(&lists->count);
  for (size_t i = 0; i < count; ++i) cmr_list_lock(lists->lists[i]);
  cmr_free_blocks all;
  cmr_free_blocks_init(&all);
  size_t gathered = 0;
  cmr_stream_list *last = NULL;
  cmr_status status = cmr_gather_waited(lists, &all, &gathered, &last);
  cmr_stream_list *idle = gathered == 1 || shared == NULL ? last : shared; /* no memory for a shared list: any */
  for (cmr_block *block; (block = cmr_free_blocks_pop(&all)) != NULL;) {
    if (which == CMR_RELEASE_ALL || block->span == block->size) {
      release(block, arg);
    } else {
      cmr_free_blocks_insert(&idle->blocks, block);
    }
  }
  for (size_t i = 0; i < count; ++i) cmr_list_unlock(lists->lists[i]);
  CMR_CHECK(cmr_stream_lists_valid_locked, lists, cmr_walked_after_change);
  cmr_registry_unlock(lists);
  return status;
}

/* ---- trimming --------------------------------------------------------------------------- */

/* The recent block at `address` taken out of `list`'s slots, or NULL. */
static cmr_block *cmr_recent_remove(cmr_stream_list *list, const void *address) {
  for (unsigned i = 0; i < list->recent_count; ++i) {
    cmr_block *block = list->recent[i];
    if (block->address != address) continue;
    list->recent[i] = list->recent[--list->recent_count];
    list->recent_bytes -= block->size;
    return block;
  }
  return NULL;
}

cmr_status cmr_stream_lists_trim(cmr_stream_lists *lists, cmr_stream stream, const void *freed,
                                 bool (*take)(cmr_free_blocks *list, cmr_block *block, void *arg), void *arg) {
  cmr_stream_list *own = NULL;
  cmr_status status = cmr_lock_list_of(lists, stream, &own);
  if (status != CMR_SUCCESS) return status;
  if (freed != NULL) {
    cmr_block *block = cmr_recent_remove(own, freed);
    if (block != NULL) {
      cmr_stream_list_flush_recent(own);                   /* every free block where `take` can look */
      block = cmr_free_blocks_insert(&own->blocks, block); /* merged with its neighbours */
      cmr_free_blocks_remove(&own->blocks, block);
      if (!take(&own->blocks, block, arg)) cmr_free_blocks_insert(&own->blocks, block);
    }
  } else {
    cmr_stream_list_flush_recent(own);
    cmr_free_blocks all;
    cmr_free_blocks_init(&all);
    cmr_free_blocks_absorb(&all, &own->blocks);
    for (cmr_block *block; (block = cmr_free_blocks_pop(&all)) != NULL;) {
      if (!take(&own->blocks, block, arg)) cmr_free_blocks_insert(&own->blocks, block);
    }
  }
  cmr_list_unlock(own);
  return CMR_SUCCESS;
}

/* ---- reports ----------------------------------------------------------------------------- */

size_t cmr_stream_lists_largest(cmr_stream_lists *lists) {
  size_t largest = 0;
  cmr_registry_lock(lists);
  size_t count = atomic_load(&lists->count);
  for (size_t i = 0; i < count; ++i) {
    cmr_list_lock(lists->lists[i]);
    cmr_stream_list_flush_recent(lists->lists[i]);
    size_t own = cmr_free_blocks_largest(&lists->lists[i]->blocks);
    cmr_list_unlock(lists->lists[i]);
    if (own > largest) largest = own;
  }
  cmr_registry_unlock(lists);
  return largest;
}

void cmr_stream_lists_totals(cmr_stream_lists *lists, size_t *blocks, size_t *bytes, size_t *list_count) {
  *blocks = 0;
  *bytes = 0;
  cmr_registry_lock(lists);
  *list_count = atomic_load(&lists->count);
  for (size_t i = 0; i < *list_count; ++i) {
    cmr_list_lock(lists->lists[i]);
    *blocks += lists->lists[i]->blocks.count + lists->lists[i]->recent_count;
    *bytes += lists->lists[i]->blocks.bytes + lists->lists[i]->recent_bytes;
    cmr_list_unlock(lists->lists[i]);
  }
  cmr_registry_unlock(lists);
}

typedef struct keyed_visit {
  uint64_t key;
  void (*visit)(uint64_t key, const cmr_block *block, void *arg);
  void *arg;
} keyed_visit;

static void cmr_visit_keyed(const cmr_block *block, void *arg) {
  keyed_visit *keyed = arg;
  keyed->visit(keyed->key, block, keyed->arg);
}

void cmr_stream_lists_each(cmr_stream_lists *lists, void (*visit)(uint64_t key, const cmr_block *block, void *arg),
                           void *arg) {
  cmr_registry_lock(lists);
  size_t count = atomic_load(&lists->count);
  for (size_t i = 0; i < count; ++i) {
    cmr_stream_list *list = lists->lists[i];
    keyed_visit keyed = {list->key, visit, arg};
    cmr_list_lock(list);
    for (unsigned r = 0; r < list->recent_count; ++r) visit(list->key, list->recent[r], arg);
    cmr_free_blocks_each(&list->blocks, cmr_visit_keyed, &keyed);
    cmr_list_unlock(list);
  }
  cmr_registry_unlock(lists);
}

void cmr_stream_lists_each_handed(cmr_stream_lists *lists,
                                  void (*visit)(uint64_t key, const cmr_block *block, void *arg), void *arg) {
  cmr_registry_lock(lists);
  size_t count = atomic_load(&lists->count);
  for (size_t i = 0; i < count; ++i) {
    cmr_stream_list *list = lists->lists[i];
    cmr_list_lock(list);
    for (unsigned h = 0; h < list->handed_count; ++h) visit(list->key, list->handed[h], arg);
    cmr_list_unlock(list);
  }
  cmr_registry_unlock(lists);
}
