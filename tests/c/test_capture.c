/* SPDX-License-Identifier: Apache-2.0 */
/* The suballocators and the adaptors over them under stream capture, on the
 * host build's simulation of it (backend.h: a stream marked capturing, and
 * every call capture forbids refused and counted). What each case checks:
 * nothing forbidden is called; an allocation in a capture is graph memory,
 * never a block of the free lists nor new upstream memory (or it is refused
 * with CMR_ERROR_STREAM_CAPTURE when the resource says so); frees in and
 * after the capture free what they must; a block freed in the capture goes
 * to no other stream until its stream is out of capture; and a thousand
 * captures leave no memory behind. The real capture, on a GPU, is
 * test_capture_gpu.c. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "backend.h"
#include "stream_ends.h"
#include "stream_list.h"
#include "test_util.h"

enum { KiB = 1024, MiB = 1024 * 1024, launches = 1000 };

/* Each stack's allocations of `block` bytes come from its suballocator
 * (fixed_size's blocks are 64 KiB). */
static const char *const serving[] = {
    "pool(system, initial_pool_size=1MiB)",
    "arena(system, arena_size=4MiB)",
    "fixed_size(system, block_size=64KiB)",
    "binning(system, min_size_exponent=12, max_size_exponent=16)",
    "statistics(pool(system, initial_pool_size=1MiB))",
    "limiting(arena(system, arena_size=4MiB), allocation_limit=8MiB)",
    "aligned(pool(system, initial_pool_size=1MiB), allocation_alignment=4096, alignment_threshold=0)",
    "logging(pool(system, initial_pool_size=1MiB), filename=\"/dev/null\")",
    "tracking(fixed_size(system, block_size=64KiB))",
    "thread_safe(arena(system, arena_size=4MiB))",
};
enum { serving_count = sizeof serving / sizeof serving[0], block = 64 * KiB };

static const char *const refusing[] = {
    "pool(system, initial_pool_size=1MiB, capture=refuse)",
    "arena(system, arena_size=4MiB, capture=refuse)",
    "fixed_size(system, block_size=64KiB, capture=refuse)",
    "statistics(pool(system, initial_pool_size=1MiB, capture=refuse))",
};
enum { refusing_count = sizeof refusing / sizeof refusing[0] };

static cmr_stack *stack;
static cmr_resource_ref ref;
static cmr_stream capturing, other;
/* A stream cmr did not make (PyTorch's, CuPy's): its id takes a driver
 * call, which capture forbids (the host build's token is its value). */
static const cmr_stream made_elsewhere = (cmr_stream)(uintptr_t)0x7000;

static void make(const char *expression) {
  ck_assert_ok(cmr_stack_parse(expression, &stack));
  ck_assert_ok(cmr_stack_ref(stack, &ref));
  ck_assert_ok(cmr_stream_create(&capturing));
  ck_assert_ok(cmr_stream_create(&other));
}

static void unmake(void) {
  cmr_backend_host_mark_capturing(capturing, false);
  cmr_backend_host_mark_capturing(made_elsewhere, false);
  cmr_test_destroy(stack, capturing, other);
}

static size_t graph_blocks(void) {
  size_t blocks = 0, bytes = 0;
  cmr_backend_host_graph_memory(&blocks, &bytes);
  return blocks;
}

/* What a case found when it began: the forbidden calls made so far, the
 * graph memory, and the lists marked capturing (process-wide: what earlier
 * cases of the process left). */
typedef struct baseline {
  unsigned long violations;
  size_t graph, marked;
} baseline;

static baseline counted(void) {
  return (baseline){cmr_backend_host_capture_violations(), graph_blocks(), atomic_load(&cmr_capturing_lists)};
}

/* The end of a case: the graph memory it began with, no call capture
 * forbids since it began, and, the stack and streams gone, none of their
 * lists left marked capturing. */
static void unmake_after(baseline was) {
  ck_assert_uint_eq(graph_blocks(), was.graph);
  ck_assert_uint_eq(cmr_backend_host_capture_violations(), was.violations);
  unmake();
  ck_assert_uint_eq(atomic_load(&cmr_capturing_lists), was.marked);
}

