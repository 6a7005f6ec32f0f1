/* SPDX-License-Identifier: Apache-2.0 */
/* cmr-bench-pinned-startup: how long a large pinned host pool takes to
 * start, against plain cudaMallocHost, in one process.
 *
 * For each size (GiB, default 1 4 16), one row per way of getting that much
 * pinned host memory ready to use, the time from the call to memory every
 * page of which is present and pinned:
 *
 *   cudaMallocHost            pinned_host: the driver pins page by page, one thread
 *   registered, huge pages    registered_host: an anonymous mapping advised to
 *                             transparent huge pages, touched by one thread per CPU
 *                             (at most 16), then one cudaHostRegister
 *   registered, base pages    the same without huge pages
 *   registered, 1 thread      huge pages, touched by the calling thread alone
 *   pool(registered)          pool(registered_host, initial_pool_size=size): the
 *                             suballocator a program would use, made
 *   pinned_host_pool          the driver's pool on the host, initial_pool_size=size
 *
 * and the time to give it back. The host build has no pinning: there the
 * registered rows are the mapping and the parallel first touch alone, and
 * the CUDA rows say "unsupported". Each figure is one run (the memory is
 * freed before the next); ratios are cudaMallocHost's time over the row's.
 *
 *   cmr-bench-pinned-startup [GiB ...] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cmr/cmr.h>

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One way of getting `bytes` ready: made (the resource, and the memory
 * taken from it), then freed. */
typedef struct way {
  const char *name;
  cmr_status (*make)(size_t bytes, void **state, cmr_resource_ref *ref, void **ptr);
  void (*unmake)(void *state, cmr_resource_ref ref, void *ptr, size_t bytes);
} way;

static void report(cmr_status status, const char *what) {
  if (status != CMR_SUCCESS) fprintf(stderr, "%s: %s\n", what, cmr_last_error_message());
}

/* `bytes` from a leaf, synchronized: ready when it returns. */
static cmr_status leaf_allocate(cmr_resource_ref ref, size_t bytes, void **ptr) {
  cmr_status status = cmr_allocate_sync(ref, bytes, CMR_DEFAULT_ALIGNMENT, ptr);
  report(status, "allocate");
  return status;
}

static cmr_status make_malloc_host(size_t bytes, void **state, cmr_resource_ref *ref, void **ptr) {
  cmr_pinned_host_resource *leaf = NULL;
  cmr_status status = cmr_pinned_host_resource_create(&leaf);
  if (status != CMR_SUCCESS) return status;
  *state = leaf;
  *ref = cmr_pinned_host_resource_ref(leaf);
  return leaf_allocate(*ref, bytes, ptr);
}

static void unmake_malloc_host(void *state, cmr_resource_ref ref, void *ptr, size_t bytes) {
  report(cmr_deallocate_sync(ref, ptr, bytes, CMR_DEFAULT_ALIGNMENT), "free");
  cmr_pinned_host_resource_destroy(state);
}

static cmr_status make_registered(size_t bytes, cmr_optional_int threads, cmr_registered_host_huge_pages huge,
                                  void **state, cmr_resource_ref *ref, void **ptr) {
  cmr_registered_host_resource *leaf = NULL;
  cmr_status status = cmr_registered_host_resource_create(threads, huge, &leaf);
  if (status != CMR_SUCCESS) return status;
  *state = leaf;
  *ref = cmr_registered_host_resource_ref(leaf);
  return leaf_allocate(*ref, bytes, ptr);
}

static cmr_status make_registered_huge(size_t bytes, void **state, cmr_resource_ref *ref, void **ptr) {
  return make_registered(bytes, CMR_INT_DEFAULT, CMR_REGISTERED_HOST_HUGE_PAGES_TRANSPARENT, state, ref, ptr);
}

static cmr_status make_registered_base(size_t bytes, void **state, cmr_resource_ref *ref, void **ptr) {
  return make_registered(bytes, CMR_INT_DEFAULT, CMR_REGISTERED_HOST_HUGE_PAGES_NONE, state, ref, ptr);
}

static cmr_status make_registered_one_thread(size_t bytes, void **state, cmr_resource_ref *ref, void **ptr) {
  return make_registered(bytes, CMR_INT(1), CMR_REGISTERED_HOST_HUGE_PAGES_TRANSPARENT, state, ref, ptr);
}

static void unmake_registered(void *state, cmr_resource_ref ref, void *ptr, size_t bytes) {
  report(cmr_deallocate_sync(ref, ptr, bytes, CMR_DEFAULT_ALIGNMENT), "free");
  cmr_registered_host_resource_destroy(state);
}

