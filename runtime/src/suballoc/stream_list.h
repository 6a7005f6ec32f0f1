/* SPDX-License-Identifier: Apache-2.0 */
/* The inside of the stream lists (stream_lists.h says what they do), shared
 * by the three files that make them:
 *   stream_lists.c          giving, taking, taking back, gathering, releasing, reports;
 *   stream_list_registry.c  which record is the list of a key: the registry,
 *                           the threads' caches, recycling and freeing records;
 *   stream_list_checks.c    the invariants and the lock order, checked in a
 *                           checking build (invariants.h).
 *
 * One list (one stream's free memory) is one record, all of it under the
 * record's lock:
 *   blocks   its free blocks, indexed (free_blocks.h), where neighbours merge;
 *   recent   up to 16 blocks freed lately, kept whole outside the index: a
 *            request of the same size takes one back without a walk, a new
 *            record or a split. They join the index when a new one needs the
 *            slot, and all of them before the list is found to have no fit;
 *   handed   up to 16 blocks it handed out lately, kept here instead of the
 *            resource's block map: their free on this stream meets this lock
 *            alone. The oldest go to the block map when a new one needs the
 *            slot, and all of them when the key ends or the record is let go;
 *   event, unordered, shared   what a taker on another stream waits for;
 *   hot      used by its stream since the last eviction.
 *
 * Lock order, checked by code in a checking build (stream_list_checks.c):
 *   the unit lock (a resource's, optional) -> the registry -> list locks ->
 *   the block map's shards.
 * The registry is never taken while a list's lock is held; a second list's
 * lock only while the registry is held (so at most one thread holds two,
 * and none can deadlock); the unit lock only while neither is held.
 *
 * A record's life: the list of one key (in the registry), or a spare (at
 * most cmr_spares_kept), or let go. Each slot of a thread's cache that names
 * a record holds a share of it; a thread follows only a pointer its cache
 * holds a share of, and the record is freed by whoever lets go last: the
 * lists, or the last cache slot to name it. */
#ifndef CMR_STREAM_LIST_H
#define CMR_STREAM_LIST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "backend.h"
#include "invariants.h"
#include "lock.h"
#include "stream_capture.h"
#include "stream_lists.h"

enum { cmr_recent_slots = 16, cmr_handed_slots = 16 };

/* Records kept for reuse once their list is gone; past these they are
 * freed. Lists held before the cold ones are evicted. */
enum { cmr_spares_kept = 8, cmr_fewest_evicting = 64 };

/* Set in a record's shares once the lists have let it go. */
#define CMR_RECORD_LET_GO ((size_t)1 << (sizeof(size_t) * 8 - 1))

typedef struct cmr_stream_list {
  _Alignas(64) cmr_lock lock;
  uint64_t key;
  cmr_free_blocks blocks;
  cmr_block *recent[cmr_recent_slots];
  unsigned recent_count, recent_victim;
  size_t recent_bytes;
  cmr_block *handed[cmr_handed_slots];
  unsigned handed_count, handed_victim;
  /* Bit cmr_handed_bit(a) is set for the address a of each block in
   * `handed` (and maybe for some no longer there); all bits once one was
   * added, until a free that looks further than the latest sets them again
   * from the blocks (cmr_handed_may_hold). */
  uint64_t handed_filter;
  cmr_backend_event event; /* made when first recorded */
  /* Blocks were freed here after the event's last record (or with none):
   * the event does not cover them and a taker must synchronize the device. */
  bool unordered;
  /* Another stream has taken from this list; from then on its frees record
   * the event, which a list used by its own stream alone never pays for. */
  bool shared;
  bool hot;
  /* Its stream was last seen capturing (stream_lists.h, "Under stream
   * capture"): blocks it freed there have no event yet, and no other
   * stream takes from the list until its stream is seen out of capture. */
  bool capturing;
  /* For a list keyed by a capture (CMR_CAPTURE_KEY), the stream that
   * captured, once it was marked capturing; else NULL. */
  cmr_stream capture_stream;
  /* Cache slots naming this record, plus CMR_RECORD_LET_GO once the lists
   * let it go (it is freed when both are done with it). */
  _Atomic size_t shares;
  struct cmr_stream_list *next_spare;
} cmr_stream_list;

