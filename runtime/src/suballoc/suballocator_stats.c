/* SPDX-License-Identifier: Apache-2.0 */
/* What every suballocator on the kit knows of its memory (suballocator.h):
 * its chunks and its free lists, read for cmr_ref_stats and for the
 * out-of-memory report. */
#include "stream_list.h"
#include "suballocator.h"

_Static_assert(CMR_STREAM_KEY_SHARED == CMR_SHARED_KEY, "usage.h names the shared list's key as the lists do");

void cmr_stream_lists_stats(cmr_stream_lists *lists, cmr_stats *out, cmr_free_by_stream *spread) {
  size_t bytes = 0, blocks = 0, largest = 0;
  cmr_registry_lock(lists);
  size_t count = atomic_load(&lists->count);
  for (size_t i = 0; i < count; ++i) {
    cmr_stream_list *list = lists->lists[i];
    cmr_list_lock(list);
    cmr_stream_list_flush_recent(list); /* the recent blocks merge into the index, as a search would */
    cmr_stream_free own = {list->key, list->blocks.bytes, list->blocks.count, cmr_free_blocks_largest(&list->blocks)};
    cmr_list_unlock(list);
    bytes += own.bytes;
    blocks += own.blocks;
    if (own.largest > largest) largest = own.largest;
    if (spread != NULL) cmr_free_by_stream_add(spread, &own);
  }
  cmr_registry_unlock(lists);
  out->bytes_free = bytes;
  out->free_blocks = blocks;
  out->largest_free_block = largest;
  out->stream_lists = count;
  out->supported |=
      CMR_STATS_BYTES_FREE | CMR_STATS_FREE_BLOCKS | CMR_STATS_LARGEST_FREE_BLOCK | CMR_STATS_STREAM_LISTS;
}

void cmr_suballocator_stats(cmr_stream_lists *lists, cmr_chunks *chunks, cmr_stats *out, cmr_free_by_stream *spread) {
  cmr_chunks_stats(chunks, out);
  cmr_stream_lists_stats(lists, out, spread);
}
