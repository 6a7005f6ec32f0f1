/* SPDX-License-Identifier: Apache-2.0 */
/* Which record is the list of a key (stream_list.h): the registry, each
 * thread's cache of it, and the records' recycling and freeing. */
#include <stdlib.h>

#include "stream_ends.h"
#include "stream_list.h"

/* ---- records and their shares ------------------------------------------------------ */

static _Atomic size_t records_allocated;

size_t cmr_stream_lists_records_allocated(void) { return atomic_load(&records_allocated); }

static void cmr_free_record(cmr_stream_list *list) {
  free(list);
  atomic_fetch_sub_explicit(&records_allocated, 1, memory_order_relaxed);
}

/* A cache slot's share, taken under the registry (where the record is still
 * the lists', so it cannot be freed meanwhile). */
static void cmr_take_share(cmr_stream_list *list) { atomic_fetch_add_explicit(&list->shares, 1, memory_order_relaxed); }

/* The last to let go of a record frees it: a cache slot here, or the lists
 * in cmr_let_go. */
static void cmr_drop_share(cmr_stream_list *list) {
  if (atomic_fetch_sub_explicit(&list->shares, 1, memory_order_acq_rel) == CMR_RECORD_LET_GO + 1) cmr_free_record(list);
}

/* The lists let go of a record, empty and with no event. */
static void cmr_let_go(cmr_stream_list *list) {
  if (atomic_fetch_add_explicit(&list->shares, CMR_RECORD_LET_GO, memory_order_acq_rel) == 0) cmr_free_record(list);
}

/* ---- the threads' caches ------------------------------------------------------------ */

enum { cache_slots = 8 };

/* One thread-local object, so that a lookup costs one access to it (in a
 * shared library each may be a call, __tls_get_addr). */
typedef struct thread_cache {
  cmr_cache_slot slots[cache_slots];
  unsigned victim;
  bool lets_go_at_exit; /* the thread-exit destructor is set for this thread */
} thread_cache;

static _Thread_local thread_cache cache;

CMR_HOT_THREAD_LOCAL cmr_cache_slot cmr_last_list;

static pthread_once_t cache_exit_once = PTHREAD_ONCE_INIT;
static pthread_key_t cache_exit;
static bool cache_exit_made;

/* An exiting thread's slots let go of their records. */
static void cmr_let_go_of_cache(void *unused) {
  (void)unused;
  cmr_last_list = (cmr_cache_slot){0, 0, NULL};
  for (unsigned i = 0; i < cache_slots; ++i) {
    if (cache.slots[i].list != NULL) cmr_drop_share(cache.slots[i].list);
    cache.slots[i] = (cmr_cache_slot){0, 0, NULL};
  }
  cache.lets_go_at_exit = false;
}

static void cmr_make_cache_exit(void) { cache_exit_made = pthread_key_create(&cache_exit, cmr_let_go_of_cache) == 0; }

/* Without a thread-specific slot (none left) the thread's shares outlive
 * it: the records they name, at most cache_slots, are never freed. */
static void cmr_let_go_at_exit(void) {
  if (cache.lets_go_at_exit) return;
  pthread_once(&cache_exit_once, cmr_make_cache_exit);
  cache.lets_go_at_exit = cache_exit_made && pthread_setspecific(cache_exit, (void *)1) == 0;
}

static cmr_cache_slot *cmr_cached(const cmr_stream_lists *lists, uint64_t key) {
  thread_cache *mine = &cache; /* its address taken once */
  for (unsigned i = 0; i < cache_slots; ++i) {
    if (mine->slots[i].serial == lists->serial && mine->slots[i].key == key) return &mine->slots[i];
  }
  return NULL;
}

/* `list` into a slot, with a share of it (registry held); the record the
 * slot named before loses its share, and cmr_last_list forgets it. */
static cmr_cache_slot *cmr_cache_list(const cmr_stream_lists *lists, uint64_t key, cmr_stream_list *list) {
  thread_cache *mine = &cache;
  cmr_cache_slot *slot = &mine->slots[mine->victim];
  mine->victim = (mine->victim + 1) % cache_slots;
  cmr_stream_list *before = slot->list;
  cmr_take_share(list);
  cmr_let_go_at_exit();
  *slot = (cmr_cache_slot){lists->serial, key, list};
  if (before != NULL) {
    if (cmr_last_list.list == before) cmr_last_list = (cmr_cache_slot){0, 0, NULL};
    cmr_drop_share(before);
  }
  return slot;
}

/* ---- the registry ---------------------------------------------------------------- */

_Atomic size_t cmr_capturing_lists;