enum { cmr_capture_streams_kept = 8 };

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
  /* Registry held: */
  cmr_stream_list **lists;
  size_t capacity;
  _Atomic size_t count;
  cmr_stream_list *spares;
  size_t spare_count;
  size_t evict_at;     /* registering past this many lists drops the cold ones */
  _Atomic size_t dead; /* dead lists not yet recycled */
  /* Lists keyed by a capture whose stream was not seen out of capture yet,
   * and (the first few of) those streams: a call on one of them, out of
   * capture, ends their lists. A stream past the slots sets the overflow,
   * and then every call looks, until no such list is left. */
  _Atomic size_t capture_keyed;
  _Atomic uintptr_t capture_streams[cmr_capture_streams_kept];
  _Atomic bool capture_streams_overflow;
  /* Free blocks larger than this are never split (SIZE_MAX: every one may be). */
  _Atomic size_t max_split;
  cmr_capture_rule capture;
  unsigned capture_properties; /* what the resource's memory is (CMR_PROPERTY_* bits) */
  cmr_graph_blocks graph;      /* what it handed out on capturing streams */
  /* Where dead lists' whole units go (optional). */
  pthread_mutex_t *unit_lock;
  void (*release_unit)(cmr_block *block, void *arg);
  void *release_arg;
};

/* Keys of the default streams' lists have one of the top bits set, which no
 * stream id (a small counter) or host token (a user-space address) has:
 * they are known without a driver call (threads' keys: stream_ends.h). So
 * have the shared list's, and the one dead and spare lists carry, which no
 * stream maps to. */
#define CMR_LEGACY_KEY (UINT64_C(1) << 62)
#define CMR_SHARED_KEY (UINT64_C(1) << 61)
#define CMR_DEAD_KEY UINT64_MAX
/* A list of a stream that was first used here inside a capture, where its
 * id cannot be asked for (cmr_backend_stream_id_in_capture): keyed by the
 * capture's id, with this bit, until its stream is next seen out of capture. */
#define CMR_CAPTURE_KEY (UINT64_C(1) << 60)
static inline bool cmr_key_of_capture(uint64_t key) { return key >> 60 == 1; }

/* For the few functions of the warm pair (a recent block handed out, a
 * hand-out taken back): inlined into it, so it makes no calls. */
#define CMR_PAIR_PATH inline __attribute__((always_inline))

/* ---- the lock order (stream_list_checks.c; a checking build only) ---- */

typedef enum cmr_list_lock_kind { CMR_UNIT_LOCK, CMR_REGISTRY_LOCK, CMR_LIST_LOCK } cmr_list_lock_kind;

/* Whether the calling thread may take a lock of `kind` now, the locks it
 * holds considered; then counts it as held (or, after a release, not). */
bool cmr_stream_list_may_lock(cmr_list_lock_kind kind, const char **why);
void cmr_stream_list_locked(cmr_list_lock_kind kind, int change);

static CMR_PAIR_PATH void cmr_list_lock(cmr_stream_list *list) {
  CMR_CHECK(cmr_stream_list_may_lock, CMR_LIST_LOCK);
  cmr_lock_acquire(&list->lock);
  if (CMR_CHECK_INVARIANTS) cmr_stream_list_locked(CMR_LIST_LOCK, 1);
}

/* Takes the list's lock if no other thread holds it (false otherwise):
 * the warm pair's way, which leaves a wait to its out-of-line path. */
static CMR_PAIR_PATH bool cmr_list_try_lock(cmr_stream_list *list) {
  CMR_CHECK(cmr_stream_list_may_lock, CMR_LIST_LOCK);
  if (!cmr_lock_try(&list->lock)) return false;
  if (CMR_CHECK_INVARIANTS) cmr_stream_list_locked(CMR_LIST_LOCK, 1);
  return true;
}

bool cmr_stream_list_valid(const cmr_stream_list *list, size_t walk, const char **why);

/* How many index blocks a check after a change walks (cmr_stream_lists_valid
 * walks them all). */
enum { cmr_walked_after_change = 64 };

/* Lets go of a list, which may have changed: a checking build checks it
 * first (cheaply: what a change can touch). */
