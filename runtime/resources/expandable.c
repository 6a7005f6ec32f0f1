/* SPDX-License-Identifier: Apache-2.0 */
/* expandable: pool's stream-ordered best fit (runtime/src/resource_api/stream_lists.h)
 * over memory committed into reserved address ranges (vm_ranges.h) instead
 * of upstream chunks. A growth's block merges with the free blocks around
 * it, so memory from several growths serves one request; trimming
 * decommits the whole granules of free blocks and keeps the pieces around
 * them listed. */
#include <stdlib.h>

#include "backend.h"
#include "impl.h"
#include "lock.h"
#include "sizes.h"
#include "suballocator.h"
#include "vm_ranges.h"

struct cmr_expandable_impl {
  cmr_expandable_params params; /* first: what it was created with (impl.h) */
  cmr_vm_ranges ranges;
  /* Held while deciding to grow, so that threads that all miss at once grow
   * once, and the others find the new memory when they look again. */
  cmr_upstream_lock growth;
  cmr_stream_lists *free_lists;
  cmr_block_map *handed_out;
  cmr_allocation_path path; /* over free_lists, on to cmr_expandable_beyond */
};
CMR_IMPL_LAYOUT(expandable);

/* ---- trimming: whole free granules decommitted ------------------------------------------- */

typedef struct cmr_expandable_trim {
  cmr_vm_ranges *ranges;
  cmr_free_blocks taken; /* blocks holding whole granules, out of the lists */
} cmr_expandable_trim;

/* A free block with whole granules inside is taken (lists' locks held). */
static bool cmr_expandable_take_granules(cmr_free_blocks *list, cmr_block *block, void *arg) {
  (void)list;
  cmr_expandable_trim *trim = arg;
  char *first = NULL, *end = NULL;
  cmr_vm_ranges_interior(trim->ranges, block->address, block->size, &first, &end);
  if (first == end) return false;
  cmr_free_blocks_insert(&trim->taken, block);
  return true;
}

static void cmr_expandable_set_aside(cmr_block *block, void *arg) {
  if (!cmr_expandable_take_granules(NULL, block, arg))
    cmr_free_blocks_insert(&((cmr_expandable_trim *)arg)->taken, block);
}

/* `block`, free memory no work is pending on, listed again: in `stream`'s
 * list, or with `shared`, in the list every stream takes from. Without
 * host memory for that, its record goes and its bytes stay committed,
 * unlisted, until the end. */
static void cmr_expandable_relist(cmr_expandable_impl *impl, cmr_block *block, cmr_stream stream, bool shared) {
  cmr_status status = shared ? cmr_stream_lists_give_idle(impl->free_lists, block)
                             : cmr_stream_lists_give(impl->free_lists, stream, block, CMR_GIVEN_IDLE);
  if (status != CMR_SUCCESS) cmr_block_delete(block);
}

/* `block`'s whole granules decommitted, the bytes before and after them
 * listed again (cmr_expandable_relist). A block whose granules the backend
 * kept goes back whole. */
static cmr_status cmr_expandable_decommit(cmr_expandable_impl *impl, cmr_block *block, cmr_stream stream, bool shared) {
  char *first = NULL, *end = NULL;
  cmr_vm_ranges_interior(&impl->ranges, block->address, block->size, &first, &end);
  cmr_status status = first == end ? CMR_SUCCESS : cmr_vm_ranges_decommit(&impl->ranges, first, end);
  if (first == end || status != CMR_SUCCESS) { /* nothing decommitted: listed again whole */
    cmr_expandable_relist(impl, block, stream, shared);
    return status;
  }
  char *block_end = block->address + block->size;
  if (end < block_end) {
    cmr_block *tail = NULL;
    if (cmr_block_new(end, (size_t)(block_end - end), 0, &tail) == CMR_SUCCESS) {
      cmr_expandable_relist(impl, tail, stream, shared);
    } /* else its bytes stay committed, unlisted, until the end: no host memory for a record */
  }
  block->size = (size_t)(first - block->address);
  if (block->size > 0) {
    cmr_expandable_relist(impl, block, stream, shared);
  } else {
    cmr_block_delete(block);
  }
  return status;
}

/* Decommits what `trim` took, the first failure returned. */
static cmr_status cmr_expandable_decommit_taken(cmr_expandable_impl *impl, cmr_expandable_trim *trim, cmr_stream stream,
                                                bool shared) {
  cmr_status status = CMR_SUCCESS;
  for (cmr_block *block; (block = cmr_free_blocks_pop(&trim->taken)) != NULL;) {
    cmr_status decommitted = cmr_expandable_decommit(impl, block, stream, shared);
    if (status == CMR_SUCCESS) status = decommitted;
  }
  return status;
}

