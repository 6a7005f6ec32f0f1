/* SPDX-License-Identifier: Apache-2.0 */
/* arena: RMM's arena_memory_resource. Its contract:
 *
 * - arena_size bytes come from the upstream once, at creation; the arena
 *   never grows. They form the global arena, from which superblocks of at
 *   least 1 MiB are cut first fit into per-stream arenas (one
 *   cmr_stream_lists; the default stream keyed per thread). A superblock
 *   is a unit of the lists, so a wholly free one can go back.
 * - A request is served from the caller's arena, else from a new superblock
 *   of max(1 MiB, its needs), else from another stream's arena after the
 *   caller's stream waits for that one. It is refused only when no free
 *   range of the whole arena, merged, holds it: before refusing, the arena
 *   gathers every free block into the caller's arena, then returns whole
 *   superblocks (and then free pieces of partly used ones) to the global
 *   arena where they coalesce, and cuts a superblock of just the request's
 *   needs when no free range holds 1 MiB.
 * - Lock order: the global arena's lock, then the lists' locks. The global
 *   lock is taken only to cut or return superblocks, and is held from a cut
 *   until its rest is in the caller's arena, so no free memory is out of
 *   sight of a defragmentation; the common allocation and free take only
 *   their own arena's lock.
 * - When a thread exits or a stream is destroyed, its arena's whole
 *   superblocks return to the global arena once their work is done, and the
 *   rest of its free memory joins the lists' shared list (stream_lists.h). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "chunks.h"
#include "impl.h"
#include "invariants.h"
#include "lock.h"
#include "segments.h"
#include "sizes.h"
#include "suballocator.h"

#define CMR_ARENA_SUPERBLOCK_MINIMUM ((size_t)1 << 20)

struct cmr_arena_impl {
  cmr_arena_params params;    /* first: what it was created with (impl.h) */
  cmr_chunks upstream_memory; /* one chunk, of arena_size bytes at base */
  char *base;
  /* The global arena: every byte no stream's or thread's arena holds. */
  pthread_mutex_t global_lock;
  cmr_free_blocks global;
  _Atomic size_t superblocks; /* held by the streams' and threads' arenas */
  cmr_stream_lists *lists;
  cmr_block_map *handed_out;
  cmr_allocation_path path;  /* over lists (its own arena only), on to cmr_allocate_beyond_recent */
  FILE *dump_file;           /* stderr for an empty dump_path */
  pthread_mutex_t dump_lock; /* so that two dumps never interleave */
};
CMR_IMPL_LAYOUT(arena);

/* The superblock a request needs when no arena has a fit: big enough
 * whatever its (256-aligned) address; SIZE_MAX when no size is. */
static size_t cmr_superblock_size(size_t size, size_t alignment) {
  size_t needed = cmr_free_blocks_needed(size, alignment);
  return needed > CMR_ARENA_SUPERBLOCK_MINIMUM ? needed : CMR_ARENA_SUPERBLOCK_MINIMUM;
}

static void cmr_return_superblock_locked(cmr_block *superblock, void *arg);
static cmr_status cmr_allocate_beyond_recent(void *resource, cmr_block *block, size_t size, size_t alignment,
                                             size_t bytes, cmr_stream stream, void **out);

/* ---- the dump --------------------------------------------------------------------- */

static void cmr_dump_global_range(const cmr_block *block, void *arg) {
  fprintf(arg, "    free [%p, %p) %zu bytes\n", (void *)block->address, (void *)(block->address + block->size),
          block->size);
}

static void cmr_dump_list_block(uint64_t key, const cmr_block *block, void *arg) {
  fprintf(arg, "    arena 0x%" PRIx64 ": free [%p, %p) %zu bytes%s\n", key, (void *)block->address,
          (void *)(block->address + block->size), block->size,
          block->span != 0 && block->span == block->size ? " (a whole superblock)" : "");
}

/* Each part (global arena, stream lists, handed-out blocks) is a snapshot
 * under its own locks; together they need not add up while other threads
 * allocate. */