static CMR_PAIR_PATH void cmr_list_unlock(cmr_stream_list *list) {
  CMR_CHECK(cmr_stream_list_valid, list, cmr_walked_after_change);
  if (CMR_CHECK_INVARIANTS) cmr_stream_list_locked(CMR_LIST_LOCK, -1);
  cmr_lock_release(&list->lock);
}

static inline void cmr_registry_lock(cmr_stream_lists *lists) {
  CMR_CHECK(cmr_stream_list_may_lock, CMR_REGISTRY_LOCK);
  cmr_mutex_lock(&lists->registry);
  if (CMR_CHECK_INVARIANTS) cmr_stream_list_locked(CMR_REGISTRY_LOCK, 1);
}

static inline void cmr_registry_unlock(cmr_stream_lists *lists) {
  if (CMR_CHECK_INVARIANTS) cmr_stream_list_locked(CMR_REGISTRY_LOCK, -1);
  cmr_mutex_unlock(&lists->registry);
}

/* Every list (the registry held, no list's lock), each walked up to `walk`
 * index blocks; and across lists, while they hold few records: what a
 * change under the registry checks before letting it go. */
bool cmr_stream_lists_valid_locked(cmr_stream_lists *lists, size_t walk, const char **why);

/* After blocks freed with work pending entered `list` (its lock held): a
 * taker on another stream can be ordered after them. */
bool cmr_stream_list_free_ordered(const cmr_stream_list *list, const char **why);

/* ---- finding a key's list (stream_list_registry.c) ---- */

typedef struct cmr_cache_slot {
  uint64_t serial;
  uint64_t key;
  cmr_stream_list *list;
} cmr_cache_slot;

/* The list this thread found last, of any resource: a copy of one of the
 * thread's cache slots (which holds the share), in static TLS so that the
 * common lookup reads it with no call. */
extern CMR_HOT_THREAD_LOCAL cmr_cache_slot cmr_last_list;

/* Locks the list `slot` names when it is still the list of `key` (a
 * record may have been recycled since and name another key now); else
 * forgets the slot. */
static CMR_PAIR_PATH bool cmr_lock_if_keyed(cmr_cache_slot *slot, uint64_t key, cmr_stream_list **out) {
  cmr_stream_list *list = slot->list;
  cmr_list_lock(list);
  if (list->key == key) {
    *out = list;
    return true;
  }
  cmr_lock_release(&list->lock);
  if (CMR_CHECK_INVARIANTS) cmr_stream_list_locked(CMR_LIST_LOCK, -1);
  slot->serial = 0;
  return false;
}

/* The record this thread found last, when it was for `key` of `lists`
 * (its lock not taken: a record may be recycled to another key meanwhile,
 * which its key, read under that lock, tells), else NULL. */
static CMR_PAIR_PATH cmr_stream_list *cmr_last_list_for(const cmr_stream_lists *lists, uint64_t key) {
  return cmr_last_list.serial == lists->serial && cmr_last_list.key == key ? cmr_last_list.list : NULL;
}

/* Lets go of a record locked as cmr_last_list_for's and found recycled to
 * another key, and forgets it. */
static inline void cmr_list_unlock_stale(cmr_stream_list *list) {
  cmr_lock_release(&list->lock);
  if (CMR_CHECK_INVARIANTS) cmr_stream_list_locked(CMR_LIST_LOCK, -1);
  cmr_last_list.serial = 0;
}

/* The list of `key`, locked, made and registered on first use, when it is
 * not the one this thread found last. */
cmr_status cmr_stream_list_lock_registered(cmr_stream_lists *lists, uint64_t key, cmr_stream_list **out);

/* The list of `key`, found or made and registered, and the shared list
 * (NULL without host memory). Registry held. */
cmr_status cmr_stream_list_register(cmr_stream_lists *lists, uint64_t key, cmr_stream_list **out);
cmr_stream_list *cmr_stream_list_shared(cmr_stream_lists *lists);

/* Recycles every dead list that is empty or idle (takes the unit lock and
 * the registry: the caller holds neither). */
void cmr_stream_list_recycle_dead(cmr_stream_lists *lists);

/* The lists' registered and spare records let go (at destroy); the blocks
 * they hold are deleted. */
void cmr_stream_list_let_go_all(cmr_stream_lists *lists);

