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
 * least 64. A few records of lists gone are kept for the next lists, the
 * rest freed: the lists' bookkeeping follows the lists in use, not the most
 * there ever were.
 *
 * Optionally the default stream is keyed per thread (the arena's per-thread
 * arenas): threads on the default stream then use separate lists and meet on
 * no lock.
 *
 * Under stream capture (a CUDA graph being captured on the stream,
 * cmr_backend_stream_capturing) the lists make no call capture forbids:
 * no event is recorded, waited for, queried or synchronized, and the device
 * is not synchronized. An allocation on a capturing stream (the take with
 * CMR_TAKE_HAND_OUT that begins every allocation) never takes from the
 * lists: a block of them would be baked into the graph, and once freed
 * there, handed to another user while every launch of the graph still
 * writes it. It is served from graph memory (backend.h: a graph memory
 * node, which each launch maps anew and its free node gives back, so a
 * graph launched 1,000 times holds what one launch holds) or refused with
 * CMR_ERROR_STREAM_CAPTURE, as the resource's rule says
 * (cmr_stream_lists_set_capture). Its free, in the capture or after it, on
 * any stream, frees that graph memory. A free on a capturing stream of a
 * block allocated before the capture goes to the stream's list without an
 * event; the list is then marked capturing, and until its stream is next
 * seen out of capture (its next allocation or free through these lists,
 * which records the event the frees need) no other stream takes from it.
 * While any list is marked capturing, the lists also leave alone every list
 * whose reuse would need a device synchronization or a host wait. A graph
 * that frees memory allocated before its capture must not be launched once
 * that memory is reused: as for any free, the memory is the allocator's
 * again (the same rule as PyTorch's: what a graph uses outlives it). A
 * capture's end is seen only at its stream's next call here (or the end of
 * its key): a stream left unused after a capture keeps its list marked, and
 * the lists as cautious as during a capture, until then.
 * A stream's id cannot be asked for while it captures (the driver refuses,
 * and the capture is lost): a stream cmr did not make, capturing, is given
 * the list of its capture (cmr_backend_stream_id_in_capture), which ends,
 * as a destroyed stream's list does, at the stream's next allocation or
 * free out of capture, or at its next capture (its frees there then wait
 * for a device synchronization: no event could be recorded).
 * Thread-safe. */
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

/* What an allocation on a capturing stream gets (stream_lists.h, "Under
 * stream capture"), for a resource whose memory is its `upstream`'s: graph
 * memory serves it only when the upstream's memory has no property graph
 * memory lacks (cmr_backend_graph_memory_properties: managed or pinned
 * memory is host-accessible, graph memory is not), else the allocation is
 * refused, saying so. Lists are made serving, as over device memory. Call
 * it before `lists` is used; it fails as cmr_ref_properties does. */
typedef enum cmr_capture_rule {
  CMR_CAPTURE_SERVE, /* graph memory */
  CMR_CAPTURE_REFUSE /* CMR_ERROR_STREAM_CAPTURE */
} cmr_capture_rule;
cmr_status cmr_stream_lists_set_capture(cmr_stream_lists *lists, cmr_capture_rule rule, cmr_resource_ref upstream);

/* Makes a dead list's whole units (size == span) go to `release` instead of
 * the shared list (the arena's superblocks, back to its global arena), called
 * with `lock` held, then the lists' locks: a resource must not hold `lock`
 * when it calls cmr_stream_lists_take with CMR_TAKE_OTHERS or
 * cmr_stream_lists_reclaim, where dead lists are looked at. Call it before
 * `lists` is used. */
void cmr_stream_lists_release_dead_units(cmr_stream_lists *lists, pthread_mutex_t *lock,
                                         void (*release)(cmr_block *block, void *arg), void *arg);

/* Free blocks of more than `max_split` bytes are never split: such a block
 * serves only a request of more than `max_split` bytes, handed out whole
 * (its record's size stays the block's), so that large blocks are kept
 * for large requests (PyTorch's max_split_size_mb). SIZE_MAX, the default,
 * splits every block. It applies to the takes that start after it. */
void cmr_stream_lists_set_max_split(cmr_stream_lists *lists, size_t max_split);

/* `key` has ended (stream_ends.c): its list, if any, is dead. When blocks in
 * it were freed after its event's last record (or with none), the event is
 * recorded on `order_on` (the ending stream, or the legacy default stream
 * for a thread) so that their work can be waited for. */