static void cmr_write_dump(cmr_arena_impl *impl, FILE *out, const char *reason) {
  fprintf(out, "cmr arena %p: %s\n", (void *)impl, reason);
  fprintf(out, "  arena_size %zu bytes from the upstream at %p\n", impl->params.arena_size, (void *)impl->base);
  cmr_mutex_lock(&impl->global_lock);
  fprintf(out, "  global arena: %zu free ranges, %zu bytes\n", impl->global.count, impl->global.bytes);
  cmr_free_blocks_each(&impl->global, cmr_dump_global_range, out);
  cmr_mutex_unlock(&impl->global_lock);
  size_t blocks = 0, bytes = 0, lists = 0;
  cmr_stream_lists_totals(impl->lists, &blocks, &bytes, &lists);
  fprintf(out, "  stream and thread arenas: %zu arenas, %zu superblocks, %zu free blocks, %zu free bytes\n", lists,
          atomic_load(&impl->superblocks), blocks, bytes);
  cmr_stream_lists_each(impl->lists, cmr_dump_list_block, out);
  cmr_block_map_totals(impl->handed_out, &blocks, &bytes);
  fprintf(out, "  allocated: %zu blocks, %zu bytes\n", blocks, bytes);
}

/* Appends the dump to the dump destination; fails when it could not be written. */
static cmr_status cmr_dump_to_destination(cmr_arena_impl *impl, const char *reason) {
  cmr_mutex_lock(&impl->dump_lock);
  clearerr(impl->dump_file);
  cmr_write_dump(impl, impl->dump_file, reason);
  bool failed = fflush(impl->dump_file) != 0 || ferror(impl->dump_file);
  int error = errno;
  cmr_mutex_unlock(&impl->dump_lock);
  if (!failed) return CMR_SUCCESS;
  const char *where = impl->params.dump_path[0] != '\0' ? impl->params.dump_path : "stderr";
  return cmr_error(CMR_ERROR_IO, "arena: writing the dump to %.*s%s failed: %s", CMR_QUOTE(where), strerror(error));
}

/* The dump's destination, params.dump_path (the wrapper's copy, which
 * lives as long as the arena): stderr when empty. */
static cmr_status cmr_open_dump_destination(cmr_arena_impl *impl) {
  const char *dump_path = impl->params.dump_path;
  if (dump_path[0] == '\0') {
    impl->dump_file = stderr;
    return CMR_SUCCESS;
  }
  /* Opened now, as RMM opens its log, so that a bad path is reported when
   * the arena is made rather than lost when memory runs out. */
  impl->dump_file = fopen(dump_path, "a");
  if (impl->dump_file == NULL) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "arena: dump_path \"%.*s%s\" cannot be opened for appending: %s",
                     CMR_QUOTE(dump_path), strerror(errno));
  }
  return CMR_SUCCESS;
}

/* ---- life ---------------------------------------------------------------------------- */

/* Frees whatever of the arena exists, the upstream memory last. */
static void cmr_release_everything(cmr_arena_impl *impl) {
  if (impl->lists != NULL) cmr_stream_lists_destroy(impl->lists);
  if (impl->handed_out != NULL) cmr_block_map_destroy(impl->handed_out);
  cmr_free_blocks_clear(&impl->global);
  cmr_chunks_release_all(&impl->upstream_memory);
  if (impl->dump_file != NULL && impl->dump_file != stderr) fclose(impl->dump_file);
  pthread_mutex_destroy(&impl->global_lock);
  pthread_mutex_destroy(&impl->dump_lock);
}

/* Takes the arena's memory from the upstream as the global arena's one free
 * range. Its span stays 0: in the global arena every range merges with its
 * neighbours, and nothing lies before the upstream block to merge with. */
