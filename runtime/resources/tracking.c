/* SPDX-License-Identifier: Apache-2.0 */
/* tracking: a record per outstanding allocation in a chained hash table
 * under one lock, and the outstanding-allocations report built from it. */
#include <execinfo.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "address_map.h"
#include "impl.h"
#include "lock.h"

enum { cmr_tracking_frames = 32 };

typedef struct cmr_tracking_record {
  cmr_address_entry key; /* first: its address is the allocation */
  size_t bytes;
  size_t alignment;
  int frame_count; /* 0 unless stacks are captured */
  void *frames[];
} cmr_tracking_record;

struct cmr_tracking_impl {
  cmr_tracking_params params; /* first: what it was created with (impl.h) */
  pthread_mutex_t lock;       /* guards the map and the bytes */
  cmr_address_map records;
  size_t bytes;
  char *report; /* the last report handed out, freed by the next one */
};
CMR_IMPL_LAYOUT(tracking);

static void cmr_tracking_drop(cmr_address_entry *entry) { free(entry); }

cmr_status cmr_tracking_impl_init(cmr_tracking_impl *impl) {
  cmr_status status = cmr_address_map_init(&impl->records, "tracking");
  if (status != CMR_SUCCESS) return status;
  status = cmr_mutex_init(&impl->lock, "tracking");
  if (status != CMR_SUCCESS) cmr_address_map_clear(&impl->records, cmr_tracking_drop);
  return status;
}

/* Records left behind are the caller's leaks: their memory stays the
 * upstream's, only the records go. */
void cmr_tracking_impl_fini(cmr_tracking_impl *impl) {
  cmr_address_map_clear(&impl->records, cmr_tracking_drop);
  free(impl->report);
  pthread_mutex_destroy(&impl->lock);
}

static void cmr_tracking_insert(cmr_tracking_impl *impl, cmr_tracking_record *record) {
  cmr_mutex_lock(&impl->lock);
  cmr_address_map_insert(&impl->records, &record->key);
  impl->bytes += record->bytes;
  cmr_mutex_unlock(&impl->lock);
}

/* Takes the record of `ptr` out of the table, or returns NULL. */
static cmr_tracking_record *cmr_tracking_remove(cmr_tracking_impl *impl, const void *ptr) {
  cmr_mutex_lock(&impl->lock);
  cmr_tracking_record *record = (cmr_tracking_record *)cmr_address_map_remove(&impl->records, ptr, NULL);
  if (record != NULL) impl->bytes -= record->bytes;
  cmr_mutex_unlock(&impl->lock);
  return record;
}

/* A record of an allocation about to be made, with the caller's backtrace
 * when stacks are captured (taken here, before the upstream is asked, so
 * that a failure to record costs no upstream call). */
static cmr_status cmr_tracking_record_new(const cmr_tracking_impl *impl, size_t bytes, size_t alignment,
                                          cmr_tracking_record **out) {
  int frames = impl->params.capture_stacks ? cmr_tracking_frames : 0;
  cmr_tracking_record *record = malloc(sizeof *record + (size_t)frames * sizeof record->frames[0]);
  if (record == NULL) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "tracking: no host memory to record an allocation of %zu bytes", bytes);
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
  if (status == CMR_SUCCESS) status = cmr_allocate_aligned(impl->params.upstream, bytes, alignment, stream, out);
  if (status != CMR_SUCCESS) {
    free(record);
    return status;
  }
  record->key = (cmr_address_entry){.address = *out};
  cmr_tracking_insert(impl, record);
  return CMR_SUCCESS;
}

/* A free must name the size and alignment the allocation was made with;
 * any other is refused and the allocation stays tracked. */
static cmr_status cmr_tracking_mismatch(const void *ptr, size_t bytes, size_t alignment, size_t recorded_bytes,
                                        size_t recorded_alignment) {
  return cmr_error(CMR_ERROR_INVALID_ARGUMENT,
                   "tracking: %p was freed as %zu bytes at alignment %zu but allocated as %zu bytes at alignment "
                   "%zu: nothing was freed",
                   ptr, bytes, alignment, recorded_bytes, recorded_alignment);
}

