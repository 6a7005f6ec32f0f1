/* tracking: a record per outstanding allocation in a chained hash table
 * under one lock, and the outstanding-allocations report built from it. */
#include <execinfo.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "impl.h"

enum { cmr_tracking_frames = 32, cmr_tracking_initial_buckets = 64 };

typedef struct cmr_tracking_record {
  struct cmr_tracking_record *next;
  void *ptr;
  size_t bytes;
  size_t alignment;
  int frame_count; /* 0 unless stacks are captured */
  void *frames[];
} cmr_tracking_record;

struct cmr_tracking_impl {
  cmr_resource_ref upstream;
  bool capture_stacks;
  pthread_mutex_t lock;
  cmr_tracking_record **buckets;
  size_t bucket_count; /* a power of two */
  size_t count;
  size_t bytes;
  char *report; /* the last report handed out, freed by the next one */
};

/* Allocations are at least 256-aligned: the low bits carry nothing. */
static size_t cmr_tracking_bucket(const cmr_tracking_impl *impl, const void *ptr) {
  return (size_t)((((uint64_t)(uintptr_t)ptr >> 8) * UINT64_C(0x9E3779B97F4A7C15)) >> 32) &
         (impl->bucket_count - 1);
}

cmr_status cmr_tracking_impl_create(cmr_resource_ref upstream, bool capture_stacks, cmr_tracking_impl **out) {
  cmr_tracking_impl *impl = calloc(1, sizeof *impl);
  cmr_tracking_record **buckets = calloc(cmr_tracking_initial_buckets, sizeof *buckets);
  if (impl == NULL || buckets == NULL) {
    free(impl);
    free(buckets);
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "tracking: no host memory for the resource");
  }
  impl->upstream = upstream;
  impl->capture_stacks = capture_stacks;
  impl->buckets = buckets;
  impl->bucket_count = cmr_tracking_initial_buckets;
  pthread_mutex_init(&impl->lock, NULL);
  *out = impl;
  return CMR_SUCCESS;
}

/* Records left behind are the caller's leaks: their memory stays the
 * upstream's, only the records go. */
void cmr_tracking_impl_destroy(cmr_tracking_impl *impl) {
  for (size_t b = 0; b < impl->bucket_count; ++b) {
    for (cmr_tracking_record *record = impl->buckets[b], *next; record != NULL; record = next) {
      next = record->next;
      free(record);
    }
  }
  free(impl->buckets);
  free(impl->report);
  pthread_mutex_destroy(&impl->lock);
  free(impl);
}

/* Doubles the table when chains average more than one record; without host
 * memory for a bigger one the chains just get longer. Called locked. */
static void cmr_tracking_grow(cmr_tracking_impl *impl) {
  size_t old_count = impl->bucket_count;
  cmr_tracking_record **old = impl->buckets;
  cmr_tracking_record **buckets = calloc(old_count * 2, sizeof *buckets);
  if (buckets == NULL) return;
  impl->buckets = buckets;
  impl->bucket_count = old_count * 2;
  for (size_t b = 0; b < old_count; ++b) {
    for (cmr_tracking_record *record = old[b], *next; record != NULL; record = next) {
      next = record->next;
      cmr_tracking_record **head = &buckets[cmr_tracking_bucket(impl, record->ptr)];
      record->next = *head;
      *head = record;
    }
  }
  free(old);
}

static void cmr_tracking_insert(cmr_tracking_impl *impl, cmr_tracking_record *record) {
  pthread_mutex_lock(&impl->lock);
  if (impl->count >= impl->bucket_count) cmr_tracking_grow(impl);
  cmr_tracking_record **head = &impl->buckets[cmr_tracking_bucket(impl, record->ptr)];
  record->next = *head;
  *head = record;
  impl->count++;
  impl->bytes += record->bytes;
  pthread_mutex_unlock(&impl->lock);
}

/* Takes the record of `ptr` out of the table, or returns NULL. */
static cmr_tracking_record *cmr_tracking_remove(cmr_tracking_impl *impl, const void *ptr) {
  pthread_mutex_lock(&impl->lock);
  cmr_tracking_record **link = &impl->buckets[cmr_tracking_bucket(impl, ptr)];
  while (*link != NULL && (*link)->ptr != ptr) link = &(*link)->next;
  cmr_tracking_record *record = *link;
  if (record != NULL) {
    *link = record->next;
    impl->count--;
    impl->bytes -= record->bytes;
  }
  pthread_mutex_unlock(&impl->lock);
  return record;
}

/* A record of an allocation about to be made, with the caller's backtrace
 * when stacks are captured (taken here, before the upstream is asked, so
 * that a failure to record costs no upstream call). */
static cmr_status cmr_tracking_record_new(const cmr_tracking_impl *impl, size_t bytes, size_t alignment,
                                          cmr_tracking_record **out) {
  int frames = impl->capture_stacks ? cmr_tracking_frames : 0;
  cmr_tracking_record *record = malloc(sizeof *record + (size_t)frames * sizeof record->frames[0]);
  if (record == NULL) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "tracking: no host memory to record an allocation of %zu bytes",
                     bytes);
  }
  *record = (cmr_tracking_record){.bytes = bytes, .alignment = alignment};
  if (frames > 0) record->frame_count = backtrace(record->frames, frames);
  *out = record;
  return CMR_SUCCESS;
}