static cmr_status cmr_take_arena_memory(cmr_arena_impl *impl) {
  cmr_chunk chunk;
  cmr_status status = cmr_chunks_grow(&impl->upstream_memory, impl->params.arena_size, impl->params.arena_size,
                                      CMR_DEFAULT_STREAM, &chunk);
  if (status != CMR_SUCCESS) return cmr_error_context(status, "taking arena_size %zu bytes", impl->params.arena_size);
  impl->base = chunk.address;
  /* Every stream may use the memory from now on, not only the default one. */
  status = cmr_backend_stream_synchronize(CMR_DEFAULT_STREAM);
  cmr_block *range = NULL;
  if (status == CMR_SUCCESS) status = cmr_block_new(impl->base, impl->params.arena_size, 0, &range);
  if (status == CMR_SUCCESS) cmr_free_blocks_insert(&impl->global, range);
  return status;
}

/* The arena's two locks and its chunks' (which has one too); nothing is
 * left made when one of them cannot be. */
static cmr_status cmr_make_locks(cmr_arena_impl *impl) {
  cmr_status status = cmr_mutex_init(&impl->global_lock, "arena");
  if (status != CMR_SUCCESS) return status;
  status = cmr_mutex_init(&impl->dump_lock, "arena");
  if (status == CMR_SUCCESS) {
    status = cmr_chunks_init(&impl->upstream_memory, "arena", impl->params.upstream, impl->params.arena_size);
    if (status == CMR_SUCCESS) return status;
    pthread_mutex_destroy(&impl->dump_lock);
  }
  pthread_mutex_destroy(&impl->global_lock);
  return status;
}

cmr_status cmr_arena_impl_init(cmr_arena_impl *impl) {
  cmr_status status = cmr_make_locks(impl);
  if (status != CMR_SUCCESS) return status;
  cmr_free_blocks_init_by_address(&impl->global);
  atomic_init(&impl->superblocks, 0);
  status = cmr_open_dump_destination(impl);
  if (status == CMR_SUCCESS) status = cmr_block_map_create(&impl->handed_out);
  if (status == CMR_SUCCESS) {
    status = cmr_stream_lists_create("arena", CMR_FIT_FIRST, CMR_KEY_DEFAULT_STREAM_PER_THREAD, impl->handed_out,
                                     &impl->lists);
  }
  /* An exited thread's or a destroyed stream's superblocks come back here. */
  if (status == CMR_SUCCESS) {
    impl->path = (cmr_allocation_path){impl->lists, CMR_TAKE_OWN, cmr_allocate_beyond_recent, impl};
    cmr_stream_lists_release_dead_units(impl->lists, &impl->global_lock, cmr_return_superblock_locked, impl);
    status = cmr_stream_lists_set_capture(
        impl->lists, impl->params.capture == CMR_ARENA_CAPTURE_REFUSE ? CMR_CAPTURE_REFUSE : CMR_CAPTURE_SERVE,
        impl->params.upstream);
  }
  if (status == CMR_SUCCESS) status = cmr_take_arena_memory(impl);
  if (status != CMR_SUCCESS) cmr_release_everything(impl);
  return status;
}

/* The upstream memory goes back once the device has finished its work on it
 * (cmr_chunks_release_all), whether or not blocks are still allocated. */
void cmr_arena_impl_fini(cmr_arena_impl *impl) { cmr_release_everything(impl); }

/* ---- superblocks ----------------------------------------------------------------------- */

/* A superblock of `size` bytes cut first fit from the global arena (its
 * lock held), or NULL when no range is big enough. */
static cmr_status cmr_cut_superblock(cmr_arena_impl *impl, size_t size, cmr_block **out) {
  *out = NULL;
  cmr_block *range = cmr_free_blocks_first_fit(&impl->global, cmr_free_blocks_needed(size, CMR_DEFAULT_ALIGNMENT));
  if (range == NULL) return CMR_SUCCESS;
  cmr_status status = cmr_free_blocks_take(&impl->global, range, size, CMR_DEFAULT_ALIGNMENT, out);
  if (*out == NULL) return status;
  CMR_CHECK(cmr_chunks_hold, &impl->upstream_memory, (*out)->address, size);
  (*out)->span = size;
  atomic_fetch_add(&impl->superblocks, 1);
  return CMR_SUCCESS;
}

