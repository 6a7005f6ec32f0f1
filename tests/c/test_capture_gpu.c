/* SPDX-License-Identifier: Apache-2.0 */
/* CUDA graph capture through the suballocators and the adaptors over them,
 * on a real GPU (test_capture.c checks the same rules on the host build's
 * simulation). Each stack is captured (global mode, the strictest, and
 * PyTorch's default) into a graph whose work allocates two buffers through
 * cmr, fills the first (cudaMemsetAsync), copies it to the second and on to
 * an output buffer made before the capture (cudaMemcpyAsync), frees both
 * and frees a block allocated before the capture. The capture must end
 * valid; the graph is launched 1,000 times, the output checked after each
 * launch (a new fill byte each time is not possible in a fixed graph, so
 * the output is cleared before each launch); the graph memory in use must
 * not grow from the first launch to the last and must be back once the
 * graph is gone; and the resource serves the stream as before afterwards.
 * A resource made with capture=refuse answers CMR_ERROR_STREAM_CAPTURE in
 * the capture, which stays valid. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "test_cuda.h"

enum { buffer_bytes = 256 * 1024, launches = 1000, fill = 0x5A };

/* Each stack, and whether the capture also frees a block allocated before
 * it: every suballocator takes such a free into its lists; cuda_async
 * alone would hand it to the driver as a free node of memory the graph did
 * not allocate, which is the driver's to judge, not this suite's. */
static const struct {
  const char *expression;
  bool frees_earlier_memory;
} serving[] = {
    {"pool(cuda, initial_pool_size=16MiB)", true},
    {"arena(cuda, arena_size=16MiB)", true},
    {"fixed_size(cuda, block_size=256KiB)", true},
    {"binning(cuda, min_size_exponent=16, max_size_exponent=18)", true},
    {"statistics(pool(cuda, initial_pool_size=16MiB))", true},
    {"limiting(arena(cuda, arena_size=16MiB), allocation_limit=64MiB)", true},
    {"aligned(pool(cuda, initial_pool_size=16MiB), allocation_alignment=4096, alignment_threshold=0)", true},
    {"tracking(fixed_size(cuda, block_size=256KiB))", true},
    {"thread_safe(arena(cuda, arena_size=16MiB))", true},
    {"logging(binning(pool(cuda, initial_pool_size=16MiB), min_size_exponent=16, max_size_exponent=18), "
     "filename=\"/dev/null\")",
     true},
    {"pool(cuda_async(initial_pool_size=0), initial_pool_size=16MiB)", true},
    {"cuda_async(initial_pool_size=0)", false},
    {"statistics(cuda_async(initial_pool_size=0))", false},
};
enum { serving_count = sizeof serving / sizeof serving[0] };

static size_t graph_memory_in_use(void) {
  int device = 0;
  ck_assert_cuda(cudaGetDevice(&device));
  unsigned long long used = 0;
  ck_assert_cuda(cudaDeviceGetGraphMemAttribute(device, cudaGraphMemAttrUsedMemCurrent, &used));
  return (size_t)used;
}

/* The captured work, as described above. */
static void capture_work(cmr_resource_ref ref, cmr_stream stream, void *output, void *before) {
  /* `before`, when not NULL, was allocated before the capture. */
  void *first = NULL, *second = NULL;
  ck_assert_ok(cmr_allocate(ref, buffer_bytes, stream, &first));
  ck_assert_cuda(cudaMemsetAsync(first, fill, buffer_bytes, stream));
  ck_assert_ok(cmr_allocate(ref, buffer_bytes, stream, &second));
  ck_assert_ptr_ne(first, second);
  ck_assert_cuda(cudaMemcpyAsync(second, first, buffer_bytes, cudaMemcpyDeviceToDevice, stream));
  ck_assert_ok(cmr_deallocate(ref, first, buffer_bytes, stream));
  ck_assert_cuda(cudaMemcpyAsync(output, second, buffer_bytes, cudaMemcpyDeviceToDevice, stream));
  ck_assert_ok(cmr_deallocate(ref, second, buffer_bytes, stream));
  if (before != NULL) ck_assert_ok(cmr_deallocate(ref, before, buffer_bytes, stream));
}