cmr_status cmr_tracking_impl_deallocate(cmr_tracking_impl *impl, void *ptr, size_t bytes, size_t alignment,
                                        cmr_stream stream) {
  cmr_tracking_record *record = cmr_tracking_remove(impl, ptr);
  if (record == NULL) {
    return cmr_error(CMR_ERROR_UNKNOWN_POINTER, "tracking: %p (%zu bytes) was not allocated here or is already freed",
                     ptr, bytes);
  }
  cmr_status status = CMR_SUCCESS;
  if (bytes != record->bytes || alignment != record->alignment) {
    status = cmr_tracking_mismatch(ptr, bytes, alignment, record->bytes, record->alignment);
  } else {
    status = cmr_deallocate_aligned(impl->params.upstream, ptr, bytes, alignment, stream);
    if (status != CMR_SUCCESS) status = cmr_error_context(status, "tracking: freeing %p", ptr);
  }
  if (status != CMR_SUCCESS) {
    cmr_tracking_insert(impl, record); /* still allocated: keep it tracked */
    return status;
  }
  free(record);
  return CMR_SUCCESS;
}

cmr_status cmr_tracking_impl_allocated_bytes(cmr_tracking_impl *impl, size_t *out) {
  cmr_mutex_lock(&impl->lock);
  *out = impl->bytes;
  cmr_mutex_unlock(&impl->lock);
  return CMR_SUCCESS;
}

cmr_status cmr_tracking_impl_outstanding_count(cmr_tracking_impl *impl, size_t *out) {
  cmr_mutex_lock(&impl->lock);
  *out = impl->records.count;
  cmr_mutex_unlock(&impl->lock);
  return CMR_SUCCESS;
}

/* ---- the report ---------------------------------------------------------------- */

static int cmr_tracking_by_address(const void *a, const void *b) {
  uintptr_t x = (uintptr_t)(*(cmr_tracking_record *const *)a)->key.address;
  uintptr_t y = (uintptr_t)(*(cmr_tracking_record *const *)b)->key.address;
  return (x > y) - (x < y);
}

/* One allocation: "<ptr>: <bytes> bytes, alignment <a>", then one line per
 * frame, "  #<i> <symbol>" (the symbol as backtrace_symbols gives it, or the
 * bare address when it cannot). */
static void cmr_tracking_write_record(FILE *text, const cmr_tracking_record *record) {
  fprintf(text, "%p: %zu bytes, alignment %zu\n", record->key.address, record->bytes, record->alignment);
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

typedef struct cmr_tracking_sorting {
  cmr_tracking_record **records;
  size_t count;
} cmr_tracking_sorting;

static void cmr_tracking_collect(cmr_address_entry *entry, void *arg) {
  cmr_tracking_sorting *sorting = arg;
  sorting->records[sorting->count++] = (cmr_tracking_record *)entry;
}

/* The report of every record, by address. Called locked. */
static cmr_status cmr_tracking_write_report(cmr_tracking_impl *impl, FILE *text) {
  size_t count = impl->records.count;
  cmr_tracking_sorting sorting = {malloc((count > 0 ? count : 1) * sizeof *sorting.records), 0};
  if (sorting.records == NULL) return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "tracking: no host memory for the report");
  cmr_address_map_each(&impl->records, cmr_tracking_collect, &sorting);
  qsort(sorting.records, sorting.count, sizeof *sorting.records, cmr_tracking_by_address);
  fprintf(text, "tracking: %zu outstanding allocations, %zu bytes\n", count, impl->bytes);
  for (size_t i = 0; i < sorting.count; ++i) cmr_tracking_write_record(text, sorting.records[i]);
  free(sorting.records);
  return CMR_SUCCESS;
}

cmr_status cmr_tracking_impl_outstanding_report(cmr_tracking_impl *impl, const char **out) {
  char *report = NULL;
  size_t length = 0;
  FILE *text = open_memstream(&report, &length);
  if (text == NULL) return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "tracking: no host memory for the report");
  cmr_mutex_lock(&impl->lock);
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
  cmr_mutex_unlock(&impl->lock);
  return status;
}
