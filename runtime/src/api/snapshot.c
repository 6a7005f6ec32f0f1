/* SPDX-License-Identifier: Apache-2.0 */
/* Snapshots of a resource stack (cmr/history.h): PyTorch's snapshot dict,
 * written through one encoder as pickle or JSON, and the HTML report of it.
 *
 * The stack is every resource reachable from the ref through upstreams and
 * adopted resources (binning's bins), each once. The segments are the walks
 * of those whose class has one; the traces, the history's events that
 * concern the stack: allocations and frees through the ref itself (the
 * stack's users' view: inner resources' own events would count the same
 * memory twice), segment growth and release whose upstream is in the stack,
 * out-of-memory failures of any of its resources. Failure-callback retries,
 * which PyTorch's format has no action for, are under "cmr". */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "history.h"
#include "internal.h"
#include "resource_class.h"
#include "segments.h"
#include "snapshot_encode.h"
#include "snapshot_report.h"

/* ---- the stack ---------------------------------------------------------------- */

typedef struct cmr_snapshot_stack {
  uint64_t *tokens;   /* every resource's ref self */
  cmr_object **items; /* its object, NULL for a foreign resource */
  size_t count, capacity;
  cmr_status status;
} cmr_snapshot_stack;

static bool cmr_snapshot_has(const cmr_snapshot_stack *stack, uint64_t token) {
  for (size_t i = 0; i < stack->count; ++i) {
    if (stack->tokens[i] == token) return true;
  }
  return false;
}

static void cmr_snapshot_visit(cmr_resource_ref ref, void *arg) {
  cmr_snapshot_stack *stack = arg;
  uint64_t token = (uint64_t)(uintptr_t)ref.self;
  if (stack->status != CMR_SUCCESS || ref.ops == NULL || cmr_snapshot_has(stack, token)) return;
  if (stack->count == stack->capacity) {
    size_t capacity = stack->capacity ? stack->capacity * 2 : 8;
    uint64_t *tokens = realloc(stack->tokens, capacity * sizeof *tokens);
    if (tokens != NULL) stack->tokens = tokens;
    cmr_object **items = tokens != NULL ? realloc(stack->items, capacity * sizeof *items) : NULL;
    if (items == NULL) {
      stack->status = cmr_error(CMR_ERROR_OUT_OF_MEMORY, "snapshot: no host memory for a stack of %zu", capacity);
      return;
    }
    stack->items = items;
    stack->capacity = capacity;
  }
  cmr_object *object = (ref.ops->flags & CMR_OPS_FLAG_COUNTED) ? cmr_object_peek(ref.self) : NULL;
  stack->tokens[stack->count] = token;
  stack->items[stack->count++] = object;
  if (object != NULL && object->type->children != NULL) object->type->children(object, cmr_snapshot_visit, stack);
}

static void cmr_snapshot_stack_free(cmr_snapshot_stack *stack) {
  free(stack->tokens);
  free(stack->items);
}

/* ---- frames --------------------------------------------------------------------- */

/* One C frame as PyTorch's {"filename", "line", "name"}: the object file
 * and the symbol dladdr finds (the address when it finds none; no line). */
static void cmr_snapshot_frame(cmr_encoder *encoder, void *address) {
  Dl_info info;
  bool found = dladdr(address, &info) != 0;
  char name[64];
  snprintf(name, sizeof name, "%p", address);
  cmr_encode_dict_begin(encoder);
  cmr_encode_key_text(encoder, "filename", found && info.dli_fname != NULL ? info.dli_fname : "??");
  cmr_encode_key_uint(encoder, "line", 0);
  cmr_encode_key_text(encoder, "name", found && info.dli_sname != NULL ? info.dli_sname : name);
  cmr_encode_dict_end(encoder);
}

/* The event's frames, and its binding's token when it has one. */
static void cmr_snapshot_frames(cmr_encoder *encoder, const cmr_history_event *event) {
  if (event != NULL && event->context != 0) cmr_encode_key_uint(encoder, "context", event->context);
  cmr_encode_key(encoder, "frames");
  cmr_encode_list_begin(encoder);
  for (unsigned i = 0; event != NULL && i < event->frame_count; ++i) cmr_snapshot_frame(encoder, event->frames[i]);
  cmr_encode_list_end(encoder);
}

/* ---- the history's part -------------------------------------------------------------- */

typedef struct cmr_snapshot_history {
  cmr_history_event *events;
  size_t count;
  uint64_t dropped;
  /* The allocations of the stack's resources, by address then sequence:
   * a block's frames are its latest allocation's; and likewise the
   * segments' growth events, for a segment's frames. */
  const cmr_history_event **allocations;
  size_t allocation_count;
  const cmr_history_event **growths;
  size_t growth_count;
} cmr_snapshot_history;