static void *take(size_t bytes, cmr_stream stream) {
  void *ptr = NULL;
  ck_assert_ok(cmr_allocate(ref, bytes, stream, &ptr));
  ck_assert_ptr_nonnull(ptr);
  return ptr;
}

static void give(void *ptr, size_t bytes, cmr_stream stream) { ck_assert_ok(cmr_deallocate(ref, ptr, bytes, stream)); }

static cmr_backend_host_counts counts(void) {
  cmr_backend_host_counts now;
  cmr_backend_host_counts_read(&now);
  return now;
}

/* An allocation in the capture is graph memory; its free, in the capture,
 * gives it back; a block allocated before and freed in the capture stays
 * away from another stream while the capture lasts, and is the capturing
 * stream's again after it. No ordering call is made in the capture. */
START_TEST(capture_is_served_from_graph_memory) {
  make(serving[_i]);
  baseline was = counted();
  void *before = take(block, capturing);
  cmr_backend_host_mark_capturing(capturing, true);
  cmr_backend_host_counts at_start = counts();

  void *inside = take(block, capturing);
  ck_assert_ptr_ne(inside, before);
  ck_assert_uint_eq(graph_blocks(), was.graph + 1);
  give(before, block, capturing); /* allocated before the capture */
  void *elsewhere = take(block, other);
  ck_assert_ptr_ne(elsewhere, before); /* the capturing stream's list is out of other's reach */
  give(inside, block, capturing);
  ck_assert_uint_eq(graph_blocks(), was.graph);
  give(elsewhere, block, other);

  cmr_backend_host_counts at_end = counts();
  ck_assert_uint_eq(at_end.event_records, at_start.event_records);
  ck_assert_uint_eq(at_end.device_synchronizes, at_start.device_synchronizes);
  ck_assert_uint_eq(at_end.event_synchronizes, at_start.event_synchronizes);
  ck_assert_uint_eq(cmr_backend_host_capture_violations(), was.violations);

  cmr_backend_host_mark_capturing(capturing, false);
  void *after = take(block, capturing);
  ck_assert_uint_eq(graph_blocks(), was.graph); /* out of capture: the lists again */
  give(after, block, capturing);
  unmake_after(was);
}
END_TEST

/* Captured a thousand times, with the stream used out of capture between
 * the captures, allocations and frees inside each leave no graph memory
 * behind and make no forbidden call. */
START_TEST(a_thousand_captures_leave_nothing) {
  make(serving[_i]);
  baseline was = counted();
  for (int launch = 0; launch < launches; ++launch) {
    cmr_backend_host_mark_capturing(capturing, true);
    void *a = take(block, capturing), *b = take(block / 2, capturing);
    give(a, block, capturing);
    give(b, block / 2, capturing);
    cmr_backend_host_mark_capturing(capturing, false);
    give(take(block, capturing), block, capturing); /* the stream out of capture, between launches */
  }
  unmake_after(was);
}
END_TEST

/* A block allocated in a capture and not freed in it: graph memory the
 * graph keeps. */
static void *kept_by_a_capture(void) {
  size_t graph = graph_blocks();
  cmr_backend_host_mark_capturing(capturing, true);
  void *kept = take(block, capturing);
  cmr_backend_host_mark_capturing(capturing, false);
  ck_assert_uint_eq(graph_blocks(), graph + 1);
  return kept;
}

/* Graph memory a capture left allocated is freed after the capture, on
 * another stream; a free of it with another size frees nothing. */
START_TEST(graph_memory_is_freed_after_the_capture) {
  make(serving[_i]);
  baseline was = counted();
  void *kept = kept_by_a_capture();
  /* binning routes the other size to another bin, which never handed it out */
  cmr_status wrong = cmr_deallocate(ref, kept, block / 2, other);
  ck_assert(wrong == CMR_ERROR_INVALID_ARGUMENT || wrong == CMR_ERROR_UNKNOWN_POINTER);
  ck_assert_uint_eq(graph_blocks(), was.graph + 1);
  give(kept, block, other);
  unmake_after(was);
}
END_TEST

