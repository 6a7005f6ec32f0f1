/* SPDX-License-Identifier: Apache-2.0 */
/* tracking: a record per outstanding allocation in a chained hash table
 * under one lock, and what is read from it: the outstanding-allocations
 * report, and a snapshot of the records that bindings read field by field. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "call_stack.h"
#include "address_map.h"
#include "impl.h"
#include "lock.h"

enum { cmr_tracking_frames = 32 };

typedef struct cmr_tracking_record {
  cmr_address_entry key; /* first: its address is the allocation */
  size_t bytes;
  size_t alignment;
  cmr_stream stream; /* what it was allocated on */
  int frame_count;   /* 0 unless stacks are captured */
  void *frames[];
} cmr_tracking_record;

/* One allocation of a snapshot, copied out of its record. */
typedef struct cmr_tracking_entry {
  void *pointer;
  size_t bytes;
  size_t alignment;
  cmr_stream stream;
  char *stack; /* "#<i> in <symbol>\n" per frame; "" without stacks */
} cmr_tracking_entry;

struct cmr_tracking_impl {
  cmr_tracking_params params; /* first: what it was created with (impl.h) */
  pthread_mutex_t lock;       /* guards the map, the bytes, the report and the snapshot */
  cmr_address_map records;
  size_t bytes;
  char *report;                 /* the last report handed out, freed by the next one */
  cmr_tracking_entry *snapshot; /* the last snapshot taken, freed by the next one */
  size_t snapshot_count;
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
static void cmr_tracking_free_snapshot(cmr_tracking_entry *entries, size_t count) {
  for (size_t i = 0; i < count; ++i) free(entries[i].stack);
  free(entries);
}

void cmr_tracking_impl_fini(cmr_tracking_impl *impl) {
  cmr_address_map_clear(&impl->records, cmr_tracking_drop);
  free(impl->report);
  cmr_tracking_free_snapshot(impl->snapshot, impl->snapshot_count);
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
                                          cmr_stream stream, cmr_tracking_record **out) {
  int frames = impl->params.capture_stacks ? cmr_tracking_frames : 0;
  cmr_tracking_record *record = malloc(sizeof *record + (size_t)frames * sizeof record->frames[0]);
  if (record == NULL) {
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "tracking: no host memory to record an allocation of %zu bytes", bytes);
  }
  *record = (cmr_tracking_record){.bytes = bytes, .alignment = alignment, .stream = stream};
  record->frame_count = cmr_call_stack_capture(record->frames, frames);
  *out = record;
  return CMR_SUCCESS;
}

cmr_status cmr_tracking_impl_allocate(cmr_tracking_impl *impl, size_t bytes, size_t alignment, cmr_stream stream,
                                      void **out) {
  cmr_tracking_record *record = NULL;
  cmr_status status = cmr_tracking_record_new(impl, bytes, alignment, stream, &record);
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
  cmr_call_stack_write(text, record->frames, record->frame_count, "  ", "");
}

typedef struct cmr_tracking_sorting {
  cmr_tracking_record **records;
  size_t count;
} cmr_tracking_sorting;

static void cmr_tracking_collect(cmr_address_entry *entry, void *arg) {
  cmr_tracking_sorting *sorting = arg;
  sorting->records[sorting->count++] = (cmr_tracking_record *)entry;
}

/* Every record, by address, in an array the caller frees. Called locked. */
static cmr_status cmr_tracking_sorted(cmr_tracking_impl *impl, cmr_tracking_sorting *out) {
  size_t count = impl->records.count;
  *out = (cmr_tracking_sorting){malloc((count > 0 ? count : 1) * sizeof *out->records), 0};
  if (out->records == NULL)
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "tracking: no host memory to list %zu records", count);
  cmr_address_map_each(&impl->records, cmr_tracking_collect, out);
  qsort(out->records, out->count, sizeof *out->records, cmr_tracking_by_address);
  return CMR_SUCCESS;
}

