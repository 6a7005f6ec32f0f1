/* SPDX-License-Identifier: Apache-2.0 */
/* Stream-ordered free lists (see stream_lists.h for the rules).
 *
 * Locks: each list has its own; the registry lock guards the array of lists.
 * The fast path (a stream's own list) takes that list's lock alone, finding
 * the list through a small thread-local cache. Taking from another list
 * holds the registry, then both lists' locks in address order; nothing takes
 * the registry while holding a list's lock. A list's key changes (it dies,
 * or its record is recycled) under the registry and its lock, so either
 * suffices to read it. Looking at dead lists takes the dead units' lock (if
 * any) before the registry. */
#include <pthread.h>
#include <stdlib.h>

#include "backend.h"
#include "block_map.h"
#include "stream_ends.h"
#include "stream_lists.h"
#include "invariants.h"
#include "lock.h"

/* How many freed blocks a list keeps whole, outside its index, and how many
 * of the blocks it handed out from them it remembers (below). */
enum { cmr_recent_slots = 16, cmr_handed_slots = 16 };

typedef struct cmr_stream_list {
  _Alignas(64) cmr_lock lock;
  uint64_t key;
  cmr_free_blocks blocks;
  /* Blocks freed here lately, kept as they are instead of
   * merged into `blocks`: a request of the same size (the common case: a loop
   * allocating and freeing the same buffers) takes one back without a walk
   * of the index, a new record or a split. They join the index (and merge)
   * when a new one needs the slot, and all of them before the list is found
   * to have no fit, so the resource never grows, nor takes from another
   * stream, while a fit is waiting here. */
  cmr_block *recent[cmr_recent_slots];
  unsigned recent_count, recent_victim;
  size_t recent_bytes;
  /* Blocks handed out from `recent` lately (cmr_stream_lists_take_recent),
   * kept here rather than in the resource's block map: their free on this
   * stream (the common case) finds them under the list's lock alone, which
   * only this stream's threads take, and touches no block-map shard that
   * other threads share. When a new one needs the slot, or before the
   * record is recycled, the oldest go to the block map. A free elsewhere
   * looks in every list (cmr_stream_lists_take_back). */
  cmr_block *handed[cmr_handed_slots];
  unsigned handed_count, handed_victim;
  cmr_backend_event event; /* made when first recorded */
  /* Blocks were freed here after the event's last record (or with none):
   * the event does not cover them and a taker must synchronize the device. */
  bool unordered;
  /* Another stream has taken from this list; from then on its frees record
   * the event. Until then they record nothing, so a list used by its own
   * stream alone never pays for an event. */
  bool shared;
  /* Its stream has used it since the last eviction (cmr_evict). */
  bool hot;
  struct cmr_stream_list *next_spare; /* a recycled record's link */
} cmr_stream_list;

struct cmr_stream_lists {
  const char *owner;
  cmr_fit fit;
  cmr_stream_keying keying;
  cmr_block_map *handed_out; /* the resource's map of what it handed out */
  /* The device current at creation: events are made and the device is
   * synchronized there, whichever is current at the call. */
  int device;
  /* Names this object in thread caches; never reused, unlike its address. */
  uint64_t serial;
  pthread_mutex_t registry;
  cmr_stream_list **lists;
  size_t capacity;
  _Atomic size_t count;
  /* Registry held: */
  cmr_stream_list *spares; /* recycled records */
  size_t spare_count;
  size_t evict_at;     /* registering past this many lists drops the empty ones */
  _Atomic size_t dead; /* dead lists not yet reclaimed */
  /* Where dead lists' whole units go (optional). */
  pthread_mutex_t *unit_lock;
  void (*release_unit)(cmr_block *block, void *arg);
  void *release_arg;
};

/* For the few functions of the warm pair (a recent block handed out, a
 * hand-out taken back): inlined into it, so it makes no calls. */
#define CMR_PAIR_PATH inline __attribute__((always_inline))

/* ---- keys and the thread cache --------------------------------------------------- */

/* Keys of the default streams' lists have one of the top bits set, which no
 * stream id (a small counter) or host token (a user-space address) has:
 * they are known without a driver call, on the path of every operation
 * (threads' keys: stream_ends.h). So have the shared list's, and the one
 * dead and spare lists carry, which no stream maps to. */
#define CMR_LEGACY_KEY (UINT64_C(1) << 62)
#define CMR_SHARED_KEY (UINT64_C(1) << 61)
#define CMR_DEAD_KEY UINT64_MAX

enum { cmr_fewest_evicting = 64 }; /* lists held before empty ones are evicted */

static _Atomic uint64_t cmr_next_serial = 1;

enum { cmr_cache_slots = 8 };

typedef struct cmr_cache_slot {
  uint64_t serial;
  uint64_t key;
  cmr_stream_list *list;
} cmr_cache_slot;

/* One thread-local object, so that a lookup costs one access to it (in a
 * shared library each may be a call, __tls_get_addr). */
typedef struct cmr_thread_cache {
  cmr_cache_slot slots[cmr_cache_slots];
  unsigned victim;
} cmr_thread_cache;

static _Thread_local cmr_thread_cache cmr_cache;

/* The list this thread found last, of any resource: a thread mostly uses
 * one. In static TLS (CMR_HOT_THREAD_LOCAL), so the common lookup reads it
 * with no call; the cache above serves the rest. */
static CMR_HOT_THREAD_LOCAL cmr_cache_slot cmr_last_list;

/* A stream made by the user is named by its id, a driver call: its handle
 * may be recycled once destroyed. The per-thread default stream is each
 * thread's own, so it is keyed by thread, as the legacy default stream is
 * too when the lists want per-thread arenas (legacy and per-thread default
 * streams order their work with each other). */
static inline __attribute__((always_inline)) cmr_status cmr_key_of(const cmr_stream_lists *lists, cmr_stream stream,
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
  cmr_status status = cmr_backend_stream_id(stream, key);
  return status == CMR_SUCCESS ? status : cmr_error_context(status, "%s", lists->owner);
}

static cmr_cache_slot *cmr_cached(const cmr_stream_lists *lists, uint64_t key) {
  cmr_thread_cache *cache = &cmr_cache; /* its address taken once */
  for (unsigned i = 0; i < cmr_cache_slots; ++i) {
    if (cache->slots[i].serial == lists->serial && cache->slots[i].key == key) return &cache->slots[i];
  }
  return NULL;
}

