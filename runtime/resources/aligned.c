/* SPDX-License-Identifier: Apache-2.0 */
/* aligned: requests that need more than 256 bytes of alignment take that much
 * extra from the upstream (at 256) and hand out the aligned address inside
 * it; a sharded map (sharded_map.h) from each such address to the
 * upstream's allocation lets the free give the upstream back exactly its
 * pointer and size, and refuse a free of another size. Whether a request was aligned here is decided from
 * its size and alignment, which a free must repeat (as in RMM), so
 * pass-through frees touch no lock unless the upstream refuses them. */
#include <stdint.h>
#include <stdlib.h>

#include "impl.h"
#include "sharded_map.h"

/* One aligned allocation: what the caller got and what the upstream gave. */
typedef struct cmr_aligned_entry {
  cmr_address_entry key; /* first: its address is the aligned pointer */
  size_t bytes;          /* what the caller asked for */
  void *upstream_ptr;
  size_t upstream_bytes;
} cmr_aligned_entry;

struct cmr_aligned_impl {
  cmr_aligned_params params; /* first: what it was created with (impl.h) */
  cmr_sharded_map *entries;  /* every shard with its table: no insert fails */
};
CMR_IMPL_LAYOUT(aligned);

static void cmr_aligned_drop(cmr_address_entry *entry) { free(entry); }

cmr_status cmr_aligned_impl_init(cmr_aligned_impl *impl) {
  cmr_status status = cmr_sharded_map_create("aligned", &impl->entries);
  if (status == CMR_SUCCESS) status = cmr_sharded_map_make_tables(impl->entries, "aligned");
  if (status != CMR_SUCCESS) {
    cmr_sharded_map_destroy(impl->entries, cmr_aligned_drop);
    impl->entries = NULL;
  }
  return status;
}

/* Entries left at destroy are allocations never freed: the upstream keeps
 * them, as it would without the adaptor; only the records go. */
void cmr_aligned_impl_fini(cmr_aligned_impl *impl) { cmr_sharded_map_destroy(impl->entries, cmr_aligned_drop); }

static void cmr_aligned_insert(cmr_aligned_impl *impl, cmr_aligned_entry *entry) {
  cmr_map_shard *shard = cmr_sharded_map_lock(impl->entries, entry->key.address);
  cmr_address_map_insert(&shard->entries, &entry->key);
  cmr_lock_release(&shard->lock);
}

/* Takes out the entry of `aligned` if it was allocated as `bytes`; else
 * NULL, leaving the map as it was, and *allocated is the size of the entry
 * found (0 if none). */
static cmr_aligned_entry *cmr_aligned_remove(cmr_aligned_impl *impl, const void *aligned, size_t bytes,
                                             size_t *allocated) {
  cmr_map_shard *shard = cmr_sharded_map_lock(impl->entries, aligned);
  cmr_aligned_entry *entry = (cmr_aligned_entry *)cmr_map_shard_remove(shard, aligned, NULL);
  *allocated = entry == NULL ? 0 : entry->bytes;
  if (entry != NULL && entry->bytes != bytes) {
    cmr_address_map_insert(&shard->entries, &entry->key);
    entry = NULL;
  }
  cmr_lock_release(&shard->lock);
  return entry;
}

static cmr_status cmr_aligned_wrong_size(const void *ptr, size_t bytes, size_t allocated) {
  return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "aligned: %p was allocated with %zu bytes, not %zu: nothing was freed",
                   ptr, allocated, bytes);
}

/* A free passed through that the upstream did not know: when this adaptor
 * aligned `ptr` itself, the caller named another size than it allocated. */
static cmr_status cmr_aligned_passed_through(cmr_aligned_impl *impl, cmr_status status, const void *ptr, size_t bytes) {
  if (status != CMR_ERROR_UNKNOWN_POINTER) return status;
  size_t allocated;
  cmr_aligned_remove(impl, ptr, 0, &allocated); /* no entry has 0 bytes: it stays */
  return allocated == 0 ? status : cmr_aligned_wrong_size(ptr, bytes, allocated);
}

/* ---- allocation ------------------------------------------------------------------ */

/* The alignment a request gets: what the caller asks, raised to the
 * adaptor's for requests of at least the threshold. */
static size_t cmr_aligned_effective(const cmr_aligned_impl *impl, size_t bytes, size_t alignment) {
  if (bytes >= impl->params.alignment_threshold && impl->params.allocation_alignment > alignment) {
    return impl->params.allocation_alignment;
  }
  return alignment;
}

cmr_status cmr_aligned_impl_allocate(cmr_aligned_impl *impl, size_t bytes, size_t alignment, cmr_stream stream,
                                     void **out) {
  alignment = cmr_aligned_effective(impl, bytes, alignment);
  if (alignment == CMR_DEFAULT_ALIGNMENT) {
    return cmr_allocate_aligned(impl->params.upstream, bytes, alignment, stream, out);
  }
  size_t extra = alignment - CMR_DEFAULT_ALIGNMENT;
  if (bytes > SIZE_MAX - extra) {
    return cmr_error(CMR_ERROR_SIZE_OVERFLOW, "aligned: %zu bytes overflow once %zu are added to align them to %zu",
                     bytes, extra, alignment);
  }
  cmr_aligned_entry *entry = malloc(sizeof *entry);
  if (entry == NULL) return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "aligned: no host memory to record an allocation");
  entry->bytes = bytes;
  entry->upstream_bytes = bytes + extra;
  cmr_status status = cmr_allocate_aligned(impl->params.upstream, entry->upstream_bytes, CMR_DEFAULT_ALIGNMENT, stream,
                                           &entry->upstream_ptr);
  if (status != CMR_SUCCESS) {
    free(entry);
    return status;
  }
  /* The upstream's pointer is 256-aligned, so rounding up moves it by at
   * most `extra` and `bytes` still fit after it. */
  uintptr_t address = (uintptr_t)entry->upstream_ptr;
  *out = (void *)((address + alignment - 1) & ~(uintptr_t)(alignment - 1));
  entry->key = (cmr_address_entry){.address = *out};
  cmr_aligned_insert(impl, entry); /* from here another thread may free it */
  return CMR_SUCCESS;
}

cmr_status cmr_aligned_impl_deallocate(cmr_aligned_impl *impl, void *ptr, size_t bytes, size_t alignment,
                                       cmr_stream stream) {
  alignment = cmr_aligned_effective(impl, bytes, alignment);
  if (alignment == CMR_DEFAULT_ALIGNMENT) {
    cmr_status status = cmr_deallocate_aligned(impl->params.upstream, ptr, bytes, alignment, stream);
    return status == CMR_SUCCESS ? status : cmr_aligned_passed_through(impl, status, ptr, bytes);
  }
  size_t allocated;
  cmr_aligned_entry *entry = cmr_aligned_remove(impl, ptr, bytes, &allocated);
  if (entry == NULL && allocated != 0) return cmr_aligned_wrong_size(ptr, bytes, allocated);
  if (entry == NULL) {
    return cmr_error(CMR_ERROR_UNKNOWN_POINTER,
                     "aligned: %p (%zu bytes at alignment %zu) is not a pointer this adaptor aligned", ptr, bytes,
                     alignment);
  }
  cmr_status status = cmr_deallocate_aligned(impl->params.upstream, entry->upstream_ptr, entry->upstream_bytes,
                                             CMR_DEFAULT_ALIGNMENT, stream);
  if (status != CMR_SUCCESS) {
    cmr_aligned_insert(impl, entry); /* the upstream kept it: it can still be freed */
    return status;
  }
  free(entry);
  return CMR_SUCCESS;
}
