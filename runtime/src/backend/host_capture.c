/* SPDX-License-Identifier: Apache-2.0 */
/* The host build's simulation of stream capture and of graph memory
 * (backend.h, host_capture.h): streams a test marks capturing, the calls
 * capture forbids refused and counted, and graph memory as counted host
 * memory. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "host_capture.h"
#include "lock.h"

#if CMR_WITH_CUDA
#error "host_capture.c belongs to the host build (CMR_WITH_CUDA=0)"
#endif

enum { cmr_host_capturing_most = 64 };

static struct {
  pthread_mutex_t lock;
  cmr_stream streams[cmr_host_capturing_most]; /* lock held; their count is cmr_host_capturing_streams */
  uint64_t sequences[cmr_host_capturing_most]; /* each capture's id, as cudaStreamGetCaptureInfo's */
  uint64_t last_sequence;
  _Atomic unsigned long violations;
  _Atomic size_t graph_blocks, graph_bytes;
  atomic_bool never_launched; /* cmr_backend_host_graphs_never_launched */
} cmr_host_capture = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Marked streams: written with the lock held, read without it. */
_Atomic size_t cmr_host_capturing_streams;

/* The slot of `stream`, or cmr_host_capturing_most. Lock held. */
static size_t cmr_host_capture_slot(cmr_stream stream) {
  size_t count = atomic_load(&cmr_host_capturing_streams), i = 0;
  while (i < count && cmr_host_capture.streams[i] != stream) ++i;
  return i < count ? i : cmr_host_capturing_most;
}

void cmr_backend_host_mark_capturing(cmr_stream stream, bool capturing) {
  cmr_mutex_lock(&cmr_host_capture.lock);
  size_t slot = cmr_host_capture_slot(stream), count = atomic_load(&cmr_host_capturing_streams);
  if (capturing && slot == cmr_host_capturing_most) {
    if (count < cmr_host_capturing_most) {
      cmr_host_capture.streams[count] = stream;
      cmr_host_capture.sequences[count] = ++cmr_host_capture.last_sequence;
      atomic_store(&cmr_host_capturing_streams, count + 1);
    } else {
      atomic_fetch_add(&cmr_host_capture.violations, 1);
    }
  } else if (!capturing && slot != cmr_host_capturing_most) {
    cmr_host_capture.streams[slot] = cmr_host_capture.streams[count - 1];
    cmr_host_capture.sequences[slot] = cmr_host_capture.sequences[count - 1];
    atomic_store(&cmr_host_capturing_streams, count - 1);
  }
  cmr_mutex_unlock(&cmr_host_capture.lock);
}

unsigned long cmr_backend_host_capture_violations(void) { return atomic_load(&cmr_host_capture.violations); }

/* Out of line: the path of every allocation sees no stream marked. */
bool cmr_host_stream_in_table(cmr_stream stream) {
  cmr_mutex_lock(&cmr_host_capture.lock);
  bool marked = cmr_host_capture_slot(stream) != cmr_host_capturing_most;
  cmr_mutex_unlock(&cmr_host_capture.lock);
  return marked;
}

uint64_t cmr_host_capture_sequence(cmr_stream stream) {
  cmr_mutex_lock(&cmr_host_capture.lock);
  size_t slot = cmr_host_capture_slot(stream);
  uint64_t sequence = slot == cmr_host_capturing_most ? 0 : cmr_host_capture.sequences[slot];
  cmr_mutex_unlock(&cmr_host_capture.lock);
  return sequence;
}

static inline bool cmr_host_stream_marked(cmr_stream stream) {
  return atomic_load_explicit(&cmr_host_capturing_streams, memory_order_acquire) != 0 &&
         cmr_host_stream_in_table(stream);
}

cmr_status cmr_host_capture_forbids(cmr_host_capture_scope scope, cmr_stream stream, const char *call) {
  bool forbidden =
      scope == CMR_HOST_CAPTURE_ANY ? atomic_load(&cmr_host_capturing_streams) > 0 : cmr_host_stream_marked(stream);
  if (!forbidden) return CMR_SUCCESS;
  atomic_fetch_add(&cmr_host_capture.violations, 1);
  return cmr_error(CMR_ERROR_STREAM_CAPTURE,
                   "%s on stream %p: operation not permitted when stream is capturing "
                   "(cudaErrorStreamCaptureUnsupported, simulated)",
                   call, (void *)stream);
}

/* Graph memory: 256-aligned host memory, its size rounded up to 256 and
 * kept in front of it for the count. */
enum { cmr_host_graph_header = 256 };

cmr_status cmr_backend_graph_alloc(size_t bytes, cmr_stream stream, void **out) {
  (void)stream;
  size_t rounded = (bytes + 255) / 256 * 256;
  char *base = rounded < bytes || rounded > SIZE_MAX - cmr_host_graph_header
                   ? NULL
                   : aligned_alloc(256, rounded + cmr_host_graph_header);
  if (base == NULL) {
    *out = NULL;
    return cmr_error(CMR_ERROR_OUT_OF_MEMORY, "cudaMallocAsync(%zu bytes, stream %p): no host memory (simulated)",
                     bytes, (void *)stream);
  }
  *(size_t *)base = rounded;
  atomic_fetch_add(&cmr_host_capture.graph_blocks, 1);
  atomic_fetch_add(&cmr_host_capture.graph_bytes, rounded);
  *out = base + cmr_host_graph_header;
  return CMR_SUCCESS;
}

void cmr_backend_host_graphs_never_launched(bool never) { atomic_store(&cmr_host_capture.never_launched, never); }

/* The simulation's stand-in memory goes either way; while its graphs are
 * ones that never launched, the answer is the driver's: nothing was there. */
cmr_status cmr_backend_graph_free(void *ptr, cmr_stream stream) {
  char *base = (char *)ptr - cmr_host_graph_header;
  atomic_fetch_sub(&cmr_host_capture.graph_blocks, 1);
  atomic_fetch_sub(&cmr_host_capture.graph_bytes, *(size_t *)base);
  free(base);
  if (atomic_load(&cmr_host_capture.never_launched)) {
    return cmr_error(CMR_ERROR_UNKNOWN_POINTER,
                     "cudaFreeAsync(%p, stream %p): cudaErrorInvalidValue: no allocation there (simulated: its graph "
                     "never launched)",
                     ptr, (void *)stream);
  }
  return CMR_SUCCESS;
}

unsigned cmr_backend_graph_memory_properties(void) {
  return CMR_PROPERTY_DEVICE_ACCESSIBLE | CMR_PROPERTY_HOST_ACCESSIBLE;
}

void cmr_backend_host_graph_memory(size_t *blocks, size_t *bytes) {
  *blocks = atomic_load(&cmr_host_capture.graph_blocks);
  *bytes = atomic_load(&cmr_host_capture.graph_bytes);
}