static int cmr_allocation_order(const void *a, const void *b) {
  const cmr_history_event *x = *(const cmr_history_event *const *)a, *y = *(const cmr_history_event *const *)b;
  if (x->address != y->address) return x->address < y->address ? -1 : 1;
  return x->sequence < y->sequence ? -1 : x->sequence > y->sequence;
}

static cmr_status cmr_snapshot_history_read(const cmr_snapshot_stack *stack, cmr_snapshot_history *history) {
  *history = (cmr_snapshot_history){0};
  cmr_status status = cmr_history_copy(&history->events, &history->count, &history->dropped);
  if (status != CMR_SUCCESS || history->count == 0) return status;
  history->allocations = malloc(history->count * sizeof *history->allocations);
  history->growths = malloc(history->count * sizeof *history->growths);
  if (history->allocations == NULL || history->growths == NULL) {
    free(history->allocations);
    free(history->growths);
    free(history->events);
    *history = (cmr_snapshot_history){0};
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "snapshot: no host memory for an index of %zu events", history->count);
  }
  for (size_t i = 0; i < history->count; ++i) {
    const cmr_history_event *event = &history->events[i];
    if (!cmr_snapshot_has(stack, event->resource)) continue;
    if (event->action == CMR_HISTORY_ALLOCATE) history->allocations[history->allocation_count++] = event;
    if (event->action == CMR_HISTORY_SEGMENT_ALLOCATE) history->growths[history->growth_count++] = event;
  }
  qsort(history->allocations, history->allocation_count, sizeof *history->allocations, cmr_allocation_order);
  qsort(history->growths, history->growth_count, sizeof *history->growths, cmr_allocation_order);
  return CMR_SUCCESS;
}