/* Graph memory a capture left allocated exists only once its graph has
 * launched: freed while the graph never launched (the driver finds
 * nothing there), the free succeeds and the resource forgets the block, so
 * it is not counted as held for ever; a second free of it is refused. */
START_TEST(the_output_of_a_graph_never_launched_is_forgotten) {
  make(serving[_i]);
  baseline was = counted();
  void *kept = kept_by_a_capture();
  cmr_backend_host_graphs_never_launched(true);
  cmr_status freed = cmr_deallocate(ref, kept, block, other);
  cmr_backend_host_graphs_never_launched(false);
  ck_assert_msg(freed == CMR_SUCCESS, "%s", cmr_last_error_message());
  ck_assert_uint_eq(graph_blocks(), was.graph);
  cmr_status again = cmr_deallocate(ref, kept, block, other);
  ck_assert(again == CMR_ERROR_INVALID_ARGUMENT || again == CMR_ERROR_UNKNOWN_POINTER);
  unmake_after(was);
}
END_TEST

/* capture = refuse: CMR_ERROR_STREAM_CAPTURE, with a message; frees of
 * memory from before the capture are served; another stream is served. */
START_TEST(refusing_resources_refuse_in_a_capture) {
  make(refusing[_i]);
  unsigned long violations = cmr_backend_host_capture_violations();
  void *before = take(block, capturing);
  cmr_backend_host_mark_capturing(capturing, true);
  void *ptr = (void *)1;
  ck_assert_status(cmr_allocate(ref, block, capturing, &ptr), CMR_ERROR_STREAM_CAPTURE);
  ck_assert_message_has("capturing a graph");
  ck_assert_message_has("capture = \"refuse\"");
  give(before, block, capturing);
  give(take(block, other), block, other);
  cmr_backend_host_mark_capturing(capturing, false);
  give(take(block, capturing), block, capturing);
  ck_assert_uint_eq(cmr_backend_host_capture_violations(), violations);
  unmake();
}
END_TEST

/* A list whose reuse needs a device synchronization (freed into before any
 * stream shared it) is left alone while a capture is under way: another
 * stream grows the pool instead of synchronizing the device. */
START_TEST(no_device_synchronization_while_a_stream_captures) {
  make("pool(system, initial_pool_size=0)");
  unsigned long violations = cmr_backend_host_capture_violations();
  cmr_stream third = NULL;
  ck_assert_ok(cmr_stream_create(&third));
  void *first = take(block, other);
  give(first, block, other); /* other's list: unordered, never shared */
  cmr_backend_host_mark_capturing(capturing, true);
  give(take(block, capturing), block, capturing); /* the capture is seen */
  cmr_backend_host_counts at_start = counts();
  void *taken = take(block, third);
  ck_assert_ptr_ne(taken, first);
  ck_assert_uint_eq(counts().device_synchronizes, at_start.device_synchronizes);
  ck_assert_uint_eq(cmr_backend_host_capture_violations(), violations);
  give(taken, block, third);
  cmr_backend_host_mark_capturing(capturing, false);
  give(take(block, capturing), block, capturing); /* out of capture */
  ck_assert_uint_eq(cmr_backend_host_capture_violations(), violations);
  ck_assert_ok(cmr_stream_destroy(third));
  unmake();
}
END_TEST

/* Graph memory that cannot be had (more than any host) is out of memory at
 * once: the pool does not gather the other streams' blocks for it, which
 * would make the capturing stream wait for their events. */
START_TEST(an_allocation_too_large_for_graph_memory_gathers_nothing) {
  make("pool(system, initial_pool_size=0)");
  unsigned long violations = cmr_backend_host_capture_violations();
  void *a = take(block, other), *b = take(block, capturing);
  give(a, block, capturing); /* each stream's list now holds a block of the other's */
  give(b, block, other);
  give(take(block, other), block, other);
  cmr_backend_host_mark_capturing(capturing, true);
  cmr_backend_host_counts at_start = counts();
  void *ptr = NULL;
  ck_assert_status(cmr_allocate(ref, (size_t)1 << 60, capturing, &ptr), CMR_ERROR_OUT_OF_MEMORY);
  ck_assert_message_has("cudaMallocAsync");
  ck_assert_uint_eq(counts().stream_waits, at_start.stream_waits);
  ck_assert_uint_eq(cmr_backend_host_capture_violations(), violations);
  unmake();
}
END_TEST