/* Over the threshold: `stream`'s free granules (those of the block just
 * freed at `freed`, or all, NULL) decommitted once that stream's work is
 * done. Out of line: the common path stays light. */
static __attribute__((noinline)) cmr_status cmr_expandable_trim_stream(cmr_expandable_impl *impl, cmr_stream stream,
                                                                       const void *freed) {
  cmr_expandable_trim trim = {.ranges = &impl->ranges};
  cmr_free_blocks_init(&trim.taken);
  cmr_status status = cmr_stream_lists_trim(impl->free_lists, stream, freed, cmr_expandable_take_granules, &trim);
  if (status != CMR_SUCCESS || trim.taken.count == 0) return status;
  status = cmr_backend_stream_synchronize_on(impl->ranges.device, stream);
  if (status != CMR_SUCCESS) { /* not decommitted: listed again, as freed (its work may be pending) */
    for (cmr_block *block; (block = cmr_free_blocks_pop(&trim.taken)) != NULL;) {
      if (cmr_stream_lists_give(impl->free_lists, stream, block, CMR_GIVEN_FREED) != CMR_SUCCESS) {
        cmr_block_delete(block); /* its bytes stay committed, unlisted, until the end */
      }
    }
    return cmr_error_context(status, "expandable: waiting to decommit past release_threshold");
  }
  return cmr_expandable_decommit_taken(impl, &trim, stream, false);
}

static bool cmr_expandable_past_threshold(cmr_expandable_impl *impl, size_t more) {
  size_t committed = cmr_vm_ranges_committed(&impl->ranges);
  return committed > impl->params.release_threshold || more > impl->params.release_threshold - committed;
}

/* ---- growing --------------------------------------------------------------------------- */

static cmr_status cmr_expandable_grow(void *resource, size_t size, size_t alignment, cmr_stream stream,
                                      cmr_block **out) {
  cmr_expandable_impl *impl = resource;
  size_t needed = cmr_free_blocks_needed(size, alignment);
  if (needed == SIZE_MAX) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "expandable: %zu bytes at alignment %zu overflow", size, alignment);
  }
  if (cmr_expandable_past_threshold(impl, needed)) {
    cmr_status trimmed = cmr_expandable_trim_stream(impl, stream, NULL);
    if (trimmed != CMR_SUCCESS) return trimmed;
  }
  char *address = NULL;
  size_t bytes = 0;
  bool starts_range = false;
  cmr_status status = cmr_vm_ranges_grow(&impl->ranges, needed, &address, &bytes, &starts_range);
  if (status != CMR_SUCCESS) return status;
  cmr_log(CMR_LOG_DEBUG, "expandable %p: committed %zu bytes at %p (at least %zu needed): committed size %zu",
          (void *)impl, bytes, (void *)address, needed, cmr_vm_ranges_committed(&impl->ranges));
  /* A range's first block never merges with what lies before it: another
   * range's addresses. */
  cmr_block *block = NULL;
  status = cmr_block_new(address, bytes, starts_range ? bytes : 0, &block);
  if (status == CMR_SUCCESS) {
    status = cmr_stream_lists_carve(impl->free_lists, stream, block, size, alignment, CMR_GIVEN_IDLE, out);
  }
  if (status != CMR_SUCCESS) { /* unlisted, it would be unusable yet count against the maximum */
    if (block != NULL) cmr_block_delete(block);
    cmr_kept_message reason;
    cmr_keep_message(&reason);
    (void)cmr_vm_ranges_decommit(&impl->ranges, address, address + bytes);
    cmr_restore_message(&reason);
  }
  return status;
}

/* ---- life ------------------------------------------------------------------------------ */

/* An allocation the lists' take did not serve: more memory committed if no
 * list had a block, and when nothing more can be, one more look over all
 * free memory, gathered. */
static cmr_status cmr_expandable_beyond(void *resource, cmr_block *fit, size_t size, size_t alignment, size_t bytes,
                                        cmr_stream stream, void **out) {
  cmr_expandable_impl *impl = resource;
  return cmr_suballocator_find_or_reclaim(impl->free_lists, impl->handed_out, &impl->growth, "expandable", size,
                                          alignment, bytes, stream, cmr_expandable_grow, impl, fit, out);
}

cmr_status cmr_expandable_impl_init(cmr_expandable_impl *impl) {
  const cmr_expandable_params *params = &impl->params;
  cmr_status status = cmr_upstream_lock_init(&impl->growth, "expandable: allocate (committing memory)");
  if (status != CMR_SUCCESS) return status;
  status = cmr_vm_ranges_init(&impl->ranges, "expandable", params->granule_size, params->reservation_size,
                              params->maximum_size);
  if (status != CMR_SUCCESS) {
    cmr_upstream_lock_destroy(&impl->growth);
    return status;
  }
  status = cmr_suballocator_lists_create("expandable", CMR_FIT_BEST, CMR_KEY_PER_STREAM, &impl->handed_out,
                                         &impl->free_lists);
  if (status == CMR_SUCCESS) {
    impl->path = (cmr_allocation_path){impl->free_lists, CMR_TAKE_ANY, cmr_expandable_beyond, impl};
    cmr_stream_lists_set_max_split(impl->free_lists, params->max_split_size);
  }
  if (status != CMR_SUCCESS) cmr_expandable_impl_fini(impl);
  return status;
}