/* A pool over registered_host, its initial size the whole `bytes`. */
typedef struct pool_state {
  cmr_registered_host_resource *leaf;
  cmr_pool_resource *pool;
} pool_state;

static cmr_status make_pool(size_t bytes, void **state, cmr_resource_ref *ref, void **ptr) {
  pool_state *made = calloc(1, sizeof *made);
  if (made == NULL) return CMR_ERROR_OUT_OF_MEMORY;
  *state = made;
  cmr_status status =
      cmr_registered_host_resource_create(CMR_INT_DEFAULT, CMR_REGISTERED_HOST_HUGE_PAGES_TRANSPARENT, &made->leaf);
  if (status == CMR_SUCCESS) {
    status = cmr_pool_resource_create(cmr_registered_host_resource_ref(made->leaf), CMR_SIZE(bytes), CMR_SIZE(bytes),
                                      CMR_SIZE_DEFAULT, CMR_POOL_CAPTURE_SERVE, &made->pool);
  }
  report(status, "pool(registered_host)");
  *ref = cmr_pool_resource_ref(made->pool);
  *ptr = NULL;
  return status;
}

static void unmake_pool(void *state, cmr_resource_ref ref, void *ptr, size_t bytes) {
  (void)ref, (void)ptr, (void)bytes;
  pool_state *made = state;
  cmr_pool_resource_destroy(made->pool);
  cmr_registered_host_resource_destroy(made->leaf);
  free(made);
}

static cmr_status make_host_pool(size_t bytes, void **state, cmr_resource_ref *ref, void **ptr) {
  cmr_pinned_host_pool_resource *pool = NULL;
  cmr_status status = cmr_pinned_host_pool_resource_create(CMR_INT_DEFAULT, CMR_SIZE(bytes), CMR_SIZE_DEFAULT, &pool);
  if (status != CMR_SUCCESS) return status;
  *state = pool;
  *ref = cmr_pinned_host_pool_resource_ref(pool);
  *ptr = NULL;
  return CMR_SUCCESS;
}

static void unmake_host_pool(void *state, cmr_resource_ref ref, void *ptr, size_t bytes) {
  (void)ref, (void)ptr, (void)bytes;
  cmr_pinned_host_pool_resource_destroy(state);
}

static const way ways[] = {
    {"cudaMallocHost", make_malloc_host, unmake_malloc_host},
    {"registered, huge pages", make_registered_huge, unmake_registered},
    {"registered, base pages", make_registered_base, unmake_registered},
    {"registered, 1 thread", make_registered_one_thread, unmake_registered},
    {"pool(registered)", make_pool, unmake_pool},
    {"pinned_host_pool", make_host_pool, unmake_host_pool},
};

int main(int argc, char **argv) {
  static const unsigned default_sizes[] = {1, 4, 16};
  const int count = argc > 1 ? argc - 1 : 3;
  printf("%-8s %-24s %12s %12s %10s\n", "GiB", "way", "start s", "free s", "vs malloc");
  for (int s = 0; s < count; s++) {
    const unsigned gib = argc > 1 ? (unsigned)strtoul(argv[s + 1], NULL, 10) : default_sizes[s];
    if (gib == 0) {
      fprintf(stderr, "cmr-bench-pinned-startup: sizes are whole GiB, at least 1 (not \"%s\")\n", argv[s + 1]);
      return 2;
    }
    const size_t bytes = (size_t)gib << 30;
    double baseline = 0;
    for (size_t w = 0; w < sizeof ways / sizeof ways[0]; w++) {
      void *state = NULL, *ptr = NULL;
      cmr_resource_ref ref = {0};
      double start = now_seconds();
      cmr_status status = ways[w].make(bytes, &state, &ref, &ptr);
      double started = now_seconds() - start;
      if (status != CMR_SUCCESS) {
        printf("%-8u %-24s %12s %12s %10s\n", gib, ways[w].name,
               status == CMR_ERROR_UNSUPPORTED ? "unsupported" : "failed", "", "");
        if (state != NULL) ways[w].unmake(state, ref, NULL, 0);
        continue;
      }
      start = now_seconds();
      ways[w].unmake(state, ref, ptr, bytes);
      double freed = now_seconds() - start;
      if (w == 0) baseline = started;
      if (baseline > 0) {
        printf("%-8u %-24s %12.3f %12.3f %9.1fx\n", gib, ways[w].name, started, freed, baseline / started);
      } else {
        printf("%-8u %-24s %12.3f %12.3f %10s\n", gib, ways[w].name, started, freed, "");
      }
    }
  }
  return 0;
}
