/* SPDX-License-Identifier: Apache-2.0 */
/* The stream lists' invariants and lock order (stream_list.h), which a
 * checking build checks after each change and at each lock (invariants.h);
 * tests call cmr_stream_lists_valid on lists they broke on purpose. */
#include <stdlib.h>

#include "stream_list.h"

/* The check across lists runs while they hold at most this many records. */
enum { records_compared = 1024 };

static bool cmr_lists_broken(const char **why, const char *reason) {
  *why = reason;
  return false;
}

/* ---- the lock order ---------------------------------------------------------------- */

/* The stream-list locks the calling thread holds, by kind. */
static _Thread_local unsigned held[3];

bool cmr_stream_list_may_lock(cmr_list_lock_kind kind, const char **why) {
  switch (kind) {
  case CMR_UNIT_LOCK:
    if (held[CMR_UNIT_LOCK] + held[CMR_REGISTRY_LOCK] + held[CMR_LIST_LOCK] != 0) {
      return cmr_lists_broken(why, "stream lists: the unit lock taken while a stream-list lock is held");
    }
    return true;
  case CMR_REGISTRY_LOCK:
    if (held[CMR_REGISTRY_LOCK] != 0) return cmr_lists_broken(why, "stream lists: the registry taken twice");
    if (held[CMR_LIST_LOCK] != 0)
      return cmr_lists_broken(why, "stream lists: the registry taken while a list's lock is held");
    return true;
  default:
    if (held[CMR_LIST_LOCK] != 0 && held[CMR_REGISTRY_LOCK] == 0) {
      return cmr_lists_broken(why, "stream lists: a second list's lock taken without the registry");
    }
    return true;
  }
}

void cmr_stream_list_locked(cmr_list_lock_kind kind, int change) {
  CMR_INVARIANT(change > 0 || held[kind] > 0);
  held[kind] += (unsigned)change;
}

/* ---- one list ------------------------------------------------------------------------ */

/* A free or handed-out block's shape: a nonzero size, address and size
 * multiples of 256 (what the index and the hand-outs assume). */
static bool cmr_block_shaped(const cmr_block *block) {
  return block != NULL && block->size != 0 && block->size % 256 == 0 && (uintptr_t)block->address % 256 == 0;
}

typedef struct index_walk {
  size_t count, bytes;
  bool misshapen;
} index_walk;

static void cmr_walk_index(const cmr_block *block, void *arg) {
  index_walk *walk = arg;
  walk->count++;
  walk->bytes += block->size;
  walk->misshapen |= !cmr_block_shaped(block);
}

static bool cmr_slots_valid(const cmr_stream_list *list, const char **why) {
  if (list->recent_count > cmr_recent_slots || list->recent_victim >= cmr_recent_slots) {
    return cmr_lists_broken(why, "stream list: recent count or victim out of range");
  }
  if (list->handed_count > cmr_handed_slots || list->handed_victim >= cmr_handed_slots) {
    return cmr_lists_broken(why, "stream list: hand-out count or victim out of range");
  }
  size_t recent_bytes = 0;
  for (unsigned i = 0; i < list->recent_count; ++i) {
    if (!cmr_block_shaped(list->recent[i])) return cmr_lists_broken(why, "stream list: a recent block is misshapen");
    recent_bytes += list->recent[i]->size;
  }
  if (recent_bytes != list->recent_bytes)
    return cmr_lists_broken(why, "stream list: recent bytes are not the recent blocks' sum");
  for (unsigned i = 0; i < list->handed_count; ++i) {
    const cmr_block *block = list->handed[i];
    if (!cmr_block_shaped(block)) return cmr_lists_broken(why, "stream list: a remembered hand-out is misshapen");
    if (block->requested == 0 || block->requested > block->size) {
      return cmr_lists_broken(why, "stream list: a hand-out's requested bytes are 0 or more than its block");
    }
    if ((list->handed_filter & cmr_handed_bit(block->address)) == 0) {
      return cmr_lists_broken(why, "stream list: a remembered hand-out is missing from the filter");
    }
  }
  unsigned total = list->recent_count + list->handed_count;
  for (unsigned a = 0; a < total; ++a) {
    const cmr_block *first = a < list->recent_count ? list->recent[a] : list->handed[a - list->recent_count];
    for (unsigned b = a + 1; b < total; ++b) {
      const cmr_block *second = b < list->recent_count ? list->recent[b] : list->handed[b - list->recent_count];
      if (first == second)
        return cmr_lists_broken(why, "stream list: a block is twice among the recent and handed out");
    }
  }
  return true;
}

