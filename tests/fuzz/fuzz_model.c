/* SPDX-License-Identifier: Apache-2.0 */
/* The shared part of the harnesses: see fuzz_model.h. */
#include "fuzz_model.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint8_t cmr_fuzz_byte(cmr_fuzz_input *in) { return in->pos < in->size ? in->data[in->pos++] : 0; }

size_t cmr_fuzz_range(cmr_fuzz_input *in, size_t lo, size_t hi) {
  size_t value = (size_t)cmr_fuzz_byte(in) << 8 | cmr_fuzz_byte(in);
  return lo + value % (hi - lo + 1);
}

_Noreturn void cmr_fuzz_fail(const cmr_fuzz_run *run, const char *format, ...) {
  va_list args;
  va_start(args, format);
  fprintf(stderr, "fuzz %s: ", run->target->name);
  vfprintf(stderr, format, args);
  fprintf(stderr, " (last message: \"%s\")\n", cmr_last_error_message());
  va_end(args);
  abort();
}

void cmr_fuzz_ok(const cmr_fuzz_run *run, cmr_status status, const char *what) {
  if (status != CMR_SUCCESS) cmr_fuzz_fail(run, "%s returned %s", what, cmr_status_string(status));
}

void cmr_fuzz_expect(const cmr_fuzz_run *run, size_t got, size_t want, const char *what) {
  if (got != want) cmr_fuzz_fail(run, "%s is %zu, the model says %zu", what, got, want);
}

/* ---- the recording upstream ------------------------------------------------ */

