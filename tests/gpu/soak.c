/* SPDX-License-Identifier: Apache-2.0 */
/* cmr-gpu-soak: many threads, each with several streams, allocating and
 * freeing at random through pool, arena and binning stacks on a real GPU.
 * Every block is filled on the device with a byte of its own (cudaMemsetAsync
 * on the stream it was allocated on) and checked before it is freed (its
 * first and last bytes copied back), and it is freed on a randomly chosen
 * stream, so blocks travel between streams' lists. Zero errors and device
 * memory back to where it started are required; exit 0 only then, 77 when
 * there is no GPU.
 *
 *   cmr-gpu-soak [--seconds S] [--threads T]      (default 9 seconds, 16 threads) */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include <cmr/cmr.h>

enum { streams_per_thread = 3, live_blocks = 48, probe = 256, max_threads = 64 };

static const char *const stacks[] = {
    "pool(cuda, initial_pool_size=1GiB)",
    "arena(cuda, arena_size=4GiB)",
    "binning(pool(cuda, initial_pool_size=1GiB), min_size_exponent=10, max_size_exponent=20)",
};

typedef struct block {
  unsigned char *ptr;
  size_t bytes;
  unsigned char pattern;
  int stream; /* the one it was filled on */
} block;

typedef struct soaker {
  cmr_resource_ref ref;
  unsigned index;
  double until;
  cmr_stream streams[streams_per_thread];
  block live[live_blocks];
  unsigned long operations, errors;
  char first_error[256];
} soaker;

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t next_random(uint64_t *state) {
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return *state;
}

static void note(soaker *s, const char *what, const char *detail) {
  if (s->errors++ == 0) snprintf(s->first_error, sizeof s->first_error, "thread %u: %s: %s", s->index, what, detail);
}

static void fill(soaker *s, block *b, uint64_t *rng) {
  b->bytes = 256 + next_random(rng) % ((1u << 20) - 256);
  b->stream = (int)(next_random(rng) % streams_per_thread);
  b->pattern = (unsigned char)(s->index * 31u + s->operations);
  cmr_status status = cmr_allocate(s->ref, b->bytes, s->streams[b->stream], (void **)&b->ptr);
  if (status != CMR_SUCCESS) {
    b->ptr = NULL;
    note(s, cmr_status_string(status), cmr_last_error_message());
    return;
  }
  cudaError_t error = cudaMemsetAsync(b->ptr, b->pattern, b->bytes, s->streams[b->stream]);
  if (error != cudaSuccess) note(s, "cudaMemsetAsync", cudaGetErrorName(error));
}

/* The first and last bytes still hold the block's pattern. */
static void check(soaker *s, const block *b) {
  unsigned char head[probe], tail[probe];
  size_t length = b->bytes < probe ? b->bytes : probe;
  cmr_stream stream = s->streams[b->stream];
  cudaError_t error = cudaMemcpyAsync(head, b->ptr, length, cudaMemcpyDeviceToHost, stream);
  if (error == cudaSuccess) {
    error = cudaMemcpyAsync(tail, b->ptr + b->bytes - length, length, cudaMemcpyDeviceToHost, stream);
  }
  if (error == cudaSuccess) error = cudaStreamSynchronize(stream);
  if (error != cudaSuccess) {
    note(s, "reading a block back", cudaGetErrorName(error));
    return;
  }
  for (size_t i = 0; i < length; ++i) {
    if (head[i] != b->pattern || tail[i] != b->pattern) {
      char detail[128];
      snprintf(detail, sizeof detail, "block %p of %zu bytes holds 0x%02x, not its 0x%02x", (void *)b->ptr, b->bytes,
               head[i] != b->pattern ? head[i] : tail[i], b->pattern);
      note(s, "overwritten", detail);
      return;
    }
  }
}