/* List records allocated and not yet freed by all stream_lists together,
 * those let go but still named by a thread's cache included (tests: the
 * bookkeeping stays bounded). */
size_t cmr_stream_lists_records_allocated(void);

/* ---- ordering and the recent blocks (used by stream_lists.c and the registry) ---- */

/* Ends `list` (the registry and its lock held), its stream gone or seen
 * for the last time under its key: its frees ordered after `order_on`'s
 * work where an event can say so, its key dead, for recycling
 * (cmr_stream_list_recycle_dead). An event is recorded on `order_on` when
 * it is known to be out of capture (`order_on_idle`), or else only while
 * no list anywhere is marked capturing. */
void cmr_stream_list_end(cmr_stream_lists *lists, cmr_stream_list *list, cmr_stream order_on, bool order_on_idle);

/* Lists marked capturing, over every stream_lists of the process (defined
 * in the registry): while there are any, a capture may be under way, and
 * the device is not synchronized nor is any event queried or waited for by
 * the host. */
extern _Atomic size_t cmr_capturing_lists;

/* Marks `list` (its lock held) as its stream's, seen capturing; unmarks it. */
static inline void cmr_stream_list_mark_capturing(cmr_stream_list *list) {
  if (list->capturing) return;
  list->capturing = true;
  atomic_fetch_add(&cmr_capturing_lists, 1);
}

static inline void cmr_stream_list_unmark_capturing(cmr_stream_list *list) {
  if (!list->capturing) return;
  list->capturing = false;
  atomic_fetch_sub(&cmr_capturing_lists, 1);
}

/* Whether another stream (or the host) may take `list`'s blocks now (its
 * lock held): not while it is marked capturing, nor, while any list is,
 * when that would need a device synchronization (unordered) or, with
 * `host_wait`, a host wait for its event. */
static inline bool cmr_stream_list_reusable(const cmr_stream_list *list, bool host_wait) {
  if (list->capturing) return false;
  if (atomic_load_explicit(&cmr_capturing_lists, memory_order_relaxed) == 0) return true;
  return !list->unordered && !(host_wait && list->event != NULL);
}

/* Whether the work ordered before a list's frees is done, so that its
 * blocks are idle. An unordered one waits for a taker (who synchronizes). */
static inline bool cmr_stream_list_idle(cmr_stream_list *list) {
  if (list->unordered || !cmr_stream_list_reusable(list, true)) return false;
  bool reached = true;
  return list->event == NULL || (cmr_backend_event_query(list->event, &reached) == CMR_SUCCESS && reached);
}

/* Records the list's event on `stream` (false when an event call fails). */
static inline bool cmr_stream_list_record(const cmr_stream_lists *lists, cmr_stream_list *list, cmr_stream stream) {
  if (list->event == NULL && cmr_backend_event_create_on(lists->device, &list->event) != CMR_SUCCESS) {
    list->event = NULL;
    return false;
  }
  return cmr_backend_event_record(list->event, stream) == CMR_SUCCESS;
}

/* Every recent block into the index, where it merges with its neighbours. */
static inline void cmr_stream_list_flush_recent(cmr_stream_list *list) {
  for (unsigned i = 0; i < list->recent_count; ++i) cmr_free_blocks_insert(&list->blocks, list->recent[i]);
  list->recent_count = list->recent_victim = 0;
  list->recent_bytes = 0;
}

/* The remembered hand-outs into the block map. */
static inline void cmr_stream_list_flush_handed(const cmr_stream_lists *lists, cmr_stream_list *list) {
  for (unsigned i = 0; i < list->handed_count; ++i) cmr_block_map_insert(lists->handed_out, list->handed[i]);
  list->handed_count = list->handed_victim = 0;
  list->handed_filter = 0;
}

/* The bit of `handed_filter` for a block at `address` (a hash of it). */
static inline uint64_t cmr_handed_bit(const void *address) {
  return (uint64_t)1 << ((((uint64_t)(uintptr_t)address >> 8) * UINT64_C(0x9E3779B97F4A7C15)) >> 58);
}

static inline bool cmr_list_empty(const cmr_stream_list *list) { return list->blocks.count + list->recent_count == 0; }

#endif /* CMR_STREAM_LIST_H */