/* Index of the first span beginning after `address` (spans are sorted). */
static size_t cmr_fuzz_span_after(const cmr_fuzz_upstream *up, uintptr_t address) {
  size_t lo = 0, hi = up->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (up->spans[mid].begin <= address)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* The span holding [address, address + bytes) whole, or NULL. */
static const cmr_fuzz_span *cmr_fuzz_span_holding(const cmr_fuzz_upstream *up, uintptr_t address, size_t bytes) {
  size_t after = cmr_fuzz_span_after(up, address);
  if (after == 0) return NULL;
  const cmr_fuzz_span *span = &up->spans[after - 1];
  return address - span->begin + bytes <= span->bytes ? span : NULL;
}

static void *cmr_fuzz_upstream_allocate(size_t bytes, cmr_stream stream, void *arg) {
  cmr_fuzz_run *run = arg;
  cmr_fuzz_upstream *up = &run->upstream;
  void *ptr = NULL;
  if (bytes > up->capacity - up->bytes_out || up->count == CMR_FUZZ_MAX_RANGES ||
      cmr_allocate(up->inner, bytes, stream, &ptr) != CMR_SUCCESS) {
    ++up->refusals;
    return NULL;
  }
  uintptr_t begin = (uintptr_t)ptr;
  size_t at = cmr_fuzz_span_after(up, begin);
  if ((at > 0 && up->spans[at - 1].begin + up->spans[at - 1].bytes > begin) ||
      (at < up->count && begin + bytes > up->spans[at].begin)) {
    cmr_fuzz_fail(run, "the upstream handed out %p (%zu bytes), overlapping a range it already gave", ptr, bytes);
  }
  memmove(&up->spans[at + 1], &up->spans[at], (up->count - at) * sizeof up->spans[0]);
  up->spans[at] = (cmr_fuzz_span){begin, bytes};
  ++up->count;
  up->bytes_out += bytes;
  return ptr;
}

static void cmr_fuzz_upstream_deallocate(void *ptr, size_t bytes, cmr_stream stream, void *arg) {
  cmr_fuzz_run *run = arg;
  cmr_fuzz_upstream *up = &run->upstream;
  size_t at = cmr_fuzz_span_after(up, (uintptr_t)ptr);
  if (at == 0 || up->spans[at - 1].begin != (uintptr_t)ptr || up->spans[at - 1].bytes != bytes) {
    cmr_fuzz_fail(run, "freed %p (%zu bytes) to the upstream, which never handed out that range", ptr, bytes);
  }
  cmr_fuzz_ok(run, cmr_deallocate(up->inner, ptr, bytes, stream), "the upstream's deallocate");
  memmove(&up->spans[at - 1], &up->spans[at], (up->count - at) * sizeof up->spans[0]);
  --up->count;
  up->bytes_out -= bytes;
}

/* The first input byte picks host memory (patterns written) or simulated
 * addresses; the next two the capacity, 1 to 32 MiB, so that out of memory
 * happens within a short run. */
static cmr_resource_ref cmr_fuzz_upstream_create(cmr_fuzz_run *run) {
  cmr_fuzz_upstream *up = &run->upstream;
  up->host = cmr_fuzz_byte(&run->in) & 1;
  up->capacity = cmr_fuzz_range(&run->in, 1, 32) << 20;
  if (up->host) {
    cmr_fuzz_ok(run, cmr_system_resource_create(&up->system), "system_create");
    up->inner = cmr_system_resource_ref(up->system);
  } else {
    cmr_fuzz_ok(run, cmr_simulated_resource_create(CMR_SIZE_DEFAULT, &up->simulated), "simulated_create");
    up->inner = cmr_simulated_resource_ref(up->simulated);
  }
  unsigned properties = CMR_PROPERTY_DEVICE_ACCESSIBLE | (up->host ? CMR_PROPERTY_HOST_ACCESSIBLE : 0u);
  cmr_fuzz_ok(run,
              cmr_callback_resource_create(cmr_fuzz_upstream_allocate, cmr_fuzz_upstream_deallocate, run, run,
                                           properties, &up->callback),
              "callback_create");
  return cmr_callback_resource_ref(up->callback);
}

static void cmr_fuzz_upstream_destroy(cmr_fuzz_run *run) {
  cmr_fuzz_upstream *up = &run->upstream;
  cmr_fuzz_expect(run, up->count, 0, "ranges still out from the upstream after destroy");
  cmr_fuzz_expect(run, up->bytes_out, 0, "bytes still out from the upstream after destroy");
  cmr_fuzz_ok(run, cmr_callback_resource_destroy(up->callback), "callback_destroy");
  if (up->host)
    cmr_fuzz_ok(run, cmr_system_resource_destroy(up->system), "system_destroy");
  else
    cmr_fuzz_ok(run, cmr_simulated_resource_destroy(up->simulated), "simulated_destroy");
}

/* ---- blocks ----------------------------------------------------------------- */

/* A live stream slot from a byte; slot 0 (the default stream) when the chosen one is not live. */
static int cmr_fuzz_pick_stream(const cmr_fuzz_run *run, uint8_t byte) {
  int slot = byte % CMR_FUZZ_STREAMS;
  return run->stream_live[slot] ? slot : 0;
}

/* A new block must be aligned, inside one upstream range and apart from every live block. */
static void cmr_fuzz_check_new(const cmr_fuzz_run *run, const cmr_fuzz_block *block) {
  uintptr_t begin = (uintptr_t)block->ptr;
  if (block->ptr == NULL || begin % block->alignment != 0) {
    cmr_fuzz_fail(run, "%p (%zu bytes) is not aligned to %zu", (void *)block->ptr, block->bytes, block->alignment);
  }
  for (size_t i = 0; i < run->live; ++i) {
    uintptr_t other = (uintptr_t)run->blocks[i].ptr;
    if (begin < other + run->blocks[i].bytes && other < begin + block->bytes) {
      cmr_fuzz_fail(run, "%p (%zu bytes) overlaps the live block %p (%zu bytes)", (void *)block->ptr, block->bytes,
                    (void *)run->blocks[i].ptr, run->blocks[i].bytes);
    }
  }
}

/* Every live block still lies inside a range the upstream has out: nothing
 * was returned to the upstream under a live block. */
static void cmr_fuzz_check_inside(const cmr_fuzz_run *run) {
  for (size_t i = 0; i < run->live; ++i) {
    const cmr_fuzz_block *block = &run->blocks[i];
    if (cmr_fuzz_span_holding(&run->upstream, (uintptr_t)block->ptr, block->bytes) == NULL) {
      cmr_fuzz_fail(run, "the live block %p (%zu bytes) is not inside any range out from the upstream",
                    (void *)block->ptr, block->bytes);
    }
  }
}

/* On host memory, a block holds its pattern from allocate to free: another
 * block written over it shows as a wrong byte. All bytes equal the first when
 * the block equals itself shifted by one (memcmp: a byte loop here would be
 * instrumented, and dominate the run). */
static void cmr_fuzz_check_pattern(const cmr_fuzz_run *run, const cmr_fuzz_block *block) {
  if (!run->upstream.host) return;
  if (block->ptr[0] != block->pattern || memcmp(block->ptr, block->ptr + 1, block->bytes - 1) != 0) {
    cmr_fuzz_fail(run, "the block %p (%zu bytes) was overwritten", (void *)block->ptr, block->bytes);
  }
}

static void cmr_fuzz_free(cmr_fuzz_run *run, size_t index, int stream) {
  cmr_fuzz_block block = run->blocks[index];
  cmr_fuzz_check_pattern(run, &block);
  cmr_fuzz_ok(run, cmr_deallocate_aligned(run->top, block.ptr, block.bytes, block.alignment, run->streams[stream]),
              "deallocate");
  run->blocks[index] = run->blocks[--run->live];
  if (run->target->freed != NULL) run->target->freed(run, &block);
}

static void cmr_fuzz_op_free(cmr_fuzz_run *run) {
  uint8_t which = cmr_fuzz_byte(&run->in), how = cmr_fuzz_byte(&run->in);
  if (run->live == 0) return;
  size_t index = which % run->live;
  /* Half the frees go to the allocating stream, half to any live stream. */
  int stream = how & 1 ? run->blocks[index].stream : cmr_fuzz_pick_stream(run, how >> 1);
  cmr_fuzz_free(run, index, stream);
}

/* Sizes: half small (up to 4 KiB), half up to the target's maximum;
 * alignments 256 to 64 KiB, the smaller ones more often. */
static void cmr_fuzz_op_allocate(cmr_fuzz_run *run) {
  if (run->live == CMR_FUZZ_MAX_BLOCKS) {
    cmr_fuzz_op_free(run);
    return;
  }
  const cmr_fuzz_target *target = run->target;
  uint8_t shape = cmr_fuzz_byte(&run->in);
  size_t max = shape & 1 && target->max_bytes > 4096 ? 4096 : target->max_bytes;
  size_t bytes = cmr_fuzz_range(&run->in, 1, max);
  size_t alignment = CMR_DEFAULT_ALIGNMENT << ((shape >> 1) % 16 < 12 ? (shape >> 1) % 3 : (shape >> 1) % 9);
  int stream = cmr_fuzz_pick_stream(run, shape >> 5);
  size_t refusals = run->upstream.refusals;
  void *ptr = NULL;
  cmr_status status = cmr_allocate_aligned(run->top, bytes, alignment, run->streams[stream], &ptr);
  if (alignment > target->max_alignment) {
    if (status != CMR_ERROR_UNSUPPORTED_ALIGNMENT) {
      cmr_fuzz_fail(run, "alignment %zu returned %s, not CMR_ERROR_UNSUPPORTED_ALIGNMENT", alignment,
                    cmr_status_string(status));
    }
    return;
  }
  if (status == CMR_ERROR_OUT_OF_MEMORY &&
      target->oom_plausible(run, bytes, alignment, run->upstream.refusals != refusals)) {
    return;
  }
  if (status != CMR_SUCCESS) {
    cmr_fuzz_fail(run, "allocating %zu bytes at %zu returned %s", bytes, alignment, cmr_status_string(status));
  }
  cmr_fuzz_block block = {ptr, bytes, alignment, stream, (uint8_t)(run->in.pos | 1)};
  cmr_fuzz_check_new(run, &block);
  if (run->upstream.host) memset(block.ptr, block.pattern, bytes);
  run->blocks[run->live++] = block;
  if (target->allocated != NULL) target->allocated(run, &block);
}

/* Creates the slot's stream, or destroys it once no live block names it. */
static void cmr_fuzz_op_stream(cmr_fuzz_run *run) {
  int slot = 1 + cmr_fuzz_byte(&run->in) % (CMR_FUZZ_STREAMS - 1);
  if (!run->stream_live[slot]) {
    cmr_fuzz_ok(run, cmr_stream_create(&run->streams[slot]), "stream_create");
    run->stream_live[slot] = true;
    return;
  }
  for (size_t i = 0; i < run->live; ++i) {
    if (run->blocks[i].stream == slot) return;
  }
  cmr_fuzz_ok(run, cmr_stream_destroy(run->streams[slot]), "stream_destroy");
  run->stream_live[slot] = false;
}

static void cmr_fuzz_step(cmr_fuzz_run *run) {
  uint8_t op = cmr_fuzz_byte(&run->in) % 8;
  if (op < 4)
    cmr_fuzz_op_allocate(run);
  else if (op < 6)
    cmr_fuzz_op_free(run);
  else if (op == 6)
    cmr_fuzz_op_stream(run);
  else if (run->target->extra != NULL)
    run->target->extra(run, cmr_fuzz_byte(&run->in));
  cmr_fuzz_check_inside(run);
  if (run->target->check != NULL) run->target->check(run);
}

/* Frees what is live (unless it is left to the destroy), destroys the stack and checks the upstream has everything back. */
static void cmr_fuzz_teardown(cmr_fuzz_run *run) {
  while (!run->leave_live && run->live > 0) cmr_fuzz_free(run, run->live - 1, run->blocks[run->live - 1].stream);
  run->target->destroy(run);
  cmr_fuzz_upstream_destroy(run);
  for (int slot = 1; slot < CMR_FUZZ_STREAMS; ++slot) {
    if (run->stream_live[slot]) cmr_fuzz_ok(run, cmr_stream_destroy(run->streams[slot]), "stream_destroy");
  }
}

int cmr_fuzz_execute(const cmr_fuzz_target *target, const uint8_t *data, size_t size) {
  /* Static: the model is too large for the stack, and a harness runs one input at a time. */
  static cmr_fuzz_run run;
  memset(&run, 0, sizeof run);
  run.target = target;
  run.in = (cmr_fuzz_input){data, size, 0};
  run.stream_live[0] = true; /* the default stream */
  cmr_resource_ref upstream = cmr_fuzz_upstream_create(&run);
  run.leave_live = target->reclaims_on_destroy && (cmr_fuzz_byte(&run.in) & 1);
  target->create(&run, upstream);
  while (run.in.pos < run.in.size) cmr_fuzz_step(&run);
  cmr_fuzz_teardown(&run);
  return 0;
}