/* Freed on any of the thread's streams: its own work on it is done. */
static void release(soaker *s, block *b, uint64_t *rng) {
  check(s, b);
  cmr_stream stream = s->streams[next_random(rng) % streams_per_thread];
  cmr_status status = cmr_deallocate(s->ref, b->ptr, b->bytes, stream);
  if (status != CMR_SUCCESS) note(s, cmr_status_string(status), cmr_last_error_message());
  b->ptr = NULL;
}

static void *soak(void *arg) {
  soaker *s = arg;
  uint64_t rng = 0x9E3779B97F4A7C15u ^ (s->index + 1);
  while (now_seconds() < s->until) {
    block *b = &s->live[next_random(&rng) % live_blocks];
    if (b->ptr != NULL) {
      release(s, b, &rng);
    } else {
      fill(s, b, &rng);
    }
    s->operations++;
  }
  for (int i = 0; i < live_blocks; ++i) {
    if (s->live[i].ptr != NULL) release(s, &s->live[i], &rng);
  }
  return NULL;
}

static size_t free_device_memory(void) {
  size_t free_bytes = 0, total = 0;
  cmr_device_memory_info(&free_bytes, &total);
  return free_bytes;
}

/* Runs `threads` soakers over one stack for `seconds`; returns its errors. */
static unsigned long soak_stack(const char *expression, int threads, double seconds) {
  size_t before = free_device_memory();
  cmr_stack *stack = NULL;
  cmr_status status = cmr_stack_parse(expression, &stack);
  if (status != CMR_SUCCESS) {
    printf("%s: %s\n", expression, cmr_last_error_message());
    return 1;
  }
  static soaker soakers[max_threads];
  pthread_t ids[max_threads];
  double until = now_seconds() + seconds;
  for (int t = 0; t < threads; ++t) {
    soakers[t] = (soaker){.index = (unsigned)t, .until = until};
    cmr_stack_ref(stack, &soakers[t].ref);
    for (int k = 0; k < streams_per_thread; ++k) cmr_stream_create(&soakers[t].streams[k]);
    pthread_create(&ids[t], NULL, soak, &soakers[t]);
  }
  unsigned long operations = 0, errors = 0;
  const char *first = NULL;
  for (int t = 0; t < threads; ++t) {
    pthread_join(ids[t], NULL);
    for (int k = 0; k < streams_per_thread; ++k) cmr_stream_destroy(soakers[t].streams[k]);
    operations += soakers[t].operations;
    errors += soakers[t].errors;
    if (first == NULL && soakers[t].errors > 0) first = soakers[t].first_error;
  }
  cmr_stack_destroy(stack);
  cudaDeviceSynchronize();
  size_t after = free_device_memory();
  /* The driver's own bookkeeping may move a little; the stacks' gigabytes may not. */
  bool returned = after + ((size_t)64 << 20) >= before;
  printf("%-90s %10lu operations, %lu errors, device memory %s (%.1f MiB free before, %.1f after)%s%s\n", expression,
         operations, errors, returned ? "back" : "NOT BACK", (double)before / (1 << 20), (double)after / (1 << 20),
         first ? "; first: " : "", first ? first : "");
  return errors + (returned ? 0 : 1);
}

int main(int argc, char **argv) {
  double seconds = 9;
  int threads = 16;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--seconds") == 0) seconds = atof(argv[i + 1]);
    if (strcmp(argv[i], "--threads") == 0) threads = atoi(argv[i + 1]);
  }
  if (threads < 1 || threads > max_threads || seconds <= 0 || argc % 2 == 0) {
    fprintf(stderr, "usage: %s [--seconds S] [--threads T (1..%d)]\n", argv[0], max_threads);
    return 2;
  }
  int devices = 0;
  if (cmr_device_count(&devices) != CMR_SUCCESS || devices == 0) {
    printf("skipped: %s\n", cmr_last_error_message());
    return 77;
  }
  unsigned long failures = 0;
  int count = (int)(sizeof stacks / sizeof stacks[0]);
  for (int i = 0; i < count; ++i) failures += soak_stack(stacks[i], threads, seconds / count);
  printf("soak: %s\n", failures == 0 ? "ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}