static cmr_cache_slot *cmr_cache_list(const cmr_stream_lists *lists, uint64_t key, cmr_stream_list *list) {
  cmr_thread_cache *cache = &cmr_cache;
  cmr_cache_slot *slot = &cache->slots[cache->victim];
  *slot = (cmr_cache_slot){lists->serial, key, list};
  cache->victim = (cache->victim + 1) % cmr_cache_slots;
  return slot;
}

/* ---- the registry ---------------------------------------------------------------- */

/* Sets a record, new or recycled, to an empty list of `key`. A recycled one
 * may be locked by a thread that has it cached: it is changed under its lock. */
static void cmr_list_reset(const cmr_stream_lists *lists, cmr_stream_list *list, uint64_t key) {
  cmr_lock_acquire(&list->lock);
  list->key = key;
  if (lists->fit == CMR_FIT_FIRST) {
    cmr_free_blocks_init_by_address(&list->blocks);
  } else {
    cmr_free_blocks_init(&list->blocks);
  }
  list->recent_count = list->recent_victim = 0;
  list->recent_bytes = 0;
  list->handed_count = list->handed_victim = 0;
  list->event = NULL;
  list->unordered = false;
  list->shared = false;
  list->hot = true;
  cmr_lock_release(&list->lock);
}

static bool cmr_list_empty(const cmr_stream_list *list) { return list->blocks.count + list->recent_count == 0; }

/* The blocks a list remembers handing out go to the block map (the list's
 * lock held): before its record is recycled, or it dies. */
static void cmr_handed_flush(const cmr_stream_lists *lists, cmr_stream_list *list) {
  for (unsigned i = 0; i < list->handed_count; ++i) cmr_block_map_insert(lists->handed_out, list->handed[i]);
  list->handed_count = list->handed_victim = 0;
}

/* Blocks still handed out go with the list, as those in the block map go
 * with the map (their owner can no longer free them). */
static void cmr_list_delete(cmr_stream_list *list) {
  for (unsigned i = 0; i < list->recent_count; ++i) cmr_block_delete(list->recent[i]);
  for (unsigned i = 0; i < list->handed_count; ++i) cmr_block_delete(list->handed[i]);
  cmr_free_blocks_clear(&list->blocks);
  if (list->event != NULL) cmr_backend_event_destroy(list->event);
  free(list);
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
    cmr_lock_init(&list->lock);
  }
  cmr_list_reset(lists, list, key);
  *out = list;
  return CMR_SUCCESS;
}

/* Takes the empty list at `index` out of the registry and keeps its record
 * as a spare, its key no stream's. Registry and the list's lock held. */
