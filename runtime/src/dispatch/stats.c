/* SPDX-License-Identifier: Apache-2.0 */
/* Statistics through a ref (cmr/stats.h, usage.h): the counts every
 * resource object keeps, its class's hook, the peaks' reset, and the
 * out-of-memory report that dispatch makes of a failed allocation: the
 * message extended with the resource's state, the count, the observer. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "lock.h"
#include "resource_class.h"
#include "stats_report.h"

/* ---- reading ------------------------------------------------------------- */

#define CMR_STATS_COUNTED                                                                                   \
  (CMR_STATS_BYTES_IN_USE | CMR_STATS_BYTES_IN_USE_PEAK | CMR_STATS_ALLOCATIONS | CMR_STATS_DEALLOCATIONS | \
   CMR_STATS_OUT_OF_MEMORY_COUNT)

/* The fields an adaptor takes from its upstream: everything but its own counts. */
#define CMR_STATS_MEMORY                                                                                             \
  (CMR_STATS_BYTES_HELD | CMR_STATS_BYTES_HELD_PEAK | CMR_STATS_BYTES_FREE | CMR_STATS_FREE_BLOCKS |                 \
   CMR_STATS_LARGEST_FREE_BLOCK | CMR_STATS_FAILURE_CALLBACK_RETRIES | CMR_STATS_SEGMENTS | CMR_STATS_STREAM_LISTS | \
   CMR_STATS_POOL_BYTES_USED | CMR_STATS_POOL_BYTES_USED_PEAK)

static size_t cmr_count(const _Atomic size_t *counter) { return atomic_load_explicit(counter, memory_order_relaxed); }

static void cmr_usage_read(const cmr_usage *usage, cmr_stats *out) {
  out->allocations = cmr_count(&usage->allocations);
  out->deallocations = cmr_count(&usage->deallocations);
  out->bytes_in_use = cmr_count(&usage->bytes_in_use);
  size_t peak = cmr_count(&usage->bytes_in_use_peak);
  /* Read after the current value, the peak may lag an allocation under way. */
  out->bytes_in_use_peak = peak > out->bytes_in_use ? peak : out->bytes_in_use;
  out->out_of_memory_count = cmr_count(&usage->out_of_memory);
  out->supported |= CMR_STATS_COUNTED;
}

void cmr_stats_take_memory_of(cmr_stats *out, const cmr_stats *upstream) {
  unsigned taken = upstream->supported & CMR_STATS_MEMORY;
  out->supported |= taken;
  out->bytes_held = upstream->bytes_held;
  out->bytes_held_peak = upstream->bytes_held_peak;
  out->bytes_free = upstream->bytes_free;
  out->free_blocks = upstream->free_blocks;
  out->largest_free_block = upstream->largest_free_block;
  out->failure_callback_retries = upstream->failure_callback_retries;
  out->segments = upstream->segments;
  out->stream_lists = upstream->stream_lists;
  out->pool_bytes_used = upstream->pool_bytes_used;
  out->pool_bytes_used_peak = upstream->pool_bytes_used_peak;
}

void cmr_free_by_stream_add(cmr_free_by_stream *spread, const cmr_stream_free *entry) {
  if (entry->bytes == 0) return;
  ++spread->lists;
  size_t at = spread->shown;
  while (at > 0 && spread->top[at - 1].bytes < entry->bytes) --at;
  if (at == CMR_FREE_BY_STREAM_SHOWN) return;
  size_t last = spread->shown < CMR_FREE_BY_STREAM_SHOWN ? spread->shown : CMR_FREE_BY_STREAM_SHOWN - 1;
  memmove(&spread->top[at + 1], &spread->top[at], (last - at) * sizeof spread->top[0]);
  spread->top[at] = *entry;
  if (spread->shown < CMR_FREE_BY_STREAM_SHOWN) ++spread->shown;
}

/* The resource object a checked ref names, with its class; NULL for a foreign resource. */
static cmr_resource_object *cmr_stats_target(cmr_resource_ref ref, const cmr_resource_class **cls) {
  if (!(ref.ops->flags & CMR_OPS_FLAG_COUNTED)) return NULL;
  cmr_object *object = cmr_object_peek(ref.self);
  *cls = cmr_resource_class_of(object);
  return *cls != NULL ? (cmr_resource_object *)object : NULL;
}