/* One thread captures (allocating and freeing graph memory, freeing blocks
 * it allocated before) while another works on its own stream through the
 * same resource: neither makes a forbidden call, and nothing is lost. */
typedef struct worker {
  cmr_stream stream;
  int rounds;
} worker;

static void *work_out_of_capture(void *arg) {
  const worker *w = arg;
  for (int i = 0; i < w->rounds; ++i) {
    void *a = NULL, *b = NULL;
    if (cmr_allocate(ref, block, w->stream, &a) != CMR_SUCCESS) return (void *)1;
    if (cmr_allocate(ref, block / 4, w->stream, &b) != CMR_SUCCESS) return (void *)1;
    if (cmr_deallocate(ref, a, block, w->stream) != CMR_SUCCESS) return (void *)1;
    if (cmr_deallocate(ref, b, block / 4, w->stream) != CMR_SUCCESS) return (void *)1;
  }
  return NULL;
}

START_TEST(a_capture_beside_another_thread) {
  make(serving[_i]);
  baseline was = counted();
  enum { rounds = 2000, earlier = 8 };
  void *before[earlier];
  for (int i = 0; i < earlier; ++i) before[i] = take(block, capturing);
  worker other_thread = {other, rounds};
  pthread_t thread;
  ck_assert_int_eq(pthread_create(&thread, NULL, work_out_of_capture, &other_thread), 0);
  cmr_backend_host_mark_capturing(capturing, true);
  for (int i = 0; i < rounds; ++i) {
    void *inside = take(block, capturing);
    if (i < earlier) give(before[i], block, capturing);
    give(inside, block, capturing);
  }
  cmr_backend_host_mark_capturing(capturing, false);
  void *result = (void *)1;
  ck_assert_int_eq(pthread_join(thread, &result), 0);
  ck_assert_ptr_null(result);
  give(take(block, capturing), block, capturing);
  unmake_after(was);
}
END_TEST

/* The host simulation itself: a marked stream refuses what capture forbids. */
START_TEST(the_simulation_refuses_what_capture_forbids) {
  cmr_stream stream = NULL;
  ck_assert_ok(cmr_stream_create(&stream));
  unsigned long violations = cmr_backend_host_capture_violations();
  bool is = true;
  ck_assert_ok(cmr_backend_stream_capturing(stream, &is));
  ck_assert(!is);
  cmr_backend_host_mark_capturing(stream, true);
  ck_assert_ok(cmr_backend_stream_capturing(stream, &is));
  ck_assert(is);
  cmr_backend_event event = NULL;
  ck_assert_ok(cmr_backend_event_create(&event));
  ck_assert_status(cmr_backend_event_record(event, stream), CMR_ERROR_STREAM_CAPTURE);
  ck_assert_message_has("cudaEventRecord");
  ck_assert_status(cmr_backend_stream_wait_event(stream, event), CMR_ERROR_STREAM_CAPTURE);
  ck_assert_status(cmr_backend_device_synchronize(), CMR_ERROR_STREAM_CAPTURE);
  ck_assert_status(cmr_backend_stream_synchronize(stream), CMR_ERROR_STREAM_CAPTURE);
  ck_assert_ok(cmr_backend_stream_synchronize(NULL)); /* another stream */
  ck_assert_uint_eq(cmr_backend_host_capture_violations(), violations + 4);
  cmr_backend_host_mark_capturing(stream, false);
  ck_assert_ok(cmr_backend_event_record(event, stream));
  ck_assert_ok(cmr_backend_device_synchronize());
  cmr_backend_event_destroy(event);
  ck_assert_ok(cmr_stream_destroy(stream));
}
END_TEST

