/* SPDX-License-Identifier: Apache-2.0 */
/* Stream-ordered free lists: the machinery pool, fixed_size and arena share.
 *
 * Each stream (keyed by cmr_backend_stream_id, so a destroyed stream's
 * recycled handle never aliases it) has its own cmr_free_blocks under its own
 * lock, and one event. Memory freed on stream S goes to S's list and is
 * reusable by S at once. Another stream T takes it only after T waits for S:
 * when T finds nothing that fits in its own list, it looks in the others'; on
 * finding a fit in S's, T waits on S's event (recorded at S's last free) and
 * takes that one block, the rest staying with S. (RMM moves S's whole list
 * to T instead; then two streams taking from each other pass all their free
 * memory back and forth.) Only when memory runs out are all lists gathered
 * into one, where they coalesce (cmr_stream_lists_reclaim).
 *
 * A list records its event only once another stream has taken from it: a
 * stream that keeps to its own memory never pays for an event. A list freed
 * into without an event (not yet shared, or an event call failed) is marked
 * unordered, and a stream taking from it synchronizes the device instead of
 * waiting on the event: conservative, and rare (once per list, when another
 * stream first takes from it). The default streams are keyed without a
 * driver call; cudaStreamPerThread by thread, since it is each thread's own
 * stream.
 *
 * A list whose thread exited or whose stream cmr_stream_destroy destroyed
 * (stream_ends.h) is dead: once the work ordered before its frees is done
 * (its event has been reached; it is recorded, if need be, as the key ends)
 * its blocks join the shared list, of idle memory every stream takes
 * without waiting, and its record is recycled. Until then it stays, and
 * another stream takes from it only after waiting, as from a live one.
 * Dead lists are looked at as their key ends and whenever a stream looks
 * beyond its own list. A list found empty when the lists have doubled in
 * number since the last look goes too (a stream destroyed behind cmr's back
 * tells no one): the records stay within twice the lists in use, and at
 * least 64. Records are recycled, never freed before the lists are: a thread
 * that still has one cached finds, under its lock, that it names another key.
 *
 * Optionally the default stream is keyed per thread (the arena's per-thread
 * arenas): threads on the default stream then use separate lists and meet on
 * no lock. Thread-safe. */
#ifndef CMR_STREAM_LISTS_H
#define CMR_STREAM_LISTS_H

#include <pthread.h>

#include "block_map.h"
#include "free_blocks.h"

typedef struct cmr_stream_lists cmr_stream_lists;

/* Either way a recently freed block of the very size comes first (up to 16
 * are kept whole per list, outside the index). */
typedef enum cmr_fit {
  /* the smallest free block that fits, once the recent ones have merged
   * into the rest (pool, fixed_size) */
  CMR_FIT_BEST,
  /* the lowest-addressed free block that fits, the recent ones merged
   * first (arena) */
  CMR_FIT_FIRST
} cmr_fit;

typedef enum cmr_stream_keying {
  CMR_KEY_PER_STREAM,               /* one list per stream */
  CMR_KEY_DEFAULT_STREAM_PER_THREAD /* and one per thread for the default streams */
} cmr_stream_keying;

/* `owner` names the resource in messages ("pool"); `handed_out` is its map
 * of the blocks it handed out (the lists hand some out themselves: below). */
cmr_status cmr_stream_lists_create(const char *owner, cmr_fit fit, cmr_stream_keying keying, cmr_block_map *handed_out,
                                   cmr_stream_lists **out);
/* Deletes every free block record and event (the memory is the caller's). */
void cmr_stream_lists_destroy(cmr_stream_lists *lists);

/* Makes a dead list's whole units (size == span) go to `release` instead of
 * the shared list (the arena's superblocks, back to its global arena), called
 * with `lock` held, then the lists' locks: a resource must not hold `lock`
 * when it calls cmr_stream_lists_take, _take_others or _reclaim, where dead
 * lists are looked at. Call it before `lists` is used. */
void cmr_stream_lists_release_dead_units(cmr_stream_lists *lists, pthread_mutex_t *lock,
                                         void (*release)(cmr_block *block, void *arg), void *arg);

/* `key` has ended (stream_ends.c): its list, if any, is dead. When blocks in
 * it were freed after its event's last record (or with none), the event is
 * recorded on `order_on` (the ending stream, or the legacy default stream
 * for a thread) so that their work can be waited for. */
void cmr_stream_lists_key_ended(cmr_stream_lists *lists, uint64_t key, cmr_stream order_on);
/* List records held, in use or spare. */
size_t cmr_stream_lists_records(cmr_stream_lists *lists);

/* A block freed on `stream` (or new memory obtained on it), merged into the
 * stream's list. On failure (no host memory for the list) the block is still
 * the caller's. */
cmr_status cmr_stream_lists_give(cmr_stream_lists *lists, cmr_stream stream, cmr_block *block);

/* The same for memory no work is pending on (new from the upstream and
 * synchronized): every stream may take it without waiting. */
cmr_status cmr_stream_lists_give_idle(cmr_stream_lists *lists, cmr_stream stream, cmr_block *block);

/* Cuts `size` bytes at `alignment` out of `fresh` (new memory in no list,
 * holding at least cmr_free_blocks_needed(size, alignment) bytes) into *out,
 * and gives the rest to `stream`'s list: as idle memory, or, for memory
 * obtained in order on `stream`, as if freed there. The caller has its block
 * before any other thread can see the new memory: given first and taken
 * after, it could be taken by another stream in between, again and again
 * under contention. On failure `fresh` is the caller's again. */