static void cmr_unregister_at(cmr_stream_lists *lists, size_t index) {
  cmr_stream_list *list = lists->lists[index];
  cmr_handed_flush(lists, list);
  if (list->key == CMR_DEAD_KEY) atomic_fetch_sub(&lists->dead, 1);
  list->key = CMR_DEAD_KEY;
  if (list->event != NULL) cmr_backend_event_destroy(list->event);
  list->event = NULL;
  list->next_spare = lists->spares;
  lists->spares = list;
  lists->spare_count++;
  size_t count = atomic_load(&lists->count);
  for (size_t i = index + 1; i < count; ++i) lists->lists[i - 1] = lists->lists[i];
  atomic_store(&lists->count, count - 1);
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

static void cmr_evict(cmr_stream_lists *lists);

/* The list of `key`, made and registered on first use; once the lists have
 * doubled in number since the last eviction, the cold ones go first. Registry held. */
static cmr_status cmr_register(cmr_stream_lists *lists, uint64_t key, cmr_stream_list **out) {
  *out = cmr_find(lists, key);
  if (*out != NULL) return CMR_SUCCESS;
  if (atomic_load(&lists->count) >= lists->evict_at) cmr_evict(lists);
  return cmr_add(lists, key, out);
}

/* Locks the list `slot` names when it is still the list of `key` (a
 * record may have been recycled since: its list died or was found empty,
 * and it names another key now); else forgets the slot. */
static inline __attribute__((always_inline)) bool cmr_lock_if_keyed(cmr_cache_slot *slot, uint64_t key,
                                                                    cmr_stream_list **out) {
  cmr_stream_list *list = slot->list;
  cmr_lock_acquire(&list->lock);
  if (list->key == key) {
    *out = list;
    return true;
  }
  cmr_lock_release(&list->lock);
  slot->serial = 0;
  return false;
}

/* The list of `key`, locked, when it is not the one this thread found
 * last: from the thread's cache, else the registry. */
static __attribute__((noinline)) cmr_status cmr_lock_registered_list(cmr_stream_lists *lists, uint64_t key,
                                                                     cmr_stream_list **out) {
  cmr_cache_slot *slot = cmr_cached(lists, key);
  while (slot == NULL || !cmr_lock_if_keyed(slot, key, out)) {
    cmr_stream_list *list = NULL;
    cmr_mutex_lock(&lists->registry);
    cmr_status status = cmr_register(lists, key, &list);
    pthread_mutex_unlock(&lists->registry);
    if (status != CMR_SUCCESS) return status;
    slot = cmr_cache_list(lists, key, list);
  }
  cmr_last_list = *slot;
  return CMR_SUCCESS;
}

/* Inlined: this is the path of every allocation and free. */
static inline __attribute__((always_inline)) cmr_status cmr_lock_list(cmr_stream_lists *lists, uint64_t key,
                                                                      cmr_stream_list **out) {
  if (cmr_last_list.serial == lists->serial && cmr_last_list.key == key &&
      cmr_lock_if_keyed(&cmr_last_list, key, out)) {
    return CMR_SUCCESS;
  }
  return cmr_lock_registered_list(lists, key, out);
}

static inline __attribute__((always_inline)) cmr_status cmr_lock_list_of(cmr_stream_lists *lists, cmr_stream stream,
                                                                         cmr_stream_list **out) {
  uint64_t key = 0;
  cmr_status status = cmr_key_of(lists, stream, &key);
  return status == CMR_SUCCESS ? cmr_lock_list(lists, key, out) : status;
}

cmr_status cmr_stream_lists_create(const char *owner, cmr_fit fit, cmr_stream_keying keying, cmr_block_map *handed_out,
                                   cmr_stream_lists **out) {
  cmr_stream_lists *lists = calloc(1, sizeof *lists);
  if (lists == NULL) return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: no host memory for the stream lists", owner);
  lists->owner = owner;
  lists->fit = fit;
  lists->keying = keying;
  lists->handed_out = handed_out;
  lists->device = cmr_backend_device_at_creation();
  lists->serial = atomic_fetch_add(&cmr_next_serial, 1);
  lists->evict_at = cmr_fewest_evicting;
  cmr_status status = cmr_mutex_init(&lists->registry, owner);
  if (status != CMR_SUCCESS) {
    free(lists);
    return status;
  }
  status = cmr_stream_ends_track(lists);
  if (status != CMR_SUCCESS) {
    pthread_mutex_destroy(&lists->registry);
    free(lists);
    return cmr_error_context(status, "%s", owner);
  }
  *out = lists;
  return CMR_SUCCESS;
}

void cmr_stream_lists_destroy(cmr_stream_lists *lists) {
  cmr_stream_ends_untrack(lists); /* first: no ending key reaches it after this */
  size_t count = atomic_load(&lists->count);
  for (size_t i = 0; i < count; ++i) cmr_list_delete(lists->lists[i]);
  while (lists->spares != NULL) {
    cmr_stream_list *spare = lists->spares;
    lists->spares = spare->next_spare;
    free(spare);
  }
  free(lists->lists);
  pthread_mutex_destroy(&lists->registry);
  free(lists);
}

void cmr_stream_lists_release_dead_units(cmr_stream_lists *lists, pthread_mutex_t *lock,
                                         void (*release)(cmr_block *block, void *arg), void *arg) {
  lists->unit_lock = lock;
  lists->release_unit = release;
  lists->release_arg = arg;
}

/* ---- ordering ---------------------------------------------------------------------- */

/* After blocks entered `list` on `stream`: record the list's event there so
 * a later taker can wait for them, once the list is shared; before that,
 * mark it unordered (its first taker synchronizes the device instead). A
 * failed event call degrades to the same. */
static bool cmr_record(const cmr_stream_lists *lists, cmr_stream_list *list, cmr_stream stream) {
  if (list->event == NULL && cmr_backend_event_create_on(lists->device, &list->event) != CMR_SUCCESS) {
    list->event = NULL;
    return false;
  }
  return cmr_backend_event_record(list->event, stream) == CMR_SUCCESS;
}

static bool cmr_free_ordered(const cmr_stream_list *list, const char **why);

static inline __attribute__((always_inline)) void cmr_order_after_free(const cmr_stream_lists *lists,
                                                                       cmr_stream_list *list, cmr_stream stream) {
  list->unordered = !list->shared || !cmr_record(lists, list, stream);
  CMR_CHECK(cmr_free_ordered(list, &why));
}

/* Before `stream` uses blocks taken from `list` (whose lock is held): make
 * it wait for the work ordered before their frees. The list is shared from
 * now on, unless it has only ever held idle memory (no free has come in,
 * with or without an event): taking that needs no order at all. */
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

/* ---- recently freed blocks (the list's lock held) ------------------------------------ */

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

/* Keeps a freed block whole; when the slots are full, the one in the
 * victim's slot joins the index to make room. */
static CMR_PAIR_PATH void cmr_recent_keep(cmr_stream_list *list, cmr_block *block) {
  if (list->recent_count < cmr_recent_slots) {
    list->recent[list->recent_count++] = block;
  } else {
    cmr_block *evicted = list->recent[list->recent_victim];
    list->recent_bytes -= evicted->size;
    cmr_free_blocks_insert(&list->blocks, evicted);
    list->recent[list->recent_victim] = block;
    list->recent_victim = (list->recent_victim + 1) % cmr_recent_slots;
  }
  list->recent_bytes += block->size;
}

/* Every recent block into the index, where it merges with its neighbours. */
static void cmr_recent_flush(cmr_stream_list *list) {
  for (unsigned i = 0; i < list->recent_count; ++i) cmr_free_blocks_insert(&list->blocks, list->recent[i]);
  list->recent_count = list->recent_victim = 0;
  list->recent_bytes = 0;
}

/* ---- invariants (issue 16; invariants.h) ------------------------------------------- */

/* How many index blocks a check after a change walks: past this the index
 * is left to its own check, so a checking build stays fast with many
 * blocks free; cmr_stream_lists_valid walks them all. Likewise, the check
 * across lists runs while they hold at most cmr_records_compared records. */
enum { cmr_walked_after_change = 64, cmr_records_compared = 1024 };

static bool cmr_broken(const char **why, const char *reason) {
  *why = reason;
  return false;
}

/* A free or handed-out block's shape: a nonzero size, address and size
 * multiples of 256 (what the index and the hand-outs assume). */
static bool cmr_block_shaped(const cmr_block *block) {
  return block != NULL && block->size != 0 && block->size % 256 == 0 && (uintptr_t)block->address % 256 == 0;
}

typedef struct cmr_index_walk {
  size_t count, bytes;
  bool misshapen;
} cmr_index_walk;

static void cmr_walk_index(const cmr_block *block, void *arg) {
  cmr_index_walk *walk = arg;
  walk->count++;
  walk->bytes += block->size;
  walk->misshapen |= !cmr_block_shaped(block);
}

/* Whether `list` (its lock held) holds together: its recent blocks and
 * hand-outs well formed, each record once, the recent bytes their sum; its
 * index's count and bytes what a walk finds (when it has at most `walk`
 * blocks). */
static bool cmr_list_valid(const cmr_stream_list *list, size_t walk, const char **why) {
  if (list->recent_count > cmr_recent_slots || list->recent_victim >= cmr_recent_slots) {
    return cmr_broken(why, "stream list: recent count or victim out of range");
  }
  if (list->handed_count > cmr_handed_slots || list->handed_victim >= cmr_handed_slots) {
    return cmr_broken(why, "stream list: hand-out count or victim out of range");
  }
  size_t recent_bytes = 0;
  for (unsigned i = 0; i < list->recent_count; ++i) {
    if (!cmr_block_shaped(list->recent[i])) return cmr_broken(why, "stream list: a recent block is misshapen");
    recent_bytes += list->recent[i]->size;
  }
  if (recent_bytes != list->recent_bytes)
    return cmr_broken(why, "stream list: recent bytes are not the recent blocks' sum");
  for (unsigned i = 0; i < list->handed_count; ++i) {
    const cmr_block *block = list->handed[i];
    if (!cmr_block_shaped(block)) return cmr_broken(why, "stream list: a remembered hand-out is misshapen");
    if (block->requested == 0 || block->requested > block->size) {
      return cmr_broken(why, "stream list: a hand-out's requested bytes are 0 or more than its block");
    }
  }
  const cmr_block *const *records[2] = {(const cmr_block *const *)list->recent, (const cmr_block *const *)list->handed};
  unsigned counts[2] = {list->recent_count, list->handed_count};
  for (unsigned a = 0; a < counts[0] + counts[1]; ++a) {
    for (unsigned b = a + 1; b < counts[0] + counts[1]; ++b) {
      const cmr_block *first = a < counts[0] ? records[0][a] : records[1][a - counts[0]];
      const cmr_block *second = b < counts[0] ? records[0][b] : records[1][b - counts[0]];
      if (first == second) return cmr_broken(why, "stream list: a block is twice among the recent and handed out");
    }
  }
  if (list->blocks.count <= walk) {
    cmr_index_walk found = {0, 0, false};
    cmr_free_blocks_each(&list->blocks, cmr_walk_index, &found);
    if (found.count != list->blocks.count || found.bytes != list->blocks.bytes) {
      return cmr_broken(why, "stream list: the index's count or bytes disagree with its blocks");
    }
    if (found.misshapen) return cmr_broken(why, "stream list: an index block is misshapen");
  }
  return true;
}

/* After a free with work pending into `list`: a taker on another stream can
 * be ordered after it, by the list's event or by the device synchronization
 * it owes (unordered). */
static bool cmr_free_ordered(const cmr_stream_list *list, const char **why) {
  if (list->unordered || list->event != NULL) return true;
  return cmr_broken(why, "stream list: a free neither an event nor a pending synchronization covers");
}

/* Lets go of a list, which may have changed: a checking build checks it
 * first (cheaply: what a change can touch). */
static inline __attribute__((always_inline)) void cmr_list_unlock(cmr_stream_list *list) {
  CMR_CHECK(cmr_list_valid(list, cmr_walked_after_change, &why));
  cmr_lock_release(&list->lock);
}

typedef struct cmr_gathered {
  const cmr_block *blocks[cmr_records_compared];
  size_t count;
  bool overflow;
} cmr_gathered;

static void cmr_gather(cmr_gathered *gathered, const cmr_block *block) {
  if (gathered->count == cmr_records_compared) {
    gathered->overflow = true;
    return;
  }
  gathered->blocks[gathered->count++] = block;
}

static void cmr_gather_indexed(const cmr_block *block, void *arg) { cmr_gather(arg, block); }

static int cmr_by_address(const void *a, const void *b) {
  uintptr_t left = (uintptr_t)(*(const cmr_block *const *)a)->address;
  uintptr_t right = (uintptr_t)(*(const cmr_block *const *)b)->address;
  return left < right ? -1 : left > right;
}

/* Whether every record the lists hold, free or remembered as handed out,
 * is in exactly one place and no two cover the same bytes. */
static bool cmr_records_apart(cmr_gathered *gathered, const char **why) {
  qsort(gathered->blocks, gathered->count, sizeof gathered->blocks[0], cmr_by_address);
  for (size_t i = 1; i < gathered->count; ++i) {
    const cmr_block *before = gathered->blocks[i - 1], *after = gathered->blocks[i];
    if (before == after) return cmr_broken(why, "stream lists: a block record is in two places");
    if (before->address + before->size > after->address) {
      return cmr_broken(why, "stream lists: two blocks (free or handed out) cover the same bytes");
    }
  }
  return true;
}

/* Every list (the registry held, no list's lock), each walked up to
 * `walk` index blocks; and across lists, while they hold few records. All
 * the lists are locked at once, so no block moves between two of them
 * while they are looked at (no deadlock: a thread holding one list's lock
 * takes another's only under the registry, which this holds). */
static bool cmr_lists_valid_locked(cmr_stream_lists *lists, size_t walk, const char **why) {
  cmr_gathered *gathered = calloc(1, sizeof *gathered); /* no memory: the lists alone are checked */
  bool valid = true;
  size_t count = atomic_load(&lists->count);
  for (size_t i = 0; i < count; ++i) cmr_lock_acquire(&lists->lists[i]->lock);
  for (size_t i = 0; i < count && valid; ++i) {
    const cmr_stream_list *list = lists->lists[i];
    valid = cmr_list_valid(list, walk, why);
    if (gathered != NULL && !gathered->overflow && list->blocks.count <= cmr_records_compared) {
      for (unsigned r = 0; r < list->recent_count; ++r) cmr_gather(gathered, list->recent[r]);
      for (unsigned h = 0; h < list->handed_count; ++h) cmr_gather(gathered, list->handed[h]);
      cmr_free_blocks_each(&list->blocks, cmr_gather_indexed, gathered);
    } else if (gathered != NULL) {
      gathered->overflow = true;
    }
  }
  if (valid && gathered != NULL && !gathered->overflow) valid = cmr_records_apart(gathered, why);
  for (size_t i = 0; i < count; ++i) cmr_lock_release(&lists->lists[i]->lock);
  free(gathered);
  return valid;
}

bool cmr_stream_lists_valid(cmr_stream_lists *lists, const char **why) {
  cmr_mutex_lock(&lists->registry);
  bool valid = cmr_lists_valid_locked(lists, SIZE_MAX, why);
  pthread_mutex_unlock(&lists->registry);
  return valid;
}

/* ---- giving and taking ------------------------------------------------------------- */

/* `block` into `list` (its lock held), on `stream`. New memory is merged,
 * for a request of any size. */
static CMR_PAIR_PATH void cmr_give_locked(const cmr_stream_lists *lists, cmr_stream_list *list, cmr_stream stream,
                                          cmr_block *block, bool pending_work) {
  list->hot = true;
  if (pending_work) {
    cmr_recent_keep(list, block);
  } else {
    cmr_free_blocks_insert(&list->blocks, block);
  }
  if (pending_work) cmr_order_after_free(lists, list, stream);
}

static cmr_status cmr_give(cmr_stream_lists *lists, cmr_stream stream, cmr_block *block, bool pending_work) {
  cmr_stream_list *list = NULL;
  cmr_status status = cmr_lock_list_of(lists, stream, &list);
  if (status != CMR_SUCCESS) return status;
  cmr_give_locked(lists, list, stream, block, pending_work);
  cmr_list_unlock(list);
  return CMR_SUCCESS;
}

cmr_status cmr_stream_lists_give(cmr_stream_lists *lists, cmr_stream stream, cmr_block *block) {
  return cmr_give(lists, stream, block, true);
}

cmr_status cmr_stream_lists_give_idle(cmr_stream_lists *lists, cmr_stream stream, cmr_block *block) {
  return cmr_give(lists, stream, block, false);
}

static cmr_status cmr_carve(cmr_stream_lists *lists, cmr_stream stream, cmr_block *fresh, size_t size, size_t alignment,
                            bool pending_work, cmr_block **out) {
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
  if (pending_work) cmr_order_after_free(lists, list, stream);
  cmr_list_unlock(list);
  return CMR_SUCCESS;
}

cmr_status cmr_stream_lists_carve_idle(cmr_stream_lists *lists, cmr_stream stream, cmr_block *fresh, size_t size,
                                       size_t alignment, cmr_block **out) {
  return cmr_carve(lists, stream, fresh, size, alignment, false, out);
}

cmr_status cmr_stream_lists_carve(cmr_stream_lists *lists, cmr_stream stream, cmr_block *fresh, size_t size,
                                  size_t alignment, cmr_block **out) {
  return cmr_carve(lists, stream, fresh, size, alignment, true, out);
}

static cmr_block *cmr_fit_in(const cmr_stream_lists *lists, const cmr_free_blocks *blocks, size_t needed) {
  return lists->fit == CMR_FIT_BEST ? cmr_free_blocks_best_fit(blocks, needed)
                                    : cmr_free_blocks_first_fit(blocks, needed);
}

/* Takes from `list` (lock held) if it has a fit: a recent block of the very
 * size, else from the index, where the recent blocks go before it is found
 * wanting. *out stays NULL otherwise. */
static cmr_status cmr_take_locked(const cmr_stream_lists *lists, cmr_stream_list *list, size_t size, size_t alignment,
                                  cmr_block **out) {
  *out = cmr_recent_take(list, size, alignment);
  if (*out != NULL) return CMR_SUCCESS;
  /* First fit means the lowest address of all: the recent blocks merge first. */
  if (lists->fit == CMR_FIT_FIRST) cmr_recent_flush(list);
  size_t needed = cmr_free_blocks_needed(size, alignment);
  cmr_block *fit = cmr_fit_in(lists, &list->blocks, needed);
  if (fit == NULL && list->recent_count > 0) {
    cmr_recent_flush(list);
    fit = cmr_fit_in(lists, &list->blocks, needed);
  }
  return fit == NULL ? CMR_SUCCESS : cmr_free_blocks_take(&list->blocks, fit, size, alignment, out);
}

/* Two lists' locks, taken in address order so that any two threads locking
 * any two pairs cannot deadlock. */
static void cmr_lock_pair(cmr_stream_list *a, cmr_stream_list *b) {
  cmr_lock_acquire(a < b ? &a->lock : &b->lock);
  cmr_lock_acquire(a < b ? &b->lock : &a->lock);
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
  cmr_recent_flush(from);
  cmr_free_blocks_absorb(&own->blocks, &from->blocks);
  cmr_order_after_free(lists, own, stream);
  return CMR_SUCCESS;
}

/* ---- recycling lists ---------------------------------------------------------------- */

/* Whether the work ordered before a list's frees is done, so that its
 * blocks are idle. An unordered one waits for a taker (who synchronizes). */
static bool cmr_list_idle(cmr_stream_list *list) {
  if (list->unordered) return false;
  bool reached = true;
  return list->event == NULL || (cmr_backend_event_query(list->event, &reached) == CMR_SUCCESS && reached);
}

/* An idle list's blocks into the shared list (both locks held), where they
 * merge; with `release_units`, a unit made whole goes to release_unit, if
 * there is one. */
static void cmr_move_idle(cmr_stream_lists *lists, cmr_stream_list *idle, cmr_stream_list *shared, bool release_units) {
  cmr_recent_flush(idle);
  for (cmr_block *block; (block = cmr_free_blocks_pop(&idle->blocks)) != NULL;) {
    cmr_block *merged = cmr_free_blocks_insert(&shared->blocks, block);
    if (release_units && lists->release_unit != NULL && merged->span != 0 && merged->span == merged->size) {
      cmr_free_blocks_remove(&shared->blocks, merged);
      lists->release_unit(merged, lists->release_arg);
    }
  }
}

typedef enum cmr_recycling {
  CMR_RECYCLE_DEAD, /* dead lists; whole units to release_unit (the unit lock held) */
  CMR_RECYCLE_COLD  /* lists not used since the last eviction; every unit stays listed */
} cmr_recycling;

/* The shared list, found or made (NULL without host memory). Registry held. */
static cmr_stream_list *cmr_shared_list(cmr_stream_lists *lists) {
  cmr_stream_list *shared = cmr_find(lists, CMR_SHARED_KEY);
  if (shared == NULL && cmr_add(lists, CMR_SHARED_KEY, &shared) != CMR_SUCCESS) shared = NULL;
  return shared;
}

/* Recycles the lists `which` picks that are empty, or idle (their blocks
 * moved to the shared list first); returns how many it left for their
 * pending work. Registry held. */
static size_t cmr_recycle(cmr_stream_lists *lists, cmr_recycling which) {
  cmr_stream_list *shared = cmr_shared_list(lists);
  size_t left = 0;
  for (size_t i = atomic_load(&lists->count); i-- > 0;) {
    cmr_stream_list *list = lists->lists[i];
    if (list == shared) continue;
    cmr_lock_acquire(&list->lock);
    bool picked = which == CMR_RECYCLE_DEAD ? list->key == CMR_DEAD_KEY : !list->hot;
    if (picked && !cmr_list_empty(list) && shared != NULL && cmr_list_idle(list)) {
      cmr_lock_acquire(&shared->lock);
      cmr_move_idle(lists, list, shared, which == CMR_RECYCLE_DEAD);
      cmr_list_unlock(shared);
    }
    if (picked && cmr_list_empty(list)) {
      cmr_unregister_at(lists, i);
    } else {
      left += picked;
    }
    cmr_list_unlock(list);
  }
  return left;
}

/* Recycles every dead list that is empty or idle. Those whose work is still
 * pending stay for the next look. Takes the unit lock and the registry: the
 * caller holds neither. */
static void cmr_reclaim_dead(cmr_stream_lists *lists) {
  if (atomic_load_explicit(&lists->dead, memory_order_relaxed) == 0) return;
  if (lists->unit_lock != NULL) cmr_mutex_lock(lists->unit_lock);
  cmr_mutex_lock(&lists->registry);
  cmr_recycle(lists, CMR_RECYCLE_DEAD);
  CMR_CHECK(cmr_lists_valid_locked(lists, cmr_walked_after_change, &why));
  pthread_mutex_unlock(&lists->registry);
  if (lists->unit_lock != NULL) pthread_mutex_unlock(lists->unit_lock);
}

/* Recycles the lists no stream has used since the last eviction (a stream
 * destroyed behind cmr's back tells no one; a live one's list is made again
 * when next used). Those whose frees recorded no event (it may be too late
 * to record one: the stream may be gone) are made idle by one device
 * synchronization, when there are any: once per doubling of the lists, and
 * only when streams keep coming and going unannounced. The unit lock may be
 * held: the units stay in the shared list. Registry held. */
static void cmr_evict(cmr_stream_lists *lists) {
  bool synchronized =
      cmr_recycle(lists, CMR_RECYCLE_COLD) > 0 && cmr_backend_device_synchronize_on(lists->device) == CMR_SUCCESS;
  if (synchronized) {
    for (size_t i = 0; i < atomic_load(&lists->count); ++i) {
      cmr_lock_acquire(&lists->lists[i]->lock);
      lists->lists[i]->unordered = false; /* all the work so far is done */
      cmr_list_unlock(lists->lists[i]);
    }
    cmr_recycle(lists, CMR_RECYCLE_COLD);
  }
  size_t hot = 0;
  for (size_t i = 0; i < atomic_load(&lists->count); ++i) {
    cmr_lock_acquire(&lists->lists[i]->lock);
    hot += lists->lists[i]->hot;
    lists->lists[i]->hot = false;
    cmr_list_unlock(lists->lists[i]);
  }
  /* The next eviction once as many lists are made as were in use (at least
   * 64): the lists stay within the ones in use, twice over, and a few kept
   * for their pending work. */
  lists->evict_at = atomic_load(&lists->count) + (hot > cmr_fewest_evicting ? hot : cmr_fewest_evicting);
}

void cmr_stream_lists_key_ended(cmr_stream_lists *lists, uint64_t key, cmr_stream order_on) {
  cmr_mutex_lock(&lists->registry);
  size_t count = atomic_load(&lists->count);
  for (size_t i = 0; i < count; ++i) {
    cmr_stream_list *list = lists->lists[i];
    if (list->key != key) continue;
    cmr_lock_acquire(&list->lock);
    if (list->unordered && !cmr_list_empty(list)) list->unordered = !cmr_record(lists, list, order_on);
    cmr_handed_flush(lists, list); /* a free on another stream looks in the block map first */
    list->key = CMR_DEAD_KEY;
    atomic_fetch_add(&lists->dead, 1);
    cmr_list_unlock(list);
    break;
  }
  CMR_CHECK(cmr_lists_valid_locked(lists, cmr_walked_after_change, &why));
  pthread_mutex_unlock(&lists->registry);
  cmr_reclaim_dead(lists);
}

size_t cmr_stream_lists_records(cmr_stream_lists *lists) {
  cmr_mutex_lock(&lists->registry);
  size_t records = atomic_load(&lists->count) + lists->spare_count;
  pthread_mutex_unlock(&lists->registry);
  return records;
}

/* ---- taking from other streams ------------------------------------------------------ */

/* Takes the block from the first other list that has a fit, once `stream`
 * is ordered after that list's frees. Only the block moves: the rest of the
 * list stays with its stream, so streams that take from one another do not
 * pass whole lists back and forth. */
static cmr_status cmr_take_from_others(cmr_stream_lists *lists, uint64_t own_key, cmr_stream stream, size_t size,
                                       size_t alignment, cmr_block **out) {
  cmr_reclaim_dead(lists);
  size_t needed = cmr_free_blocks_needed(size, alignment);
  cmr_status status = CMR_SUCCESS;
  cmr_mutex_lock(&lists->registry);
  size_t count = atomic_load(&lists->count);
  for (size_t i = 0; i < count && status == CMR_SUCCESS && *out == NULL; ++i) {
    cmr_stream_list *other = lists->lists[i];
    if (other->key == own_key) continue;
    cmr_lock_acquire(&other->lock);
    cmr_recent_flush(other);
    if (cmr_fit_in(lists, &other->blocks, needed) != NULL) {
      status = cmr_order_before_taking(lists, other, stream);
      if (status == CMR_SUCCESS) status = cmr_take_locked(lists, other, size, alignment, out);
    }
    cmr_list_unlock(other);
  }
  CMR_CHECK(cmr_lists_valid_locked(lists, cmr_walked_after_change, &why));
  pthread_mutex_unlock(&lists->registry);
  return status;
}

typedef enum cmr_take_from { CMR_TAKE_OWN = 1, CMR_TAKE_OTHERS = 2, CMR_TAKE_ANY = 3 } cmr_take_from;

/* Remembers `block`, just handed out by `list` (its lock held); when the
 * slots are full, the oldest goes to the block map to make room. */
static CMR_PAIR_PATH void cmr_handed_keep(const cmr_stream_lists *lists, cmr_stream_list *list, cmr_block *block) {
  if (list->handed_count < cmr_handed_slots) {
    list->handed[list->handed_count++] = block;
    return;
  }
  cmr_block_map_insert(lists->handed_out, list->handed[list->handed_victim]);
  list->handed[list->handed_victim] = block;
  list->handed_victim = (list->handed_victim + 1) % cmr_handed_slots;
}

/* A hand-out: the recent block of the very size, handed out for a request
 * of `bytes` and remembered by `list` (its lock held); NULL when none. */
static CMR_PAIR_PATH void *cmr_hand_out_recent(const cmr_stream_lists *lists, cmr_stream_list *list, size_t size,
                                               size_t alignment, size_t bytes) {
  cmr_block *block = cmr_recent_take(list, size, alignment);
  if (block == NULL) return NULL;
  block->requested = bytes;
  cmr_handed_keep(lists, list, block);
  return block->address;
}

/* From `own` (the list of `key`, locked: unlocked here), then, if `from`
 * says so, from the others. */
static cmr_status cmr_take_from_locked(cmr_stream_lists *lists, cmr_stream_list *own, uint64_t key, cmr_stream stream,
                                       size_t size, size_t alignment, cmr_take_from from, cmr_block **out) {
  own->hot = true;
  cmr_status status = cmr_take_locked(lists, own, size, alignment, out);
  cmr_list_unlock(own);
  if ((from & CMR_TAKE_OTHERS) && status == CMR_SUCCESS && *out == NULL) {
    status = cmr_take_from_others(lists, key, stream, size, alignment, out);
  }
  return status;
}

/* The stream's list is looked up once whatever is searched: the lookup may
 * be a driver call (and fails, in the tests, on the call they choose). */
static cmr_status cmr_take(cmr_stream_lists *lists, cmr_stream stream, size_t size, size_t alignment,
                           cmr_take_from from, cmr_block **out) {
  *out = NULL;
  if (cmr_free_blocks_needed(size, alignment) == SIZE_MAX) return CMR_SUCCESS;
  uint64_t key = 0;
  cmr_status status = cmr_key_of(lists, stream, &key);
  if (status != CMR_SUCCESS) return status;
  if (!(from & CMR_TAKE_OWN)) return cmr_take_from_others(lists, key, stream, size, alignment, out);
  cmr_stream_list *own = NULL;
  status = cmr_lock_list(lists, key, &own);
  return status == CMR_SUCCESS ? cmr_take_from_locked(lists, own, key, stream, size, alignment, from, out) : status;
}

cmr_status cmr_stream_lists_take(cmr_stream_lists *lists, cmr_stream stream, size_t size, size_t alignment,
                                 cmr_block **out) {
  return cmr_take(lists, stream, size, alignment, CMR_TAKE_ANY, out);
}

/* When no recent block fits: the rest of cmr_take, out of line so that the
 * common path stays light. A fit in the stream's own list is handed out
 * and remembered there too, as a recent block is: its free on this stream
 * then meets no lock other threads take (the block map's shards are
 * shared). Only a block from another list comes back in *out. */
static __attribute__((noinline)) cmr_status cmr_take_after_recent(cmr_stream_lists *lists, cmr_stream_list *own,
                                                                  uint64_t key, cmr_stream stream, size_t size,
                                                                  size_t alignment, size_t bytes, cmr_take_from from,
                                                                  void **handed, cmr_block **out) {
  if (cmr_free_blocks_needed(size, alignment) == SIZE_MAX) {
    cmr_list_unlock(own);
    return CMR_SUCCESS;
  }
  own->hot = true;
  cmr_block *block = NULL;
  cmr_status status = cmr_take_locked(lists, own, size, alignment, &block);
  if (block != NULL) {
    block->requested = bytes;
    cmr_handed_keep(lists, own, block);
    *handed = block->address;
  }
  cmr_list_unlock(own);
  if ((from & CMR_TAKE_OTHERS) && status == CMR_SUCCESS && block == NULL) {
    status = cmr_take_from_others(lists, key, stream, size, alignment, out);
  }
  return status;
}

static inline __attribute__((always_inline)) cmr_status cmr_take_or_hand_out(cmr_stream_lists *lists, cmr_stream stream,
                                                                             size_t size, size_t alignment,
                                                                             size_t bytes, cmr_take_from from,
                                                                             void **handed, cmr_block **out) {
  *handed = NULL;
  *out = NULL;
  uint64_t key = 0;
  cmr_status status = cmr_key_of(lists, stream, &key);
  cmr_stream_list *own = NULL;
  if (status == CMR_SUCCESS) status = cmr_lock_list(lists, key, &own);
  if (status != CMR_SUCCESS) return status;
  *handed = cmr_hand_out_recent(lists, own, size, alignment, bytes);
  if (*handed == NULL) return cmr_take_after_recent(lists, own, key, stream, size, alignment, bytes, from, handed, out);
  own->hot = true;
  cmr_list_unlock(own);
  return CMR_SUCCESS;
}

cmr_status cmr_stream_lists_take_or_hand_out(cmr_stream_lists *lists, cmr_stream stream, size_t size, size_t alignment,
                                             size_t bytes, void **handed, cmr_block **out) {
  return cmr_take_or_hand_out(lists, stream, size, alignment, bytes, CMR_TAKE_ANY, handed, out);
}

cmr_status cmr_stream_lists_take_own_or_hand_out(cmr_stream_lists *lists, cmr_stream stream, size_t size,
                                                 size_t alignment, size_t bytes, void **handed, cmr_block **out) {
  return cmr_take_or_hand_out(lists, stream, size, alignment, bytes, CMR_TAKE_OWN, handed, out);
}

cmr_status cmr_stream_lists_take_own(cmr_stream_lists *lists, cmr_stream stream, size_t size, size_t alignment,
                                     cmr_block **out) {
  return cmr_take(lists, stream, size, alignment, CMR_TAKE_OWN, out);
}

cmr_status cmr_stream_lists_take_others(cmr_stream_lists *lists, cmr_stream stream, size_t size, size_t alignment,
                                        cmr_block **out) {
  return cmr_take(lists, stream, size, alignment, CMR_TAKE_OTHERS, out);
}

/* ---- taking back ----------------------------------------------------------------- */

/* `ptr` taken out of `list`'s remembered hand-outs (its lock held), or NULL. */
static CMR_PAIR_PATH cmr_block *cmr_handed_find(cmr_stream_list *list, const void *ptr) {
  for (unsigned i = 0; i < list->handed_count; ++i) {
    cmr_block *block = list->handed[i];
    if (block->address == ptr) {
      list->handed[i] = list->handed[--list->handed_count];
      return block;
    }
  }
  return NULL;
}

/* `ptr` taken out of another list's remembered hand-outs (freed on a
 * stream other than its allocation's), or NULL. */
static cmr_block *cmr_handed_find_elsewhere(cmr_stream_lists *lists, uint64_t own_key, const void *ptr) {
  cmr_block *block = NULL;
  cmr_mutex_lock(&lists->registry);
  size_t count = atomic_load(&lists->count);
  for (size_t i = 0; i < count && block == NULL; ++i) {
    cmr_stream_list *other = lists->lists[i];
    if (other->key == own_key) continue;
    cmr_lock_acquire(&other->lock);
    block = cmr_handed_find(other, ptr);
    cmr_list_unlock(other);
  }
  pthread_mutex_unlock(&lists->registry);
  return block;
}

cmr_status cmr_stream_lists_take_back(cmr_stream_lists *lists, cmr_stream stream, void *ptr, size_t bytes) {
  uint64_t key = 0;
  cmr_status status = cmr_key_of(lists, stream, &key);
  cmr_stream_list *own = NULL;
  if (status == CMR_SUCCESS) status = cmr_lock_list(lists, key, &own);
  if (status != CMR_SUCCESS) return status;
  /* Its own list's hand-outs, else the block map (the list's lock comes
   * before a shard's, as where hand-outs move to the map). */
  cmr_block *block = cmr_handed_find(own, ptr);
  if (block == NULL) block = cmr_block_map_remove(lists->handed_out, ptr);
  if (block == NULL) {
    cmr_list_unlock(own);
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
  cmr_give_locked(lists, own, stream, block, true);
  cmr_list_unlock(own);
  return CMR_SUCCESS;
}

cmr_status cmr_stream_lists_reclaim(cmr_stream_lists *lists, cmr_stream stream, size_t size, size_t alignment,
                                    cmr_block **out) {
  *out = NULL;
  uint64_t key = 0;
  cmr_status status = cmr_key_of(lists, stream, &key);
  if (status != CMR_SUCCESS) return status;
  cmr_reclaim_dead(lists);
  cmr_stream_list *own = NULL;
  cmr_mutex_lock(&lists->registry);
  status = cmr_register(lists, key, &own); /* under the registry: no one recycles it before we are done */
  size_t count = atomic_load(&lists->count);
  for (size_t i = 0; i < count && status == CMR_SUCCESS; ++i) {
    cmr_stream_list *other = lists->lists[i];
    if (other == own) continue;
    cmr_lock_pair(own, other);
    if (!cmr_list_empty(other)) status = cmr_move_all(lists, own, other, stream);
    cmr_unlock_pair(own, other);
  }
  /* Taken before the registry is let go: a second thread gathering at the
   * same time would otherwise move everything on into its own list first. */
  if (status == CMR_SUCCESS && cmr_free_blocks_needed(size, alignment) != SIZE_MAX) {
    cmr_lock_acquire(&own->lock);
    status = cmr_take_locked(lists, own, size, alignment, out);
    cmr_list_unlock(own);
  }
  CMR_CHECK(cmr_lists_valid_locked(lists, cmr_walked_after_change, &why));
  pthread_mutex_unlock(&lists->registry);
  return status;
}

/* Passes `list`'s whole units (or, with `every`, all its free blocks) to
 * `release` once the host has waited for them; keeps the rest. The list's
 * lock is held. */
static cmr_status cmr_release_units_of(const cmr_stream_lists *lists, cmr_stream_list *list, bool every,
                                       void (*release)(cmr_block *block, void *arg), void *arg) {
  cmr_recent_flush(list);
  cmr_free_blocks all;
  cmr_free_blocks_init(&all);
  cmr_free_blocks_absorb(&all, &list->blocks);
  bool waited = false;
  cmr_status status = CMR_SUCCESS;
  for (cmr_block *block; (block = cmr_free_blocks_pop(&all)) != NULL;) {
    bool whole = (every || block->span == block->size) && status == CMR_SUCCESS;
    if (whole && !waited) {
      status = cmr_order_before_release(lists, list);
      waited = true;
      whole = status == CMR_SUCCESS;
    }
    if (whole) {
      release(block, arg);
    } else {
      cmr_free_blocks_insert(&list->blocks, block);
    }
  }
  return status;
}

static cmr_status cmr_release(cmr_stream_lists *lists, bool every, void (*release)(cmr_block *block, void *arg),
                              void *arg) {
  cmr_status status = CMR_SUCCESS;
  cmr_mutex_lock(&lists->registry);
  size_t count = atomic_load(&lists->count);
  for (size_t i = 0; i < count && status == CMR_SUCCESS; ++i) {
    cmr_lock_acquire(&lists->lists[i]->lock);
    status = cmr_release_units_of(lists, lists->lists[i], every, release, arg);
    cmr_list_unlock(lists->lists[i]);
  }
  CMR_CHECK(cmr_lists_valid_locked(lists, cmr_walked_after_change, &why));
  pthread_mutex_unlock(&lists->registry);
  return status;
}

cmr_status cmr_stream_lists_release_units(cmr_stream_lists *lists, void (*release)(cmr_block *block, void *arg),
                                          void *arg) {
  return cmr_release(lists, false, release, arg);
}

cmr_status cmr_stream_lists_release_free(cmr_stream_lists *lists, void (*release)(cmr_block *block, void *arg),
                                         void *arg) {
  return cmr_release(lists, true, release, arg);
}

/* ---- reports --------------------------------------------------------------------- */

size_t cmr_stream_lists_largest(cmr_stream_lists *lists) {
  size_t largest = 0;
  cmr_mutex_lock(&lists->registry);
  size_t count = atomic_load(&lists->count);
  for (size_t i = 0; i < count; ++i) {
    cmr_lock_acquire(&lists->lists[i]->lock);
    cmr_recent_flush(lists->lists[i]);
    size_t own = cmr_free_blocks_largest(&lists->lists[i]->blocks);
    cmr_list_unlock(lists->lists[i]);
    if (own > largest) largest = own;
  }
  pthread_mutex_unlock(&lists->registry);
  return largest;
}

void cmr_stream_lists_totals(cmr_stream_lists *lists, size_t *blocks, size_t *bytes, size_t *list_count) {
  *blocks = 0;
  *bytes = 0;
  cmr_mutex_lock(&lists->registry);
  *list_count = atomic_load(&lists->count);
  for (size_t i = 0; i < *list_count; ++i) {
    cmr_lock_acquire(&lists->lists[i]->lock);
    *blocks += lists->lists[i]->blocks.count + lists->lists[i]->recent_count;
    *bytes += lists->lists[i]->blocks.bytes + lists->lists[i]->recent_bytes;
    cmr_list_unlock(lists->lists[i]);
  }
  pthread_mutex_unlock(&lists->registry);
}

typedef struct cmr_keyed_visit {
  uint64_t key;
  void (*visit)(uint64_t key, const cmr_block *block, void *arg);
  void *arg;
} cmr_keyed_visit;

static void cmr_visit_keyed(const cmr_block *block, void *arg) {
  cmr_keyed_visit *keyed = arg;
  keyed->visit(keyed->key, block, keyed->arg);
}

void cmr_stream_lists_each(cmr_stream_lists *lists, void (*visit)(uint64_t key, const cmr_block *block, void *arg),
                           void *arg) {
  cmr_mutex_lock(&lists->registry);
  size_t count = atomic_load(&lists->count);
  for (size_t i = 0; i < count; ++i) {
    cmr_stream_list *list = lists->lists[i];
    cmr_keyed_visit keyed = {list->key, visit, arg};
    cmr_lock_acquire(&list->lock);
    for (unsigned r = 0; r < list->recent_count; ++r) visit(list->key, list->recent[r], arg);
    cmr_free_blocks_each(&list->blocks, cmr_visit_keyed, &keyed);
    cmr_list_unlock(list);
  }
  pthread_mutex_unlock(&lists->registry);
}