/* PyTorch's way through cmr (torch.cuda.graph over cmr_torch_allocator),
 * for each serving stack: the per-device table's resource, reached by
 * cmr_pluggable_allocate and _deallocate; tensors on the default stream
 * and a warm-up on a side stream before the capture; then a stream made
 * elsewhere that cmr has never seen, marked capturing, whose first
 * allocations come in the capture: one freed there, one kept and freed
 * after it; and a tensor from before the capture dropped in it. Nothing capture forbids is called, and the capture's memory is
 * graph memory. */
START_TEST(pytorchs_way_through_the_per_device_table) {
  make(serving[_i]);
  ck_assert_ok(cmr_set_per_device_resource_ref(0, ref));
  void *on_default = cmr_pluggable_allocate(block, 0, CMR_DEFAULT_STREAM);
  void *dropped_in_capture = cmr_pluggable_allocate(block, 0, CMR_DEFAULT_STREAM);
  ck_assert_msg(on_default != NULL && dropped_in_capture != NULL, "%s", cmr_last_error_message());
  for (int step = 0; step < 3; ++step) {
    void *warm = cmr_pluggable_allocate(block, 0, other);
    ck_assert_ptr_nonnull(warm);
    cmr_pluggable_deallocate(warm, block, 0, other);
  }
  baseline was = counted();
  cmr_backend_host_mark_capturing(made_elsewhere, true);
  void *freed = cmr_pluggable_allocate(block, 0, made_elsewhere);
  void *kept = cmr_pluggable_allocate(block, 0, made_elsewhere);
  ck_assert_msg(freed != NULL && kept != NULL, "%s", cmr_last_error_message());
  ck_assert_uint_eq(graph_blocks(), was.graph + 2);
  cmr_pluggable_deallocate(freed, block, 0, made_elsewhere);
  /* A tensor from before the capture dropped in it: PyTorch frees it on
   * the stream it was allocated on, which is not capturing. */
  cmr_pluggable_deallocate(dropped_in_capture, block, 0, CMR_DEFAULT_STREAM);
  ck_assert_uint_eq(cmr_backend_host_capture_violations(), was.violations);
  cmr_backend_host_mark_capturing(made_elsewhere, false);
  cmr_pluggable_deallocate(kept, block, 0, other);
  cmr_pluggable_deallocate(on_default, block, 0, CMR_DEFAULT_STREAM);
  ck_assert_ok(cmr_reset_per_device_resource_ref(0));
  unmake_after(was);
}
END_TEST

/* A stream made elsewhere cannot be named inside a capture (its id is a
 * driver call capture forbids): its frees there of blocks from before the
 * capture go to a list named by the capture, out of other streams' reach,
 * and the stream's next call out of capture orders them after its work and
 * gives them to the others. Over many captures, each with such a free, the
 * lists do not pile up, nothing forbidden is called, and the blocks are
 * reused: held memory stays what one capture needs. */
START_TEST(a_stream_made_elsewhere_frees_into_its_captures_list) {
  enum { captures = 200 };
  make(serving[_i]);
  baseline was = counted();
  size_t records = 0;
  for (int capture = 0; capture < captures; ++capture) {
    void *before = take(block, made_elsewhere);
    cmr_backend_host_mark_capturing(made_elsewhere, true);
    void *inside = take(block, made_elsewhere);
    give(before, block, made_elsewhere);
    void *by_other = take(block, other);
    ck_assert_ptr_ne(by_other, before); /* the capture's list is out of other streams' reach */
    give(inside, block, made_elsewhere);
    give(by_other, block, other);
    ck_assert_uint_eq(cmr_backend_host_capture_violations(), was.violations);
    cmr_backend_host_mark_capturing(made_elsewhere, false);
    give(take(block, made_elsewhere), block, made_elsewhere); /* seen out of capture */
    if (capture == 1) records = cmr_stream_ends_list_records();
  }
  ck_assert_uint_le(cmr_stream_ends_list_records(), records + 1);
  unmake_after(was);
}
END_TEST