static void check_output(const void *output, unsigned char *host, int launch, const char *expression) {
  ck_assert_cuda(cudaMemcpy(host, output, buffer_bytes, cudaMemcpyDeviceToHost));
  size_t wrong = 0;
  for (size_t i = 0; i < buffer_bytes; ++i) wrong += host[i] != fill;
  ck_assert_msg(wrong == 0, "%s: launch %d: %zu of %d output bytes are not the filled ones", expression, launch, wrong,
                buffer_bytes);
}

/* `graph` instantiated and launched once on `stream`; `kept`, filled by
 * it, is checked (`what` names it in a failure). */
static cudaGraphExec_t launched_once(cudaGraph_t graph, cmr_stream stream, const void *kept, const char *what) {
  cudaGraphExec_t exec = NULL;
  ck_assert_cuda(cudaGraphInstantiate(&exec, graph, 0));
  ck_assert_cuda(cudaGraphLaunch(exec, stream));
  ck_assert_cuda(cudaStreamSynchronize(stream));
  unsigned char *host = malloc(buffer_bytes);
  ck_assert_ptr_nonnull(host);
  check_output(kept, host, 0, what);
  free(host);
  return exec;
}

START_TEST(a_captured_graph_allocates_and_frees_through_cmr) {
  const char *expression = serving[_i].expression;
  cmr_resource_ref ref;
  cmr_stack *stack = cmr_test_stack(expression, &ref);
  cmr_stream stream = cmr_test_stream();
  void *output = NULL, *before = NULL;
  ck_assert_cuda(cudaMalloc(&output, buffer_bytes));
  ck_assert_ok(cmr_allocate(ref, buffer_bytes, stream, &before));
  ck_assert_cuda(cudaStreamSynchronize(stream));
  ck_assert_cuda(cudaDeviceGraphMemTrim(0));
  size_t graph_memory_at_start = graph_memory_in_use();

  cudaGraph_t graph = NULL;
  ck_assert_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  capture_work(ref, stream, output, serving[_i].frees_earlier_memory ? before : NULL);
  ck_assert_cuda(cudaStreamEndCapture(stream, &graph)); /* valid: nothing cmr did broke it */
  cudaGraphExec_t exec = NULL;
  ck_assert_cuda(cudaGraphInstantiate(&exec, graph, 0));

  unsigned char *host = malloc(buffer_bytes);
  ck_assert_ptr_nonnull(host);
  size_t after_first = 0;
  for (int launch = 0; launch < launches; ++launch) {
    ck_assert_cuda(cudaMemsetAsync(output, 0, buffer_bytes, stream));
    ck_assert_cuda(cudaGraphLaunch(exec, stream));
    ck_assert_cuda(cudaStreamSynchronize(stream));
    check_output(output, host, launch, expression);
    if (launch == 0) after_first = graph_memory_in_use();
  }
  ck_assert_msg(graph_memory_in_use() == after_first, "%s: graph memory grew from %zu to %zu bytes over %d launches",
                expression, after_first, graph_memory_in_use(), launches);
  free(host);
  ck_assert_cuda(cudaGraphExecDestroy(exec));
  ck_assert_cuda(cudaGraphDestroy(graph));
  ck_assert_cuda(cudaDeviceSynchronize());
  ck_assert_cuda(cudaDeviceGraphMemTrim(0));
  ck_assert_msg(graph_memory_in_use() == graph_memory_at_start, "%s: %zu bytes of graph memory left, %zu at the start",
                expression, graph_memory_in_use(), graph_memory_at_start);

  /* Out of capture the stream is served by the resource as before. */
  if (!serving[_i].frees_earlier_memory) ck_assert_ok(cmr_deallocate(ref, before, buffer_bytes, stream));
  void *after = NULL;
  ck_assert_ok(cmr_allocate(ref, buffer_bytes, stream, &after));
  ck_assert_cuda(cudaMemsetAsync(after, 1, buffer_bytes, stream));
  ck_assert_ok(cmr_deallocate(ref, after, buffer_bytes, stream));
  ck_assert_cuda(cudaStreamSynchronize(stream));
  ck_assert_cuda(cudaGetLastError());
  ck_assert_cuda(cudaFree(output));
  cmr_test_destroy(stack, stream);
}
END_TEST