/* Free memory back to the global arena (its lock held), merging with the
 * free ranges around it: a whole superblock, or a free piece of one still
 * partly in use. A piece that begins a superblock takes the superblock's
 * count with it: what is left of that superblock is no longer one (its
 * pieces merge with their neighbours when freed, and go back at the next
 * defragmentation). */
static void cmr_return_superblock_locked(cmr_block *superblock, void *arg) {
  cmr_arena_impl *impl = arg;
  if (superblock->span != 0) atomic_fetch_sub(&impl->superblocks, 1);
  superblock->span = 0;
  cmr_free_blocks_insert(&impl->global, superblock);
}

/* The request cut out of a new superblock whose rest joins the caller's
 * arena (the global arena's lock held; on failure the superblock goes back
 * to it). The global arena's memory is idle (synchronized at creation, or
 * waited for before it came back): every stream may take from it at once.
 * The request is cut out before the rest joins the caller's arena, so no
 * other thread can take the new superblock's room first; and the global
 * lock is held from the cut until the rest is in that arena, so the rest is
 * never free where a defragmentation cannot see it (one that ran in
 * between would miss it, and could refuse a request that the rest, merged
 * with its neighbours, would serve). */
static cmr_status cmr_carve_superblock_locked(cmr_arena_impl *impl, cmr_block *superblock, size_t size,
                                              size_t alignment, cmr_stream stream, cmr_block **out) {
  cmr_status status = cmr_stream_lists_carve(impl->lists, stream, superblock, size, alignment, CMR_GIVEN_IDLE, out);
  if (status != CMR_SUCCESS) cmr_return_superblock_locked(superblock, impl);
  return status;
}

/* One attempt after the caller's arena had no fit: from a new superblock,
 * else from another stream's arena. A new superblock comes before another
 * stream's block because it is idle: taking the other's would make the
 * caller's stream wait for that stream, and streams that each free what
 * they allocate (a buffer per kernel) would pass one block round and run
 * one after another (bench/RESULTS.md, multi_stream). *out stays NULL when
 * none has room. */
static cmr_status cmr_serve_beyond_own(cmr_arena_impl *impl, size_t size, size_t alignment, cmr_stream stream,
                                       cmr_block **out) {
  cmr_block *superblock = NULL;
  cmr_mutex_lock(&impl->global_lock);
  cmr_status status = cmr_cut_superblock(impl, cmr_superblock_size(size, alignment), &superblock);
  if (superblock != NULL) status = cmr_carve_superblock_locked(impl, superblock, size, alignment, stream, out);
  cmr_mutex_unlock(&impl->global_lock);
  if (status != CMR_SUCCESS || superblock != NULL) return status;
  return cmr_stream_lists_take(impl->lists, stream, size, alignment, CMR_TAKE_OTHERS, 0, NULL, out);
}

/* The request's superblock, cut from the global arena (its lock held) once
 * every whole superblock is back there, where they coalesce (the host first
 * waits for the work ordered before their frees); failing that, once every
 * free piece of the superblocks partly in use is back too. Of the usual
 * size, else of just the request's needs: the arena's last free bytes,
 * fewer than a superblock of the minimum size, still serve a request they
 * hold. *out stays NULL when no free range of the whole arena holds it. */
static cmr_status cmr_cut_after_giving_back(cmr_arena_impl *impl, size_t size, size_t alignment, cmr_block **out) {
  size_t usual = cmr_superblock_size(size, alignment), least = cmr_free_blocks_needed(size, alignment);
  cmr_status status = cmr_stream_lists_release(impl->lists, CMR_RELEASE_UNITS, cmr_return_superblock_locked, impl);
  if (status == CMR_SUCCESS) status = cmr_cut_superblock(impl, usual, out);
  if (status != CMR_SUCCESS || *out != NULL) return status;
  /* Superblocks partly in use hold free pieces no other superblock can
   * use (a 4 GiB one freed whole and then cut for a 100 MiB request keeps
   * its 3.9 GiB). */
  status = cmr_stream_lists_release(impl->lists, CMR_RELEASE_ALL, cmr_return_superblock_locked, impl);
  if (status == CMR_SUCCESS) status = cmr_cut_superblock(impl, usual, out);
  if (status == CMR_SUCCESS && *out == NULL && least < usual) status = cmr_cut_superblock(impl, least, out);
  return status;
}