/* The end of a case whose captures' lists have all ended and been
 * recycled: none is left marked capturing, and of the list records made
 * since `records` at most one stays (the shared list's, which their blocks
 * went to) beside the spares kept (cmr_spares_kept); the rest are let go. */
static void unmake_after_lists_ended(baseline was, size_t records) {
  ck_assert_uint_eq(atomic_load(&cmr_capturing_lists), was.marked);
  ck_assert_uint_le(cmr_stream_ends_list_records(), records + 1 + cmr_spares_kept);
  unmake_after(was);
}

/* A stream made elsewhere captured again and again, never used out of
 * capture between (as PyTorch's capture stream, graph after graph): each
 * capture's list ends when the next capture begins, so the lists stay as
 * cautious as one capture makes them, not as many, and do not pile up. */
START_TEST(a_stream_captured_again_ends_its_earlier_captures_lists) {
  enum { captures = 100 };
  make("pool(system, initial_pool_size=1MiB)");
  baseline was = counted();
  size_t records = cmr_stream_ends_list_records();
  for (int capture = 0; capture < captures; ++capture) {
    cmr_backend_host_mark_capturing(made_elsewhere, false); /* the last capture ends, the next begins */
    cmr_backend_host_mark_capturing(made_elsewhere, true);
    give(take(KiB, made_elsewhere), KiB, made_elsewhere);
    ck_assert_uint_eq(atomic_load(&cmr_capturing_lists), was.marked + 1);
  }
  ck_assert_uint_le(cmr_stream_ends_list_records(), records + 1 + cmr_spares_kept); /* none piled up */
  cmr_backend_host_mark_capturing(made_elsewhere, false);
  give(take(KiB, made_elsewhere), KiB, made_elsewhere); /* out of capture: the last capture's list ends */
  unmake_after_lists_ended(was, records);
}
END_TEST

/* More streams made elsewhere capture at once than the lists keep slots
 * for (cmr_capture_streams_kept): each frees a block from before its
 * capture into its capture's list, and each list still ends at its
 * stream's next call out of capture, the lists back to those before. */
START_TEST(many_streams_made_elsewhere_capture_at_once) {
  enum { streams = 12 };
  make("pool(system, initial_pool_size=1MiB)");
  baseline was = counted();
  cmr_stream elsewhere[streams];
  void *before[streams];
  for (int i = 0; i < streams; ++i) {
    elsewhere[i] = (cmr_stream)((uintptr_t)made_elsewhere + 16 * (uintptr_t)(i + 1));
    give(take(KiB, elsewhere[i]), KiB, elsewhere[i]); /* each stream's own list, before */
    before[i] = take(KiB, elsewhere[i]);
  }
  size_t records = cmr_stream_ends_list_records();
  for (int i = 0; i < streams; ++i) cmr_backend_host_mark_capturing(elsewhere[i], true);
  for (int i = 0; i < streams; ++i) give(before[i], KiB, elsewhere[i]);
  ck_assert_uint_eq(cmr_stream_ends_list_records(), records + streams); /* one list per capture */
  for (int i = 0; i < streams; ++i) cmr_backend_host_mark_capturing(elsewhere[i], false);
  for (int i = 0; i < streams; ++i) give(take(KiB, elsewhere[i]), KiB, elsewhere[i]);
  unmake_after_lists_ended(was, records);
}
END_TEST

/* The simulation itself: a stream made elsewhere is not named in a capture
 * (cudaStreamGetId is refused and counted), but its capture is, a new id
 * each time; one cmr made is named by its id all along. */