cmr_status cmr_tracking_impl_allocate(cmr_tracking_impl *impl, size_t bytes, size_t alignment, cmr_stream stream,
                                      void **out) {
  cmr_tracking_record *record = NULL;
  cmr_status status = cmr_tracking_record_new(impl, bytes, alignment, &record);
  if (status == CMR_SUCCESS) status = cmr_allocate_aligned(impl->upstream, bytes, alignment, stream, out);
  if (status != CMR_SUCCESS) {
    free(record);
    return status;
  }
  record->ptr = *out;
  cmr_tracking_insert(impl, record);
  return CMR_SUCCESS;
}

/* The memory is freed as recorded; the caller's other size or alignment is
 * reported after the fact. */
static cmr_status cmr_tracking_mismatch(const void *ptr, size_t bytes, size_t alignment, size_t recorded_bytes,
                                        size_t recorded_alignment) {
  return cmr_error(CMR_ERROR_INVALID_ARGUMENT,
                   "tracking: %p was freed as %zu bytes at alignment %zu but allocated as %zu bytes at alignment "
                   "%zu; it was freed as allocated",
                   ptr, bytes, alignment, recorded_bytes, recorded_alignment);
}

cmr_status cmr_tracking_impl_deallocate(cmr_tracking_impl *impl, void *ptr, size_t bytes, size_t alignment,
                                        cmr_stream stream) {
  cmr_tracking_record *record = cmr_tracking_remove(impl, ptr);
  if (record == NULL) {
    return cmr_error(CMR_ERROR_UNKNOWN_POINTER, "tracking: %p (%zu bytes) was not allocated here or is already freed",
                     ptr, bytes);
  }
  cmr_status status =
      cmr_deallocate_aligned(impl->upstream, ptr, record->bytes, record->alignment, stream);
  if (status != CMR_SUCCESS) {
    /* Still allocated: keep it tracked. */
    cmr_tracking_insert(impl, record);
    return cmr_error_context(status, "tracking: freeing %p", ptr);
  }
  if (bytes != record->bytes || alignment != record->alignment) {
    status = cmr_tracking_mismatch(ptr, bytes, alignment, record->bytes, record->alignment);
  }
  free(record);
  return status;
}

cmr_status cmr_tracking_impl_allocated_bytes(cmr_tracking_impl *impl, size_t *out) {
  pthread_mutex_lock(&impl->lock);
  *out = impl->bytes;
  pthread_mutex_unlock(&impl->lock);
  return CMR_SUCCESS;
}

cmr_status cmr_tracking_impl_outstanding_count(cmr_tracking_impl *impl, size_t *out) {
  pthread_mutex_lock(&impl->lock);
  *out = impl->count;
  pthread_mutex_unlock(&impl->lock);
  return CMR_SUCCESS;
}

/* ---- the report ---------------------------------------------------------------- */

static int cmr_tracking_by_address(const void *a, const void *b) {
  uintptr_t x = (uintptr_t)(*(cmr_tracking_record *const *)a)->ptr;
  uintptr_t y = (uintptr_t)(*(cmr_tracking_record *const *)b)->ptr;
  return (x > y) - (x < y);
}

/* One allocation: "<ptr>: <bytes> bytes, alignment <a>", then one line per
 * frame, "  #<i> <symbol>" (the symbol as backtrace_symbols gives it, or the
 * bare address when it cannot). */
static void cmr_tracking_write_record(FILE *text, const cmr_tracking_record *record) {
  fprintf(text, "%p: %zu bytes, alignment %zu\n", record->ptr, record->bytes, record->alignment);
  if (record->frame_count == 0) return;
  char **symbols = backtrace_symbols(record->frames, record->frame_count);
  for (int i = 0; i < record->frame_count; ++i) {
    if (symbols != NULL) {
      fprintf(text, "  #%d %s\n", i, symbols[i]);
    } else {
      fprintf(text, "  #%d %p\n", i, record->frames[i]);
    }
  }
  free(symbols);
}

/* The report of every record, by address. Called locked. */
static cmr_status cmr_tracking_write_report(cmr_tracking_impl *impl, FILE *text) {
  cmr_tracking_record **sorted = malloc((impl->count > 0 ? impl->count : 1) * sizeof *sorted);
  if (sorted == NULL) return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "tracking: no host memory for the report");
  size_t n = 0;
  for (size_t b = 0; b < impl->bucket_count; ++b) {
    for (cmr_tracking_record *record = impl->buckets[b]; record != NULL; record = record->next) sorted[n++] = record;
  }
  qsort(sorted, n, sizeof *sorted, cmr_tracking_by_address);
  fprintf(text, "tracking: %zu outstanding allocations, %zu bytes\n", impl->count, impl->bytes);
  for (size_t i = 0; i < n; ++i) cmr_tracking_write_record(text, sorted[i]);
  free(sorted);
  return CMR_SUCCESS;
}

cmr_status cmr_tracking_impl_outstanding_report(cmr_tracking_impl *impl, const char **out) {
  char *report = NULL;
  size_t length = 0;
  FILE *text = open_memstream(&report, &length);
  if (text == NULL) return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "tracking: no host memory for the report");
  pthread_mutex_lock(&impl->lock);
  cmr_status status = cmr_tracking_write_report(impl, text);
  /* The text is complete once the stream is closed; a write or the close
   * fails only for want of memory. */
  bool failed = ferror(text) != 0;
  failed = fclose(text) != 0 || failed;
  if (failed && status == CMR_SUCCESS) {
    status = cmr_error(CMR_ERROR_OUT_OF_MEMORY, "tracking: no host memory for the report");
  }
  if (status == CMR_SUCCESS) {
    free(impl->report);
    impl->report = report;
    *out = report;
  } else {
    free(report);
  }
  pthread_mutex_unlock(&impl->lock);
  return status;
}
