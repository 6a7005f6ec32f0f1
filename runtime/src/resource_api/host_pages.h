/* SPDX-License-Identifier: Apache-2.0 */
/* Large host mappings whose pages are present before anyone uses them:
 * an anonymous mapping, backed by huge pages where asked and available,
 * touched by several threads at once (first touch is what makes a page
 * present, and pinning or first use of tens of GiB page by page is what
 * takes seconds). Both builds; the CUDA build's registered_host pins the
 * touched mapping with one cudaHostRegister. */
#ifndef CMR_HOST_PAGES_H
#define CMR_HOST_PAGES_H

#include "internal.h"

typedef enum cmr_host_pages_huge {
  CMR_HOST_PAGES_TRANSPARENT, /* madvise(MADV_HUGEPAGE) over a mapping aligned to the huge page size */
  CMR_HOST_PAGES_RESERVED,    /* MAP_HUGETLB, falling back to TRANSPARENT where the kernel has none free */
  CMR_HOST_PAGES_BASE         /* base pages only */
} cmr_host_pages_huge;

/* The size of a huge page these mappings use (2 MiB). */
enum { CMR_HOST_PAGES_HUGE_BYTES = 2u << 20 };

/* How a mapping came out: whether reserved huge pages back it, and
 * whether the kernel took the transparent huge page advice. */
typedef struct cmr_host_pages_made {
  bool reserved;
  bool advised;
} cmr_host_pages_made;

/* The bytes a mapping of `bytes` spans (rounded up to the huge page size
 * unless `huge` is BASE, else to the base page size): what
 * cmr_host_pages_unmap is given back. 0 where that overflows. */
size_t cmr_host_pages_span(size_t bytes, cmr_host_pages_huge huge);
/* Maps cmr_host_pages_span(bytes, huge) bytes, aligned to the huge page
 * size unless `huge` is BASE, and writes a zero into every base page with
 * `threads` threads (0: one per online CPU, at most 16; a mapping under
 * 64 MiB is touched by the calling thread alone; where a thread cannot be
 * started, the calling thread touches its part). Out of address space or
 * memory: CMR_ERROR_OUT_OF_MEMORY naming `owner`. */
cmr_status cmr_host_pages_map(const char *owner, size_t bytes, cmr_host_pages_huge huge, int threads, void **out,
                              cmr_host_pages_made *made);
/* Unmaps a mapping made above, `bytes` being what it was made with. */
void cmr_host_pages_unmap(void *ptr, size_t bytes, cmr_host_pages_huge huge);

/* The threads cmr_host_pages_map uses for a mapping of `span` bytes when
 * asked for `threads` (0: the default). */
int cmr_host_pages_threads(size_t span, int threads);

#endif /* CMR_HOST_PAGES_H */