/* The whole struct for `ref` (checked) into *out, zeroed first. */
static cmr_status cmr_stats_of(cmr_resource_ref ref, cmr_stats *out, cmr_free_by_stream *spread) {
  memset(out, 0, sizeof *out);
  out->size = sizeof *out;
  const cmr_resource_class *cls = NULL;
  cmr_resource_object *self = cmr_stats_target(ref, &cls);
  if (self == NULL) return CMR_SUCCESS; /* a foreign resource: nothing known */
  cmr_usage_read(&self->usage, out);
  cmr_status status = CMR_SUCCESS;
  if (cls->memory == CMR_MEMORY_HANDED_OUT) {
    out->bytes_held = out->bytes_in_use;
    out->bytes_held_peak = out->bytes_in_use_peak;
    out->supported |= CMR_STATS_BYTES_HELD | CMR_STATS_BYTES_HELD_PEAK;
  } else if (cls->memory == CMR_MEMORY_OF_UPSTREAM && self->upstream.ops != NULL) {
    cmr_stats upstream;
    status = cmr_stats_of(self->upstream, &upstream, spread);
    if (status == CMR_SUCCESS) cmr_stats_take_memory_of(out, &upstream);
  }
  if (status == CMR_SUCCESS && cls->stats != NULL) status = cls->stats(self->impl, out, spread);
  return status;
}

cmr_status cmr_ref_stats(cmr_resource_ref ref, cmr_stats *out) {
  static const char what[] = "cmr_ref_stats";
  if (out == NULL) return cmr_error(CMR_ERROR_NULL_POINTER, "%s: out is NULL", what);
  size_t size = out->size;
  if (size < CMR_STATS_MIN_SIZE) {
    return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: out->size %zu is below the %zu bytes of its header", what, size,
                     (size_t)CMR_STATS_MIN_SIZE);
  }
  cmr_status status = cmr_ref_check(ref, what);
  if (status != CMR_SUCCESS) return status;
  cmr_stats full;
  cmr_call_begin(); /* the resource stays while it is read */
  status = cmr_stats_of(ref, &full, NULL);
  cmr_call_end();
  if (status != CMR_SUCCESS) return cmr_error_context(status, "%s", what);
  memcpy(out, &full, size < sizeof full ? size : sizeof full);
  out->size = size;
  return CMR_SUCCESS;
}

/* ---- peaks ------------------------------------------------------------------ */

static cmr_status cmr_reset_peaks_of(cmr_resource_ref ref) {
  const cmr_resource_class *cls = NULL;
  cmr_resource_object *self = cmr_stats_target(ref, &cls);
  if (self == NULL) return CMR_SUCCESS;
  atomic_store_explicit(&self->usage.bytes_in_use_peak, cmr_count(&self->usage.bytes_in_use), memory_order_relaxed);
  cmr_status status = CMR_SUCCESS;
  if (cls->memory == CMR_MEMORY_OF_UPSTREAM && self->upstream.ops != NULL) status = cmr_reset_peaks_of(self->upstream);
  if (status == CMR_SUCCESS && cls->reset_peak_stats != NULL) status = cls->reset_peak_stats(self->impl);
  return status;
}

cmr_status cmr_ref_reset_peak_stats(cmr_resource_ref ref) {
  static const char what[] = "cmr_ref_reset_peak_stats";
  cmr_status status = cmr_ref_check(ref, what);
  if (status != CMR_SUCCESS) return status;
  cmr_call_begin();
  status = cmr_reset_peaks_of(ref);
  cmr_call_end();
  return status == CMR_SUCCESS ? status : cmr_error_context(status, "%s", what);
}

/* ---- the observer -------------------------------------------------------------- */

static pthread_rwlock_t cmr_observer_lock = PTHREAD_RWLOCK_INITIALIZER;
static cmr_oom_observer cmr_observer;
static void *cmr_observer_user;
/* Whether this thread is running the observer (no nested call, no change). */
static _Thread_local bool cmr_in_observer;
/* The message serial of this thread's last out-of-memory report: an
 * answer still carrying that message was reported by an inner resource. */
static _Thread_local unsigned long cmr_reported_serial;

cmr_status cmr_set_oom_observer(cmr_oom_observer observer, void *user) {
  if (cmr_in_observer) {
    return cmr_error(CMR_ERROR_REENTRANT_CALL, "cmr_set_oom_observer: called from inside the observer");
  }
  if (pthread_rwlock_trywrlock(&cmr_observer_lock) != 0) {
    cmr_before_blocking(); /* the observer runs on another thread: wait for it to return */
    pthread_rwlock_wrlock(&cmr_observer_lock);
  }
  cmr_observer = observer;
  cmr_observer_user = user;
  pthread_rwlock_unlock(&cmr_observer_lock);
  return CMR_SUCCESS;
}

/* Calls the observer, if any, keeping this thread's message as it was. */
static void cmr_observe(cmr_resource_ref ref, const cmr_stats *stats, size_t bytes, size_t alignment,
                        cmr_stream stream) {
  if (cmr_in_observer) return;
  if (pthread_rwlock_tryrdlock(&cmr_observer_lock) != 0) {
    cmr_before_blocking(); /* a change of the observer waits for the ones running */
    pthread_rwlock_rdlock(&cmr_observer_lock);
  }
  if (cmr_observer != NULL) {
    cmr_kept_message kept;
    cmr_keep_message(&kept);
    cmr_in_observer = true;
    cmr_observer(ref, stats, bytes, alignment, stream, kept.text, cmr_observer_user);
    cmr_in_observer = false;
    cmr_restore_message(&kept);
  }
  pthread_rwlock_unlock(&cmr_observer_lock);
}