/* Graph memory a capture leaves allocated (an output the graph keeps) is
 * freed through cmr after the capture, on another stream. */
START_TEST(graph_memory_kept_by_the_capture_is_freed_after_it) {
  cmr_resource_ref ref;
  cmr_stack *stack = cmr_test_stack("pool(cuda, initial_pool_size=16MiB)", &ref);
  cmr_stream stream = cmr_test_stream(), other = cmr_test_stream();
  void *kept = NULL;
  cudaGraph_t graph = NULL;
  ck_assert_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  ck_assert_ok(cmr_allocate(ref, buffer_bytes, stream, &kept));
  ck_assert_cuda(cudaMemsetAsync(kept, fill, buffer_bytes, stream));
  ck_assert_cuda(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = launched_once(graph, stream, kept, "kept");
  ck_assert_ok(cmr_deallocate(ref, kept, buffer_bytes, other));
  ck_assert_cuda(cudaStreamSynchronize(other));
  ck_assert_cuda(cudaGraphExecDestroy(exec));
  ck_assert_cuda(cudaGraphDestroy(graph));
  cmr_test_destroy(stack, stream, other);
}
END_TEST

/* PyTorch's way through cmr (torch.cuda.graph over cmr_torch_allocator):
 * the per-device table's resource, reached by cmr_pluggable_allocate and
 * cmr_pluggable_deallocate on a stream made elsewhere, which cmr first sees
 * in the capture (global mode), after work on another such stream. The
 * graph keeps one buffer and frees one in the capture; launched, it fills
 * the kept one. */
START_TEST(a_stream_made_elsewhere_is_served_in_its_first_capture) {
  cmr_resource_ref ref;
  cmr_stack *stack = cmr_test_stack("statistics(pool(cuda, initial_pool_size=16MiB))", &ref);
  ck_assert_ok(cmr_set_per_device_resource_ref(0, ref));
  cudaStream_t side = NULL, stream = NULL;
  ck_assert_cuda(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  ck_assert_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  void *warm = cmr_pluggable_allocate(buffer_bytes, 0, side);
  ck_assert_ptr_nonnull(warm);
  cmr_pluggable_deallocate(warm, buffer_bytes, 0, side);
  ck_assert_cuda(cudaDeviceSynchronize());

  cudaGraph_t graph = NULL;
  ck_assert_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  void *freed = cmr_pluggable_allocate(buffer_bytes, 0, stream);
  ck_assert_msg(freed != NULL, "%s", cmr_last_error_message());
  ck_assert_cuda(cudaMemsetAsync(freed, fill, buffer_bytes, stream));
  void *kept = cmr_pluggable_allocate(buffer_bytes, 0, stream);
  ck_assert_msg(kept != NULL, "%s", cmr_last_error_message());
  ck_assert_cuda(cudaMemcpyAsync(kept, freed, buffer_bytes, cudaMemcpyDeviceToDevice, stream));
  cmr_pluggable_deallocate(freed, buffer_bytes, 0, stream);
  ck_assert_cuda(cudaStreamEndCapture(stream, &graph)); /* valid: nothing cmr did broke it */
  cudaGraphExec_t exec = launched_once(graph, stream, kept, "kept through the per-device table");
  cmr_pluggable_deallocate(kept, buffer_bytes, 0, side);
  ck_assert_cuda(cudaStreamSynchronize(side));
  ck_assert_cuda(cudaGraphExecDestroy(exec));
  ck_assert_cuda(cudaGraphDestroy(graph));
  ck_assert_ok(cmr_reset_per_device_resource_ref(0));
  ck_assert_cuda(cudaStreamDestroy(stream));
  ck_assert_cuda(cudaStreamDestroy(side));
  cmr_test_destroy(stack);
}
END_TEST

/* Refused in a capture, each with its reason, and the capture stays valid:
 * suballocators made with capture=refuse; one over host-accessible memory
 * (graph memory is device memory only); the plain leaves, whose cudaMalloc,
 * cudaMallocManaged and cudaMallocHost would break the capture. A block
 * allocated before the capture is freed in it all the same (the leaves'
 * frees, which synchronize, are refused there too and succeed after). */
START_TEST(a_refusing_resource_leaves_the_capture_valid) {
  static const struct {
    const char *expression, *reason;
    bool frees_in_capture;
  } refusing[] = {
      {"pool(cuda, initial_pool_size=16MiB, capture=refuse)", "capture = \"refuse\"", true},
      {"arena(cuda, arena_size=16MiB, capture=refuse)", "capture = \"refuse\"", true},
      {"fixed_size(cuda, block_size=256KiB, capture=refuse)", "capture = \"refuse\"", true},
      {"pool(managed, initial_pool_size=16MiB)", "host-accessible", true},
      {"cuda", "synchronous CUDA allocation", false},
      {"managed", "synchronous CUDA allocation", false},
      {"pinned_host", "synchronous CUDA allocation", false},
  };
  for (size_t i = 0; i < sizeof refusing / sizeof refusing[0]; ++i) {
    cmr_resource_ref ref;
    cmr_stack *stack = cmr_test_stack(refusing[i].expression, &ref);
    cmr_stream stream = cmr_test_stream();
    void *before = NULL, *ptr = NULL;
    ck_assert_ok(cmr_allocate(ref, buffer_bytes, stream, &before));
    cudaGraph_t graph = NULL;
    ck_assert_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    ck_assert_status(cmr_allocate(ref, buffer_bytes, stream, &ptr), CMR_ERROR_STREAM_CAPTURE);
    ck_assert_message_has(refusing[i].reason);
    if (refusing[i].frees_in_capture) {
      ck_assert_ok(cmr_deallocate(ref, before, buffer_bytes, stream));
    } else {
      ck_assert_status(cmr_deallocate(ref, before, buffer_bytes, stream), CMR_ERROR_STREAM_CAPTURE);
    }
    ck_assert_cuda(cudaStreamEndCapture(stream, &graph)); /* valid: nothing broke it */
    ck_assert_cuda(cudaGraphDestroy(graph));
    if (!refusing[i].frees_in_capture) ck_assert_ok(cmr_deallocate(ref, before, buffer_bytes, stream));
    ck_assert_ok(cmr_allocate(ref, buffer_bytes, stream, &ptr));
    ck_assert_ok(cmr_deallocate(ref, ptr, buffer_bytes, stream));
    cmr_test_destroy(stack, stream);
  }
}
END_TEST

static void capture_gpu_cases(Suite *suite) {
  TCase *graphs =
      cmr_test_loop_case(suite, "graphs", NULL, NULL, serving_count, a_captured_graph_allocates_and_frees_through_cmr);
  cmr_test_add(graphs, 1, graph_memory_kept_by_the_capture_is_freed_after_it,
               a_stream_made_elsewhere_is_served_in_its_first_capture, a_refusing_resource_leaves_the_capture_valid);
  tcase_set_timeout(graphs, 240);
}

int main(void) { return cmr_test_main_suite("capture_gpu", CMR_TEST_NEEDS_DEVICE, capture_gpu_cases); }