/* Its recent blocks and hand-outs well formed, each record once, the recent
 * bytes their sum; its index's count and bytes what a walk finds (when it
 * has at most `walk` blocks). The list's lock is held. */
bool cmr_stream_list_valid(const cmr_stream_list *list, size_t walk, const char **why) {
  if (!cmr_slots_valid(list, why)) return false;
  if (list->blocks.count <= walk) {
    index_walk found = {0, 0, false};
    cmr_free_blocks_each(&list->blocks, cmr_walk_index, &found);
    if (found.count != list->blocks.count || found.bytes != list->blocks.bytes) {
      return cmr_lists_broken(why, "stream list: the index's count or bytes disagree with its blocks");
    }
    if (found.misshapen) return cmr_lists_broken(why, "stream list: an index block is misshapen");
  }
  return true;
}

bool cmr_stream_list_free_ordered(const cmr_stream_list *list, const char **why) {
  if (list->unordered || list->event != NULL) return true;
  return cmr_lists_broken(why, "stream list: a free neither an event nor a pending synchronization covers");
}

/* ---- across lists -------------------------------------------------------------------- */

typedef struct gathered {
  const cmr_block *blocks[records_compared];
  size_t count;
  bool overflow;
} gathered;

static void cmr_gather(gathered *records, const cmr_block *block) {
  if (records->count == records_compared) {
    records->overflow = true;
    return;
  }
  records->blocks[records->count++] = block;
}

static void cmr_gather_indexed(const cmr_block *block, void *arg) { cmr_gather(arg, block); }

static void cmr_gather_list(gathered *records, const cmr_stream_list *list) {
  if (list->blocks.count > records_compared) {
    records->overflow = true;
    return;
  }
  for (unsigned r = 0; r < list->recent_count; ++r) cmr_gather(records, list->recent[r]);
  for (unsigned h = 0; h < list->handed_count; ++h) cmr_gather(records, list->handed[h]);
  cmr_free_blocks_each(&list->blocks, cmr_gather_indexed, records);
}

static int cmr_lists_by_address(const void *a, const void *b) {
  uintptr_t left = (uintptr_t)(*(const cmr_block *const *)a)->address;
  uintptr_t right = (uintptr_t)(*(const cmr_block *const *)b)->address;
  return left < right ? -1 : left > right;
}

/* Whether every record the lists hold, free or remembered as handed out,
 * is in exactly one place and no two cover the same bytes. */
static bool cmr_records_apart(gathered *records, const char **why) {
  qsort(records->blocks, records->count, sizeof records->blocks[0], cmr_lists_by_address);
  for (size_t i = 1; i < records->count; ++i) {
    const cmr_block *before = records->blocks[i - 1], *after = records->blocks[i];
    if (before == after) return cmr_lists_broken(why, "stream lists: a block record is in two places");
    if (before->address + before->size > after->address) {
      return cmr_lists_broken(why, "stream lists: two blocks (free or handed out) cover the same bytes");
    }
  }
  return true;
}

/* Every list (the registry held, no list's lock), each walked up to `walk`
 * index blocks; and across lists, while they hold few records. All the
 * lists are locked at once, so no block moves between two of them while
 * they are looked at. */
bool cmr_stream_lists_valid_locked(cmr_stream_lists *lists, size_t walk, const char **why) {
  gathered *records = calloc(1, sizeof *records); /* no memory: the lists alone are checked */
  bool valid = true;
  size_t count = atomic_load(&lists->count);
  for (size_t i = 0; i < count; ++i) cmr_lock_acquire(&lists->lists[i]->lock);
  for (size_t i = 0; i < count && valid; ++i) {
    valid = cmr_stream_list_valid(lists->lists[i], walk, why);
    if (records != NULL && !records->overflow) cmr_gather_list(records, lists->lists[i]);
  }
  if (valid && records != NULL && !records->overflow) valid = cmr_records_apart(records, why);
  for (size_t i = 0; i < count; ++i) cmr_lock_release(&lists->lists[i]->lock);
  free(records);
  return valid;
}

bool cmr_stream_lists_valid(cmr_stream_lists *lists, const char **why) {
  cmr_mutex_lock(&lists->registry);
  bool valid = cmr_stream_lists_valid_locked(lists, SIZE_MAX, why);
  cmr_mutex_unlock(&lists->registry);
  return valid;
}