/* Sets a record, new or recycled, to an empty list of `key`. A recycled one
 * may be locked by a thread that has it cmr_cached: it is changed under its lock. */
static void cmr_list_reset(const cmr_stream_lists *lists, cmr_stream_list *list, uint64_t key) {
  cmr_list_lock(list);
  list->key = key;
  if (lists->fit == CMR_FIT_FIRST) {
    cmr_free_blocks_init_by_address(&list->blocks);
  } else {
    cmr_free_blocks_init(&list->blocks);
  }
  list->recent_count = list->recent_victim = 0;
  list->recent_bytes = 0;
  list->handed_count = list->handed_victim = 0;
  list->handed_filter = 0;
  list->event = NULL;
  list->unordered = false;
  list->shared = false;
  list->hot = true;
  list->capturing = false;
  list->capture_stream = NULL;
  cmr_list_unlock(list);
}

/* A spare record, else a new one. Registry held. */
static cmr_status cmr_list_new(cmr_stream_lists *lists, uint64_t key, cmr_stream_list **out) {
  cmr_stream_list *list = lists->spares;
  if (list != NULL) {
    lists->spares = list->next_spare;
    lists->spare_count--;
  } else {
    list = aligned_alloc(64, sizeof *list);
    if (list == NULL) {
      return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: no host memory for a stream's free list", lists->owner);
    }
    atomic_fetch_add_explicit(&records_allocated, 1, memory_order_relaxed);
    cmr_lock_init(&list->lock);
    atomic_init(&list->shares, 0);
  }
  cmr_list_reset(lists, list, key);
  *out = list;
  return CMR_SUCCESS;
}

static cmr_stream_list *cmr_find(const cmr_stream_lists *lists, uint64_t key) {
  size_t count = atomic_load(&lists->count);
  for (size_t i = 0; i < count; ++i) {
    if (lists->lists[i]->key == key) return lists->lists[i];
  }
  return NULL;
}

/* A new list of `key` (none is registered). Registry held. */
static cmr_status cmr_add(cmr_stream_lists *lists, uint64_t key, cmr_stream_list **out) {
  size_t count = atomic_load(&lists->count);
  if (count == lists->capacity) {
    size_t capacity = lists->capacity ? lists->capacity * 2 : 8;
    cmr_stream_list **grown = realloc(lists->lists, capacity * sizeof *grown);
    if (grown == NULL)
      return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: no host memory for the stream table", lists->owner);
    lists->lists = grown;
    lists->capacity = capacity;
  }
  cmr_status status = cmr_list_new(lists, key, out);
  if (status != CMR_SUCCESS) return status;
  lists->lists[count] = *out;
  atomic_store(&lists->count, count + 1);
  return CMR_SUCCESS;
}

/* The table shrinks as the lists go, so that it too follows the lists in use. */
static void cmr_shrink_table(cmr_stream_lists *lists) {
  size_t count = atomic_load(&lists->count);
  if (lists->capacity <= 16 || count > lists->capacity / 4) return;
  cmr_stream_list **shrunk = realloc(lists->lists, lists->capacity / 2 * sizeof *shrunk);
  if (shrunk == NULL) return; /* the larger table serves as well */
  lists->lists = shrunk;
  lists->capacity /= 2;
}

/* Takes the empty list at `index` out of the registry, its key no stream's,
 * and keeps its record as a spare while there are few; else returns it, to
 * be let go once its lock is. Registry and the list's lock held. */
static cmr_stream_list *cmr_unregister_at(cmr_stream_lists *lists, size_t index) {
  cmr_stream_list *list = lists->lists[index];
  cmr_stream_list_flush_handed(lists, list);
  if (list->capture_stream != NULL) atomic_fetch_sub(&lists->capture_keyed, 1);
  list->capture_stream = NULL;
  if (list->key == CMR_DEAD_KEY) atomic_fetch_sub(&lists->dead, 1);
  list->key = CMR_DEAD_KEY;
  if (list->event != NULL) cmr_backend_event_destroy(list->event);
  list->event = NULL;
  cmr_stream_list_unmark_capturing(list);
  size_t count = atomic_load(&lists->count);
  for (size_t i = index + 1; i < count; ++i) lists->lists[i - 1] = lists->lists[i];
  atomic_store(&lists->count, count - 1);
  cmr_shrink_table(lists);
  if (lists->spare_count >= cmr_spares_kept) return list;
  list->next_spare = lists->spares;
  lists->spares = list;
  lists->spare_count++;
  return NULL;
}

static void cmr_evict(cmr_stream_lists *lists);