/* Gathers every free block into `stream`'s arena, so that a superblock whose
 * pieces were freed on different streams is whole again, and takes from it
 * there, before any other thread can; failing that (the request needs more
 * than any one superblock has), gives the free superblocks back to the
 * global arena and cuts the request's superblock from it
 * (cmr_cut_after_giving_back). The global arena stays locked from the giving
 * back to the carving, so that no other thread takes the coalesced room in
 * between. */
static cmr_status cmr_defragment_and_retry(cmr_arena_impl *impl, size_t size, size_t alignment, cmr_stream stream,
                                           cmr_block **out) {
  cmr_status status = cmr_stream_lists_reclaim(impl->lists, stream, size, alignment, out);
  if (status != CMR_SUCCESS || *out != NULL) return status;
  cmr_block *superblock = NULL;
  cmr_mutex_lock(&impl->global_lock);
  status = cmr_cut_after_giving_back(impl, size, alignment, &superblock);
  if (superblock != NULL) status = cmr_carve_superblock_locked(impl, superblock, size, alignment, stream, out);
  cmr_mutex_unlock(&impl->global_lock);
  return status;
}

/* `needed`: the smallest superblock that would have served the request. */
static cmr_status cmr_out_of_memory(cmr_arena_impl *impl, size_t bytes, size_t alignment, cmr_stream stream,
                                    size_t needed) {
  char failure[192];
  snprintf(failure, sizeof failure, "out of memory: %zu bytes at alignment %zu on stream %p", bytes, alignment,
           (void *)stream);
  size_t global_free = 0;
  cmr_arena_impl_global_free_bytes(impl, &global_free);
  cmr_status dumped = impl->params.dump_log_on_failure ? cmr_dump_to_destination(impl, failure) : CMR_SUCCESS;
  /* The dump's own message, when it failed, closes the message (in parentheses). */
  const char *dump_failure = dumped != CMR_SUCCESS ? cmr_last_error_message() : NULL;
  const char *open = dump_failure != NULL ? " (" : "", *close = dump_failure != NULL ? ")" : "";
  if (dump_failure == NULL) dump_failure = "";
  if (needed > impl->params.arena_size) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "arena: %s: it needs %zu bytes, more than the arena_size %zu%s%s%s",
                     failure, needed, impl->params.arena_size, open, dump_failure, close);
  }
  return cmr_error(CMR_ERROR_OUT_OF_MEMORY,
                   "arena: %s: no arena has a fit and the global arena (%zu of %zu bytes free) has no superblock of "
                   "%zu bytes, even after defragmenting%s%s%s",
                   failure, global_free, impl->params.arena_size, needed, open, dump_failure, close);
}

/* ---- the resource --------------------------------------------------------------------------- */

/* The caller's arena had no block to hand out (the allocation path's
 * rest): `block` is a fit (to hand out), or NULL, and then a new superblock,
 * another stream's arena, a defragmentation. */
static cmr_status cmr_allocate_beyond_recent(void *resource, cmr_block *block, size_t size, size_t alignment,
                                             size_t bytes, cmr_stream stream, void **out) {
  cmr_arena_impl *impl = resource;
  size_t superblock = cmr_superblock_size(size, alignment);
  /* A request bigger than the whole arena fails without defragmenting. */
  if (block == NULL && superblock <= impl->params.arena_size) {
    cmr_status status = cmr_serve_beyond_own(impl, size, alignment, stream, &block);
    if (status == CMR_SUCCESS && block == NULL)
      status = cmr_defragment_and_retry(impl, size, alignment, stream, &block);
    if (status != CMR_SUCCESS) return status;
  }
  /* The last try was a superblock of just the request's needs (beyond the
   * arena_size, as big as the usual superblock). */
  if (block == NULL) return cmr_out_of_memory(impl, bytes, alignment, stream, cmr_free_blocks_needed(size, alignment));
  cmr_suballocator_hand_out(impl->handed_out, block, bytes, out);
  return CMR_SUCCESS;
}