void cmr_expandable_impl_fini(cmr_expandable_impl *impl) {
  cmr_suballocator_lists_destroy(impl->free_lists, impl->handed_out);
  cmr_vm_ranges_release_all(&impl->ranges);
  cmr_upstream_lock_destroy(&impl->growth);
}

unsigned cmr_expandable_impl_properties(const cmr_expandable_impl *impl) {
  (void)impl;
  /* The device's memory; in the host build the host is the device. */
  return CMR_WITH_CUDA ? CMR_PROPERTY_DEVICE_ACCESSIBLE : CMR_PROPERTY_DEVICE_ACCESSIBLE | CMR_PROPERTY_HOST_ACCESSIBLE;
}

/* ---- allocating ------------------------------------------------------------------------- */

cmr_status cmr_expandable_impl_allocate(cmr_expandable_impl *impl, size_t bytes, size_t alignment, cmr_stream stream,
                                        void **out) {
  return cmr_stream_lists_allocate(&impl->path, cmr_round_up_256(bytes), alignment, bytes, stream, out);
}

/* A free past release_threshold: the block's whole granules are
 * decommitted. Out of line: the common path stays light. */
static __attribute__((noinline)) cmr_status cmr_expandable_deallocate_past_threshold(cmr_expandable_impl *impl,
                                                                                     void *ptr, size_t bytes,
                                                                                     cmr_stream stream) {
  cmr_status status = cmr_stream_lists_take_back(impl->free_lists, stream, ptr, bytes);
  return status == CMR_SUCCESS ? cmr_expandable_trim_stream(impl, stream, ptr) : status;
}

cmr_status cmr_expandable_impl_deallocate(cmr_expandable_impl *impl, void *ptr, size_t bytes, size_t alignment,
                                          cmr_stream stream) {
  (void)alignment; /* the block knows where it starts */
  /* A free leaves the bytes committed as they were: the threshold is read first. */
  if (__builtin_expect(cmr_expandable_past_threshold(impl, 0), 0)) {
    return cmr_expandable_deallocate_past_threshold(impl, ptr, bytes, stream);
  }
  return cmr_stream_lists_take_back(impl->free_lists, stream, ptr, bytes);
}

/* ---- getters and release ------------------------------------------------------------------ */

cmr_status cmr_expandable_impl_committed_size(cmr_expandable_impl *impl, size_t *out) {
  *out = cmr_vm_ranges_committed(&impl->ranges);
  return CMR_SUCCESS;
}

cmr_status cmr_expandable_impl_free_size(cmr_expandable_impl *impl, size_t *out) {
  size_t blocks = 0, lists = 0;
  cmr_stream_lists_totals(impl->free_lists, &blocks, out, &lists);
  return CMR_SUCCESS;
}

cmr_status cmr_expandable_impl_largest_free_block(cmr_expandable_impl *impl, size_t *out) {
  *out = cmr_stream_lists_largest(impl->free_lists);
  return CMR_SUCCESS;
}

cmr_status cmr_expandable_impl_release(cmr_expandable_impl *impl) {
  cmr_expandable_trim trim = {.ranges = &impl->ranges};
  cmr_free_blocks_init(&trim.taken);
  cmr_status status = cmr_stream_lists_release(impl->free_lists, CMR_RELEASE_ALL, cmr_expandable_set_aside, &trim);
  /* The host has waited for every block's work: what is left is idle, for every stream. */
  cmr_status decommitted = cmr_expandable_decommit_taken(impl, &trim, CMR_DEFAULT_STREAM, true);
  if (status == CMR_SUCCESS) status = decommitted;
  return status == CMR_SUCCESS ? status : cmr_error_context(status, "expandable: release");
}

/* Statistics: its committed granules are what it holds (each range a
 * segment); the free fields are its lists'. */
cmr_status cmr_expandable_impl_stats(cmr_expandable_impl *impl, cmr_stats *out, cmr_free_by_stream *spread) {
  cmr_vm_ranges_stats(&impl->ranges, out);
  cmr_stream_lists_stats(impl->free_lists, out, spread);
  return CMR_SUCCESS;
}

cmr_status cmr_expandable_impl_reset_peak_stats(cmr_expandable_impl *impl) {
  cmr_vm_ranges_reset_peak(&impl->ranges);
  return CMR_SUCCESS;
}