/* The report of every record, by address. Called locked. */
static cmr_status cmr_tracking_write_report(cmr_tracking_impl *impl, FILE *text) {
  cmr_tracking_sorting sorting;
  cmr_status status = cmr_tracking_sorted(impl, &sorting);
  if (status != CMR_SUCCESS) return status;
  fprintf(text, "tracking: %zu outstanding allocations, %zu bytes\n", sorting.count, impl->bytes);
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

/* ---- the snapshot ---------------------------------------------------------------- */

/* The frames of `record` as "#<i> in <symbol>\n" lines (RMM's stack form),
 * "" without frames, or NULL for want of memory. */
static char *cmr_tracking_stack_text(const cmr_tracking_record *record) {
  char *text = NULL;
  size_t length = 0;
  FILE *stream = open_memstream(&text, &length);
  if (stream == NULL) return NULL;
  cmr_call_stack_write(stream, record->frames, record->frame_count, "", "in ");
  bool failed = ferror(stream) != 0;
  failed = fclose(stream) != 0 || failed;
  if (failed) {
    free(text);
    return NULL;
  }
  return text;
}

/* The entries of every record, by address. Called locked. */
static cmr_status cmr_tracking_take_snapshot(cmr_tracking_impl *impl, cmr_tracking_entry **out, size_t *count) {
  cmr_tracking_sorting sorting;
  cmr_status status = cmr_tracking_sorted(impl, &sorting);
  if (status != CMR_SUCCESS) return status;
  cmr_tracking_entry *entries = calloc(sorting.count > 0 ? sorting.count : 1, sizeof *entries);
  size_t made = 0;
  for (; entries != NULL && made < sorting.count; ++made) {
    const cmr_tracking_record *record = sorting.records[made];
    char *stack = cmr_tracking_stack_text(record);
    if (stack == NULL) break;
    entries[made] =
        (cmr_tracking_entry){(void *)record->key.address, record->bytes, record->alignment, record->stream, stack};
  }
  free(sorting.records);
  if (entries == NULL || made < sorting.count) {
    cmr_tracking_free_snapshot(entries, made);
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "tracking: no host memory for a snapshot of %zu allocations",
                     sorting.count);
  }
  *out = entries;
  *count = made;
  return CMR_SUCCESS;
}

cmr_status cmr_tracking_impl_outstanding_snapshot(cmr_tracking_impl *impl, size_t *out) {
  cmr_mutex_lock(&impl->lock);
  cmr_tracking_entry *entries = NULL;
  size_t count = 0;
  cmr_status status = cmr_tracking_take_snapshot(impl, &entries, &count);
  if (status == CMR_SUCCESS) {
    cmr_tracking_free_snapshot(impl->snapshot, impl->snapshot_count);
    impl->snapshot = entries;
    impl->snapshot_count = count;
    *out = count;
  }
  cmr_mutex_unlock(&impl->lock);
  return status;
}

/* A copy of the snapshot's entry at `index`, or CMR_ERROR_INVALID_ARGUMENT
 * naming `what` past its end. */
static cmr_status cmr_tracking_entry_at(cmr_tracking_impl *impl, size_t index, const char *what,
                                        cmr_tracking_entry *out) {
  *out = (cmr_tracking_entry){0}; /* written whatever the answer, as the readers' compiler can see */
  cmr_mutex_lock(&impl->lock);
  size_t count = impl->snapshot_count;
  if (index < count) *out = impl->snapshot[index];
  cmr_mutex_unlock(&impl->lock);
  if (index >= count) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT,
                     "tracking: snapshot_%s: index %zu is past the snapshot's %zu allocations (outstanding_snapshot "
                     "takes one)",
                     what, index, count);
  }
  return CMR_SUCCESS;
}

cmr_status cmr_tracking_impl_snapshot_pointer(cmr_tracking_impl *impl, size_t index, void **out) {
  cmr_tracking_entry entry;
  cmr_status status = cmr_tracking_entry_at(impl, index, "pointer", &entry);
  if (status == CMR_SUCCESS) *out = entry.pointer;
  return status;
}

cmr_status cmr_tracking_impl_snapshot_bytes(cmr_tracking_impl *impl, size_t index, size_t *out) {
  cmr_tracking_entry entry;
  cmr_status status = cmr_tracking_entry_at(impl, index, "bytes", &entry);
  if (status == CMR_SUCCESS) *out = entry.bytes;
  return status;
}

cmr_status cmr_tracking_impl_snapshot_alignment(cmr_tracking_impl *impl, size_t index, size_t *out) {
  cmr_tracking_entry entry;
  cmr_status status = cmr_tracking_entry_at(impl, index, "alignment", &entry);
  if (status == CMR_SUCCESS) *out = entry.alignment;
  return status;
}

cmr_status cmr_tracking_impl_snapshot_stream(cmr_tracking_impl *impl, size_t index, void **out) {
  cmr_tracking_entry entry;
  cmr_status status = cmr_tracking_entry_at(impl, index, "stream", &entry);
  if (status == CMR_SUCCESS) *out = (void *)entry.stream;
  return status;
}

cmr_status cmr_tracking_impl_snapshot_stack(cmr_tracking_impl *impl, size_t index, const char **out) {
  cmr_tracking_entry entry;
  cmr_status status = cmr_tracking_entry_at(impl, index, "stack", &entry);
  if (status == CMR_SUCCESS) *out = entry.stack;
  return status;
}