/* The common case, a block of the very size freed lately on the stream,
 * meets only the stream's (or thread's) arena's lock. */
cmr_status cmr_arena_impl_allocate(cmr_arena_impl *impl, size_t bytes, size_t alignment, cmr_stream stream,
                                   void **out) {
  return cmr_stream_lists_allocate(&impl->path, cmr_round_up_256(bytes), alignment, bytes, stream, out);
}

cmr_status cmr_arena_impl_deallocate(cmr_arena_impl *impl, void *ptr, size_t bytes, size_t alignment,
                                     cmr_stream stream) {
  (void)alignment; /* it placed the block; its size does not depend on it */
  return cmr_stream_lists_take_back(impl->lists, stream, ptr, bytes);
}

cmr_status cmr_arena_impl_global_free_bytes(cmr_arena_impl *impl, size_t *out) {
  cmr_mutex_lock(&impl->global_lock);
  *out = impl->global.bytes;
  cmr_mutex_unlock(&impl->global_lock);
  return CMR_SUCCESS;
}

cmr_status cmr_arena_impl_superblock_count(cmr_arena_impl *impl, size_t *out) {
  *out = atomic_load(&impl->superblocks);
  return CMR_SUCCESS;
}

cmr_status cmr_arena_impl_dump(cmr_arena_impl *impl) { return cmr_dump_to_destination(impl, "dump requested"); }

cmr_status cmr_arena_impl_largest_free_block(cmr_arena_impl *impl, size_t *out) {
  size_t in_arenas = cmr_stream_lists_largest(impl->lists);
  cmr_mutex_lock(&impl->global_lock);
  size_t global = cmr_free_blocks_largest(&impl->global);
  cmr_mutex_unlock(&impl->global_lock);
  *out = in_arenas > global ? in_arenas : global;
  return CMR_SUCCESS;
}

/* The lists' free memory, and the global arena's beside it (outside the lists). */
cmr_status cmr_arena_impl_stats(cmr_arena_impl *impl, cmr_stats *out, cmr_free_by_stream *spread) {
  cmr_suballocator_stats(impl->lists, &impl->upstream_memory, out, spread);
  cmr_mutex_lock(&impl->global_lock);
  cmr_stream_free global = {CMR_STREAM_KEY_UNLISTED, impl->global.bytes, impl->global.count,
                            cmr_free_blocks_largest(&impl->global)};
  cmr_mutex_unlock(&impl->global_lock);
  out->bytes_free += global.bytes;
  out->free_blocks += global.blocks;
  if (global.largest > out->largest_free_block) out->largest_free_block = global.largest;
  if (spread != NULL) cmr_free_by_stream_add(spread, &global);
  return CMR_SUCCESS;
}

CMR_SUBALLOCATOR_RESET_PEAK_STATS(arena, upstream_memory)
static void cmr_arena_global_free(const cmr_block *block, void *arg) {
  cmr_segments_add_block(arg, block, false, CMR_SEGMENTS_NO_STREAM);
}

/* The kit's walk, and the free ranges of the global arena (no stream's). */
void cmr_arena_impl_segments(cmr_arena_impl *impl, cmr_segment_sink *sink) {
  cmr_segments_walk(sink, &impl->upstream_memory, impl->lists, impl->handed_out);
  cmr_mutex_lock(&impl->global_lock);
  cmr_free_blocks_each(&impl->global, cmr_arena_global_free, sink);
  cmr_mutex_unlock(&impl->global_lock);
}