START_TEST(a_capturing_stream_is_named_without_a_forbidden_call) {
  cmr_stream made = NULL;
  ck_assert_ok(cmr_stream_create(&made));
  unsigned long violations = cmr_backend_host_capture_violations();
  uint64_t id = 0, first = 0, second = 0;
  bool of_capture = true;
  cmr_backend_host_mark_capturing(made_elsewhere, true);
  ck_assert_status(cmr_backend_stream_id(made_elsewhere, &id), CMR_ERROR_STREAM_CAPTURE);
  ck_assert_message_has("cudaStreamGetId");
  ck_assert_uint_eq(cmr_backend_host_capture_violations(), violations + 1);
  ck_assert_ok(cmr_backend_stream_id_in_capture(made_elsewhere, &first, &of_capture));
  ck_assert(of_capture);
  cmr_backend_host_mark_capturing(made_elsewhere, false);
  cmr_backend_host_mark_capturing(made_elsewhere, true);
  ck_assert_ok(cmr_backend_stream_id_in_capture(made_elsewhere, &second, &of_capture));
  ck_assert(of_capture);
  ck_assert_uint_ne(first, 0);
  ck_assert_uint_ne(second, first);
  cmr_backend_host_mark_capturing(made_elsewhere, false);
  cmr_backend_host_mark_capturing(made, true);
  ck_assert_ok(cmr_backend_stream_id_in_capture(made, &first, &of_capture));
  ck_assert(!of_capture);
  cmr_backend_host_mark_capturing(made, false);
  ck_assert_ok(cmr_backend_stream_id(made, &second));
  ck_assert_uint_eq(first, second);
  ck_assert_uint_eq(cmr_backend_host_capture_violations(), violations + 1);
  ck_assert_ok(cmr_stream_destroy(made));
}
END_TEST

/* A stream first seen in a capture gets a list made for it, and the
 * making may evict the lists unused since the last eviction: 128 streams
 * each free a block (a list of its own, unordered: frees record no event
 * in a list not shared), which evicts once at 64; the next, capturing,
 * makes the next eviction, which finds the first 64 cold with work no
 * event names. That eviction must not synchronize the device while the
 * capture is under way. */
START_TEST(a_list_made_in_a_capture_evicts_without_synchronizing) {
  enum { before = 128 };
  make("pool(system, initial_pool_size=1MiB)");
  cmr_stream streams[before];
  for (int i = 0; i < before; ++i) {
    ck_assert_ok(cmr_stream_create(&streams[i]));
    give(take(KiB, streams[i]), KiB, streams[i]);
  }
  unsigned long violations = cmr_backend_host_capture_violations();
  cmr_backend_host_mark_capturing(capturing, true);
  give(take(KiB, capturing), KiB, capturing);
  ck_assert_uint_eq(cmr_backend_host_capture_violations(), violations);
  cmr_backend_host_mark_capturing(capturing, false);
  for (int i = 0; i < before; ++i) ck_assert_ok(cmr_stream_destroy(streams[i]));
  unmake();
}
END_TEST

/* The status has its name. */
START_TEST(the_status_is_named) {
  ck_assert_str_eq(cmr_status_string(CMR_ERROR_STREAM_CAPTURE), "CMR_ERROR_STREAM_CAPTURE");
}
END_TEST

static void capture_cases(Suite *suite) {
  TCase *serves = cmr_test_loop_case(suite, "serving", NULL, NULL, serving_count, capture_is_served_from_graph_memory,
                                     a_thousand_captures_leave_nothing, graph_memory_is_freed_after_the_capture,
                                     the_output_of_a_graph_never_launched_is_forgotten, a_capture_beside_another_thread,
                                     pytorchs_way_through_the_per_device_table,
                                     a_stream_made_elsewhere_frees_into_its_captures_list);
  tcase_set_timeout(serves, 120);
  cmr_test_loop_case(suite, "refusing", NULL, NULL, refusing_count, refusing_resources_refuse_in_a_capture);
  cmr_test_case(suite, "ordering", NULL, NULL, no_device_synchronization_while_a_stream_captures,
                an_allocation_too_large_for_graph_memory_gathers_nothing, the_simulation_refuses_what_capture_forbids,
                a_list_made_in_a_capture_evicts_without_synchronizing,
                a_capturing_stream_is_named_without_a_forbidden_call, many_streams_made_elsewhere_capture_at_once,
                a_stream_captured_again_ends_its_earlier_captures_lists, the_status_is_named);
}

int main(void) { return cmr_test_main_suite("capture", CMR_TEST_ANY_MACHINE, capture_cases); }
