/* SPDX-License-Identifier: Apache-2.0 */
/* cmr_host_range_mapped: mincore(2) over the range's pages, which fails
 * with ENOMEM where one of them is not mapped. One call for up to
 * `pages_per_call` pages, whose residency (what mincore reports) is not
 * looked at. */
#define _DEFAULT_SOURCE /* mincore */
#include "host_range.h"

#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

enum { pages_per_call = 4096 };

bool cmr_host_range_mapped(const void *ptr, size_t bytes) {
  size_t page_size = (size_t)sysconf(_SC_PAGESIZE); /* glibc's kept value: no system call */
  uintptr_t start = (uintptr_t)ptr;
  if (bytes == 0 || start > UINTPTR_MAX - (bytes - 1)) return false; /* past the end of the address space */
  uintptr_t first = start & ~(uintptr_t)(page_size - 1);
  uintptr_t last = (start + (bytes - 1)) & ~(uintptr_t)(page_size - 1);
  unsigned char residency[pages_per_call];
  for (uintptr_t page = first;;) {
    uintptr_t pages = (last - page) / page_size + 1;
    if (pages > pages_per_call) pages = pages_per_call;
    if (mincore((void *)page, pages * page_size, residency) != 0) {
      if (errno == EAGAIN) continue; /* the kernel was short of memory for the answer: ask again */
      return errno != ENOMEM;        /* ENOMEM: a page is not mapped; any other error tells nothing */
    }
    if (last - page < pages * page_size) return true;
    page += pages * page_size;
  }
}