void cmr_stream_lists_key_ended(cmr_stream_lists *lists, uint64_t key, cmr_stream order_on);
/* List records `lists` holds, in use or spare. */
size_t cmr_stream_lists_records(cmr_stream_lists *lists);

/* How memory given to the lists may be used. */
typedef enum cmr_given {
  /* Freed on the stream (or obtained in order on it): work may be pending
   * on it, so another stream takes it only after waiting. */
  CMR_GIVEN_FREED,
  /* No work is pending on it (new from the upstream and synchronized):
   * every stream may take it without waiting. */
  CMR_GIVEN_IDLE
} cmr_given;

/* `block` into `stream`'s list, merged with its free neighbours. On
 * failure (no host memory for the list) the block is still the caller's. */
cmr_status cmr_stream_lists_give(cmr_stream_lists *lists, cmr_stream stream, cmr_block *block, cmr_given given);

/* `block`, idle memory (the host has waited for its work), into the
 * shared list, which every stream takes from without waiting, merged with
 * its free neighbours there. On failure (no host memory for the shared
 * list) the block is still the caller's. */
cmr_status cmr_stream_lists_give_idle(cmr_stream_lists *lists, cmr_block *block);

/* Cuts `size` bytes at `alignment` out of `fresh` (new memory in no list,
 * holding at least cmr_free_blocks_needed(size, alignment) bytes) into *out,
 * and gives the rest to `stream`'s list as `given`. The caller has its
 * block before any other thread can see the new memory: given first and
 * taken after, it could be taken by another stream in between, again and
 * again under contention. On failure `fresh` is the caller's again. */
cmr_status cmr_stream_lists_carve(cmr_stream_lists *lists, cmr_stream stream, cmr_block *fresh, size_t size,
                                  size_t alignment, cmr_given given, cmr_block **out);

/* Where cmr_stream_lists_take looks, and what it gives back. */
typedef enum cmr_take_flags {
  /* The stream's own list (never waiting). */
  CMR_TAKE_OWN = 1,
  /* The other streams' lists: the first with a fit, after the stream waits
   * for the work ordered before that list's frees. Only the block moves. */
  CMR_TAKE_OTHERS = 2,
  CMR_TAKE_ANY = CMR_TAKE_OWN | CMR_TAKE_OTHERS,
  /* With CMR_TAKE_OWN only: a block from the own list is handed out there, for a request of
   * `bytes`: its address in *handed, *out NULL. The list remembers it,
   * instead of the block map, until it needs the slot; its free on the
   * same stream then meets only that list's lock, which no other stream's
   * thread takes (cmr_stream_lists_take_back). */
  CMR_TAKE_HAND_OUT = 4
} cmr_take_flags;

/* `size` bytes at `alignment` for `stream`, from where `flags` says (own
 * list first): a recently freed block of the very size at once, else a fit
 * from an index. A block not handed out comes back in *out, the caller's
 * (NULL when no list looked in has a fit). `bytes` and `handed` are used
 * with CMR_TAKE_HAND_OUT only (*handed NULL when nothing was handed out);
 * else `handed` may be NULL. */
cmr_status cmr_stream_lists_take(cmr_stream_lists *lists, cmr_stream stream, size_t size, size_t alignment,
                                 unsigned flags, size_t bytes, void **handed, cmr_block **out);

/* An allocation's way through the lists (cmr_stream_lists_allocate), set
 * once by the resource that owns them. */
typedef struct cmr_allocation_path {
  cmr_stream_lists *lists;
  /* Where the take looks past the stream's own recent blocks: CMR_TAKE_OWN
   * or CMR_TAKE_ANY. */
  unsigned take;
  /* The rest of an allocation the take handed nothing out for: `fit` is
   * the block it found (the caller's, not handed out; NULL: none), to be
   * handed out for the request of `bytes`, or else memory found further
   * (growing, gathering); its address in *out. `resource` is the one below. */
  cmr_status (*beyond)(void *resource, cmr_block *fit, size_t size, size_t alignment, size_t bytes, cmr_stream stream,
                       void **out);
  void *resource;
} cmr_allocation_path;

/* `size` bytes at `alignment` on `stream`, handed out for a request of
 * `bytes` (its address in *out): what cmr_stream_lists_take with
 * CMR_TAKE_HAND_OUT and `path->take` hands out, else what `path->beyond`
 * makes of the rest. The common case, a block of the very size freed lately
 * on the stream, takes the stream's list's lock alone and makes no call. */