/* The latest of `events` (`count`, sorted by address then sequence) at `address`, or NULL. */
static const cmr_history_event *cmr_snapshot_latest_at(const cmr_history_event *const *events, size_t count,
                                                       uint64_t address) {
  size_t low = 0, high = count; /* the first past `address` */
  while (low < high) {
    size_t middle = low + (high - low) / 2;
    if (events[middle]->address <= address) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  return low > 0 && events[low - 1]->address == address ? events[low - 1] : NULL;
}

/* ---- segments ---------------------------------------------------------------------- */

static void cmr_snapshot_block(cmr_encoder *encoder, const cmr_segment_block *block,
                               const cmr_snapshot_history *history) {
  cmr_encode_dict_begin(encoder);
  cmr_encode_key_uint(encoder, "address", block->address);
  cmr_encode_key_uint(encoder, "size", block->size);
  cmr_encode_key_uint(encoder, "requested_size", block->requested);
  cmr_encode_key_text(encoder, "state", block->allocated ? "active_allocated" : "inactive");
  if (!block->allocated && block->stream_key != CMR_SEGMENTS_NO_STREAM) {
    cmr_encode_key_uint(encoder, "stream", block->stream_key);
  }
  const cmr_history_event *allocation =
      cmr_snapshot_latest_at(history->allocations, history->allocation_count, block->address);
  cmr_snapshot_frames(encoder, block->allocated ? allocation : NULL);
  cmr_encode_dict_end(encoder);
}

/* One chunk and the blocks from *next on that lie in it (sorted). */
static void cmr_snapshot_segment(cmr_encoder *encoder, const cmr_segment_sink *sink, const cmr_segment_chunk *chunk,
                                 size_t *next, const char *owner, uint64_t token, const cmr_snapshot_history *history) {
  size_t first = *next, end = *next;
  size_t allocated = 0, requested = 0;
  while (end < sink->block_count && sink->blocks[end].address < chunk->address + chunk->size) {
    if (sink->blocks[end].allocated) allocated += sink->blocks[end].size, requested += sink->blocks[end].requested;
    ++end;
  }
  *next = end;
  cmr_encode_dict_begin(encoder);
  cmr_encode_key_uint(encoder, "device", 0);
  cmr_encode_key_uint(encoder, "address", chunk->address);
  cmr_encode_key_uint(encoder, "total_size", chunk->size);
  cmr_encode_key_uint(encoder, "stream", chunk->stream);
  cmr_encode_key_text(encoder, "segment_type", "large");
  cmr_encode_key_uint(encoder, "allocated_size", allocated);
  cmr_encode_key_uint(encoder, "active_size", allocated);
  cmr_encode_key_uint(encoder, "requested_size", requested);
  cmr_encode_key(encoder, "is_expandable");
  cmr_encode_bool(encoder, false);
  cmr_encode_key(encoder, "segment_pool_id");
  cmr_encode_pair(encoder, 0, 0);
  cmr_snapshot_frames(encoder, cmr_snapshot_latest_at(history->growths, history->growth_count, chunk->address));
  cmr_encode_key_text(encoder, "resource", owner);
  cmr_encode_key_uint(encoder, "resource_id", token);
  cmr_encode_key(encoder, "blocks");
  cmr_encode_list_begin(encoder);
  for (size_t i = first; i < end; ++i) cmr_snapshot_block(encoder, &sink->blocks[i], history);
  cmr_encode_list_end(encoder);
  cmr_encode_dict_end(encoder);
}

/* Every walked resource's segments, into the open "segments" list. */
static cmr_status cmr_snapshot_segments(cmr_encoder *encoder, const cmr_snapshot_stack *stack,
                                        const cmr_snapshot_history *history) {
  for (size_t r = 0; r < stack->count; ++r) {
    cmr_segment_sink sink = {0};
    if (stack->items[r] == NULL || !cmr_resource_segments(stack->items[r], &sink)) continue;
    cmr_status status = sink.status;
    if (status == CMR_SUCCESS) {
      cmr_segments_sort(&sink);
      size_t next = 0;
      for (size_t c = 0; c < sink.chunk_count; ++c) {
        /* Blocks before this chunk lie in none (moved while the parts were read). */
        while (next < sink.block_count && sink.blocks[next].address < sink.chunks[c].address) ++next;
        cmr_snapshot_segment(encoder, &sink, &sink.chunks[c], &next, stack->items[r]->type->name, stack->tokens[r],
                             history);
      }
    }
    cmr_segments_sink_clear(&sink);
    if (status != CMR_SUCCESS) return status;
  }
  return CMR_SUCCESS;
}

/* ---- traces ---------------------------------------------------------------------------- */

static void cmr_snapshot_trace(cmr_encoder *encoder, const char *action, const cmr_history_event *event) {
  cmr_encode_dict_begin(encoder);
  cmr_encode_key_text(encoder, "action", action);
  cmr_encode_key_uint(encoder, "addr", event->address);
  cmr_encode_key_uint(encoder, "size", event->bytes);
  cmr_encode_key_uint(encoder, "stream", event->stream);
  cmr_encode_key_uint(encoder, "time_us", event->time_ns / 1000);
  if (event->action == CMR_HISTORY_OUT_OF_MEMORY) cmr_encode_key_uint(encoder, "device_free", 0);
  cmr_encode_key_text(encoder, "resource", event->resource_type);
  cmr_snapshot_frames(encoder, event);
  cmr_encode_dict_end(encoder);
}

/* PyTorch's actions for one event of the stack's (none for one it leaves out). */
static void cmr_snapshot_traces_of(cmr_encoder *encoder, const cmr_history_event *event, uint64_t root) {
  switch (event->action) {
  case CMR_HISTORY_ALLOCATE:
    if (event->resource == root) cmr_snapshot_trace(encoder, "alloc", event);
    break;
  case CMR_HISTORY_FREE:
    /* Freed in stream order: reusable on its stream at once. */
    if (event->resource == root) {
      cmr_snapshot_trace(encoder, "free_requested", event);
      cmr_snapshot_trace(encoder, "free_completed", event);
    }
    break;
  case CMR_HISTORY_SEGMENT_ALLOCATE: cmr_snapshot_trace(encoder, "segment_alloc", event); break;
  case CMR_HISTORY_SEGMENT_FREE: cmr_snapshot_trace(encoder, "segment_free", event); break;
  case CMR_HISTORY_OUT_OF_MEMORY: cmr_snapshot_trace(encoder, "oom", event); break;
  case CMR_HISTORY_RETRY: break; /* under "cmr" */
  }
}

static void cmr_snapshot_traces(cmr_encoder *encoder, const cmr_snapshot_stack *stack,
                                const cmr_snapshot_history *history, bool retries) {
  cmr_encode_list_begin(encoder);
  for (size_t i = 0; i < history->count; ++i) {
    const cmr_history_event *event = &history->events[i];
    if (!cmr_snapshot_has(stack, event->resource)) continue;
    if (retries && event->action == CMR_HISTORY_RETRY) cmr_snapshot_trace(encoder, "retry", event);
    if (!retries) cmr_snapshot_traces_of(encoder, event, stack->tokens[0]);
  }
  cmr_encode_list_end(encoder);
}

/* ---- the snapshot ------------------------------------------------------------------------- */

static cmr_status cmr_snapshot_encode(cmr_encoder *encoder, const cmr_snapshot_stack *stack,
                                      const cmr_snapshot_history *history, const char *root_type) {
  cmr_encode_dict_begin(encoder);
  cmr_encode_key(encoder, "segments");
  cmr_encode_list_begin(encoder);
  cmr_status status = cmr_snapshot_segments(encoder, stack, history);
  cmr_encode_list_end(encoder);
  cmr_encode_key(encoder, "device_traces");
  cmr_encode_list_begin(encoder);
  cmr_snapshot_traces(encoder, stack, history, false);
  cmr_encode_list_end(encoder);
  cmr_encode_key(encoder, "cmr");
  cmr_encode_dict_begin(encoder);
  cmr_encode_key_text(encoder, "version", CMR_VERSION_STRING);
  cmr_encode_key_text(encoder, "resource", root_type);
  cmr_encode_key(encoder, "recording");
  cmr_encode_bool(encoder, cmr_history_recording());
  cmr_encode_key_uint(encoder, "events_kept", history->count);
  cmr_encode_key_uint(encoder, "events_dropped", history->dropped);
  cmr_encode_key(encoder, "retries");
  cmr_snapshot_traces(encoder, stack, history, true);
  cmr_encode_dict_end(encoder);
  cmr_encode_dict_end(encoder);
  return status;
}

static cmr_status cmr_snapshot_check_format(cmr_snapshot_format format, const char *what) {
  if (format >= CMR_SNAPSHOT_PICKLE && format <= CMR_SNAPSHOT_HTML) return CMR_SUCCESS;
  return cmr_error(CMR_ERROR_INVALID_ARGUMENT, "%s: unknown snapshot format %d", what, (int)format);
}

/* The snapshot of the stack `ref` names as `format` (HTML: the report of its JSON). */
static cmr_status cmr_snapshot_make(cmr_resource_ref ref, cmr_snapshot_format format, const char *what, char **out,
                                    size_t *length) {
  cmr_status status = cmr_snapshot_check_format(format, what);
  if (status == CMR_SUCCESS) status = cmr_ref_check(ref, what);
  if (status != CMR_SUCCESS) return status;
  cmr_snapshot_stack stack = {0};
  cmr_snapshot_history history = {0};
  cmr_call_begin(); /* nothing of the stack is finalized under the walk (object.h) */
  cmr_snapshot_visit(ref, &stack);
  status = stack.status;
  if (status == CMR_SUCCESS) status = cmr_snapshot_history_read(&stack, &history);
  if (status == CMR_SUCCESS) {
    cmr_encoder encoder;
    cmr_encode_start(&encoder, format == CMR_SNAPSHOT_HTML ? CMR_SNAPSHOT_JSON : format);
    status = cmr_snapshot_encode(&encoder, &stack, &history, ref.ops->type_name != NULL ? ref.ops->type_name : "");
    cmr_status encoded = cmr_encode_finish(&encoder, out, length);
    if (status == CMR_SUCCESS) status = encoded;
    if (encoded == CMR_SUCCESS && status != CMR_SUCCESS) {
      free(*out);
      *out = NULL;
    }
  }
  free(history.allocations);
  free(history.growths);
  free(history.events);
  cmr_snapshot_stack_free(&stack);
  cmr_call_end();
  if (status == CMR_SUCCESS && format == CMR_SNAPSHOT_HTML) {
    char *json = *out;
    *out = NULL;
    status = cmr_report_render(json, *length, what, out, length);
    free(json);
  }
  return status == CMR_SUCCESS ? status : cmr_error_context(status, "%s", what);
}

cmr_status cmr_snapshot_bytes(cmr_resource_ref ref, cmr_snapshot_format format, char **out, size_t *length) {
  static const char what[] = "cmr_snapshot_bytes";
  if (out == NULL || length == NULL) {
    return cmr_error(CMR_ERROR_NULL_POINTER, "%s: %s is NULL", what, out == NULL ? "out" : "length");
  }
  *out = NULL;
  *length = 0;
  return cmr_snapshot_make(ref, format, what, out, length);
}

void cmr_snapshot_free(char *bytes) { free(bytes); }

cmr_status cmr_snapshot_write(cmr_resource_ref ref, cmr_snapshot_format format, const char *path) {
  static const char what[] = "cmr_snapshot_write";
  if (path == NULL) return cmr_error(CMR_ERROR_NULL_POINTER, "%s: path is NULL", what);
  char *bytes = NULL;
  size_t length = 0;
  cmr_status made = cmr_snapshot_make(ref, format, what, &bytes, &length);
  return cmr_report_keep(made, bytes, length, path, what);
}