cmr_status cmr_stream_list_register(cmr_stream_lists *lists, uint64_t key, cmr_stream_list **out) {
  *out = cmr_find(lists, key);
  if (*out != NULL) return CMR_SUCCESS;
  if (atomic_load(&lists->count) >= lists->evict_at) cmr_evict(lists);
  return cmr_add(lists, key, out);
}

cmr_stream_list *cmr_stream_list_shared(cmr_stream_lists *lists) {
  cmr_stream_list *shared = cmr_find(lists, CMR_SHARED_KEY);
  if (shared == NULL && cmr_add(lists, CMR_SHARED_KEY, &shared) != CMR_SUCCESS) shared = NULL;
  return shared;
}

__attribute__((noinline)) cmr_status cmr_stream_list_lock_registered(cmr_stream_lists *lists, uint64_t key,
                                                                     cmr_stream_list **out) {
  cmr_cache_slot *slot = cmr_cached(lists, key);
  while (slot == NULL || !cmr_lock_if_keyed(slot, key, out)) {
    cmr_stream_list *list = NULL;
    cmr_registry_lock(lists);
    cmr_status status = cmr_stream_list_register(lists, key, &list);
    if (status == CMR_SUCCESS) slot = cmr_cache_list(lists, key, list);
    cmr_registry_unlock(lists);
    if (status != CMR_SUCCESS) return status;
  }
  cmr_last_list = *slot;
  return CMR_SUCCESS;
}

/* ---- recycling lists ---------------------------------------------------------------- */

/* An idle list's blocks into the shared list (both locks held), where they
 * merge; with `units_out`, a unit made whole goes to release_unit, if
 * there is one. */
static void cmr_move_idle(cmr_stream_lists *lists, cmr_stream_list *idle, cmr_stream_list *shared, bool units_out) {
  cmr_stream_list_flush_recent(idle);
  for (cmr_block *block; (block = cmr_free_blocks_pop(&idle->blocks)) != NULL;) {
    cmr_block *merged = cmr_free_blocks_insert(&shared->blocks, block);
    if (units_out && lists->release_unit != NULL && merged->span != 0 && merged->span == merged->size) {
      cmr_free_blocks_remove(&shared->blocks, merged);
      lists->release_unit(merged, lists->release_arg);
    }
  }
}

typedef enum recycling {
  RECYCLE_DEAD, /* dead lists; whole units to release_unit (the unit lock held) */
  RECYCLE_COLD  /* lists not used since the last eviction; every unit stays listed */
} recycling;

/* Recycles the lists `which` picks that are empty, or idle (their blocks
 * moved to the shared list first); returns how many it left for their
 * pending work. Registry held. */
static size_t cmr_recycle(cmr_stream_lists *lists, recycling which) {
  cmr_stream_list *shared = cmr_stream_list_shared(lists);
  size_t left = 0;
  for (size_t i = atomic_load(&lists->count); i-- > 0;) {
    cmr_stream_list *list = lists->lists[i];
    if (list == shared) continue;
    cmr_list_lock(list);
    bool picked = which == RECYCLE_DEAD ? list->key == CMR_DEAD_KEY : !list->hot;
    if (picked && !cmr_list_empty(list) && shared != NULL && cmr_stream_list_idle(list)) {
      cmr_list_lock(shared);
      cmr_move_idle(lists, list, shared, which == RECYCLE_DEAD);
      cmr_list_unlock(shared);
    }
    cmr_stream_list *gone = NULL;
    if (picked && cmr_list_empty(list)) {
      gone = cmr_unregister_at(lists, i);
    } else {
      left += picked;
    }
    cmr_list_unlock(list);
    if (gone != NULL) cmr_let_go(gone);
  }
  return left;
}

void cmr_stream_list_recycle_dead(cmr_stream_lists *lists) {
  if (atomic_load_explicit(&lists->dead, memory_order_relaxed) == 0) return;
  if (lists->unit_lock != NULL) {
    CMR_CHECK(cmr_stream_list_may_lock, CMR_UNIT_LOCK);
    cmr_mutex_lock(lists->unit_lock);
    if (CMR_CHECK_INVARIANTS) cmr_stream_list_locked(CMR_UNIT_LOCK, 1);
  }
  cmr_registry_lock(lists);
  cmr_recycle(lists, RECYCLE_DEAD);
  CMR_CHECK(cmr_stream_lists_valid_locked, lists, cmr_walked_after_change);
  cmr_registry_unlock(lists);
  if (lists->unit_lock != NULL) {
    if (CMR_CHECK_INVARIANTS) cmr_stream_list_locked(CMR_UNIT_LOCK, -1);
    cmr_mutex_unlock(lists->unit_lock);
  }
}