cmr_status cmr_stream_lists_allocate(const cmr_allocation_path *path, size_t size, size_t alignment, size_t bytes,
                                     cmr_stream stream, void **out);

/* Takes back the block at `ptr`, freed on `stream` as `bytes` bytes, into
 * `stream`'s list. It must be one the resource handed out (remembered by a
 * list, or in the block map: else CMR_ERROR_UNKNOWN_POINTER) for a request
 * of exactly `bytes` (else CMR_ERROR_INVALID_ARGUMENT); on any failure the
 * block stays handed out. */
cmr_status cmr_stream_lists_take_back(cmr_stream_lists *lists, cmr_stream stream, void *ptr, size_t bytes);

/* Moves every other stream's free blocks into `stream`'s list (after
 * `stream` waits for each; nothing, *out NULL, on a capturing stream,
 * whose allocations are graph memory), so that all free memory coalesces, and takes
 * `size` bytes at `alignment` from there before any other thread gathering
 * can move them on: the retry after the upstream is exhausted. *out is NULL
 * when even the gathered memory has no fit. `stream`'s event then covers
 * the gathered blocks, so a third stream taking them later waits for their
 * first stream's work too. */
cmr_status cmr_stream_lists_reclaim(cmr_stream_lists *lists, cmr_stream stream, size_t size, size_t alignment,
                                    cmr_block **out);

/* What cmr_stream_lists_release gives back. */
typedef enum cmr_released {
  CMR_RELEASE_UNITS, /* every free block that is a whole unit (size == span) */
  CMR_RELEASE_ALL    /* every free block (the arena's last defragmentation step) */
} cmr_released;

/* Once the host has waited for the work ordered before the frees of every
 * list's blocks, gathers all of them, where pieces of one unit freed on
 * different streams (or threads) merge, and passes each block `which` names
 * to `release`, which then owns the record; whatever is left is idle and
 * goes to the shared list, which every stream takes from without waiting.
 * `release` runs with the lists' locks held: it must not call into
 * `lists`. On a failed wait the lists not yet waited for keep their blocks. */
cmr_status cmr_stream_lists_release(cmr_stream_lists *lists, cmr_released which,
                                    void (*release)(cmr_block *block, void *arg), void *arg);

/* Gives back what it can of `stream`'s own list, without waiting: its
 * blocks' work is ordered on `stream` (freed there, or taken there after
 * waiting), so a stream-ordered upstream takes them back on `stream`. With
 * `freed` (a block just freed on `stream`, still among its recent blocks):
 * that block only, merged with its free neighbours first; without (NULL):
 * every block of the list. Each goes to `take`, out of the list's index
 * `list` (every other free block of the list is in it), called with the
 * list's lock held (it must not call into `lists`): true when it took the
 * record (then the caller's), false to have it put back. `take` may also
 * remove other members of `list`, which are then its own (fixed_size's
 * blocks of one chunk). */
cmr_status cmr_stream_lists_trim(cmr_stream_lists *lists, cmr_stream stream, const void *freed,
                                 bool (*take)(cmr_free_blocks *list, cmr_block *block, void *arg), void *arg);

/* The largest free block over all lists (0 when none): the most one
 * allocation could take without new memory, at the default alignment. Each
 * list's recent blocks first join its index, where they merge. */
size_t cmr_stream_lists_largest(cmr_stream_lists *lists);

/* Whether the lists hold together (checked after each change in a checking
 * build, invariants.h): every list's recent blocks, remembered hand-outs
 * and index well formed and their counts and bytes agreeing; every record,
 * free or handed out, in one place only and no two covering the same
 * bytes. *why says what broke. */
bool cmr_stream_lists_valid(cmr_stream_lists *lists, const char **why);

/* Free blocks and bytes over all lists, and how many lists there are. */
void cmr_stream_lists_totals(cmr_stream_lists *lists, size_t *blocks, size_t *bytes, size_t *list_count);
/* Calls `visit` on each free block, list by list (for dumps). */
void cmr_stream_lists_each(cmr_stream_lists *lists, void (*visit)(uint64_t key, const cmr_block *block, void *arg),
                           void *arg);
/* Calls `visit` on each block a list remembers handing out (the rest of
 * what the resource handed out is in its block map), with the key of the
 * list's stream (for snapshots). */
void cmr_stream_lists_each_handed(cmr_stream_lists *lists,
                                  void (*visit)(uint64_t key, const cmr_block *block, void *arg), void *arg);

#endif /* CMR_STREAM_LISTS_H */
