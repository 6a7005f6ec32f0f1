/* SPDX-License-Identifier: Apache-2.0 */
/* Pre-touched host mappings (host_pages.h). */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_HUGETLB, MADV_HUGEPAGE */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "host_pages.h"
#include "lock.h"

/* Touched with one thread below this (starting threads costs more). */
/* MAP_HUGE_2MB (the page size's log2 above MAP_HUGE_SHIFT, 26): the
 * kernel's default huge page may be another size. */
enum { cmr_map_huge_2mb = 21 << 26 };
enum {
  cmr_host_pages_parallel_from = 64u << 20,
  cmr_host_pages_default_threads = 16,
  cmr_host_pages_max_threads = 256
};

static size_t cmr_base_page(void) {
  long page = sysconf(_SC_PAGESIZE);
  return page > 0 ? (size_t)page : 4096;
}

static size_t cmr_round_up(size_t bytes, size_t to) {
  return bytes > SIZE_MAX - (to - 1) ? 0 : (bytes + to - 1) / to * to;
}

size_t cmr_host_pages_span(size_t bytes, cmr_host_pages_huge huge) {
  return cmr_round_up(bytes, huge == CMR_HOST_PAGES_BASE ? cmr_base_page() : CMR_HOST_PAGES_HUGE_BYTES);
}

int cmr_host_pages_threads(size_t span, int threads) {
  if (span < cmr_host_pages_parallel_from) return 1;
  if (threads > 0) return threads < cmr_host_pages_max_threads ? threads : cmr_host_pages_max_threads;
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (online < 1) return 1;
  return online < cmr_host_pages_default_threads ? (int)online : cmr_host_pages_default_threads;
}

/* One thread's share of a mapping: every base page of [first, end). */
typedef struct cmr_touch_range {
  volatile unsigned char *first;
  volatile unsigned char *end;
  size_t page;
} cmr_touch_range;

static void *cmr_touch(void *arg) {
  const cmr_touch_range *range = arg;
  for (volatile unsigned char *p = range->first; p < range->end; p += range->page) *p = 0;
  return NULL;
}

/* Touches every base page of `bytes` at `base` with `threads` threads, the
 * calling thread taking the last share and any share whose thread did not
 * start. */
static void cmr_touch_all(unsigned char *base, size_t bytes, int threads) {
  enum { most = cmr_host_pages_max_threads };
  pthread_t ids[most];
  bool started[most];
  cmr_touch_range ranges[most];
  const size_t page = cmr_base_page();
  const size_t pages = bytes / page;
  for (int i = 0; i < threads; i++) {
    size_t from = pages * (size_t)i / (size_t)threads, to = pages * (size_t)(i + 1) / (size_t)threads;
    ranges[i] = (cmr_touch_range){base + from * page, base + to * page, page};
    started[i] = i + 1 < threads && pthread_create(&ids[i], NULL, cmr_touch, &ranges[i]) == 0;
  }
  for (int i = 0; i < threads; i++) {
    if (!started[i]) cmr_touch(&ranges[i]);
  }
  for (int i = 0; i < threads; i++) {
    if (started[i]) pthread_join(ids[i], NULL);
  }
}

static cmr_status cmr_mapping_failed(const char *owner, size_t span, int error) {
  /* The mapping's other arguments are always valid, so EINVAL is a length
   * the system will not map (valgrind's answer where the kernel's is ENOMEM). */
  if (error == ENOMEM || error == EINVAL) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%s: mmap(%zu bytes): out of memory or address space (errno %d)", owner,
                     span, error);
  }
  return cmr_error(CMR_ERROR_INTERNAL, "%s: mmap(%zu bytes) failed with errno %d", owner, span, error);
}

/* An anonymous mapping of `span` bytes (a multiple of the huge page size)
 * starting on a huge page boundary: one huge page more is mapped, and the
 * ends around the aligned span are unmapped. */
static void *cmr_map_huge_aligned(size_t span) {
  const size_t huge = CMR_HOST_PAGES_HUGE_BYTES;
  if (span > SIZE_MAX - huge) {
    errno = ENOMEM;
    return MAP_FAILED;
  }
  unsigned char *mapped = mmap(NULL, span + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) return MAP_FAILED;
  unsigned char *aligned = (unsigned char *)cmr_round_up((size_t)(uintptr_t)mapped, huge);
  size_t before = (size_t)(aligned - mapped), after = huge - before;
  if (before > 0) munmap(mapped, before);
  if (after > 0) munmap(aligned + span, after);
  return aligned;
}

cmr_status cmr_host_pages_map(const char *owner, size_t bytes, cmr_host_pages_huge huge, int threads, void **out,
                              cmr_host_pages_made *made) {
  *made = (cmr_host_pages_made){false, false};
  const size_t span = cmr_host_pages_span(bytes, huge);
  if (span == 0) {
    return cmr_error(CMR_ERROR_SIZE_OVERFLOW, "%s: %zu bytes overflow once rounded up to whole pages", owner, bytes);
  }
  void *mapped = MAP_FAILED;
  if (huge == CMR_HOST_PAGES_RESERVED) {
    mapped =
        mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | cmr_map_huge_2mb, -1, 0);
    made->reserved = mapped != MAP_FAILED;
  }
  if (mapped == MAP_FAILED) {
    mapped = huge == CMR_HOST_PAGES_BASE ? mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                                         : cmr_map_huge_aligned(span);
    if (mapped == MAP_FAILED) return cmr_mapping_failed(owner, span, errno);
    /* Advice only: a kernel without transparent huge pages still maps base pages. */
    made->advised = huge != CMR_HOST_PAGES_BASE && madvise(mapped, span, MADV_HUGEPAGE) == 0;
  }
  cmr_before_blocking();
  cmr_touch_all(mapped, span, cmr_host_pages_threads(span, threads));
  *out = mapped;
  return CMR_SUCCESS;
}

void cmr_host_pages_unmap(void *ptr, size_t bytes, cmr_host_pages_huge huge) {
  munmap(ptr, cmr_host_pages_span(bytes, huge));
}