/* ---- the out-of-memory report ------------------------------------------------------ */

typedef struct cmr_text {
  char *at;
  size_t left;
} cmr_text;

static void cmr_text_add(cmr_text *text, const char *format, ...) CMR_PRINTF(2, 3);
static void cmr_text_add(cmr_text *text, const char *format, ...) {
  va_list args;
  va_start(args, format);
  int written = vsnprintf(text->at, text->left, format, args);
  va_end(args);
  size_t used = written < 0 ? 0 : (size_t)written;
  if (used >= text->left) used = text->left > 0 ? text->left - 1 : 0;
  text->at += used;
  text->left -= used;
}

/* How the free memory of `spread` lies over streams. */
static void cmr_text_spread(cmr_text *text, const cmr_free_by_stream *spread) {
  cmr_text_add(text, "; free by stream:");
  for (size_t i = 0; i < spread->shown; ++i) {
    const cmr_stream_free *entry = &spread->top[i];
    if (entry->key == CMR_STREAM_KEY_SHARED) {
      cmr_text_add(text, "%s idle (any stream)", i > 0 ? "," : "");
    } else if (entry->key == CMR_STREAM_KEY_UNLISTED) {
      cmr_text_add(text, "%s in no stream's list", i > 0 ? "," : "");
    } else {
      cmr_text_add(text, "%s stream key %#llx", i > 0 ? "," : "", (unsigned long long)entry->key);
    }
    cmr_text_add(text, " %zu bytes in %zu blocks (largest %zu)", entry->bytes, entry->blocks, entry->largest);
  }
  if (spread->lists > spread->shown) cmr_text_add(text, ", and %zu more lists", spread->lists - spread->shown);
  if (spread->lists == 0) cmr_text_add(text, " none");
}

/* The state of a suballocator that could not serve a request, in words. */
static void cmr_describe(char *buffer, size_t capacity, const cmr_stats *stats, const cmr_free_by_stream *spread,
                         size_t bytes, size_t alignment, cmr_stream stream) {
  cmr_text text = {buffer, capacity};
  cmr_text_add(&text,
               "asked for %zu bytes at alignment %zu on stream %p; it holds %zu bytes from its upstream (peak %zu) in "
               "%zu segments, %zu bytes in use by %zu allocations, %zu bytes free in %zu blocks, the largest %zu",
               bytes, alignment, (void *)stream, stats->bytes_held, stats->bytes_held_peak, stats->segments,
               stats->bytes_in_use, stats->allocations - stats->deallocations, stats->bytes_free, stats->free_blocks,
               stats->largest_free_block);
  cmr_text_spread(&text, spread);
}

cmr_status cmr_stats_out_of_memory(cmr_resource_ref ref, size_t bytes, size_t alignment, cmr_stream stream,
                                   unsigned long serial_before) {
  const cmr_resource_class *cls = NULL;
  cmr_resource_object *object = cmr_stats_target(ref, &cls);
  if (object != NULL) atomic_fetch_add_explicit(&object->usage.out_of_memory, 1, memory_order_relaxed);
  unsigned long serial = cmr_error_serial();
  if (serial == cmr_reported_serial && serial != serial_before) return CMR_ERROR_OUT_OF_MEMORY; /* an inner one's */
  cmr_kept_message kept; /* the resource's own message, past the reading below */
  cmr_keep_message(&kept);
  cmr_stats stats;
  cmr_free_by_stream spread = {0};
  bool read = cmr_stats_of(ref, &stats, &spread) == CMR_SUCCESS;
  cmr_restore_message(&kept);
  if (!read) memset(&stats, 0, sizeof stats); /* the observer still hears of it */
  if (read && cls != NULL && cls->memory == CMR_MEMORY_OWN && (stats.supported & CMR_STATS_LARGEST_FREE_BLOCK)) {
    char report[CMR_MESSAGE_CAPACITY];
    cmr_describe(report, sizeof report, &stats, &spread, bytes, alignment, stream);
    size_t room = CMR_MESSAGE_CAPACITY - 1;
    size_t own = strlen(report) + 2 < room ? room - strlen(report) - 2 : 0;
    (void)cmr_error(CMR_ERROR_OUT_OF_MEMORY, "%.*s; %s", (int)own, kept.text, report);
  }
  cmr_reported_serial = cmr_error_serial();
  cmr_observe(ref, &stats, bytes, alignment, stream);
  return CMR_ERROR_OUT_OF_MEMORY;
}