cmr_status cmr_stream_lists_carve_idle(cmr_stream_lists *lists, cmr_stream stream, cmr_block *fresh, size_t size,
                                       size_t alignment, cmr_block **out);
cmr_status cmr_stream_lists_carve(cmr_stream_lists *lists, cmr_stream stream, cmr_block *fresh, size_t size,
                                  size_t alignment, cmr_block **out);

/* `size` bytes at `alignment` for `stream`: from its own list, else from
 * another stream's (as above). *out is NULL when no list has a fit. */
cmr_status cmr_stream_lists_take(cmr_stream_lists *lists, cmr_stream stream, size_t size, size_t alignment,
                                 cmr_block **out);
/* The same, but a block from the stream's own list is handed out there
 * for a request of `bytes`, *handed its address and *out NULL: a recently
 * freed block of the very size at once, else a fit from its index. The list
 * remembers it, instead of the block map, until it needs the slot; its free
 * on the same stream then meets only that list's lock
 * (cmr_stream_lists_take_back), which no other stream's thread takes.
 * Otherwise *handed is NULL and *out the block taken from another stream's
 * list (NULL when none has a fit), as cmr_stream_lists_take gives it. */
cmr_status cmr_stream_lists_take_or_hand_out(cmr_stream_lists *lists, cmr_stream stream, size_t size, size_t alignment,
                                             size_t bytes, void **handed, cmr_block **out);
/* The same from `stream`'s own list only (never waiting): the arena, which
 * tries a new superblock before another stream's list. */
cmr_status cmr_stream_lists_take_own_or_hand_out(cmr_stream_lists *lists, cmr_stream stream, size_t size,
                                                 size_t alignment, size_t bytes, void **handed, cmr_block **out);
/* Its two steps, for a resource that has something to try between them (the
 * arena: a new superblock, idle memory, before a wait on another stream):
 * from `stream`'s own list only, never waiting; from the other streams'
 * lists only, waiting for the one taken from. */
cmr_status cmr_stream_lists_take_own(cmr_stream_lists *lists, cmr_stream stream, size_t size, size_t alignment,
                                     cmr_block **out);
cmr_status cmr_stream_lists_take_others(cmr_stream_lists *lists, cmr_stream stream, size_t size, size_t alignment,
                                        cmr_block **out);

/* Takes back the block at `ptr`, freed on `stream` as `bytes` bytes, into
 * `stream`'s list. It must be one the resource handed out (remembered by a
 * list, or in the block map: else CMR_ERROR_UNKNOWN_POINTER) for a request
 * of exactly `bytes` (else CMR_ERROR_INVALID_ARGUMENT); on any failure the
 * block stays handed out. */
cmr_status cmr_stream_lists_take_back(cmr_stream_lists *lists, cmr_stream stream, void *ptr, size_t bytes);

/* Moves every other stream's free blocks into `stream`'s list (after
 * `stream` waits for each), so that all free memory coalesces, and takes
 * `size` bytes at `alignment` from there before any other thread gathering
 * can move them on: the retry after the upstream is exhausted. *out is NULL
 * when even the gathered memory has no fit. `stream`'s event then covers
 * the gathered blocks, so a third stream taking them later waits for their
 * first stream's work too. */
cmr_status cmr_stream_lists_reclaim(cmr_stream_lists *lists, cmr_stream stream, size_t size, size_t alignment,
                                    cmr_block **out);

/* Removes every free block that is a whole unit (size == span) from every
 * list, once the host has waited for the work ordered before its free, and
 * passes each to `release`, which then owns the record. `release` runs
 * with a list's lock held: it must not call into `lists`. */
cmr_status cmr_stream_lists_release_units(cmr_stream_lists *lists, void (*release)(cmr_block *block, void *arg),
                                          void *arg);

/* The same for every free block, whole unit or not (the arena's last
 * defragmentation step: a superblock partly in use gives its free pieces
 * back to its global arena). */
cmr_status cmr_stream_lists_release_free(cmr_stream_lists *lists, void (*release)(cmr_block *block, void *arg),
                                         void *arg);

/* The largest free block over all lists (0 when none): the most one
 * allocation could take without new memory, at the default alignment. Each
 * list's recent blocks first join its index, where they merge. */
size_t cmr_stream_lists_largest(cmr_stream_lists *lists);

/* Whether the lists hold together (issue 16's invariants, checked after
 * each change in a checking build, invariants.h): every list's recent
 * blocks, remembered hand-outs and index well formed and their counts and
 * bytes agreeing; every record, free or handed out, in one place only and
 * no two covering the same bytes. *why says what broke. */
bool cmr_stream_lists_valid(cmr_stream_lists *lists, const char **why);

/* Free blocks and bytes over all lists, and how many lists there are. */
void cmr_stream_lists_totals(cmr_stream_lists *lists, size_t *blocks, size_t *bytes, size_t *list_count);
/* Calls `visit` on each free block, list by list (for dumps). */
void cmr_stream_lists_each(cmr_stream_lists *lists, void (*visit)(uint64_t key, const cmr_block *block, void *arg),
                           void *arg);

#endif /* CMR_STREAM_LISTS_H */