/* Recycles the lists no stream has used since the last eviction (a stream
 * destroyed behind cmr's back tells no one; a live one's list is made again
 * when next used). Those whose frees recorded no event (it may be too late
 * to record one: the stream may be gone) are made idle by one device
 * synchronization, when there are any: once per doubling of the lists, and
 * only when streams keep coming and going unannounced. The unit lock may be
 * held: the units stay in the shared list. Registry held. */
static void cmr_evict(cmr_stream_lists *lists) {
  bool synchronized = cmr_recycle(lists, RECYCLE_COLD) > 0 && atomic_load(&cmr_capturing_lists) == 0 &&
                      cmr_backend_device_synchronize_on(lists->device) == CMR_SUCCESS;
  if (synchronized) {
    for (size_t i = 0; i < atomic_load(&lists->count); ++i) {
      cmr_list_lock(lists->lists[i]);
      lists->lists[i]->unordered = false; /* all the work so far is done */
      cmr_list_unlock(lists->lists[i]);
    }
    cmr_recycle(lists, RECYCLE_COLD);
  }
  size_t hot = 0;
  for (size_t i = 0; i < atomic_load(&lists->count); ++i) {
    cmr_list_lock(lists->lists[i]);
    hot += lists->lists[i]->hot;
    lists->lists[i]->hot = false;
    cmr_list_unlock(lists->lists[i]);
  }
  /* The next eviction once as many lists are made as were in use (at least
   * 64): the lists stay within the ones in use, twice over, and a few kept
   * for their pending work. */
  lists->evict_at = atomic_load(&lists->count) + (hot > cmr_fewest_evicting ? hot : cmr_fewest_evicting);
}

void cmr_stream_list_end(cmr_stream_lists *lists, cmr_stream_list *list, cmr_stream order_on, bool order_on_idle) {
  /* Frees made in a capture are ordered after nothing an event has named yet. */
  const bool captured = list->capturing;
  if (captured) {
    cmr_stream_list_unmark_capturing(list);
    list->unordered = !cmr_list_empty(list);
  }
  const bool may_record = order_on_idle || (!captured && atomic_load(&cmr_capturing_lists) == 0);
  if (may_record && list->unordered && !cmr_list_empty(list)) {
    list->unordered = !cmr_stream_list_record(lists, list, order_on);
  }
  cmr_stream_list_flush_handed(lists, list); /* a free on another stream looks in the block map first */
  if (list->capture_stream != NULL) atomic_fetch_sub(&lists->capture_keyed, 1);
  list->capture_stream = NULL;
  list->key = CMR_DEAD_KEY;
  atomic_fetch_add(&lists->dead, 1);
}

void cmr_stream_lists_key_ended(cmr_stream_lists *lists, uint64_t key, cmr_stream order_on) {
  cmr_registry_lock(lists);
  cmr_stream_list *list = cmr_find(lists, key);
  if (list != NULL) {
    cmr_list_lock(list);
    cmr_stream_list_end(lists, list, order_on, false);
    cmr_list_unlock(list);
  }
  CMR_CHECK(cmr_stream_lists_valid_locked, lists, cmr_walked_after_change);
  cmr_registry_unlock(lists);
  cmr_stream_list_recycle_dead(lists);
}

size_t cmr_stream_lists_records(cmr_stream_lists *lists) {
  cmr_registry_lock(lists);
  size_t records = atomic_load(&lists->count) + lists->spare_count;
  cmr_registry_unlock(lists);
  return records;
}

/* Blocks still handed out go with the list, as those in the block map go
 * with the map (their owner can no longer free them). */
static void cmr_delete_contents(cmr_stream_list *list) {
  for (unsigned i = 0; i < list->recent_count; ++i) cmr_block_delete(list->recent[i]);
  for (unsigned i = 0; i < list->handed_count; ++i) cmr_block_delete(list->handed[i]);
  cmr_free_blocks_clear(&list->blocks);
  if (list->event != NULL) cmr_backend_event_destroy(list->event);
  cmr_stream_list_unmark_capturing(list);
  list->recent_count = list->handed_count = 0;
  list->handed_filter = 0;
  list->event = NULL;
}

void cmr_stream_list_let_go_all(cmr_stream_lists *lists) {
  size_t count = atomic_load(&lists->count);
  for (size_t i = 0; i < count; ++i) {
    cmr_delete_contents(lists->lists[i]);
    cmr_let_go(lists->lists[i]);
  }
  while (lists->spares != NULL) {
    cmr_stream_list *spare = lists->spares;
    lists->spares = spare->next_spare;
    cmr_let_go(spare);
  }
  free(lists->lists);
}
